package checker

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
)

// txnsSeen records what a txnStream tells: each operation's transaction.
type txnsSeen struct {
	txnOf map[int]*txn
	ends  map[*txn]int // how often each was told closed
}

func (s *txnsSeen) joined(op *histories.Op, t *txn) { s.txnOf[op.ID] = t }
func (s *txnsSeen) closed(t *txn)                   { s.ends[t]++ }

// streamTxns replays h's transactions through a txnStream, fed in call
// order.
func streamTxns(h histories.History) *txnsSeen {
	seen := &txnsSeen{txnOf: map[int]*txn{}, ends: map[*txn]int{}}
	s := newTxnStream(seen)
	for _, i := range callOrder(h.Ops) {
		s.add(&h.Ops[i])
	}
	s.finish()
	return seen
}

// txnStreamDiff is the first way the stream's transactions differ from
// analyzeTxns's, nil when they do not: every operation in a transaction
// with the same session, fate, end and commit times, and each end told
// once.
func txnStreamDiff(h histories.History) error {
	batch := analyzeTxns(withOpsInCallOrder(h))
	seen := streamTxns(h)
	if len(seen.txnOf) != len(batch.txnOf) {
		return fmt.Errorf("%d operations in transactions, want %d", len(seen.txnOf), len(batch.txnOf))
	}
	for id, want := range batch.txnOf {
		got := seen.txnOf[id]
		if got == nil {
			return fmt.Errorf("op %d in no transaction", id)
		}
		type fields struct {
			tid                      string
			pid                      int64
			epoch                    int16
			fate                     fate
			endedBy                  int
			committing               bool
			commitCall, commitReturn int64
		}
		w := fields{want.transactionalID, want.producerID, want.epoch, want.fate, want.endedBy, want.commitCalled, want.commitCall, want.commitReturn}
		g := fields{got.transactionalID, got.producerID, got.epoch, got.fate, got.endedBy, got.commitCalled, got.commitCall, got.commitReturn}
		if w != g {
			return fmt.Errorf("op %d: transaction %+v, want %+v", id, g, w)
		}
		ends := 0
		if want.endedBy >= 0 {
			ends = 1
		}
		if seen.ends[got] != ends {
			return fmt.Errorf("op %d: its transaction told closed %d times, want %d", id, seen.ends[got], ends)
		}
	}
	return nil
}

// withOpsInCallOrder is h with its operations in the order a stream feeds
// them, so that ties within an instant fall alike.
func withOpsInCallOrder(h histories.History) histories.History {
	ops := make([]histories.Op, 0, len(h.Ops))
	for _, i := range callOrder(h.Ops) {
		ops = append(ops, h.Ops[i])
	}
	h.Ops = ops
	return h
}

func TestTxnStreamReplaysAsAnalyzeTxns(t *testing.T) {
	b, _ := seed000()
	require.NoError(t, txnStreamDiff(b.h), "seed000")
	for _, dir := range []string{"canonical", "mutants", "clients", "kfake"} {
		files, err := filepath.Glob(filepath.Join("..", "histories", dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, file := range files {
			h, err := histories.LoadFile(file)
			require.NoError(t, err)
			require.NoError(t, txnStreamDiff(h), file)
		}
	}
}
