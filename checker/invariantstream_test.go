package checker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// The folds depend on call order: an operation out of it makes every
// invariant unknown, naming the operation, and nothing panics.
func TestInvariantStreamNamesAnOperationOutOfCallOrder(t *testing.T) {
	b, _ := seed000()
	s := newInvariantStream(b.h, nil)
	s.add(b.op(1))
	s.add(b.op(0)) // called before op 1
	s.add(b.op(2))
	verdicts := s.verdicts()
	require.Len(t, verdicts, len(Checks)-2)
	for i, v := range verdicts {
		require.Equal(t, Checks[1+i], v.Check)
		require.Equal(t, Unknown, v.Status, v.String())
		require.Equal(t, "op 0 (call 0) came after op 1 (call 10): the invariants are judged in call order, ties by id", v.Reason)
	}

	s = newInvariantStream(b.h, nil)
	s.add(b.op(0))
	s.add(b.op(0)) // the same operation twice
	require.Equal(t, Unknown, s.verdicts()[0].Status)

	s = newInvariantStream(b.h, nil)
	for _, i := range callOrder(b.h.Ops) {
		s.add(b.op(int(i)))
	}
	for _, v := range s.verdicts() {
		require.NotEqual(t, Unknown, v.Status, v.String())
	}
}

// namedEarly feeds h's operations to a stream one at a time, in call
// order, as a recording followed while it is written: after each, the
// stream is told that every operation called before the next one's call
// has come, and asked what it can name already. It returns the
// violations named, by the id of the operation after which they were,
// and the verdicts at the end.
func namedEarly(h histories.History) (map[int][]earlyViolation, []Verdict) {
	s := newInvariantStream(h, nil)
	named := map[int][]earlyViolation{}
	order := callOrder(h.Ops)
	for k, i := range order {
		op := &h.Ops[i]
		s.add(op)
		next := maxInstant
		if k+1 < len(order) {
			next = h.Ops[order[k+1]].Call
		}
		s.calledBefore(next)
		if found := s.early(); len(found) > 0 {
			named[op.ID] = append(named[op.ID], found...)
		}
	}
	return named, s.verdicts()
}

// requireNamedRightAfter asserts that check's first violation, at op, was
// named as the only violation named early, right after op came, and as
// the verdict names it.
func requireNamedRightAfter(t *testing.T, h histories.History, check string, op int) {
	t.Helper()
	requireNamedAfter(t, h, check, op, op)
}

// requireNamedAfter is requireNamedRightAfter for a violation at op that
// the operation after completes (the end of op's transaction).
func requireNamedAfter(t *testing.T, h histories.History, check string, after, op int) {
	t.Helper()
	named, verdicts := namedEarly(h)
	require.Len(t, named, 1, "one operation after which a violation was named: %v", named)
	require.Len(t, named[after], 1, "named right after op %d: %v", after, named)
	got := named[after][0]
	require.Equal(t, check, got.check)
	v := verdicts[slices.Index(Checks, check)-1]
	requireViolation(t, v, op, got.Reason)
	require.Equal(t, v.Violations[0], got.Violation)
}

func TestEarlyExactlyOnceDuplicateReadIsNamedAtTheSecondRead(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	second := b.fetch("R", 4, 5, "fares-3", 0, model.ReadCommitted, rec(7, "trip-9001", 4002))
	b.fetch("R", 6, 7, "fares-3", 0, model.ReadCommitted, rec(8, "trip-9002", 4002))
	requireNamedRightAfter(t, b.h, ExactlyOnce, second)
}

func TestEarlyExactlyOnceDuplicateCommitIsNamedAtTheSecondCommit(t *testing.T) {
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 42, "trip-9001")
	second := b.committedTxn("B", 10, session{"fare-writer-7-b", 4002, 0}, "fares-2", 44, "trip-9001") + 1
	b.committedTxn("A", 20, fw0, "fares-2", 46, "trip-9002")
	requireNamedRightAfter(t, b.h, ExactlyOnce, second)

	// Told nothing between operations, the stream names it when the
	// next operation, called after the commit returned, comes.
	s := newInvariantStream(b.h, nil)
	for _, i := range callOrder(b.h.Ops) {
		s.add(b.op(int(i)))
		if found := s.early(); len(found) > 0 {
			require.Equal(t, second+1, int(i), "named when the operation after the commit came")
			require.Equal(t, second, found[0].Op)
		}
	}
}

