package workload

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// TestQuietPhaseWaitsOutAFencedStaticZombie replays a run of the correct
// static-members scenario on the correct broker. In its quiet phase the
// zombie of a slot that was scaled down rejoins as a static member, takes
// the only partition and is fenced by its own late InitProducerId. It
// sends no LeaveGroup, so the live member gets the partition only after a
// second tick expires the zombie's session. One tick left the trip
// uncommitted, and progress broke on a correct broker.
func TestQuietPhaseWaitsOutAFencedStaticZombie(t *testing.T) {
	sc, err := ScenarioNamed("static-members")
	require.NoError(t, err)
	var whole histories.History
	target := func() (model.Target, error) {
		return impl.New(impl.Config{TxnVersion: 2, SegmentSize: impl.ExploringSegmentSize, AsyncMarkers: true}), nil
	}
	out, err := Explore(Options{Scenario: sc, Target: target, TxnVersion: 2, Observe: func(h histories.History) { whole = h }},
		Budget{Replay: "testdata/static-zombie-holds-partition.fail", Steps: 30}, nil)
	require.NoError(t, err)
	if out.Failure != nil {
		_, report, _, _ := out.Failure.Found()
		t.Fatalf("a correct run broke %v", report.Violated())
	}
	ticks := 0
	for _, op := range whole.Ops {
		if op.Kind == model.Tick {
			ticks++
		}
	}
	require.GreaterOrEqual(t, ticks, 2, "the run did not reach the quiet phase's second tick: the replay no longer shows the zombie")
}
