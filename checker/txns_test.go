package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

var (
	fw0 = session{"fare-writer-7", 4001, 0}
	fw1 = session{"fare-writer-7", 4001, 1}
)

// seed000 is seed 000 up to A's wake: A writes trip-9001 at 40 and stalls,
// B takes fare-writer-7 over (op 4) and commits trip-9001 at 42.
func seed000() (*historyBuilder, map[string]int) {
	b := &historyBuilder{}
	ids := map[string]int{}
	ids["A init"] = b.initTxns("A", 0, 5, fw0)
	b.addPartitions("A", 10, 12, fw0, "fares-2")
	ids["A produce"] = b.produce("A", 13, 15, fw0, "fares-2", 40, "trip-9001")
	b.add("A", 20, 0, model.Stall, model.NewRequest(), model.NewResponse())
	ids["B init"] = b.initTxns("B", 31000, 31005, fw1)
	b.addPartitions("B", 32000, 32001, fw1, "fares-2")
	ids["B produce"] = b.produce("B", 32002, 32003, fw1, "fares-2", 42, "trip-9001")
	ids["B commit"] = b.endTxn("B", 32004, 32010, fw1, true)
	return b, ids
}

func TestTxnFates(t *testing.T) {
	b, ids := seed000()
	a := analyze(b.h)

	aborted := a.txnOf[ids["A produce"]]
	require.Equal(t, fateAborted, aborted.fate)
	require.Equal(t, ids["B init"], aborted.endedBy)

	committed := a.txnOf[ids["B produce"]]
	require.Equal(t, fateCommitted, committed.fate)
	require.Equal(t, int64(32004), committed.commitCall, "records are visible from the commit call on")
	require.Equal(t, int64(32010), committed.commitReturn)
	require.True(t, a.committedWrite(b.h.Ops[ids["B produce"]]))
	require.False(t, a.committedWrite(b.h.Ops[ids["A produce"]]))
}

// An init that keeps a prepared transaction (KIP-939) leaves it open, and
// the end_txn of the client identity it handed out commits it. A plain
// init aborts it.
func TestTxnKeptByInitEndsByItsClient(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	w := b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	keep := b.initTxns("B", 4, 5, fw1)
	b.op(keep).Req.Enable2PC, b.op(keep).Req.KeepPreparedTxn = true, true
	b.op(keep).Result.Resp.OngoingTxnProducerID, b.op(keep).Result.Resp.OngoingTxnEpoch = fw0.pid, fw0.epoch
	b.endTxn("B", 6, 7, fw1, true)
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[w].fate)
	require.True(t, a.committedWrite(b.h.Ops[w]))

	b.op(keep).Req.KeepPreparedTxn = false
	a = analyze(b.h)
	require.Equal(t, fateAborted, a.txnOf[w].fate)
}

func TestTxnsOfOneEpochAreSeparatedByEndTxn(t *testing.T) {
	b := &historyBuilder{}
	first := b.committedTxn("A", 0, fw0, "fares-2", 0, "trip-1")
	// Called the moment the commit returned: the next transaction.
	second := b.produce("A", 3, 4, fw0, "fares-2", 2, "trip-2")
	b.endTxn("A", 5, 6, fw0, false)
	a := analyze(b.h)
	require.NotSame(t, a.txnOf[first], a.txnOf[second])
	require.Equal(t, fateCommitted, a.txnOf[first].fate)
	require.Equal(t, fateAborted, a.txnOf[second].fate)
}

func TestTxnEndsBeforeOneCalledTheMomentItReturns(t *testing.T) {
	b := &historyBuilder{}
	first := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	second := b.produce("A", 3, 4, fw0, "fares-2", 1, "trip-2") // listed before the commit
	b.endTxn("A", 2, 3, fw0, true)
	a := analyze(b.h)
	require.NotSame(t, a.txnOf[first], a.txnOf[second])
	require.Equal(t, fateUnknown, a.txnOf[second].fate)
}

func TestTxnAbortedByTimeout(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	abort := b.timeoutAbort(60000, fw1)
	b.fail(b.endTxn("A", 70000, 70001, fw0, true), model.ProducerFenced)
	a := analyze(b.h)
	require.Equal(t, fateAborted, a.txnOf[w].fate)
	require.Equal(t, abort, a.txnOf[w].endedBy)
}

