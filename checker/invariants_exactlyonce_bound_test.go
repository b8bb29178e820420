package checker

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// atSmallestLimits sets the bounded exactly-once fold's limits to their
// smallest for the rest of the test: it forgets at every operation, and
// keeps no offset below the highest sighted that no fetch still reads.
func atSmallestLimits(t *testing.T, margin int64, every int) {
	oldMargin, oldEvery := exactlyOnceMargin, exactlyOnceEvery
	exactlyOnceMargin, exactlyOnceEvery = margin, every
	t.Cleanup(func() { exactlyOnceMargin, exactlyOnceEvery = oldMargin, oldEvery })
}

// boundedExactlyOnce feeds h to a bounded invariant stream as CheckFile
// does, calling each after every operation, and returns the stream and
// its exactly-once fold.
func boundedExactlyOnce(h histories.History, each func(f *exactlyOnceFold)) (*invariantStream, *exactlyOnceFold) {
	s := newStreamOf(h, true)
	var fold *exactlyOnceFold
	for _, f := range s.folds {
		if e, ok := f.(*exactlyOnceFold); ok {
			fold = e
		}
	}
	for _, i := range callOrder(h.Ops) {
		s.add(&h.Ops[i])
		if each != nil {
			each(fold)
		}
	}
	return s, fold
}

// forgotSome reports whether f forgot anything: a first record, a trip's
// detail, a skipped range or a committed record no fetch reads.
func (f *exactlyOnceFold) forgotSome() bool {
	if f.bounded.trips.size() > 0 || len(f.bounded.rangesTo) > 0 {
		return true
	}
	for _, l := range f.logs {
		if l.below > math.MinInt64 {
			return true
		}
	}
	return false
}

// TestBoundedExactlyOnceAtItsSmallestLimits: with the exactly-once fold
// forgetting at every operation and keeping no margin, every saved
// history either gets the verdicts, reasons included, of the folds that
// keep everything, or names what it needed that was forgotten. Many of
// them do forget.
func TestBoundedExactlyOnceAtItsSmallestLimits(t *testing.T) {
	atSmallestLimits(t, 0, 1)
	forgot, needed, agreed := 0, 0, 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue // a file kept to show an error
		}
		s, fold := boundedExactlyOnce(h, nil)
		got := s.verdicts()
		if fold.forgotSome() {
			forgot++
		}
		if why := s.forgotten(); why != "" {
			needed++
			t.Logf("%s: %s", file, why)
			continue
		}
		agreed++
		require.Equal(t, judgeInvariants(h, nil), got, file)
	}
	t.Logf("%d histories made the fold forget, %d needed what it forgot, %d agreed", forgot, needed, agreed)
	require.Greater(t, forgot, 20, "the saved histories make the fold forget")
	require.Greater(t, agreed, forgot/2, "most histories need nothing forgotten")
}

