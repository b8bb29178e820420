package workload

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// wrongCodes is the reference broker answering a fenced producer's produce
// with INVALID_TXN_STATE: every refusal is right, its code is not.
type wrongCodes struct{ *model.RefBroker }

func (w wrongCodes) Produce(ctx context.Context, r model.Request) model.Result {
	res := w.RefBroker.Produce(ctx, r)
	if res.Err == model.InvalidProducerEpoch {
		res.Err = model.InvalidTxnState
	}
	return res
}

// wrongCodeSignatures are how its difference shows: a fenced produce, by
// the coordinator's check (transactions v2) or by the leader's.
var wrongCodeSignatures = []checker.Signature{
	{Check: checker.ErrorCodes, Type: model.Produce, Rule: "epoch-fence", Answer: model.BadTxnState},
	{Check: checker.ErrorCodes, Type: model.Produce, Rule: "leader-epoch-fence", Answer: model.BadTxnState},
}

func wrongCodesTarget() (model.Target, error) {
	return wrongCodes{model.NewBroker(model.Options{TxnVersion: 2})}, nil
}

// An error-code difference does not stop the search: the correct
// configuration holds every safety check, the difference is counted, and
// Shrink gives it a short history.
func TestErrorCodeDifferencesAreCountedNotFailed(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	sightings := NewSightings()
	opts := Options{Scenario: sc, Target: wrongCodesTarget, TxnVersion: 2, Sightings: sightings}
	b := Budget{Checks: 300, Steps: 30, Seed: 1, ShrinkTime: 5 * time.Second}
	out, err := Explore(opts, b, nil)
	require.NoError(t, err)
	require.Nil(t, out.Failure, "an error-code difference failed the property")
	all := sightings.All()
	require.NotEmpty(t, all, "no error-code difference met in %d checks", out.Checks)
	sg := all[0]
	require.Contains(t, wrongCodeSignatures, sg.Signature)
	require.Empty(t, sg.Known)
	require.Equal(t, checker.Violated, sg.Report.Verdict(checker.ErrorCodes).Status)

	shrunk, err := Shrink(opts, b, sg)
	require.NoError(t, err)
	require.LessOrEqual(t, len(shrunk.History.Ops), len(sg.History.Ops))
	require.Equal(t, checker.Violated, shrunk.Report.Verdict(checker.ErrorCodes).Status)
	t.Logf("met in %d interleavings; %d operations, shrunk to %d", sg.Runs, len(sg.History.Ops), len(shrunk.History.Ops))
}

// Nor does it hide a misconfiguration's verdict.
func TestErrorCodeDifferencesDoNotHideAMisconfiguration(t *testing.T) {
	sc, err := ScenarioNamed("fresh-id-per-start")
	require.NoError(t, err)
	out, err := Explore(Options{Scenario: sc, Target: wrongCodesTarget, TxnVersion: 2, Sightings: NewSightings()},
		Budget{Checks: 300, Steps: 30, Seed: 1}, nil)
	require.NoError(t, err)
	require.NotNil(t, out.Failure)
	defer out.Discard()
	_, report, _, _ := out.Failure.Found()
	require.Equal(t, checker.Violated, report.Verdict(checker.ExactlyOnce).Status, "%v", report.Verdicts)
}

// A known finding does not fail the property either: the same broker,
// with its difference listed as known, is counted under the finding's name.
func TestKnownFindingsAreCounted(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	known := checker.Known{Findings: []checker.Finding{{Name: "wrong-produce-code", Match: wrongCodeSignatures}}}
	sightings := NewSightings()
	out, err := Explore(Options{Scenario: sc, Target: wrongCodesTarget, TxnVersion: 2, Known: known, Sightings: sightings},
		Budget{Checks: 300, Steps: 30, Seed: 1}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Failure)
	all := sightings.All()
	require.NotEmpty(t, all)
	for _, sg := range all {
		require.Equal(t, "wrong-produce-code", sg.Known, "%s", sg.Signature)
	}
}