func TestTxnAbortedByFencedCommit(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	end := b.fail(b.endTxn("A", 2, 3, fw0, true), model.InvalidProducerEpoch)
	a := analyze(b.h)
	require.Equal(t, fateAborted, a.txnOf[w].fate)
	require.Equal(t, end, a.txnOf[w].endedBy)
}

func TestUndecidedCommitLeavesFateUnknown(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	b.fail(b.endTxn("A", 2, 3, fw0, true), model.RequestTimedOut)
	a := analyze(b.h)
	require.Equal(t, fateUnknown, a.txnOf[w].fate)
	require.True(t, a.txnOf[w].commitCalled)

	// A newer session completes a commit that may have begun: still unknown.
	takeover := b.initTxns("B", 10, 11, fw1)
	a = analyze(b.h)
	require.Equal(t, fateUnknown, a.txnOf[w].fate)
	require.Equal(t, takeover, a.txnOf[w].endedBy)
}

func TestRetriedCommitDecides(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	b.lose(b.endTxn("A", 2, 0, fw0, true))
	b.endTxn("A", 5, 6, fw0, true)
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[w].fate)
	require.Equal(t, int64(2), a.txnOf[w].commitCall)
}

func TestTxnsV2EachEpochItsOwn(t *testing.T) {
	b := &historyBuilder{}
	first := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	b.endTxnV2("A", 2, 3, fw0, true, fw1)
	second := b.produce("A", 4, 5, fw1, "fares-2", 2, "trip-2")
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[first].fate)
	require.Equal(t, fateUnknown, a.txnOf[second].fate)
}

func TestNonTransactionalWriteIsCommittedAtOnce(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, session{"", 9, 0}, "fares-2", 7, "trip-1")
	lost := b.lose(b.produce("A", 2, 0, session{"", 9, 0}, "fares-2", 8, "trip-2"))
	a := analyze(b.h)
	require.True(t, a.committedWrite(b.h.Ops[w]))
	require.False(t, a.committedWrite(b.h.Ops[lost]))
	require.Nil(t, a.txnOf[w])
}

func TestRecordsIndexedByOffset(t *testing.T) {
	b := &historyBuilder{}
	w := b.produce("A", 0, 1, fw0, "fares-2", 40, "trip-1", "trip-2")
	f := b.fetch("R", 2, 3, "fares-2", 0, model.ReadUncommitted, rec(41, "trip-2", 4001))
	idx := indexRecords(b.h)
	require.Equal(t, []int{w}, opsOf(idx[slot{"fares-2", 40}]))
	require.Equal(t, []int{w, f}, opsOf(idx[slot{"fares-2", 41}]))
	require.Equal(t, "trip-2", idx[slot{"fares-2", 41}][1].key)
}

func opsOf(seen []sighting) []int {
	var ids []int
	for _, s := range seen {
		ids = append(ids, s.op)
	}
	return ids
}

func TestOddOperationsDoNotPanic(t *testing.T) {
	b := &historyBuilder{}
	b.lose(b.endTxn("A", 0, 0, session{"x", 1, 0}, true))
	b.lose(b.initTxns("A", 1, 0, session{"x", 1, 0}))
	b.fail(b.produce("A", 2, 3, session{"x", 77, 9}, "not a partition", -1), model.UnknownProducerID)
	b.endTxn("A", 4, 5, session{"y", 2, 0}, true) // nothing open
	b.add("A", 6, 7, model.Kind("mystery"), model.NewRequest(), model.NewResponse())
	b.h.Trips = []string{}
	require.NotPanics(t, func() {
		for _, v := range judgeInvariants(b.h, nil) {
			require.True(t, v.Held(), v.String())
		}
		for _, op := range b.h.Ops {
			describe(op)
		}
	})
}

