//go:build measure

package histories

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureStream reads the file FENCECHECK_MEASURE_FILE names with a
// Stream, both passes, and judges nothing, so that /usr/bin/time -v of
// the test binary shows what the reading alone costs
// (docs/performance.md):
//
//	go test -c -tags measure -o /tmp/histories.test ./histories/
//	FENCECHECK_MEASURE_FILE=/tmp/soak-1000000.json /usr/bin/time -v /tmp/histories.test -test.run TestMeasureStream -test.v
func TestMeasureStream(t *testing.T) {
	path := os.Getenv("FENCECHECK_MEASURE_FILE")
	require.NotEmpty(t, path, "FENCECHECK_MEASURE_FILE names the history to read")
	start := time.Now()
	s, err := OpenStream(path, StreamOptions{})
	require.NoError(t, err)
	first := time.Since(start)
	n := 0
	require.NoError(t, s.Each(func(*Op) error { n++; return nil }))
	require.Equal(t, s.Len(), n)
	t.Logf("%d operations; first pass %v (light: %v), second pass %v", n, first, s.light, time.Since(start)-first)
}