// soakHistory is a history of the soak's shape (scripts/longhistory):
// one transactional producer under transactions v2 commits one record,
// trip-1, trip-2 and so on, at a time; with consume, a read_committed
// consumer fetches each record after its commit. The reference broker
// answers each request. Its n operations or a few more, up to the end of
// the last transaction and its read, are followed by extra, which the
// broker answers too.
func soakHistory(t *testing.T, n int, consume bool, extra ...model.Op) histories.History {
	opts := model.Options{TxnVersion: 2, WallClock: true}
	state := model.Init(opts)
	pid, epoch, sequence := model.NoProducerID, model.NoEpoch, int32(0)
	records, produced, fetchDue, position := 0, false, false, int64(0)
	h := histories.History{Name: "soak shape", WallClock: true}
	apply := func(op model.Op, proc string) model.Result {
		call := int64(len(h.Ops))
		op.Span = model.Span{From: call, To: call + 1}
		var res model.Result
		state, res = model.Apply(state, op)
		h.Ops = append(h.Ops, histories.Op{ID: len(h.Ops), Proc: proc, Call: call, Return: call + 1, Returned: true, Op: op, Result: res})
		return res
	}
	for len(h.Ops) < n || produced || fetchDue {
		r := model.NewRequest()
		r.TransactionalID, r.ProducerID, r.Epoch = "soak-0", pid, epoch
		switch {
		case fetchDue:
			r = model.NewRequest()
			r.Partition, r.Offset, r.Isolation = "trips-0", position, model.ReadCommitted
			res := apply(model.Op{Kind: model.Fetch, Req: r}, "consumer")
			require.Len(t, res.Resp.Records, 1, "the consumer reads the record just committed")
			position, fetchDue = res.Resp.LastStableOffset, false
		case pid == model.NoProducerID:
			res := apply(model.Op{Kind: model.InitProducerID, Req: r}, "soak")
			pid, epoch = res.Resp.ProducerID, res.Resp.Epoch
		case !produced:
			records++
			r.Partition, r.Sequence = "trips-0", sequence
			r.Records = []model.Record{{Key: fmt.Sprintf("trip-%d", records), Value: "fare"}}
			require.True(t, apply(model.Op{Kind: model.Produce, Req: r}, "soak").Succeeded())
			sequence, produced = sequence+1, true
		default:
			r.Commit = true
			res := apply(model.Op{Kind: model.EndTxn, Req: r}, "soak")
			pid, epoch, sequence, produced, fetchDue = res.Resp.ProducerID, res.Resp.Epoch, 0, false, consume
		}
	}
	for _, op := range extra {
		op.Req.TransactionalID, op.Req.ProducerID, op.Req.Epoch = "soak-0", pid, epoch
		if op.Kind == model.Produce {
			op.Req.Sequence, sequence = sequence, sequence+1
		}
		require.True(t, apply(op, "late").Succeeded())
	}
	return h
}

// TestBoundedExactlyOnceKeepsWhatIsOpen: on a long history of the soak's
// shape, with and without a read_committed consumer, the bounded fold
// holds a number of offsets, trips' details and committed records that
// does not grow with the history, forgets nothing a later operation
// needs, and gives the verdict of the fold that keeps everything.
func TestBoundedExactlyOnceKeepsWhatIsOpen(t *testing.T) {
	atSmallestLimits(t, 8, 32)
	for _, consume := range []bool{false, true} {
		t.Run(fmt.Sprintf("consume=%v", consume), func(t *testing.T) {
			h := soakHistory(t, 30000, consume)
			most := map[string]int{}
			s, fold := boundedExactlyOnce(h, func(f *exactlyOnceFold) {
				held := map[string]int{"committed": 0, "skipped": 0}
				for _, l := range f.logs {
					held["offsets"] += len(l.at)
				}
				for _, trips := range f.firstShown {
					held["trips"] += len(trips)
				}
				for _, c := range f.committed {
					held["committed"] += len(c)
				}
				for _, r := range f.skipped {
					held["skipped"] += len(r)
				}
				for k, n := range held {
					most[k] = max(most[k], n)
				}
			})
			got := s.verdicts()
			require.Empty(t, s.forgotten())
			require.Equal(t, judgeInvariants(h, nil), got)
			require.Equal(t, OK, got[0].Status, "exactly-once holds")
			t.Logf("the most held at once: %v; trips fingerprinted: %d", most, fold.bounded.trips.size())
			// Between two times it forgets, the fold takes at most 32
			// operations, each of at most one record.
			for what, n := range most {
				require.LessOrEqual(t, n, 8+2*32, what)
			}
			trips := 0
			for _, op := range h.Ops {
				if op.Kind == model.Produce {
					trips++
				}
			}
			require.GreaterOrEqual(t, fold.bounded.trips.size(), trips-8-2*32, "the trips left as fingerprints")
		})
	}
}

// checkedBothWays is the verdict lines of CheckFile of h, saved, and of
// Check of h: the bounded folds' check of the file and the whole check.
func checkedBothWays(t *testing.T, h histories.History) (file, whole string) {
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, histories.SaveFile(path, h))
	got, err := CheckFile(path, Options{})
	require.NoError(t, err)
	return verdictLines(got), verdictLines(Check(h, Options{}))
}

