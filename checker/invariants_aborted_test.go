package checker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

func TestNoAbortedReadReturnsRecordOfAbortedTxn(t *testing.T) {
	b, ids := seed000()
	read := b.fetch("R", 40000, 40001, "fares-2", 0, model.ReadCommitted, rec(40, "trip-9001", 4001), rec(42, "trip-9001", 4001))
	v := CheckOne(b.h, NoAbortedRead)
	requireViolation(t, v, read, "read_committed fetch returned trip-9001 at fares-2 offset 40, written by op 2 "+
		"in a transaction of fare-writer-7 (producer id 4001, epoch 0) aborted by op 4")
	require.Equal(t, []int{ids["A produce"], ids["B init"]}, v.Violations[0].Related)

	b.op(read).Req.Isolation = model.ReadUncommitted
	requireHeld(t, CheckOne(b.h, NoAbortedRead))
}

func TestNoAbortedReadOpenTxn(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	read := b.fetch("R", 2, 5, "fares-2", 0, model.ReadCommitted, rec(0, "trip-1", 4001))
	commit := b.endTxn("A", 6, 7, fw0, true)
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "read_committed fetch returned trip-1 at fares-2 offset 0, written by op 0 "+
		"in a transaction of fare-writer-7 (producer id 4001, epoch 0) still open when the fetch returned")

	// The commit called before the fetch returned: its marker may be in.
	b.op(commit).Call = 4
	requireHeld(t, CheckOne(b.h, NoAbortedRead))
}

func TestNoAbortedReadUndecidedCommitIsNoViolation(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	b.lose(b.endTxn("A", 2, 0, fw0, true))
	b.fetch("R", 3, 4, "fares-2", 0, model.ReadCommitted, rec(0, "trip-1", 4001))
	requireHeld(t, CheckOne(b.h, NoAbortedRead))
}

func TestNoAbortedReadOfUnacknowledgedWrite(t *testing.T) {
	b := &historyBuilder{}
	b.lose(b.produce("A", 0, 0, fw0, "fares-2", 0, "trip-1"))
	b.endTxn("A", 2, 3, fw0, false)
	read := b.fetch("R", 4, 5, "fares-2", 0, model.ReadCommitted, rec(7, "trip-1", 4001))
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "")

	// A record no operation sent is left to the other checks.
	b.op(read).Result.Resp.Records[0].Key = "trip-from-nowhere"
	requireHeld(t, CheckOne(b.h, NoAbortedRead))
}

func TestNoAbortedReadAbortAfterUndecidedCommit(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 0, "trip-1")
	b.lose(b.endTxn("A", 2, 0, fw0, true))
	abort := b.endTxn("A", 3, 4, fw0, false) // the abort won: the commit never took effect
	read := b.fetch("R", 5, 6, "fares-2", 0, model.ReadCommitted, rec(0, "trip-1", 4001))
	v := CheckOne(b.h, NoAbortedRead)
	requireViolation(t, v, read, "")
	require.Equal(t, []int{0, abort}, v.Violations[0].Related)
}

// A batch whose send went unanswered, its transaction aborted, is sent
// again under the same sequence in the next transaction (a v1 producer's
// sequences run on across its transactions) and answered at an offset:
// either the broker took it for a duplicate of a first send that landed
// there, or the first never landed and this is a new write. A committed
// read there may be the second send's, and is no violation; a read the
// second's answer does not explain can only be the first's.
func TestNoAbortedReadOfABatchSentAgainAfterTheAbort(t *testing.T) {
	b := &historyBuilder{}
	b.lose(b.produce("A", 0, 0, fw0, "fares-2", 0, "trip-1"))
	b.endTxn("A", 2, 3, fw0, false)
	again := b.produce("A", 4, 5, fw0, "fares-2", 7, "trip-1")
	b.endTxn("A", 6, 7, fw0, true)
	read := b.fetch("R", 8, 9, "fares-2", 0, model.ReadCommitted, rec(7, "trip-1", 4001))
	requireHeld(t, CheckOne(b.h, NoAbortedRead))

	b.op(again).Result.Resp.BaseOffset = 9
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "read_committed fetch returned trip-1 at fares-2 offset 7, written by op 0 "+
		"in a transaction of fare-writer-7 (producer id 4001, epoch 0) aborted by op 1")
}

