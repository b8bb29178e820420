package workload

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// The at-least-once scenario sends plain OffsetCommits, some of them from
// a consumer whose generation a rebalance made stale, and a correct broker
// holds every check under it.
func TestAtLeastOnceScenarioSendsPlainCommits(t *testing.T) {
	sc, err := ScenarioNamed(AtLeastOnceScenario)
	require.NoError(t, err)
	require.True(t, sc.Correct())
	cov := NewCoverage()
	target := func() (model.Target, error) {
		return model.NewBroker(model.Options{TxnVersion: 2, AsyncMarkers: true}), nil
	}
	out, err := Explore(Options{Scenario: sc, Target: target, TxnVersion: 2, Coverage: cov, Swarm: true},
		Budget{Checks: 300, Steps: 30, Seed: 1, ShrinkTime: 5 * time.Second}, nil)
	require.NoError(t, err)
	t.Cleanup(out.Discard)
	if out.Failure != nil {
		h, report, steps, _ := out.Failure.Found()
		t.Fatalf("a correct broker broke %v (%d operations): %v", report.Violated(), len(h.Ops), steps)
	}
	t.Logf("coverage:\n%s", cov)
	require.Positive(t, cov.Ran(PlainCommits), "no plain commit sent")
	require.Positive(t, cov.Ran(PlainCommitsFenced), "no stale plain commit refused")
}

// A target that takes no plain OffsetCommit cannot run the scenario: the
// exploration says which target and why before it starts.
func TestAtLeastOnceScenarioNeedsAnOffsetCommitter(t *testing.T) {
	sc, err := ScenarioNamed(AtLeastOnceScenario)
	require.NoError(t, err)
	target := func() (model.Target, error) {
		return noPlainCommits{model.NewBroker(model.Options{TxnVersion: 2})}, nil
	}
	err = Exploration{Scenarios: []Scenario{sc}, Target: target}.Run(func(Explored) { t.Error("explored") })
	require.EqualError(t, err, "scenario at-least-once-beside sends plain OffsetCommits, and the target, a workload.noPlainCommits, is not a model.OffsetCommitter")

	// By default the scenario is left out, and the others explored, so
	// that a broker written before plain commits keeps its exploration.
	var explored []string
	var logged []string
	ex := Exploration{Target: target, Checks: 2, Seed: 1, Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}
	require.NoError(t, ex.Run(func(e Explored) { explored = append(explored, e.Scenario.Name) }))
	require.Equal(t, []string{"stable-id", "adversary", StaticScenario}, explored)
	require.Contains(t, logged, "fencecheck: at-least-once-beside left out: the target, a workload.noPlainCommits, takes no plain OffsetCommit (model.OffsetCommitter)")
	require.Contains(t, logged, "fencecheck: kip848-consumers left out: the target, a workload.noPlainCommits, takes no ConsumerGroupHeartbeat (model.ConsumerGroupHeartbeater)")

	// Named, the KIP-848 scenario is refused the same way.
	kip848, err := ScenarioNamed(KIP848Scenario)
	require.NoError(t, err)
	err = Exploration{Scenarios: []Scenario{kip848}, Target: target}.Run(func(Explored) { t.Error("explored") })
	require.EqualError(t, err, "scenario kip848-consumers sends KIP-848 ConsumerGroupHeartbeats, and the target, a workload.noPlainCommits, is not a model.ConsumerGroupHeartbeater")

	// Named as a group (fencecheck run's --scenario correct), it is left
	// out as the defaults are.
	explored, logged = nil, nil
	stable, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	ex.Scenarios, ex.Grouped = []Scenario{stable, kip848}, true
	require.NoError(t, ex.Run(func(e Explored) { explored = append(explored, e.Scenario.Name) }))
	require.Equal(t, []string{"stable-id"}, explored)
	require.Contains(t, logged, "fencecheck: kip848-consumers left out: the target, a workload.noPlainCommits, takes no ConsumerGroupHeartbeat (model.ConsumerGroupHeartbeater)")
}

// noPlainCommits is a target without the OffsetCommit method.
type noPlainCommits struct{ b *model.RefBroker }

func (n noPlainCommits) InitProducerID(ctx context.Context, r model.Request) model.Result {
	return n.b.InitProducerID(ctx, r)
}
func (n noPlainCommits) AddPartitions(ctx context.Context, r model.Request) model.Result {
	return n.b.AddPartitions(ctx, r)
}
func (n noPlainCommits) Produce(ctx context.Context, r model.Request) model.Result {
	return n.b.Produce(ctx, r)
}
func (n noPlainCommits) AddOffsets(ctx context.Context, r model.Request) model.Result {
	return n.b.AddOffsets(ctx, r)
}
func (n noPlainCommits) TxnOffsetCommit(ctx context.Context, r model.Request) model.Result {
	return n.b.TxnOffsetCommit(ctx, r)
}
func (n noPlainCommits) EndTxn(ctx context.Context, r model.Request) model.Result {
	return n.b.EndTxn(ctx, r)
}
func (n noPlainCommits) JoinGroup(ctx context.Context, r model.Request) model.Result {
	return n.b.JoinGroup(ctx, r)
}
func (n noPlainCommits) LeaveGroup(ctx context.Context, r model.Request) model.Result {
	return n.b.LeaveGroup(ctx, r)
}
func (n noPlainCommits) OffsetFetch(ctx context.Context, r model.Request) model.Result {
	return n.b.OffsetFetch(ctx, r)
}
func (n noPlainCommits) Fetch(ctx context.Context, r model.Request) model.Result {
	return n.b.Fetch(ctx, r)
}
func (n noPlainCommits) Tick(ms int64) { n.b.Tick(ms) }
func (n noPlainCommits) Restart()      { n.b.Restart() }
func (n noPlainCommits) Close() error  { return n.b.Close() }

// The same seed gives the same histories, byte for byte, plain commits
// included.
func TestAtLeastOnceScenarioDeterministic(t *testing.T) {
	sc, err := ScenarioNamed(AtLeastOnceScenario)
	require.NoError(t, err)
	explore := func() []byte {
		var all bytes.Buffer
		target := func() (model.Target, error) { return model.NewBroker(model.Options{TxnVersion: 2}), nil }
		opts := Options{Scenario: sc, Target: target, TxnVersion: 2,
			Observe: func(h histories.History) { require.NoError(t, histories.Save(&all, h)) }}
		out, err := Explore(opts, Budget{Checks: 30, Steps: 30, Seed: 3}, nil)
		require.NoError(t, err)
		t.Cleanup(out.Discard)
		require.Nil(t, out.Failure)
		return all.Bytes()
	}
	first := explore()
	require.Contains(t, string(first), `"offset_commit"`, "the histories hold plain commits")
	require.Equal(t, first, explore())
}
