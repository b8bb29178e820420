package checker

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// withProducerLimits sets the retention limits of one-live-producer and
// landedBatches for the test's length.
func withProducerLimits(t *testing.T, grants, records, batches int) {
	t.Helper()
	was := [3]int{liveGrantsKept, liveRecordsKept, landedBatchesKept}
	liveGrantsKept, liveRecordsKept, landedBatchesKept = grants, records, batches
	t.Cleanup(func() { liveGrantsKept, liveRecordsKept, landedBatchesKept = was[0], was[1], was[2] })
}

// droppedProducerState reports whether s's bounded one-live-producer or
// landedBatches dropped anything: a grant, a record folded, a batch.
func droppedProducerState(s *invariantStream) bool {
	for _, f := range s.folds {
		if p, ok := f.(*oneLiveProducerFold); ok {
			for _, k := range p.kept {
				if k.dropped {
					return true
				}
			}
			for _, k := range p.writers {
				if k.folded {
					return true
				}
			}
		}
	}
	if s.batches != nil {
		for _, r := range s.batches.runs {
			if r.dropped || r.older {
				return true
			}
		}
	}
	return false
}

// TestBoundedProducerFoldsAtTheirSmallestAgreeOrSayWhatTheyForgot:
// with one-live-producer keeping one grant and one record and
// landedBatches one batch, the saved histories drop state all the time.
// Each either names what it needed and was dropped, or gets the verdicts
// of the folds that keep everything, reasons included.
func TestBoundedProducerFoldsAtTheirSmallestAgreeOrSayWhatTheyForgot(t *testing.T) {
	withProducerLimits(t, 1, 1, 1)
	forgot, agreedAfterDropping := 0, 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue // a file kept to show an error
		}
		s := boundedStream(h, true)
		if why := s.forgotten(); why != "" {
			forgot++
			continue
		}
		if droppedProducerState(s) {
			agreedAfterDropping++
		}
		require.Equal(t, judgeInvariants(h, nil), s.verdicts(), file)
	}
	t.Logf("%d histories needed what a bounded fold forgot; %d agreed after one-live-producer or landedBatches dropped state", forgot, agreedAfterDropping)
	// The limits exercise both outcomes, or the test shows nothing.
	require.Positive(t, forgot)
	require.Positive(t, agreedAfterDropping)
}

// soakShaped is the soak's shape: one transactional client that commits
// one record per transaction in each of two partitions under
// transactions v2, txns times, its epochs starting at epoch, so that the
// producer id rotates (KIP-360) at 32767. Each record is at the offset
// after the previous transaction's marker.
func soakShaped(txns int, epoch int16) *historyBuilder {
	b := &historyBuilder{}
	b.h.TransactionsVersion = 2
	s := session{"soak-0", 1, epoch}
	b.initTxns("soak", 0, 1, s)
	call := int64(2)
	for i := range txns {
		for j, p := range []model.Partition{"trips-0", "trips-1"} {
			b.produce("soak", call, call+1, s, p, int64(2*i), fmt.Sprintf("trip-%d-%d", i, j))
			call += 2
		}
		next := session{s.tid, s.pid, s.epoch + 1}
		if s.epoch == math.MaxInt16-1 {
			next = session{s.tid, s.pid + 1, 0}
		}
		b.endTxnV2("soak", call, call+1, s, true, next)
		call += 2
		s = next
	}
	return b
}

// TestBoundedProducerFoldsKeepTheNewestOfALongHistory: on thousands of
// the soak's transactions, across a producer id's rotation, the bounded
// one-live-producer keeps at most liveGrantsKept grants and
// liveRecordsKept records of each producer id and partition, and
// landedBatches at most landedBatchesKept batches of each; nothing is
// forgotten, and the verdicts are those of the folds keeping everything.
func TestBoundedProducerFoldsKeepTheNewestOfALongHistory(t *testing.T) {
	b := soakShaped(3000, math.MaxInt16-1000)
	s := boundedStream(b.h, true)
	require.Empty(t, s.forgotten())
	require.Equal(t, judgeInvariants(b.h, nil), s.verdicts())
	var live *oneLiveProducerFold
	for _, f := range s.folds {
		if p, ok := f.(*oneLiveProducerFold); ok {
			live = p
		}
	}
	require.NotNil(t, live)
	require.Len(t, live.kept, 1)
	k := live.kept["soak-0"]
	require.True(t, k.dropped)
	require.Len(t, k.grants, liveGrantsKept)
	require.Len(t, live.writers, 4, "two producer ids in two partitions")
	folded := 0
	for w, r := range live.writers {
		require.LessOrEqual(t, len(r.records), liveRecordsKept, w)
		if r.folded {
			folded++
		}
	}
	require.Equal(t, 4, folded, "each producer id wrote more than it keeps")
	require.Len(t, s.batches.runs, 4)
	for w, r := range s.batches.runs {
		require.LessOrEqual(t, len(r.batches), landedBatchesKept, w)
	}
}

