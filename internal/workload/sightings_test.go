package workload

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
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

// fencedProduceJoins is the reference broker with kfake's finding 4:
// under transactions v2 a fenced producer's produce adds its partition to
// the owner's transaction all the same. Nothing in the history shows that
// add; its consequences (the owner's commit writing a marker there) show
// later, under signatures of their own.
type fencedProduceJoins struct {
	*model.RefBroker
	mu     sync.Mutex
	owners map[string]model.Request // transactional id: its owner's producer id and epoch
}

func (f *fencedProduceJoins) own(id string, res model.Result) model.Result {
	if id != "" && res.Succeeded() && res.Resp.Epoch >= 0 && res.Resp.ProducerID > 0 {
		f.mu.Lock()
		f.owners[id] = model.Request{TransactionalID: id, ProducerID: res.Resp.ProducerID, Epoch: res.Resp.Epoch}
		f.mu.Unlock()
	}
	return res
}

func (f *fencedProduceJoins) InitProducerID(ctx context.Context, r model.Request) model.Result {
	return f.own(r.TransactionalID, f.RefBroker.InitProducerID(ctx, r))
}

func (f *fencedProduceJoins) EndTxn(ctx context.Context, r model.Request) model.Result {
	return f.own(r.TransactionalID, f.RefBroker.EndTxn(ctx, r))
}

func (f *fencedProduceJoins) Produce(ctx context.Context, r model.Request) model.Result {
	res := f.RefBroker.Produce(ctx, r)
	f.mu.Lock()
	owner, known := f.owners[r.TransactionalID]
	f.mu.Unlock()
	if model.ClassOf(model.Produce, res.Err) == model.FencedProducer && known && owner.ProducerID == r.ProducerID {
		owner.Partitions = []model.Partition{r.Partition}
		f.RefBroker.AddPartitions(ctx, owner)
	}
	return res
}

func fencedProduceJoinsTarget() (model.Target, error) {
	return &fencedProduceJoins{RefBroker: model.NewBroker(model.Options{TxnVersion: 2}), owners: map[string]model.Request{}}, nil
}

// A known finding's consequences do not fail the property once the
// finding names its deviation: without it, the broker above is caught;
// with it, what it breaks is counted under the finding's name.
func TestKnownDeviationsExplainConsequences(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	b := Budget{Checks: 300, Steps: 30, Seed: 1, ShrinkTime: time.Second}
	out, err := Explore(Options{Scenario: sc, Target: fencedProduceJoinsTarget, TxnVersion: 2, Sightings: NewSightings()}, b, nil)
	require.NoError(t, err)
	require.NotNil(t, out.Failure, "the broker that adds a fenced produce's partition went unnoticed")
	out.Discard()

	known := checker.Known{Findings: []checker.Finding{{Name: "fenced-produce-starts-txn", Allows: "fenced-produce-joins-txn"}}}
	sightings := NewSightings()
	out, err = Explore(Options{Scenario: sc, Target: fencedProduceJoinsTarget, TxnVersion: 2, Known: known, Sightings: sightings}, b, nil)
	require.NoError(t, err)
	require.Nil(t, out.Failure, "a consequence of a known finding failed the property")
	all := sightings.All()
	require.NotEmpty(t, all)
	for _, sg := range all {
		require.Equal(t, "fenced-produce-starts-txn", sg.Known, "%s", sg.Signature)
	}
}

