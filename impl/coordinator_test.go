//go:build !checkeronly

package impl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A broker with transaction.max.timeout.ms refuses a longer transaction
// timeout as the model does, and an idempotent producer's never.
func TestTxnMaxTimeoutAsModel(t *testing.T) {
	const maxMs = 60_000
	ref := model.NewBroker(model.Options{TxnVersion: 1, TxnMaxTimeoutMs: maxMs})
	b := New(Config{TxnVersion: 1, TxnMaxTimeoutMs: maxMs})
	for _, r := range []model.Request{initReq("t", maxMs+1), initReq("t", maxMs), initReq("", maxMs+1), initReq("t", maxMs+1)} {
		want := send(ref, model.InitProducerID, r)
		require.Equal(t, want, send(b, model.InitProducerID, r), "timeout %d of %q", r.TimeoutMs, r.TransactionalID)
	}
	require.Equal(t, model.Fail(model.InvalidTransactionTimeout), send(b, model.InitProducerID, initReq("t", maxMs+1)))
}

// An empty transactional id is refused as the model refuses it, and a
// KIP-939 init is refused as by a broker with two-phase commit off, which
// the model takes from a broker whose setting is not known.
func TestEmptyIDAndTwoPhaseCommitAsModel(t *testing.T) {
	b := New(Config{TxnVersion: 2})
	empty := model.NewRequest()
	empty.EmptyTransactionalID, empty.ProducerID, empty.Epoch = true, 1, 0
	for _, kind := range []model.Kind{model.InitProducerID, model.AddPartitions, model.EndTxn} {
		require.Equal(t, model.Fail(model.InvalidRequest), send(b, kind, empty), "%s", kind)
	}
	twoPC := initReq("t", 0)
	twoPC.Enable2PC = true
	got := send(b, model.InitProducerID, twoPC)
	require.Equal(t, model.Fail(model.TransactionalIDAuthorizationFailed), got)
	_, err := model.Check(model.Init(model.Options{TxnVersion: 2}), model.Op{Kind: model.InitProducerID, Req: twoPC}, got)
	require.NoError(t, err, "the model takes the refusal where the setting is not known")
}
