package workload

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// catchesUpOnce is a broker whose clock must catch up once, before its
// fourth request (kafka.Target.CatchUp says so when the requests since
// the last tick have brought a timer near its deadline on the broker).
type catchesUpOnce struct {
	*impl.Broker
	asked *int
}

func (b catchesUpOnce) CatchUp() (int64, error) {
	*b.asked++
	if *b.asked == 4 {
		return 1234, nil
	}
	return 0, nil
}

// The tick a target asks for before a request is recorded as any tick
// is, before the request reaches the target, and named in the actions.
func TestACatchUpTickIsRecorded(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	var caughtUp int
	opts := Options{Scenario: sc, TxnVersion: 2, Target: func() (model.Target, error) {
		asked := 0
		return catchesUpOnce{impl.New(impl.Config{TxnVersion: 2}), &asked}, nil
	}, Observe: func(h histories.History) {
		ticks := 0
		for _, op := range h.Ops {
			if op.Kind == model.Tick && op.Req.Ms == 1234 {
				ticks++
			}
		}
		require.Equal(t, 1, ticks, "the catch-up tick, once")
		caughtUp++
	}}
	out, err := Explore(opts, Budget{Checks: 5, Steps: 30, Seed: 1}, nil)
	require.NoError(t, err)
	defer out.Discard()
	require.Nil(t, out.Failure, "a tick the target asks for breaks nothing on a correct broker")
	require.Positive(t, caughtUp)
}

// losesStep is a broker whose clock loses step before its twentieth
// request.
type losesStep struct {
	*impl.Broker
	asked *int
}

func (b losesStep) CatchUp() (int64, error) {
	if *b.asked++; *b.asked == 20 {
		return 0, errors.New("the target's clock lost step with the broker's: run again with a larger --time-scale (now 0.01)")
	}
	return 0, nil
}

// A target whose clock lost step ends the run: the counterexample says so,
// and no check is judged on its history, so it shows no violation.
func TestALostStepIsNoViolation(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 2, Target: func() (model.Target, error) {
		asked := 0
		return losesStep{impl.New(impl.Config{TxnVersion: 2}), &asked}, nil
	}}
	out, h, report, _ := explorePanicking(t, opts, 20)
	p := out.Failure.Panic()
	require.True(t, p.ClockLost)
	require.Equal(t, "the target's clock lost step with the broker's: run again with a larger --time-scale (now 0.01)", p.String())
	require.Empty(t, report.Verdicts, "no check judged")
	require.NotEmpty(t, h.Ops)
	require.False(t, slices.ContainsFunc(report.Verdicts, func(v checker.Verdict) bool { return v.Status == checker.Violated }))

	dir, err := WriteBundle(t.TempDir(), Run{Scenario: sc.Name, Target: "impl", TxnVersion: 2, Seed: 1}, out.Failure, out.FailFile)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(dir, bundleReadme))
	require.NoError(t, err)
	require.Contains(t, string(readme), "--time-scale")
	require.NotContains(t, string(readme), "VIOLATED")
}
