package main

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"
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
			var ops int
			start := time.Now()
			for range b.N {
				dir := b.TempDir()
				args := []string{"run", "--target", "impl", "--seed", "11", "--checks", "2000", "--parallel", "1", "--out", dir}
				if code, out, errOut := runCLI(args...); code != exitHeld {
					b.Fatalf("fencecheck %v: exit %d\n%s\n%s", args, code, out, errOut)
				}
				ops += summarizedOperations(b, dir)
			}
			b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
		})
	}
}
