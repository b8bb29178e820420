package workload

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A swarm run always offers the actions that move and resolve, and each
// other action is offered in some runs and left out of others.
func TestSwarmLeavesFaultsOut(t *testing.T) {
	sc, err := ScenarioNamed(adversaryScenario)
	require.NoError(t, err)
	all := (&run{sc: sc}).actions()
	offered, left := map[string]int{}, map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		acts := swarm(t, all)
		for name := range all {
			if _, ok := acts[name]; ok {
				offered[name]++
			} else {
				left[name]++
			}
		}
	})
	for name := range all {
		require.Positive(t, offered[name], "%s never offered", name)
		if resolving[name] {
			require.Zero(t, left[name], "%s left out", name)
		} else {
			require.Positive(t, left[name], "%s never left out", name)
		}
	}
}
