package main

import (
	"math"
	"os"
	"runtime/debug"
)

// A check of a long file as a stream allocates far more than it keeps:
// each operation is decoded, searched and folded, then dropped, while
// what stays (the open transactions, the search's windows, the folds'
// recent state) is small. Go's collector, at its default GOGC of 100,
// then runs every time the heap doubles a small live heap, and took a
// fifth of the check's time. So the stream is checked with the heap let
// grow to five times what it holds (GOGC 400), under a soft limit of
// 768 MiB, above which the collector runs as often as it must.
const (
	streamGCPercent   = 400
	streamMemoryLimit = 768 << 20
)

// streamGC sets the collector for a check as a stream, and returns what
// sets it back. GOGC or GOMEMLIMIT in the environment win: each is left
// as the user set it.
func streamGC() (restore func()) {
	percent, limit := -2, int64(-1) // -2: left alone
	if os.Getenv("GOGC") == "" {
		percent = debug.SetGCPercent(streamGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(streamMemoryLimit)
	}
	return func() {
		if percent != -2 {
			debug.SetGCPercent(percent)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// wholeGC sets the collector back to Go's defaults, when a check holds
// the whole file after all (checker.Options.Slower): its live heap may
// be gigabytes, where the soft limit would make the collector run
// without pause, and a heap five times it would not fit.
func wholeGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
