package main

import (
	"fmt"
	"runtime/debug"
	"testing"
)

// BenchmarkExploration: how many checked operations a second `fencecheck
// run` explores on the in-memory broker, one exploration at a time, with
// the garbage collector at Go's default and at the setting run uses
// (explorationGCPercent), so that their ratio is read off one run:
//
//	go test -run '^$' -bench '^BenchmarkExploration$' -benchtime 1x -count 6 ./cmd/fencecheck/
//
// No test asserts a time.
func BenchmarkExploration(b *testing.B) {
	for _, gc := range []int{100, explorationGCPercent} {
		b.Run(fmt.Sprintf("gogc-%d", gc), func(b *testing.B) {
			b.Setenv("GOGC", fmt.Sprint(gc)) // run leaves a set GOGC be
			defer debug.SetGCPercent(debug.SetGCPercent(gc))
			args := []string{"run", "--target", "impl", "--seed", "11", "--checks", "2000", "--parallel", "1"}
			reportExploration(b, args, func(code int) bool { return code == exitHeld })
		})
	}
}
