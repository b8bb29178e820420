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
