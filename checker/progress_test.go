package checker_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
)

// A long check tells Progress about every phase, the invariants' as well
// as the linearizability search's, in blocks of operations.
func TestProgressNamesEveryPhase(t *testing.T) {
	h := syntheticHistory(120_000, 8, 4, 8, 3)
	type call struct {
		phase string
		done  int
	}
	var calls []call
	report := checker.Check(h, checker.Options{Progress: func(phase string, done int) {
		calls = append(calls, call{phase, done})
	}})
	require.True(t, report.Held(), "%v", report.Verdicts)

	var phases []string
	counted := map[string]bool{}
	for _, c := range calls {
		if len(phases) == 0 || phases[len(phases)-1] != c.phase {
			require.Zero(t, c.done, "phase %s begins at 0", c.phase)
			phases = append(phases, c.phase)
		}
		require.Zero(t, c.done%50_000, "%s is told of whole blocks, not of each operation: %d", c.phase, c.done)
		require.LessOrEqual(t, c.done, len(h.Ops), "a pass counts the history's operations once")
		counted[c.phase] = counted[c.phase] || c.done > 0
	}
	require.Equal(t, []string{checker.Linearizable, checker.PhaseInvariants}, phases)
	for _, phase := range phases {
		require.True(t, counted[phase], "%s reports the operations it went through", phase)
	}
	require.Less(t, len(calls), 100, "a few calls for the whole check")
	require.True(t, slices.ContainsFunc(calls, func(c call) bool { return c.phase == checker.PhaseInvariants && c.done == 100_000 }))
}