// writeHistory saves h to a file of the test's.
func writeHistory(t *testing.T, h histories.History) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, histories.SaveFile(path, h))
	return path
}

// requireCheckFileReportsAsCheck: CheckFile of h's file gives the
// verdicts, reasons included, that Check gives of h, and one-live-producer
// is violated by op.
func requireCheckFileReportsAsCheck(t *testing.T, h histories.History, op int) {
	t.Helper()
	whole := Check(h, Options{})
	streamed, err := CheckFile(writeHistory(t, h), Options{})
	require.NoError(t, err)
	require.Equal(t, verdictLines(whole), verdictLines(streamed))
	v := streamed.Verdict(OneLiveProducer)
	require.Equal(t, Violated, v.Status)
	require.Contains(t, violatingOps(v), op)
}

func violatingOps(v Verdict) []int {
	var ops []int
	for _, x := range v.Violations {
		ops = append(ops, x.Op)
	}
	return ops
}

// oneLiveForgot is what the bounded one-live-producer of h forgot that an
// operation needed.
func oneLiveForgot(t *testing.T, h histories.History) string {
	t.Helper()
	for _, f := range boundedStream(h, true).folds {
		if p, ok := f.(*oneLiveProducerFold); ok {
			return p.forgotten()
		}
	}
	t.Fatal("no one-live-producer fold")
	return ""
}

// TestBoundedOneLiveProducerForgetsALongDroppedZombie: a zombie of a
// session handed out a hundred sessions ago adds a partition, and the
// coordinator takes it. The bounded fold dropped the grants that
// supersede it, and says so; CheckFile then judges the file whole, and
// names the zombie as Check does.
func TestBoundedOneLiveProducerForgetsALongDroppedZombie(t *testing.T) {
	b := soakShaped(100, 0)
	end := b.h.Ops[len(b.h.Ops)-1].Return
	zombie := b.addPartitions("zombie", end+1, end+2, session{"soak-0", 1, 3}, "trips-0")
	require.Contains(t, oneLiveForgot(t, b.h), fmt.Sprintf("op %d: a successful request of producer id 1 epoch 3 of soak-0, which a dropped grant supersedes", zombie))
	requireCheckFileReportsAsCheck(t, b.h, zombie)

	// Refused, as Kafka refuses it, it needs nothing dropped.
	b.fail(zombie, model.ProducerFenced)
	require.Empty(t, oneLiveForgot(t, b.h))
}

// TestBoundedOneLiveProducerForgetsARecordBelowTheFolded: the current
// session's produce is answered an offset far below the records kept, so
// that the records of older epochs above it land after a newer one. The
// bounded fold folded the records it would be walked among, and says so;
// CheckFile then judges the file whole, and names the records above it as
// Check does.
func TestBoundedOneLiveProducerForgetsARecordBelowTheFolded(t *testing.T) {
	const txns = 400
	b := soakShaped(txns, 0)
	end := b.h.Ops[len(b.h.Ops)-1].Return
	low := int64(2*(txns-liveRecordsKept-10) + 1)
	rogue := b.produce("soak", end+1, end+2, session{"soak-0", 1, txns}, "trips-0", low, "trip-late")
	require.Contains(t, oneLiveForgot(t, b.h), fmt.Sprintf("op %d: producer id 1's record at trips-0 offset %d lands at or below offset", rogue, low))
	// The produce of the transaction after, whose record of an older
	// epoch lands above it.
	requireCheckFileReportsAsCheck(t, b.h, 1+3*int(low+1)/2)

	// Answered above every record, it needs nothing folded.
	b.op(rogue).Result.Resp.BaseOffset = 2 * txns
	require.Empty(t, oneLiveForgot(t, b.h))
}