func TestEarlyExactlyOnceInconsistentOffsetIsNamedAtTheSecondRecord(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 40, "trip-1")
	other := b.fetch("R", 4, 5, "fares-2", 40, model.ReadUncommitted, rec(40, "trip-1", 4002))
	b.fetch("R", 6, 7, "fares-2", 41, model.ReadUncommitted, rec(41, "trip-2", 4002))
	requireNamedRightAfter(t, b.h, ExactlyOnce, other)
}

func TestEarlyOneOwnerIsNamedAtTheAnswer(t *testing.T) {
	b := ownerHandover()
	given := b.owning(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-1"), 2)
	b.owning(b.consumerHeartbeat("W1", 80, 90, "g", "w1", 2), 1, "trips-0")
	requireNamedRightAfter(t, b.h, OneOwner, given)
}

// A holder whose rebalance timer may have run is held only if its
// rebalance timeout, the least it ever sends, is above the time the
// clock moved: a later heartbeat may lower it, so the violation is named
// only at the end, and a heartbeat that lowers it takes it back.
func TestEarlyOneOwnerWaitsForTheRebalanceTimeout(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0"))
	b.lose(b.owning(b.consumerHeartbeat("W1", 20, 0, "g", "w1", 1), 1, "trips-0")) // may have begun a revocation
	b.add("clock", 30, 30, model.Tick, model.Request{Ms: 25_000}, model.NewResponse())
	given := b.joins(b.consumerHeartbeat("W2", 40, 50, "g", "w2", 2, "trips-0"))
	later := b.owning(b.consumerHeartbeat("W1", 60, 70, "g", "w1", 1), 1, "trips-0")
	named, verdicts := namedEarly(b.h)
	require.Empty(t, named)
	requireViolation(t, verdicts[slices.Index(Checks, OneOwner)-1], given, "")

	b.op(later).Req.RebalanceTimeoutMs = 20_000 // below the 25 s the clock moved
	named, verdicts = namedEarly(b.h)
	require.Empty(t, named)
	requireHeld(t, verdicts[slices.Index(Checks, OneOwner)-1])
}

func TestEarlyOneLiveProducerIsNamedAtTheStaleRequest(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.initTxns("B", 2, 3, fw1)
	stale := b.addPartitions("A", 10, 11, fw0, "fares-2")
	requireNamedRightAfter(t, b.h, OneLiveProducer, stale)
}

// A transactional offset commit is judged when its transaction commits.
func TestEarlyOffsetsMonotonicIsNamedAtTheBackwardCommit(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("B", 0, ctp, -1, 6)
	zombie := b.commitOffset("A", 10, session{"ctp-0", 7001, 1}, -1, 3)
	b.commitOffset("B", 20, ctp, -1, 7)
	requireNamedAfter(t, b.h, OffsetsMonotonic, zombie+1, zombie)

	b = &historyBuilder{}
	b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	b.plainCommit("A", 2, 3, "g", "m", 1, "trips-0", 6)
	back := b.plainCommit("B", 10, 11, "g", "", -1, "trips-0", 3)
	b.plainCommit("A", 12, 13, "g", "m", 1, "trips-0", 8)
	requireNamedRightAfter(t, b.h, OffsetsMonotonic, back)
}

// An operation called before the instant the stream was told every
// operation called before had come makes the verdicts unknown.
func TestInvariantStreamNamesAnOperationBeforeTheInstantTold(t *testing.T) {
	b, _ := seed000()
	s := newInvariantStream(b.h, nil)
	s.add(b.op(0))
	s.calledBefore(b.op(1).Call + 1)
	s.add(b.op(1))
	require.Equal(t, Unknown, s.verdicts()[0].Status)
	require.Contains(t, s.verdicts()[0].Reason, "came after every operation called before")
}

// TestFoldLanesJudgeEveryInvariantOnce: the lanes hold each invariant
// once, and no two lanes share a fold that needs the transactions'
// fates or the batches, which a lane works out for its own folds only
// (a fold in a lane of its own would have them worked out twice).
func TestFoldLanesJudgeEveryInvariantOnce(t *testing.T) {
	var all []string
	shared := 0
	for _, lane := range foldLanes {
		all = append(all, lane...)
		s := newInvariantLane(histories.History{}, nil, lane)
		require.Equal(t, lane, s.checks, "a lane's checks are in the order of Checks")
		if s.txns != nil || s.batches != nil {
			shared++
		}
	}
	slices.Sort(all)
	want := slices.Clone(Checks[1 : len(Checks)-1])
	slices.Sort(want)
	require.Equal(t, want, all)
	require.Equal(t, 1, shared, "one lane replays the transactions and the batches")
}