// A duplicate of a trip committed long after its first copy needs the
// first copy's detail, which the bounded fold forgot: it says so, and
// CheckFile, judging the file whole, names the duplicate as Check does.
func TestBoundedExactlyOnceDuplicateLongAfter(t *testing.T) {
	atSmallestLimits(t, 8, 32)
	for _, consume := range []bool{false, true} {
		t.Run(fmt.Sprintf("consume=%v", consume), func(t *testing.T) {
			again := model.NewRequest()
			again.TransactionalID, again.Partition = "soak-0", "trips-0"
			again.Records = []model.Record{{Key: "trip-1", Value: "fare"}}
			commit := model.NewRequest()
			commit.Commit = true
			h := soakHistory(t, 3000, consume, model.Op{Kind: model.Produce, Req: again}, model.Op{Kind: model.EndTxn, Req: commit})
			end := h.Ops[len(h.Ops)-1].ID
			s, _ := boundedExactlyOnce(h, nil)
			s.verdicts()
			require.Equal(t, fmt.Sprintf("exactly-once: op %d shows trip-1 committed at trips-0 offset %d, and the first committed record of trip-1 in trips was forgotten",
				end, h.Ops[end-1].Result.Resp.BaseOffset), s.forgotten())

			file, whole := checkedBothWays(t, h)
			require.Equal(t, whole, file)
			require.Contains(t, file, fmt.Sprintf("exactly-once: VIOLATED op %d (trip-1 committed twice in trips: at trips-0 offset 0 and at trips-0 offset %d (op 2 committed the first))",
				end, h.Ops[end-1].Result.Resp.BaseOffset))
		})
	}
}

// A record shown at an offset far below the others, where the fold
// forgot the first record, is named as forgotten; CheckFile, judging the
// file whole, finds the offset inconsistent as Check does.
func TestBoundedExactlyOnceInconsistentFarBelow(t *testing.T) {
	atSmallestLimits(t, 8, 32)
	h := soakHistory(t, 3000, true)
	last := h.Ops[len(h.Ops)-1]
	require.Equal(t, model.Fetch, last.Kind)
	// The consumer's last fetch shows, besides the record just
	// committed, another one at offset 4, where trip-3 was written.
	h.Ops[len(h.Ops)-1].Result.Resp.Records = append(h.Ops[len(h.Ops)-1].Result.Resp.Records,
		model.FetchedRecord{Offset: 4, Key: "trip-x", Value: "fare", ProducerID: last.Result.Resp.Records[0].ProducerID})
	s, _ := boundedExactlyOnce(h, nil)
	s.verdicts()
	require.Contains(t, s.forgotten(), fmt.Sprintf("exactly-once: op %d shows trips-0 offset 4, below offset ", last.ID))

	file, whole := checkedBothWays(t, h)
	require.Equal(t, whole, file)
	require.Contains(t, file, fmt.Sprintf("exactly-once: VIOLATED op %d (trips-0 offset 4 holds trip-x", last.ID))
}

// A lost write is found by the bounded fold, forgetting at every
// operation, as by the fold that keeps everything: the committed records
// a fetch still to come may skip are kept until it comes.
func TestBoundedExactlyOnceFindsALostWrite(t *testing.T) {
	atSmallestLimits(t, 0, 1)
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 42, "trip-9001")
	b.committedTxn("A", 10, fw0, "fares-2", 44, "trip-9002")
	b.fetch("R", 20, 21, "fares-2", 40, model.ReadCommitted, rec(44, "trip-9002", 4001))
	b.committedTxn("A", 30, fw0, "fares-2", 46, "trip-9003")
	s, fold := boundedExactlyOnce(b.h, nil)
	got := s.verdicts()
	require.Empty(t, s.forgotten())
	require.True(t, fold.forgotSome())
	require.Equal(t, judgeInvariants(b.h, nil), got)
	require.Equal(t, Violated, got[slices.Index(Checks, ExactlyOnce)-1].Status)
}