// TestBoundedBatchesForgetOnlyWhatNamesRecords: zombies of a session
// handed out long ago send a produce. Refused, as Kafka fences it, or
// never answered, its answer names no record, so whether it repeats a
// batch dropped matters to no fold: nothing is forgotten. Answered with
// an offset, it may repeat a batch landedBatches dropped (an older
// epoch's), and it says so; CheckFile then judges the file whole, as
// Check does.
func TestBoundedBatchesForgetOnlyWhatNamesRecords(t *testing.T) {
	b := soakShaped(100, 0)
	end := b.h.Ops[len(b.h.Ops)-1].Return
	fenced := b.fail(b.produce("zombie", end+1, end+2, session{"soak-0", 1, 3}, "trips-0", 0, "trip-3-0"), model.ProducerFenced)
	b.lose(b.produce("zombie", end+3, 0, session{"soak-0", 1, 4}, "trips-0", 0, "trip-4-0"))
	s := boundedStream(b.h, true)
	require.Empty(t, s.forgotten())
	require.Equal(t, judgeInvariants(b.h, nil), s.verdicts())

	b.op(fenced).Result = b.h.Ops[1].Result // answered at offset 0, as the first
	require.Contains(t, boundedStream(b.h, true).forgotten(), fmt.Sprintf("op %d: produce of producer id 1 epoch 3, sequences 0 to 0, named records, and the batch it may repeat was dropped", fenced))
	requireCheckFileReportsAsCheck(t, b.h, fenced)
}

// TestPropertyBoundedProducerFoldsAgreeOrForget: on small histories of
// one transactional.id with few limits, whatever they hold (sessions
// handed out in and out of order, producer ids rotated, zombies that
// succeed or are fenced, retries of a batch, records answered below
// others, requests never answered), the bounded one-live-producer and
// landedBatches either name what they forgot or give the verdicts of
// the folds keeping everything, reasons included.
func TestPropertyBoundedProducerFoldsAgreeOrForget(t *testing.T) {
	withProducerLimits(t, liveGrantsKept, liveRecordsKept, landedBatchesKept)
	agreed, forgot := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		liveGrantsKept = rapid.IntRange(1, 3).Draw(t, "grants kept")
		liveRecordsKept = rapid.IntRange(1, 3).Draw(t, "records kept")
		landedBatchesKept = rapid.IntRange(1, 3).Draw(t, "batches kept")
		b := &historyBuilder{}
		b.h.TransactionsVersion = 2
		s := session{"t", 1, 0}
		call := int64(0)
		offset := int64(0)
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			call += int64(rapid.IntRange(0, 2).Draw(t, "gap"))
			ret := call + int64(rapid.IntRange(0, 3).Draw(t, "took"))
			proc := rapid.SampledFrom([]string{"A", "B"}).Draw(t, "process")
			// Mostly the current session; sometimes an older one or another
			// producer id.
			req := s
			if rapid.IntRange(0, 3).Draw(t, "zombie") == 0 {
				req = session{"t", int64(rapid.IntRange(1, 3).Draw(t, "zombie producer id")), int16(rapid.IntRange(0, 6).Draw(t, "zombie epoch"))}
			}
			var id int
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0, 1:
				p := rapid.SampledFrom([]model.Partition{"p-0", "p-1"}).Draw(t, "partition")
				if rapid.IntRange(0, 3).Draw(t, "below") > 0 {
					offset += int64(rapid.IntRange(1, 3).Draw(t, "advance"))
				}
				at := offset - int64(rapid.IntRange(0, 4).Draw(t, "back"))
				keys := []string{fmt.Sprint("a", len(b.h.Ops)), fmt.Sprint("b", len(b.h.Ops))}[:rapid.IntRange(1, 2).Draw(t, "records")]
				id = b.produce(proc, call, ret, req, p, max(at, 0), keys...)
				b.op(id).Req.Sequence = int32(rapid.IntRange(0, 3).Draw(t, "sequence"))
			case 5:
				// A retry of an earlier produce: its batch again, answered
				// the first's offset, another, or refused.
				var sent []int
				for i, op := range b.h.Ops {
					if op.Kind == model.Produce {
						sent = append(sent, i)
					}
				}
				if len(sent) == 0 {
					continue
				}
				first := b.h.Ops[rapid.SampledFrom(sent).Draw(t, "retried")]
				id = b.add(proc, call, ret, model.Produce, first.Req, first.Result.Resp)
				if rapid.Bool().Draw(t, "moved") || !first.Result.Succeeded() {
					offset++
					b.op(id).Result.Resp.BaseOffset = offset
				}
			case 2:
				id = b.addPartitions(proc, call, ret, req, "p-0")
			case 3:
				next := session{"t", s.pid, s.epoch + 1}
				if rapid.IntRange(0, 4).Draw(t, "rotate") == 0 {
					next = session{"t", s.pid + 1, 0}
				}
				id = b.endTxnV2(proc, call, ret, req, true, next)
				s = next
			case 4:
				next := session{"t", s.pid, s.epoch + 1}
				if rapid.IntRange(0, 4).Draw(t, "out of order") == 0 {
					next.pid = int64(rapid.IntRange(1, 3).Draw(t, "granted producer id"))
					next.epoch = int16(rapid.IntRange(0, 6).Draw(t, "granted epoch"))
				}
				id = b.initTxns(proc, call, ret, next)
				s = next
			}
			switch rapid.IntRange(0, 5).Draw(t, "answer") {
			case 0:
				b.fail(id, model.ProducerFenced)
			case 1:
				b.lose(id)
			}
		}
		st := boundedStream(b.h, true)
		if why := st.forgotten(); why != "" {
			forgot++
			return
		}
		agreed++
		require.Equal(t, judgeInvariants(b.h, nil), st.verdicts())
	})
	t.Logf("%d histories agreed, %d forgot", agreed, forgot)
}