// Each wrong code of a history is judged alone: one that a known finding
// lists does not hide a new one met later in the same history, nor make it
// known. The history is kfake's, with two refusals whose codes the model
// does not give on the order that explains its effects: a
// txn-offset-commit of a removed member answered PRODUCER_FENCED (op 29),
// and a zombie's produce answered INVALID_TXN_STATE (op 53, finding 1).
// Listing the first, the second is new. Listing the second, the first is
// no wrong code at all: with the produce's code taken as right, an order
// explains every answer exactly, the commit's placed after the bump that
// fenced it (judged on the effects alone, it sat before).
func TestEachWrongCodeIsJudgedAlone(t *testing.T) {
	h, err := histories.LoadFile("../../histories/kfake/zombie-produce-invalid-txn-state-stalled-commit-txn-v1.json")
	require.NoError(t, err)
	var commit, produce checker.Signature
	for _, v := range violationsOf(checker.Check(h, checker.Options{})) {
		switch {
		case v.sig.Check == checker.ErrorCodes && v.sig.Type == model.TxnOffsetCommit:
			commit = v.sig
		case v.sig.Check == checker.ErrorCodes && v.sig.Type == model.Produce:
			produce = v.sig
		}
	}
	require.NotEmpty(t, commit.Check, "the history no longer shows the commit's wrong code")
	require.NotEmpty(t, produce.Check, "the history no longer shows the produce's wrong code")
	judged := func(listed checker.Signature) *run {
		r := &run{known: checker.Known{Findings: []checker.Finding{{Name: "listed", Match: []checker.Signature{listed}}}},
			sightings: map[sightingKey]*Sighting{}}
		r.judge(h)
		return r
	}

	r := judged(commit)
	require.True(t, r.sighted(commit, "listed"), "the listed difference was not counted as known")
	require.True(t, r.sighted(produce, ""), "the unlisted difference was not counted as new")
	require.Equal(t, checker.Violated, r.sightings[sightingKey{produce, ""}].Report.Verdict(checker.ErrorCodes).Status)

	r = judged(produce)
	require.True(t, r.sighted(produce, "listed"), "the listed difference was not counted as known")
	require.False(t, r.sighted(commit, ""), "the commit's code, right on another order, was counted as new")
	allowed := checker.Check(h, checker.Options{AllowCodes: []checker.Signature{produce}})
	require.Equal(t, checker.OK, allowed.Verdict(checker.ErrorCodes).Status, "%v", allowed.Verdict(checker.ErrorCodes))
}

// twoWrongCodes is the reference broker (transactions v1) with two wrong
// codes: a fenced producer's transactional produce answered
// INVALID_TXN_STATE, as kfake does (the deviation
// fenced-produce-invalid-txn-state), and a fenced producer's end-txn
// answered INVALID_TXN_STATE, which nothing known does.
type twoWrongCodes struct{ *model.RefBroker }

func (w twoWrongCodes) Produce(ctx context.Context, r model.Request) model.Result {
	res := w.RefBroker.Produce(ctx, r)
	if r.TransactionalID == "" {
		return res
	}
	return invalidTxnStateIfFenced(model.Produce, res)
}

func (w twoWrongCodes) EndTxn(ctx context.Context, r model.Request) model.Result {
	return invalidTxnStateIfFenced(model.EndTxn, w.RefBroker.EndTxn(ctx, r))
}

func invalidTxnStateIfFenced(k model.Kind, res model.Result) model.Result {
	if model.ClassOf(k, res.Err) == model.FencedProducer {
		res.Err = model.InvalidTxnState
	}
	return res
}

// A known finding's deviation explains its own wrong codes, and not the
// other: each sighting called new breaks error-codes even with every known
// deviation allowed, each called known is explained on its own history,
// and both kinds are met.
func TestKnownDeviationsDoNotHideANewWrongCode(t *testing.T) {
	sc, err := ScenarioNamed("adversary")
	require.NoError(t, err)
	known := checker.Known{Findings: []checker.Finding{{Name: "zombie-produce-invalid-txn-state", Allows: "fenced-produce-invalid-txn-state"}}}
	sightings := NewSightings()
	target := func() (model.Target, error) { return twoWrongCodes{model.NewBroker(model.Options{TxnVersion: 1})}, nil }
	out, err := Explore(Options{Scenario: sc, Target: target, TxnVersion: 1, Known: known, Sightings: sightings},
		Budget{Checks: 300, Steps: 30, Seed: 1}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Failure, "an error-code difference failed the property")
	newEndTxn, knownProduce := 0, 0
	for _, sg := range sightings.All() {
		if sg.Known == "" {
			allowed := checker.Check(sg.History, known.Allowed())
			require.Equal(t, checker.Violated, allowed.Verdict(checker.ErrorCodes).Status, "%s: called new, but the known deviation explains it", sg.Signature)
			require.NotEqual(t, model.Produce, sg.Signature.Type, "%s: called new", sg.Signature)
		} else {
			name, ok := known.Identify(sg.History, sg.Signature)
			require.True(t, ok && name == sg.Known, "%s: called %s's, which does not explain it", sg.Signature, sg.Known)
		}
		if sg.Known == "" && sg.Signature.Type == model.EndTxn {
			newEndTxn += sg.Runs
		}
		if sg.Known != "" && sg.Signature.Type == model.Produce {
			knownProduce += sg.Runs
		}
	}
	require.Positive(t, newEndTxn, "the unexplained end-txn code was never met")
	require.Positive(t, knownProduce, "the explained produce code was never met")
}
