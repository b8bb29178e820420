//go:build measure

package fencecheck_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/model"
)

// TestMeasureSwarm measures what swarm runs do to the interleavings it
// takes to meet each seeded bug (no shrinking), from seeds 1 to 10, with
// and without swarm, in the correct scenarios:
//
//	go test -tags measure -run TestMeasureSwarm -v -timeout 2h .
//
// It prints a table, and requires what fencecheck run's defaults rely on:
// with swarm runs, the adversary scenario meets every seeded bug from
// every seed.
func TestMeasureSwarm(t *testing.T) {
	const seeds, limit = 10, 3000
	fmt.Printf("mutant\tscenario\tswarm\tcaught\tmedian\tworst\tseconds\n")
	for _, mutant := range slices.Sorted(func(yield func(string) bool) {
		for name := range impl.Mutants {
			if !yield(name) {
				return
			}
		}
	}) {
		for _, name := range []string{"stable-id", "adversary"} {
			for _, swarm := range []bool{false, true} {
				var tries []int
				caught, start := 0, time.Now()
				for seed := uint64(1); seed <= seeds; seed++ {
					target := func() (model.Target, error) {
						return impl.New(impl.Config{TxnVersion: 2, Mutants: map[string]bool{mutant: true}, AsyncMarkers: true}), nil
					}
					out, err := workload.Explore(workload.Options{Scenario: scenario(t, name), Target: target, TxnVersion: 2, Swarm: swarm},
						workload.Budget{Checks: limit, Steps: 30, Seed: seed, ShrinkTime: time.Nanosecond}, nil)
					require.NoError(t, err)
					n := limit + 1
					if out.Failure != nil {
						caught++
						n = out.Checks
						out.Discard()
					}
					tries = append(tries, n)
				}
				if swarm && name == "adversary" {
					require.Equal(t, seeds, caught, "%s: swarm runs of the adversary scenario missed it", mutant)
				}
				slices.Sort(tries)
				fmt.Printf("%s\t%s\t%v\t%d/%d\t%d\t%d\t%.1f\n", mutant, name, swarm, caught, seeds, tries[len(tries)/2], tries[len(tries)-1], time.Since(start).Seconds())
			}
		}
	}
}
