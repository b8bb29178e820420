package checker

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

func TestExactlyOnceDuplicateAcrossPartitionsOfOneTopic(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	b.fetch("R", 2, 3, "fares-2", 40, model.ReadCommitted, rec(42, "trip-9001", 4001)) // the same record again
	second := b.fetch("R", 4, 5, "fares-3", 0, model.ReadCommitted, rec(7, "trip-9001", 4002))
	requireViolation(t, CheckOne(b.h, ExactlyOnce), second,
		"trip-9001 read committed twice in fares: at fares-2 offset 42 and at fares-3 offset 7 (op 0 read the first)")
}

func TestExactlyOnceDuplicateInOneFetch(t *testing.T) {
	b := &historyBuilder{}
	read := b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(1, "trip-9001", 5001), rec(2, "trip-9001", 5002))
	v := CheckOne(b.h, ExactlyOnce)
	requireViolation(t, v, read, "trip-9001 read committed twice in fares: at fares-2 offset 1 and at fares-2 offset 2")
	require.Empty(t, v.Violations[0].Related)
}

// Two committed writes of one trip are a duplicate before anyone reads
// them: every read_committed reader of the topic will see both. It is
// reported at the commit of the second.
func TestExactlyOnceDuplicateCommittedTwice(t *testing.T) {
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 42, "trip-9001")
	second := b.committedTxn("B", 10, session{"fare-writer-7-b", 4002, 0}, "fares-2", 44, "trip-9001")
	v := CheckOne(b.h, ExactlyOnce)
	requireViolation(t, v, second+1,
		"trip-9001 committed twice in fares: at fares-2 offset 42 and at fares-2 offset 44 (op 2 committed the first)")

	b.op(second + 1).Req.Commit = false // aborted: no reader sees it
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

// Idempotent writes outside a transaction are committed when acknowledged
// (seed 001): a resend under a new producer id lands a second copy.
func TestExactlyOnceDuplicateIdempotentResend(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, session{"", 9, 0}, "fares-2", 7, "trip-1")
	again := b.produce("B", 2, 3, session{"", 10, 0}, "fares-2", 8, "trip-1")
	requireViolation(t, CheckOne(b.h, ExactlyOnce), again,
		"trip-1 committed twice in fares: at fares-2 offset 7 and at fares-2 offset 8 (op 0 committed the first)")

	b.op(again).Req.ProducerID = 9 // a retry of the same batch: the first one's offset, whatever it says
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