// TestPropertyBoundedOneLiveProducerAgreesOrForgets: the bounded
// one-live-producer, alone, on grants and requests of few sessions drawn
// in any order (producer ids that come back, epochs that go down,
// answers that return late), names what it forgot or gives the verdict
// of the fold keeping everything, reasons included.
func TestPropertyBoundedOneLiveProducerAgreesOrForgets(t *testing.T) {
	withProducerLimits(t, liveGrantsKept, liveRecordsKept, landedBatchesKept)
	agreed := 0
	rapid.Check(t, func(t *rapid.T) {
		liveGrantsKept = rapid.IntRange(1, 3).Draw(t, "grants kept")
		liveRecordsKept = rapid.IntRange(1, 3).Draw(t, "records kept")
		b := &historyBuilder{}
		draw := func(label string) session {
			return session{"t", int64(rapid.IntRange(1, 2).Draw(t, label+" producer id")), int16(rapid.IntRange(0, 3).Draw(t, label+" epoch"))}
		}
		call := int64(0)
		for range rapid.IntRange(1, 30).Draw(t, "ops") {
			call += int64(rapid.IntRange(0, 1).Draw(t, "gap"))
			ret := call + int64(rapid.IntRange(0, 3).Draw(t, "took"))
			proc := rapid.SampledFrom([]string{"A", "B"}).Draw(t, "process")
			var id int
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				id = b.initTxns(proc, call, ret, draw("granted"))
			case 1:
				id = b.endTxnV2(proc, call, ret, draw("ending"), true, draw("next"))
			case 2:
				id = b.addPartitions(proc, call, ret, draw("adding"), "p-0")
			case 3:
				id = b.produce(proc, call, ret, draw("producing"), "p-0", int64(rapid.IntRange(0, 8).Draw(t, "offset")), "k")
			}
			if rapid.IntRange(0, 4).Draw(t, "refused") == 0 {
				b.fail(id, model.ProducerFenced)
			}
		}
		whole, bounded := newOneLiveProducerFold(b.h).(*oneLiveProducerFold), newOneLiveProducerFold(b.h).(*oneLiveProducerFold)
		bounded.bound()
		for _, i := range callOrder(b.h.Ops) {
			whole.add(&b.h.Ops[i])
			bounded.add(&b.h.Ops[i])
		}
		if bounded.forgotten() == "" {
			agreed++
			require.Equal(t, whole.verdict(), bounded.verdict())
		}
	})
	t.Logf("%d histories agreed", agreed)
}