// An init answered late, granting an older epoch, does not end a session
// that a newer grant opened.
func TestTxnNotAbortedByALateOlderGrant(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("B", 0, 2, fw1)
	w := b.produce("B", 3, 4, fw1, "fares-2", 0, "trip-1")
	b.initTxns("A", 1, 5, fw0) // returns after B's produce, with epoch 0
	b.endTxn("B", 6, 7, fw1, true)
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[w].fate)
}

// A fencing init answered at the instant a coarse clock gives the commit
// it fenced: the commit succeeded, so it went first (met by
// TestPropertyCoarseClock at a tick of 20, where the init, written before
// the commit's file position, aborted the transaction and a read of its
// records was called an aborted read).
func TestTxnCommittedAtTheInstantAnInitFencesIt(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.addPartitions("A", 2, 2, fw0, "fares-2")
	written := b.produce("A", 3, 3, fw0, "fares-2", 0, "trip-1")
	fencing := b.initTxns("B", 4, 5, fw1)
	commit := b.endTxn("A", 5, 5, fw0, true)
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[written].fate)
	require.Equal(t, commit, a.txnOf[written].endedBy)
	require.Less(t, fencing, commit, "the init comes first in the file")
}

// A commit sent before its transaction began, and answered after, may
// have committed it: an adversary's EndTxn at an epoch above the current
// one is held in the network while another process's init reaches that
// epoch and writes (met on kfake, where the read of the record was then
// called an aborted read).
func TestTxnCommittedByACommitSentBeforeItBegan(t *testing.T) {
	b := &historyBuilder{}
	commit := b.endTxn("A", 10, 50, fw1, true)
	b.initTxns("B", 20, 21, fw1)
	b.addPartitions("B", 22, 23, fw1, "fares-2")
	written := b.produce("B", 30, 31, fw1, "fares-2", 0, "trip-1")
	a := analyze(b.h)
	require.Equal(t, fateCommitted, a.txnOf[written].fate)
	require.Equal(t, commit, a.txnOf[written].endedBy)

	// Once answered, it acts no more: a transaction of its session that
	// begins after its answer is not its to commit.
	b.op(commit).Return = 15
	require.False(t, analyze(b.h).txnOf[written].commitCalled)
}

// A commit answered with a code Kafka may send after its append
// (TransactionStateManager.appendTransactionToLog) is undecided, like a
// time-out; one answered before anything was written leaves the
// transaction open.
func TestCommitAnswersByClass(t *testing.T) {
	for _, c := range []struct {
		code model.Code
		fate fate
	}{
		{model.CoordinatorNotAvailable, fateUnknown},
		{model.NotCoordinator, fateUnknown},
		{model.CoordinatorLoadInProgress, fateUnknown},
		{model.TransactionalIDAuthorizationFailed, fateUnknown},
	} {
		b := &historyBuilder{}
		w := b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
		end := b.fail(b.endTxn("A", 2, 3, fw0, true), c.code)
		a := analyze(b.h)
		require.Equal(t, c.fate, a.txnOf[w].fate, c.code)
		require.Equal(t, model.ClassOf(model.EndTxn, c.code) == model.Undecided, a.txnOf[w].commitCalled, c.code)
		require.Equal(t, model.ClassOf(model.EndTxn, c.code) == model.NoEffect, refused(*b.op(end)), c.code)
	}
}

// A produce refused with no effect wrote nothing: a fetch that returns
// its record breaks linearizability; one that may have taken effect
// does not.
func TestProduceAnswersByClass(t *testing.T) {
	for code, holds := range map[model.Code]bool{
		model.NotEnoughReplicas:            false,
		model.TopicAuthorizationFailed:     false,
		model.NotEnoughReplicasAfterAppend: true,
		model.NotLeaderOrFollower:          true,
	} {
		b := &historyBuilder{}
		b.initTxns("A", 0, 1, fw0)
		b.addPartitions("A", 2, 3, fw0, "fares-2")
		b.fail(b.produce("A", 4, 5, fw0, "fares-2", 0, "trip-1"), code)
		b.fetch("R", 6, 7, "fares-2", 0, model.ReadUncommitted, rec(0, "trip-1", 4001))
		got := checkLinearizable(b.h, Options{Timeout: time.Minute}).verdict
		require.Equal(t, holds, got.Held(), "%s: %v", code, got)
	}
}
