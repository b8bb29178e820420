//go:build measure

package fencecheck_test

import (
	"fmt"
	"maps"
	"os"
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
// and without swarm:
//
//	FENCECHECK_MEASURE_PLAIN=1 go test -tags measure -run TestMeasureSwarm -v -timeout 2h .
//
// It requires what fencecheck run's defaults rely on: with swarm runs,
// one correct scenario meets each seeded bug from every seed. The correct
// scenarios are tried in turn, as the defaults explore them, and one that
// misses a seed is left at its first miss. For example, only
// at-least-once-beside makes plain commits.
//
// With FENCECHECK_MEASURE_PLAIN=1 the table also compares swarm runs with
// plain ones in the scenario that met the bug. The plain rows assert
// nothing and take most of the time, because one plain counterexample is
// slow to judge, so CI leaves them out.
func TestMeasureSwarm(t *testing.T) {
	plain := os.Getenv("FENCECHECK_MEASURE_PLAIN") == "1"
	fmt.Printf("mutant\tscenario\tswarm\tcaught\tmedian\tworst\tseconds\n")
	for _, mutant := range slices.Sorted(maps.Keys(impl.Mutants)) {
		meeting := ""
		for _, sc := range workload.CorrectScenarios() {
			if measureSwarm(t, mutant, sc.Name, true, true) == swarmSeeds {
				meeting = sc.Name
				break
			}
		}
		require.NotEmpty(t, meeting, "%s: no correct scenario's swarm runs meet it from every seed", mutant)
		if plain {
			measureSwarm(t, mutant, meeting, false, false)
		}
	}
}

const swarmSeeds, swarmLimit = 10, 3000

// measureSwarm explores scenario name against impl with mutant on, from
// each seed, until the bug is met or swarmLimit interleavings pass. It
// prints the table's row and returns from how many seeds it was met.
// stopAtMiss ends it at the first seed that misses the bug.
func measureSwarm(t *testing.T, mutant, name string, swarm, stopAtMiss bool) int {
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
		if stopAtMiss && out.Failure == nil {
			fmt.Printf("%s\t%s\t%v\tmissed from seed %d\t\t\t%.1f\n", mutant, name, swarm, seed, time.Since(start).Seconds())
			return caught
		}
	}
	slices.Sort(tries)
	fmt.Printf("%s\t%s\t%v\t%d/%d\t%d\t%d\t%.1f\n", mutant, name, swarm, caught, swarmSeeds, tries[len(tries)/2], tries[len(tries)-1], time.Since(start).Seconds())
	return caught
}