// A write sent at the instant a read_committed fetch returned may have
// landed before the fetch was answered (on a coarse clock a tie is no
// order): a record like it, committed by then, may be the one the fetch
// read, though an aborted send wrote one too.
func TestNoAbortedReadOfAWriteSentAtTheFetchsReturn(t *testing.T) {
	b := &historyBuilder{}
	b.lose(b.produce("A", 0, 0, fw0, "fares-2", 0, "trip-1"))
	b.endTxn("A", 2, 3, fw0, false)
	b.initTxns("A", 4, 5, fw1)
	again := b.lose(b.produce("A", 9, 0, fw1, "fares-2", 0, "trip-1"))
	b.endTxn("A", 9, 10, fw1, true)
	read := b.fetch("R", 8, 9, "fares-2", 0, model.ReadCommitted, rec(7, "trip-1", 4001))
	requireHeld(t, CheckOne(b.h, NoAbortedRead))

	b.op(again).Call = 10 // after the fetch returned: only the aborted send can be what it read
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "")

	// The same with the batch sent again under its sequence, answered at
	// the read's offset (TestNoAbortedReadOfABatchSentAgainAfterTheAbort).
	b = &historyBuilder{}
	b.lose(b.produce("A", 0, 0, fw0, "fares-2", 0, "trip-1"))
	b.endTxn("A", 2, 3, fw0, false)
	again = b.produce("A", 9, 9, fw0, "fares-2", 7, "trip-1")
	b.endTxn("A", 9, 10, fw0, true)
	read = b.fetch("R", 8, 9, "fares-2", 0, model.ReadCommitted, rec(7, "trip-1", 4001))
	requireHeld(t, CheckOne(b.h, NoAbortedRead))

	b.op(again).Call, b.op(again).Return = 10, 10
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "")
}

// A produce with no answer that was called after the fetch returned
// cannot have written what the fetch read.
func TestNoAbortedReadUnacknowledgedWriteAfterTheFetch(t *testing.T) {
	b := &historyBuilder{}
	read := b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(7, "trip-1", 4001))
	late := b.lose(b.produce("A", 2, 0, fw0, "fares-2", 0, "trip-1"))
	b.endTxn("A", 3, 4, fw0, false)
	requireHeld(t, CheckOne(b.h, NoAbortedRead))

	b.op(late).Call = 1 // called by the fetch's return: it may be the writer
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "")
}

// A repeat of a batch that may have landed, answered at the slot read, may
// be the write the fetch read: its transaction's commit counts.
func TestNoAbortedReadRepeatAnsweredAtTheSlot(t *testing.T) {
	b := &historyBuilder{}
	b.lose(b.produce("A", 0, 0, fw0, "fares-2", 0, "trip-1")) // may have landed
	b.endTxn("A", 1, 2, fw0, false)
	b.produce("A", 3, 4, fw0, "fares-2", 0, "trip-1") // the same batch, answered at offset 0
	end := b.endTxn("A", 5, 6, fw0, true)
	read := b.fetch("R", 7, 8, "fares-2", 0, model.ReadCommitted, rec(0, "trip-1", 4001))
	requireHeld(t, CheckOne(b.h, NoAbortedRead))

	b.op(end).Req.Commit = false
	requireViolation(t, CheckOne(b.h, NoAbortedRead), read, "")
}

// Told which partitions the history's fetches read, the fold keeps no
// record of another partition, and judges a read as before.
func TestNoAbortedReadKeepsNoRecordOfAPartitionNoFetchReads(t *testing.T) {
	b, _ := seed000()
	b.produce("A", 50000, 50001, fw0, "fares-9", 0, "trip-9002")
	read := b.fetch("R", 40000, 40001, "fares-2", 0, model.ReadCommitted, rec(40, "trip-9001", 4001))
	reads := model.NewReads()
	reads.Fetch("fares-2", 0)

	s := newInvariantStream(b.h, nil)
	s.onlyRead(reads)
	for _, i := range callOrder(b.h.Ops) {
		s.add(&b.h.Ops[i])
	}
	var fold *noAbortedReadFold
	for _, f := range s.folds {
		if nar, ok := f.(*noAbortedReadFold); ok {
			fold = nar
		}
	}
	verdicts := s.verdicts()
	requireViolation(t, verdicts[slices.Index(Checks, NoAbortedRead)-1], read, "")
	require.NotNil(t, fold.acked["fares-2"], "a record of a partition a fetch reads is kept")
	require.Nil(t, fold.acked["fares-9"], "a record of a partition no fetch reads is not kept")
}
