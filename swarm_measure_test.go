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
// with swarm runs, one correct scenario meets every seeded bug from every
// seed. Every bug is measured in stable-id and adversary. A bug that
// adversary's swarm runs miss from some seed is measured, with swarm
// runs, in the other correct scenarios too, because the defaults explore
// them all. For example, only at-least-once-beside makes plain commits.
func TestMeasureSwarm(t *testing.T) {
	fmt.Printf("mutant\tscenario\tswarm\tcaught\tmedian\tworst\tseconds\n")
	// The mutants of impl.CaughtOutsideWorkload break requests no
	// scenario sends, so no scenario can meet them.
	for _, mutant := range impl.WorkloadMutants() {
		for _, name := range []string{"stable-id", "adversary"} {
			measureSwarm(t, mutant, name, false)
		}
		if measureSwarm(t, mutant, "adversary", true) == swarmSeeds {
			continue
		}
		caughtByOne := false
		for _, sc := range workload.CorrectScenarios() {
			if sc.Name != "stable-id" && sc.Name != "adversary" && measureSwarm(t, mutant, sc.Name, true) == swarmSeeds {
				caughtByOne = true
				break
			}
		}
		require.True(t, caughtByOne, "%s: no correct scenario's swarm runs meet it from every seed", mutant)
	}
}

const swarmSeeds, swarmLimit = 10, 3000

// measureSwarm explores scenario name against impl with mutant on, from
// each seed, until the bug is met or swarmLimit interleavings pass. It
// prints the table's row and returns from how many seeds it was met.
func measureSwarm(t *testing.T, mutant, name string, swarm bool) int {
	var tries []int
	caught, start := 0, time.Now()
	for seed := uint64(1); seed <= swarmSeeds; seed++ {
		target := func() (model.Target, error) {
			return impl.New(impl.Config{TxnVersion: 2, Mutants: map[string]bool{mutant: true}, AsyncMarkers: true}), nil
		}
		out, err := workload.Explore(workload.Options{Scenario: scenario(t, name), Target: target, TxnVersion: 2, Swarm: swarm},
			workload.Budget{Checks: swarmLimit, Steps: 30, Seed: seed, ShrinkTime: time.Nanosecond}, nil)
		require.NoError(t, err)
		n := swarmLimit + 1
		if out.Failure != nil {
			caught++
			n = out.Checks
			out.Discard()
		}
		tries = append(tries, n)
	}
	slices.Sort(tries)
	fmt.Printf("%s\t%s\t%v\t%d/%d\t%d\t%d\t%.1f\n", mutant, name, swarm, caught, swarmSeeds, tries[len(tries)/2], tries[len(tries)-1], time.Since(start).Seconds())
	return caught
}
