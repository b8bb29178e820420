package workload

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// panicsOnReadCommitted is a broker that panics on a read_committed fetch
// from above the last stable offset, as a broker written in Go does with
// a slice bound gone wrong.
type panicsOnReadCommitted struct{ *impl.Broker }

func (b panicsOnReadCommitted) Fetch(ctx context.Context, r model.Request) model.Result {
	res := b.Broker.Fetch(ctx, r)
	if r.Isolation == model.ReadCommitted && res.Succeeded() && r.Offset > res.Resp.LastStableOffset {
		panic("makeslice: cap out of range")
	}
	return res
}

// TestATargetsPanicIsTheCounterexample: a panic of the target's is
// reported as the run's counterexample, shrunk like any other, with the
// request it was answering last in the history and its stack in the bug
// report, not as a failure with no history.
func TestATargetsPanicIsTheCounterexample(t *testing.T) {
	sc, err := ScenarioNamed(adversaryScenario)
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 2, Swarm: true, Target: func() (model.Target, error) {
		return panicsOnReadCommitted{impl.New(impl.Config{TxnVersion: 2})}, nil
	}}
	out, h, report, steps := explorePanicking(t, opts, 2000)
	p := out.Failure.Panic()
	require.Equal(t, "the target panicked answering a fetch request: makeslice: cap out of range", p.String())
	require.Contains(t, p.Stack, "panicsOnReadCommitted")
	last := h.Ops[len(h.Ops)-1]
	require.Equal(t, model.Fetch, last.Kind)
	require.False(t, last.Returned, "the request the target panicked on was answered")
	require.True(t, report.Held(), "no check broke: the panic is the finding")
	require.NotEmpty(t, steps)
	require.Regexp(t, `^Adversary \w+ read past stable$`, steps[len(steps)-1], "the last action is the one the target panicked in")

	wire, err := json.Marshal(BatchResult{Outcome: out})
	require.NoError(t, err)
	var back BatchResult
	require.NoError(t, json.Unmarshal(wire, &back))
	defer back.Outcome.Discard()
	require.Equal(t, p, back.Outcome.Failure.Panic(), "a worker process's panic reaches the parent")

	dir, err := WriteBundle(t.TempDir(), Run{Scenario: sc.Name, Target: "impl", TxnVersion: 2, Seed: 1, Swarm: true}, out.Failure, out.FailFile)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(dir, bundleReadme))
	require.NoError(t, err)
	require.Contains(t, string(readme), p.String())
	require.Contains(t, string(readme), "panicsOnReadCommitted")
}

// panicsOnRestart is a broker whose restart panics, as one that fails to
// reload its logs might.
type panicsOnRestart struct{ *impl.Broker }

func (panicsOnRestart) Restart() { panic("reloading the log: unexpected EOF") }

// A panic of the target's while it takes a fault of its own (here a
// restart) is the counterexample as well, the history ending with that
// fault.
func TestATargetsPanicAtARestartIsTheCounterexample(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 1, Target: func() (model.Target, error) {
		return panicsOnRestart{impl.New(impl.Config{TxnVersion: 1})}, nil
	}}
	out, h, report, steps := explorePanicking(t, opts, 200)
	require.Equal(t, "the target panicked taking a broker_restart: reloading the log: unexpected EOF", out.Failure.Panic().String())
	require.Equal(t, model.BrokerRestart, h.Ops[len(h.Ops)-1].Kind)
	require.True(t, report.Held(), "no check broke: the panic is the finding")
	require.Equal(t, "RestartBroker", steps[len(steps)-1])
}

// explorePanicking explores with opts (from seed 1, at most checks
// interleavings) until a run meets the target's panic, and returns its
// counterexample.
func explorePanicking(t *testing.T, opts Options, checks int) (Outcome, histories.History, checker.Report, []string) {
	t.Helper()
	out, err := Explore(opts, Budget{Checks: checks, Steps: 30, Seed: 1, ShrinkTime: 5 * time.Second}, nil)
	require.NoError(t, err)
	t.Cleanup(out.Discard)
	require.NotNil(t, out.Failure, "no run met the panic")
	h, report, steps, found := out.Failure.Found()
	require.True(t, found)
	require.NotNil(t, out.Failure.Panic(), "a run failed, not by a panic")
	return out, h, report, steps
}

// waitNeverFits panics at a restart, and says that no restart or join
// fits.
type waitNeverFits struct{ panicsOnRestart }

func (waitNeverFits) WaitFits() bool { return false }

// A target that says a restart or a join does not fit now (a transaction
// the model keeps would run out on its clock meanwhile:
// kafka.Target.WaitFits) is not restarted, and no join is sent to it:
// the exploration that met panicsOnRestart's panic (above) meets none,
// and whatever it finds (with no worker in a group, the trips are never
// consumed) holds no restart and no join.
func TestNoRestartOrJoinWhileAWaitDoesNotFit(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 1, Target: func() (model.Target, error) {
		return waitNeverFits{panicsOnRestart{impl.New(impl.Config{TxnVersion: 1})}}, nil
	}}
	out, err := Explore(opts, Budget{Checks: 200, Steps: 30, Seed: 1, ShrinkTime: 5 * time.Second}, nil)
	require.NoError(t, err)
	defer out.Discard()
	require.NotNil(t, out.Failure, "no worker joins, so the trips are never consumed: progress breaks")
	require.Nil(t, out.Failure.Panic(), "the broker was restarted")
	h, _, _, _ := out.Failure.Found()
	for _, op := range h.Ops {
		require.NotEqual(t, model.JoinGroup, op.Kind, "a join was sent: %v", op)
	}
}