func TestExactlyOnceSameTripInTwoTopicsIsNoDuplicate(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	b.fetch("R", 2, 3, "tolls-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

func TestExactlyOnceDuplicateOnlyInReadCommittedData(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("R", 0, 1, "fares-2", 0, model.ReadUncommitted, rec(40, "trip-9001", 4001), rec(42, "trip-9001", 4001))
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

func TestExactlyOnceLostWrite(t *testing.T) {
	b := &historyBuilder{}
	w := b.committedTxn("A", 0, fw0, "fares-2", 42, "trip-9001")
	b.committedTxn("A", 10, fw0, "fares-2", 44, "trip-9002")
	skipping := b.fetch("R", 20, 21, "fares-2", 40, model.ReadCommitted, rec(44, "trip-9002", 4001))
	v := CheckOne(b.h, ExactlyOnce)
	requireViolation(t, v, skipping,
		"trip-9001 committed at fares-2 offset 42 (op 1) missing from a read_committed fetch of offsets 40 to 44")
	require.Equal(t, []int{w, w + 1}, v.Violations[0].Related, "the write and its commit")
}

func TestExactlyOnceNotLostOutsideWhatTheFetchCovered(t *testing.T) {
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 42, "trip-9001")
	b.fetch("R", 20, 21, "fares-2", 43, model.ReadCommitted, rec(44, "trip-9002", 4001)) // starts above it
	b.fetch("R", 22, 23, "fares-2", 0, model.ReadCommitted, rec(10, "trip-1", 4001))     // ends below it
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

func TestExactlyOnceAbortedWriteIsNotLost(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 42, "trip-9001")
	b.endTxn("A", 2, 3, fw0, false)
	b.fetch("R", 20, 21, "fares-2", 40, model.ReadCommitted, rec(44, "trip-9002", 4001))
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

func TestExactlyOnceInconsistentOffsets(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 40, "trip-1")
	b.fetch("R", 2, 3, "fares-2", 40, model.ReadUncommitted, rec(40, "trip-1", 4001))
	other := b.fetch("R", 4, 5, "fares-2", 40, model.ReadUncommitted, rec(40, "trip-1", 4002))
	requireViolation(t, CheckOne(b.h, ExactlyOnce), other,
		"fares-2 offset 40 holds trip-1 of producer id 4002, but op 0 showed trip-1 of producer id 4001 there")

	b.op(other).Result.Resp.Records[0].ProducerID = model.NoProducerID // a fetch that does not say
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
}

// A client that sends other records under sequence numbers it already used
// gets the first batch's offset back, as a duplicate (KIP-98): the answer
// says nothing about what the offset holds. Under new numbers it does.
func TestExactlyOnceRetriedSequenceNamesTheFirstBatchOffset(t *testing.T) {
	b := &historyBuilder{}
	b.produce("A", 0, 1, fw0, "fares-2", 40, "junk-1")
	retry := b.produce("A", 2, 3, fw0, "fares-2", 40, "junk-2")
	requireHeld(t, CheckOne(b.h, ExactlyOnce))

	b.op(retry).Req.Sequence = 1
	requireViolation(t, CheckOne(b.h, ExactlyOnce), retry,
		"fares-2 offset 40 holds junk-2 of producer id 4001, but op 0 showed junk-1 of producer id 4001 there")
}

// The duplicate is the copy that became visible second, whatever the
// order of the operations in the file: here the first transaction written
// commits last.
func TestExactlyOnceDuplicateIsTheCopyCommittedLast(t *testing.T) {
	b := &historyBuilder{}
	b.addPartitions("A", 0, 1, fw0, "fares-2")
	b.produce("A", 1, 2, fw0, "fares-2", 42, "trip-9001")
	late := b.endTxn("A", 3, 50, fw0, true)
	first := b.committedTxn("B", 10, session{"fare-writer-7-b", 4002, 0}, "fares-2", 44, "trip-9001") + 1
	v := CheckOne(b.h, ExactlyOnce)
	requireViolation(t, v, late,
		"trip-9001 committed twice in fares: at fares-2 offset 44 and at fares-2 offset 42 (op 5 committed the first)")
	require.Equal(t, []int{first}, v.Violations[0].Related)
}

// A consumer group's (KIP-848) pipeline: W1 (epoch 1) reads trip-9001
// from trips-0 and writes it; W2 is given trips-0 at epoch 3, writes it
// too and commits. W1's commit of its offset at epoch 1 refused
// ILLEGAL_GENERATION, W1 aborts, and the trip is committed once. A
// broker that takes the commit lets W1 commit a second copy.
func TestExactlyOnceConsumerGroupZombieFencedByMemberEpoch(t *testing.T) {
	w1, w2 := session{"fare-worker-w1", 4101, 0}, session{"fare-worker-w2", 4102, 0}
	b := &historyBuilder{}
	b.consumerHeartbeat("W1", 0, 1, "g", "w1", 1, "trips-0")
	b.addPartitions("W1", 2, 3, w1, "fares-2")
	b.produce("W1", 3, 4, w1, "fares-2", 0, "trip-9001")
	b.consumerHeartbeat("W1", 5, 6, "g", "w1", 2, []model.Partition{}...)
	b.consumerHeartbeat("W2", 7, 8, "g", "w2", 3, "trips-0")
	b.committedTxn("W2", 10, w2, "fares-2", 1, "trip-9001")
	zombie := b.txnOffsetCommit("W1", 20, 21, w1, "g", 1, "trips-0", 1)
	b.op(zombie).Req.MemberID = "w1"
	b.fail(zombie, model.IllegalGeneration)
	end := b.endTxn("W1", 22, 23, w1, false)
	requireHeld(t, CheckOne(b.h, ExactlyOnce))
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	b.op(zombie).Result = model.OK(model.NewResponse())
	b.op(end).Req.Commit = true
	requireViolation(t, CheckOne(b.h, ExactlyOnce), end, "")
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), zombie, "")
}

// A record shown at the clock's last instant is judged too: nothing comes
// after it to say that every record shown before it has come.
func TestExactlyOnceDuplicateShownAtTheLastInstant(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("R", 0, 1, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	second := b.fetch("S", 2, math.MaxInt64, "fares-3", 0, model.ReadCommitted, rec(7, "trip-9001", 4002))
	requireViolation(t, CheckOne(b.h, ExactlyOnce), second,
		"trip-9001 read committed twice in fares: at fares-2 offset 42 and at fares-3 offset 7 (op 0 read the first)")
}
