package workload

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// TestBoundActions: however many actions rapid (or a fuzzer) asks for, a
// run takes at most maxActions of them; the rest do nothing.
func TestBoundActions(t *testing.T) {
	ran := 0
	acts := boundActions(map[string]func(*rapid.T){
		"A": func(*rapid.T) { ran++ },
		"B": func(*rapid.T) { ran++ },
	})
	for i := range 10 * maxActions() {
		acts[[]string{"A", "B"}[i%2]](nil)
	}
	require.Equal(t, maxActions(), ran)
}

// TestUndecidedRequestsAreBounded: faults that leave a request without an
// answer (a lost response, a delayed request, a crash in flight) stop at
// maxUndecided per run, and the workload does reach that bound.
func TestUndecidedRequestsAreBounded(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	most := 0
	opts := Options{Scenario: sc, TxnVersion: 2,
		Target: func() (model.Target, error) { return impl.New(impl.Config{TxnVersion: 2}), nil },
		Observe: func(h histories.History) {
			undecided := 0
			for _, op := range h.Ops {
				if op.Kind.IsRequest() && !op.Returned {
					undecided++
				}
			}
			require.LessOrEqual(t, undecided, maxUndecided, "%s", h.Name)
			most = max(most, undecided)
		}}
	rapid.Check(t, Property(opts, nil))
	require.Equal(t, maxUndecided, most, "no run reached the bound: the test shows nothing")
}