// TestPropertyBoundedBatchesAnswerAsAll: the bounded landedBatches tells
// every produce whose answer names records whether it repeats a batch,
// as landedBatches keeping every batch does, until it names one it
// cannot tell; batches drawn in any order of epochs and sequences,
// retried, refused and never answered.
func TestPropertyBoundedBatchesAnswerAsAll(t *testing.T) {
	withProducerLimits(t, liveGrantsKept, liveRecordsKept, landedBatchesKept)
	told := 0
	rapid.Check(t, func(t *rapid.T) {
		landedBatchesKept = rapid.IntRange(1, 3).Draw(t, "batches kept")
		whole, bounded := newLandedBatches(), newLandedBatches()
		bounded.bound()
		var sent []model.Request
		for i := range rapid.IntRange(1, 40).Draw(t, "produces") {
			var req model.Request
			if len(sent) > 0 && rapid.IntRange(0, 2).Draw(t, "retry") == 0 {
				req = rapid.SampledFrom(sent).Draw(t, "retried")
			} else {
				req = session{"", int64(rapid.IntRange(1, 2).Draw(t, "producer id")), int16(rapid.IntRange(0, 3).Draw(t, "epoch"))}.request()
				req.Partition = rapid.SampledFrom([]model.Partition{"p-0", "p-1"}).Draw(t, "partition")
				req.Sequence = int32(rapid.IntRange(0, 5).Draw(t, "sequence"))
				req.Records = make([]model.Record, rapid.IntRange(1, 2).Draw(t, "records"))
				sent = append(sent, req)
			}
			resp := model.NewResponse()
			resp.BaseOffset = int64(i)
			op := histories.Op{ID: i, Returned: true, Op: model.Op{Kind: model.Produce, Req: req}, Result: model.OK(resp)}
			switch rapid.IntRange(0, 4).Draw(t, "answer") {
			case 0:
				op.Result = model.Fail(model.ProducerFenced)
			case 1:
				op.Returned, op.Result = false, model.NoAnswer()
			case 2:
				op.Result.Resp.BaseOffset = -1 // an answer that names no record
			}
			whole.add(&op)
			bounded.add(&op)
			if bounded.forgotten() != "" {
				return
			}
			if len(producedRecords(op)) > 0 {
				told++
				require.Equal(t, whole.repeats(&op), bounded.repeats(&op), "op %d", i)
			}
		}
	})
	t.Logf("%d answers told alike", told)
}

// TestBoundedOneLiveProducerRemembersAnotherProducerIDDroppedBetween:
// producer id 1's grants come before and after one of producer id 2,
// and the fold keeps the last two, so that the last one it dropped is
// producer id 1's. A request of producer id 1 epoch 1 is superseded
// first by producer id 2's grant, which was dropped, so the fold must
// say so rather than name producer id 1's newer grant kept.
func TestBoundedOneLiveProducerRemembersAnotherProducerIDDroppedBetween(t *testing.T) {
	withProducerLimits(t, 2, liveRecordsKept, landedBatchesKept)
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, session{"t", 1, 0})
	other := b.initTxns("B", 2, 3, session{"t", 2, 0})
	for epoch := range int16(3) {
		b.initTxns("A", 4+2*int64(epoch), 5+2*int64(epoch), session{"t", 1, 1 + epoch})
	}
	late := b.addPartitions("A", 10, 11, session{"t", 1, 1}, "p-0")
	v := CheckOne(b.h, OneLiveProducer)
	requireViolation(t, v, late, "producer id 1 epoch 1 accepted after op 1 returned producer id 2 epoch 0 for t")
	require.Equal(t, []int{other}, v.Violations[0].Related)
	require.Contains(t, oneLiveForgot(t, b.h), fmt.Sprintf("op %d: a successful request of producer id 1 epoch 1 of t, which a dropped grant supersedes", late))
}

// TestBoundedBatchesRememberTheHighestSequenceDropped: of one epoch's
// batches, those at sequences 0 and 3 are dropped, in that order. A
// retry of the one at 3 that names records may repeat it, and
// landedBatches must say so rather than call it new.
func TestBoundedBatchesRememberTheHighestSequenceDropped(t *testing.T) {
	withProducerLimits(t, liveGrantsKept, liveRecordsKept, 1)
	b := &historyBuilder{}
	s := session{"", 1, 0}
	for i, seq := range []int32{0, 3, 1} {
		b.op(b.produce("A", int64(2*i), int64(2*i+1), s, "p-0", int64(i), "k")).Req.Sequence = seq
	}
	retry := b.produce("A", 6, 7, s, "p-0", 1, "k")
	b.op(retry).Req.Sequence = 3
	require.Contains(t, boundedStream(b.h, true).forgotten(), fmt.Sprintf("op %d: produce of producer id 1 epoch 0, sequences 3 to 3", retry))
}