// A write answered inside a range a fetch skipped, after the fetch
// returned, is a broker's error: the bounded fold forgot the range, says
// so, and the whole check finds the lost write.
func TestBoundedExactlyOnceWriteInsideAForgottenRange(t *testing.T) {
	atSmallestLimits(t, 8, 1) // the margin keeps the first records near offset 44
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 44, "trip-9002")
	b.fetch("R", 20, 21, "fares-2", 40, model.ReadCommitted, rec(44, "trip-9002", 4001))
	late := b.produce("B", 30, 31, session{"", 9, 0}, "fares-2", 42, "trip-9001")
	s, _ := boundedExactlyOnce(b.h, nil)
	s.verdicts()
	require.Equal(t, fmt.Sprintf("exactly-once: op %d's record at fares-2 offset 42 committed at or below offset 43, up to which the ranges read_committed fetches skipped were forgotten", late),
		s.forgotten())
	requireViolation(t, CheckOne(b.h, ExactlyOnce), 3,
		"trip-9001 committed at fares-2 offset 42 (op 4) missing from a read_committed fetch of offsets 40 to 44")
}

// A range a fetch skipped over a record of an open transaction is kept
// until the transaction ends, and a committed record no fetch reads any
// longer is paired with it before it is forgotten: the bounded fold,
// forgetting at every operation, finds both lost writes.
func TestBoundedExactlyOnceKeepsARangeOverAnOpenTransaction(t *testing.T) {
	atSmallestLimits(t, 0, 1)
	b := &historyBuilder{}
	b.addPartitions("A", 0, 1, fw0, "fares-2")
	open := b.produce("A", 1, 2, fw0, "fares-2", 41, "trip-9001")
	other := session{"fare-writer-8", 4002, 0}
	b.committedTxn("B", 3, other, "fares-2", 42, "trip-9002")
	b.committedTxn("B", 7, other, "fares-2", 44, "trip-9003")
	fetch := b.fetch("R", 20, 21, "fares-2", 40, model.ReadCommitted, rec(44, "trip-9003", 4002))
	for i := range 4 {
		b.initTxns(fmt.Sprintf("I%d", i), int64(22+i), int64(23+i), session{fmt.Sprintf("other-%d", i), int64(100 + i), 0})
	}
	commit := b.endTxn("A", 30, 31, fw0, true)
	s, fold := boundedExactlyOnce(b.h, nil)
	got := s.verdicts()
	require.Empty(t, s.forgotten())
	require.True(t, fold.forgotSome())
	require.Equal(t, judgeInvariants(b.h, nil), got)
	v := got[slices.Index(Checks, ExactlyOnce)-1]
	require.Len(t, v.Violations, 2)
	require.Equal(t, []int{open, commit}, v.Violations[0].Related)
	require.Equal(t, fetch, v.Violations[1].Op)
}

// A read_committed fetch may show a record before the commit that wrote
// it returns. The trip's first record, judged at the fetch, keeps its
// detail while the commit's evidence of the same record waits, so that
// the bounded fold, forgetting at every operation, needs nothing it
// forgot.
func TestBoundedExactlyOnceKeepsATripShownAgain(t *testing.T) {
	atSmallestLimits(t, 0, 1)
	b := &historyBuilder{}
	b.addPartitions("A", 0, 1, fw0, "fares-2")
	b.produce("A", 1, 2, fw0, "fares-2", 42, "trip-9001")
	b.endTxn("A", 3, 30, fw0, true)
	b.fetch("R", 5, 6, "fares-2", 42, model.ReadCommitted, rec(42, "trip-9001", 4001))
	for i := range 4 {
		b.initTxns(fmt.Sprintf("I%d", i), int64(7+i), int64(8+i), session{fmt.Sprintf("other-%d", i), int64(100 + i), 0})
	}
	s, fold := boundedExactlyOnce(b.h, nil)
	got := s.verdicts()
	require.Empty(t, s.forgotten())
	require.True(t, fold.forgotSome())
	require.Equal(t, judgeInvariants(b.h, nil), got)
}
