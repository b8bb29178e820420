package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// gcSettings reads the collector's percent and memory limit.
func gcSettings() (int, int64) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestStreamGCSetsTheCollectorAndSetsItBack: a check as a stream lets the
// heap grow to five times what it holds, under 768 MiB, and what it
// returns sets the collector back; falling back to the whole file sets
// Go's defaults.
func TestStreamGCSetsTheCollectorAndSetsItBack(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcSettings()
	restore := streamGC()
	p, l := gcSettings()
	require.Equal(t, streamGCPercent, p)
	require.Equal(t, int64(streamMemoryLimit), l)
	wholeGC()
	p, l = gcSettings()
	require.Equal(t, 100, p)
	require.Equal(t, int64(math.MaxInt64), l)
	restore()
	p, l = gcSettings()
	require.Equal(t, percent, p)
	require.Equal(t, limit, l)
}

// TestStreamGCLeavesWhatTheEnvironmentSets: GOGC and GOMEMLIMIT in the
// environment win.
func TestStreamGCLeavesWhatTheEnvironmentSets(t *testing.T) {
	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "2GiB")
	percent, limit := gcSettings()
	defer streamGC()()
	p, l := gcSettings()
	require.Equal(t, percent, p)
	require.Equal(t, limit, l)
	wholeGC()
	p, l = gcSettings()
	require.Equal(t, percent, p)
	require.Equal(t, limit, l)
}
