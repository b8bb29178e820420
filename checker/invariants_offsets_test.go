package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

var ctp = session{"ctp-0", 7001, 0}

// commitOffset adds a transaction of s that commits offset for trips-0 in
// group g at generation gen, called at call; it returns the
// txn_offset_commit's id.
func (b *historyBuilder) commitOffset(proc string, call int64, s session, gen int32, offset int64) int {
	id := b.txnOffsetCommit(proc, call, call+1, s, "g", gen, "trips-0", offset)
	b.endTxn(proc, call+2, call+3, s, true)
	return id
}

func TestOffsetsMonotonicHolds(t *testing.T) {
	b := &historyBuilder{}
	b.joinGroup("C", 0, 1, "g", 1, "trips-0")
	b.commitOffset("C", 2, ctp, 1, 3)
	b.offsetFetch("C", 6, 7, "g", "trips-0", 3)
	b.commitOffset("C", 8, ctp, 1, 6)
	b.offsetFetch("C", 12, 13, "g", "trips-0", 6)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

func TestOffsetsMonotonicCommitMovesBackward(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("B", 0, ctp, -1, 6)
	// A zombie with the groupId-string overload: no generation check, but
	// the offset goes back.
	zombie := b.commitOffset("A", 10, session{"ctp-0", 7001, 1}, -1, 3)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, zombie, "group g trips-0 committed offset 3 after op 0 had committed 6")
	require.Equal(t, []int{0, 1}, v.Violations[0].Related)
}

func TestOffsetsMonotonicAbortedCommitDoesNotCount(t *testing.T) {
	b := &historyBuilder{}
	b.txnOffsetCommit("A", 0, 1, ctp, "g", -1, "trips-0", 6)
	b.endTxn("A", 2, 3, ctp, false)
	b.commitOffset("A", 10, ctp, -1, 3)
	b.offsetFetch("A", 20, 21, "g", "trips-0", 3)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

func TestOffsetsMonotonicFetchBelowEarlierFetch(t *testing.T) {
	b := &historyBuilder{}
	first := b.offsetFetch("A", 0, 10, "g", "trips-0", 6)
	overlapping := b.offsetFetch("B", 5, 12, "g", "trips-0", 3)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	b.op(overlapping).Call = 11
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, overlapping, "offset_fetch of group g trips-0 returned 3 after op 0 returned 6")
	require.Equal(t, []int{first}, v.Violations[0].Related)
}

func TestOffsetsMonotonicFetchBelowCommitted(t *testing.T) {
	b := &historyBuilder{}
	commit := b.commitOffset("A", 0, ctp, 1, 6)
	none := b.offsetFetch("B", 2, 5, "g", "trips-0", -1)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic)) // called before the commit returned

	b.op(none).Call = 4
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), none, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")
	require.Equal(t, 0, commit)
}

// A fetch of all partitions reads each partition it lists, and a
// partition a commit names that it leaves out reads as no offset. One it
// lists as UNSTABLE_OFFSET_COMMIT reads nothing.
func TestOffsetsMonotonicFetchOfAllPartitions(t *testing.T) {
	b := &historyBuilder{}
	commit := b.plainCommit("A", 0, 1, "g", "", -1, "trips-0", 6)
	b.offsetFetchAll("B", 2, 3, "g", map[model.Partition]int64{"trips-0": 6})
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	below := b.offsetFetchAll("B", 4, 5, "g", map[model.Partition]int64{"trips-0": 3})
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, below, "offset_fetch of group g trips-0 returned 3 after op 1 returned 6")

	b.op(below).Result.Resp.FetchedOffsets = nil
	v = CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, below, "offset_fetch of group g trips-0 returned -1 after op 1 returned 6")

	b.op(below).Result.Resp.Unstable = []model.Partition{"trips-0"}
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	require.Equal(t, 0, commit)
}

// In the marker window a fetch of all partitions with require_stable may
// leave out a partition whose only offset waits for its marker. It must
// still list one that a plain commit set.
func TestOffsetsMonotonicFetchOfAllPartitionsInTheMarkerWindow(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("A", 0, ctp, 1, 6)
	fetch := b.offsetFetchAll("B", 4, 5, "g", nil)
	b.op(fetch).Req.RequireStable = true
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), fetch, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")

	b.h.AsyncMarkers = true
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	plain := b.plainCommit("C", 6, 7, "g", "", -1, "trips-1", 2)
	later := b.offsetFetchAll("B", 8, 9, "g", map[model.Partition]int64{"trips-0": 6})
	b.op(later).Req.RequireStable = true
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, later, "offset_fetch of group g trips-1 returned -1 after op 3 committed 2")
	require.Equal(t, []int{plain}, v.Violations[0].Related)
}

// In the marker window a fetch that does not ask for stable offsets may
// answer the offset before a commit whose EndTxn returned, until the
// group's marker lands. With require_stable it may not.
func TestOffsetsMonotonicFetchInTheMarkerWindow(t *testing.T) {
	for _, window := range []func(*histories.History){
		func(h *histories.History) { h.AsyncMarkers = true },
		func(h *histories.History) { h.WallClock = true },
	} {
		b := &historyBuilder{}
		b.commitOffset("A", 0, ctp, 1, 6)
		old := b.offsetFetch("B", 4, 5, "g", "trips-0", -1)
		requireViolation(t, CheckOne(b.h, OffsetsMonotonic), old, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")

		window(&b.h)
		requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

		b.op(old).Req.RequireStable = true
		requireViolation(t, CheckOne(b.h, OffsetsMonotonic), old, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")
	}
}

func TestOffsetsMonotonicStaleGeneration(t *testing.T) {
	b := &historyBuilder{}
	b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	join := b.joinGroup("B", 10, 12, "g", 2, "trips-0")
	stale := b.txnOffsetCommit("A", 13, 14, ctp, "g", 1, "trips-0", 6)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, stale, "txn_offset_commit of group g at generation 1 accepted after op 1 returned generation 2")
	require.Equal(t, []int{join}, v.Violations[0].Related)

	// Sent before the join answered: the generation may not have moved yet.
	b.op(stale).Call = 11
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

}

// A round recorded in two parts hands partitions out in its sync_group:
// the zombie's commit is judged against that answer, of the generation
// its request names.
func TestOffsetsMonotonicZombieAfterSplitRound(t *testing.T) {
	b := &historyBuilder{}
	first := b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	join := b.joinGroup("B", 10, 11, "g", 2)
	b.op(join).Req.JoinOnly = true
	req := model.NewRequest()
	req.Group, req.MemberID, req.GenerationID = "g", "b", 2
	resp := model.NewResponse()
	resp.Assignment = []model.Partition{"trips-0"}
	sync := b.add("B", 11, 12, model.SyncGroup, req, resp)
	zombie := b.txnOffsetCommit("A", 13, 14, ctp, "g", -1, "trips-0", 6)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, zombie, "txn_offset_commit of group g for trips-0 with no generation (groupId string) accepted from A, whose last join (op 0) answered generation 1, after op 2 gave trips-0 to B at generation 2")
	require.Equal(t, []int{first, sync}, v.Violations[0].Related)

	// The sync answered after the commit was sent: no zombie yet.
	b.op(sync).Return = 14
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

// The groupId-string overload carries no generation, but its zombie is
// still one: its process's last join answered an older generation, and a
// newer one gave its partition to another process (seed 002).
func TestOffsetsMonotonicZombieGroupIDString(t *testing.T) {
	b := &historyBuilder{}
	first := b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	join := b.joinGroup("B", 10, 12, "g", 2, "trips-0")
	zombie := b.txnOffsetCommit("A", 13, 14, ctp, "g", -1, "trips-0", 6)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, zombie, "txn_offset_commit of group g for trips-0 with no generation (groupId string) accepted from A, whose last join (op 0) answered generation 1, after op 1 gave trips-0 to B at generation 2")
	require.Equal(t, []int{first, join}, v.Violations[0].Related)

	// The new generation gave B another partition: A's is still its own.
	b.op(join).Result.Resp.Assignment = []model.Partition{"trips-1"}
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.op(join).Result.Resp.Assignment = []model.Partition{"trips-0"}

	// A rejoined the new generation: no zombie.
	rejoin := b.joinGroup("A", 11, 12, "g", 2)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// Its rejoin went unanswered: it may be in any generation.
	b.op(rejoin).Returned = false
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// Its rejoin was sent at the instant it committed, and answered
	// after: it may have been sent first (a tie is no order).
	b.op(rejoin).Call, b.op(rejoin).Return, b.op(rejoin).Returned = 13, 15, true
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.op(rejoin).Call = 14
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), zombie, "")

	// Two joins sent at one instant, one unanswered when it committed:
	// either may be its last.
	b.op(rejoin).Call, b.op(rejoin).Return, b.op(rejoin).Returned = 0, 0, false
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.op(rejoin).Return, b.op(rejoin).Returned = 1, true // answered generation 2 too: the newer is its own
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.op(rejoin).Result.Resp.GenerationID = 1
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), zombie, "")
	answered := *b.op(first)
	b.lose(first) // whichever of the two the file lists first
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	*b.op(first) = answered

	// Its only join answered at the instant it committed: the commit may
	// have gone first, while A was in no generation it knew of.
	b.op(rejoin).Kind = model.Heartbeat // no longer a join
	b.op(first).Return = 13
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.op(first).Return = 12
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), zombie, "")

	// A process that never joined speaks for no generation.
	b.op(zombie).Proc = "C"
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

// Two processes' operations at one instant of a coarse clock may have
// happened in either order, so the check orders them only when one
// returned strictly before the other was called: a tie is never a breach
// (the linearizability search, porcupine, reads a tie as an overlap too).
// One instant later it is.
func TestOffsetsMonotonicTiesAreNoOrder(t *testing.T) {
	other := session{"ctp-1", 7002, 0}
	for _, c := range []struct {
		name string
		// write returns the operation called at the tie, and the one
		// that breaks the check once it is called an instant later.
		write func(b *historyBuilder) (atTie, breaks int, tie int64)
	}{
		{"a commit below one whose commit returned as it was committed", func(b *historyBuilder) (int, int, int64) {
			b.commitOffset("B", 0, ctp, -1, 6) // its end_txn returns at 3
			back := b.txnOffsetCommit("A", 1, 2, other, "g", -1, "trips-0", 3)
			return b.endTxn("A", 3, 5, other, true), back, 3
		}},
		{"an offset_fetch below one that returned as it was called", func(b *historyBuilder) (int, int, int64) {
			b.offsetFetch("A", 0, 10, "g", "trips-0", 6)
			back := b.offsetFetch("B", 10, 12, "g", "trips-0", 3)
			return back, back, 10
		}},
		{"an offset_fetch below a commit that returned as it was called", func(b *historyBuilder) (int, int, int64) {
			b.commitOffset("A", 0, ctp, 1, 6) // its end_txn returns at 3
			none := b.offsetFetch("B", 3, 5, "g", "trips-0", -1)
			return none, none, 3
		}},
		{"a commit of a generation older than a join answered as it was called", func(b *historyBuilder) (int, int, int64) {
			b.joinGroup("A", 0, 1, "g", 1, "trips-0")
			b.joinGroup("B", 10, 12, "g", 2, "trips-0")
			stale := b.txnOffsetCommit("A", 12, 14, ctp, "g", 1, "trips-0", 6)
			return stale, stale, 12
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &historyBuilder{}
			atTie, breaks, tie := c.write(b)
			require.Equal(t, tie, b.op(atTie).Call)
			requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

			b.op(atTie).Call = tie + 1
			v := CheckOne(b.h, OffsetsMonotonic)
			require.Equal(t, Violated, v.Status, "one instant later")
			require.Equal(t, breaks, v.Violations[0].Op)
		})
	}
}

// The same offset again is no step back: a commit of what was committed
// (a consumer with nothing new, a retry) and a fetch of it.
func TestOffsetsMonotonicSameOffsetAgainHolds(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("A", 0, ctp, -1, 6)
	b.offsetFetch("A", 4, 5, "g", "trips-0", 6)
	b.commitOffset("A", 6, session{"ctp-0", 7001, 1}, -1, 6)
	b.offsetFetch("B", 10, 11, "g", "trips-0", 6)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

// A plain offset_commit is committed at its answer: a later one of a
// lower offset moves the group's offset backward, and a fetch called
// after it returned must show it, in the marker window too.
func TestOffsetsMonotonicPlainCommits(t *testing.T) {
	b := &historyBuilder{}
	b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	first := b.plainCommit("A", 2, 3, "g", "m", 1, "trips-0", 6)
	b.offsetFetch("A", 4, 5, "g", "trips-0", 6)
	b.plainCommit("A", 6, 7, "g", "m", 1, "trips-0", 8)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	back := b.plainCommit("B", 10, 11, "g", "", -1, "trips-0", 3)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, back, "group g trips-0 committed offset 3 after op 1 had committed 6")
	require.Equal(t, []int{first}, v.Violations[0].Related)

	// Called before the earlier commit returned: no order between them.
	b.op(back).Call = 2
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// A refused commit committed nothing.
	b.op(back).Call = 10
	b.fail(back, model.UnknownMemberID)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

// A plain commit needs no marker, so the marker window does not excuse a
// fetch that misses it, as it does a transaction's offset.
func TestOffsetsMonotonicPlainCommitVisibleAtOnce(t *testing.T) {
	b := &historyBuilder{}
	b.h.AsyncMarkers = true
	commit := b.plainCommit("A", 0, 1, "g", "", -1, "trips-0", 6)
	stale := b.offsetFetch("B", 2, 3, "g", "trips-0", -1)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, stale, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")
	require.Equal(t, []int{commit}, v.Violations[0].Related)
}

// A plain commit and a transaction's commit are held to one order.
func TestOffsetsMonotonicPlainAfterTransactional(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("B", 0, ctp, -1, 6) // its end_txn returns at 3
	back := b.plainCommit("A", 4, 5, "g", "", -1, "trips-0", 3)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, back, "group g trips-0 committed offset 3 after op 0 had committed 6")
	require.Equal(t, []int{0, 1}, v.Violations[0].Related)
}

// A member's plain commit at a generation a later join had left behind is
// a zombie's, as a transactional one is.
func TestOffsetsMonotonicPlainCommitStaleGeneration(t *testing.T) {
	b := &historyBuilder{}
	first := b.joinGroup("A", 0, 1, "g", 1, "trips-0")
	join := b.joinGroup("B", 10, 12, "g", 2, "trips-0")
	stale := b.plainCommit("A", 13, 14, "g", "m", 1, "trips-0", 6)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, stale, "offset_commit of group g at generation 1 accepted after op 1 returned generation 2")
	require.Equal(t, []int{join}, v.Violations[0].Related)

	b.op(stale).Req.GenerationID, b.op(stale).Req.MemberID = -1, ""
	v = CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, stale, "offset_commit of group g for trips-0 with no generation (a simple consumer's) accepted from A, whose last join (op 0) answered generation 1, after op 1 gave trips-0 to B at generation 2")
	require.Equal(t, []int{first, join}, v.Violations[0].Related)
}

// consumerHeartbeat is a consumer_group_heartbeat of member answered at
// epoch with assigned (nil: the answer carries no assignment).
func (b *historyBuilder) consumerHeartbeat(proc string, call, ret int64, group, member string, epoch int32, assigned ...model.Partition) int {
	req := model.NewRequest()
	req.Group, req.MemberID = group, member
	resp := model.NewResponse()
	resp.MemberID, resp.MemberEpoch = member, epoch
	if assigned != nil {
		resp.MemberAssignment = &assigned
	}
	return b.add(proc, call, ret, model.ConsumerGroupHeartbeat, req, resp)
}

// kip848Handover is a consumer group where W1 (epoch 1) held trips-0 and
// trips-1, moved on to epoch 2 with trips-0 alone, and W2 was then given
// trips-1 at epoch 2.
func kip848Handover() *historyBuilder {
	b := &historyBuilder{}
	b.consumerHeartbeat("W1", 0, 1, "g", "w1", 1, "trips-0", "trips-1")
	b.consumerHeartbeat("W2", 2, 3, "g", "w2", 2, []model.Partition{}...)
	b.consumerHeartbeat("W1", 4, 5, "g", "w1", 2, "trips-0")
	b.consumerHeartbeat("W2", 6, 7, "g", "w2", 2, "trips-1")
	return b
}

// A consumer group's commits are judged by member epoch: W1's commit of
// trips-1 at its old epoch 1, after W2 was given trips-1 at epoch 2, is a
// zombie's, plain or transactional, whatever the offset.
func TestOffsetsMonotonicConsumerGroupStaleMemberEpoch(t *testing.T) {
	for _, kind := range []model.Kind{model.OffsetCommit, model.TxnOffsetCommit} {
		t.Run(string(kind), func(t *testing.T) {
			b := kip848Handover()
			var stale int
			if kind == model.OffsetCommit {
				stale = b.plainCommit("W1", 10, 11, "g", "w1", 1, "trips-1", 9)
			} else {
				stale = b.txnOffsetCommit("W1", 10, 11, ctp, "g", 1, "trips-1", 9)
				b.op(stale).Req.MemberID = "w1"
				b.endTxn("W1", 12, 13, ctp, true)
			}
			v := CheckOne(b.h, OffsetsMonotonic)
			requireViolation(t, v, stale, string(kind)+" of consumer group g for trips-1 at member epoch 1 accepted from w1, "+
				"after op 2 moved it to epoch 2 and op 3 gave trips-1 to w2 at epoch 2")
			require.Equal(t, []int{2, 3}, v.Violations[0].Related)

			// Refused by member epoch, it commits nothing.
			b.fail(stale, model.StaleMemberEpoch)
			requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
		})
	}
}

// What Kafka may accept is not called stale: W1's commit of trips-0,
// which it still holds, at its old epoch (KIP-1251), its commit of
// trips-1 at its new epoch (Kafka refuses it, but that is linearizable's
// to say), and a commit called before W2's answer returned.
func TestOffsetsMonotonicConsumerGroupEpochsKafkaMayTake(t *testing.T) {
	b := kip848Handover()
	b.plainCommit("W1", 10, 11, "g", "w1", 1, "trips-0", 9)
	b.plainCommit("W1", 12, 13, "g", "w1", 2, "trips-1", 9)
	b.plainCommit("W1", 6, 14, "g", "w1", 1, "trips-1", 10)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// A member that gives up trips-1 but stays at its epoch (the
	// partitions of a topic it no longer subscribes to) may commit at it.
	b = &historyBuilder{}
	b.consumerHeartbeat("W1", 0, 1, "g", "w1", 1, "trips-0", "trips-1")
	b.consumerHeartbeat("W2", 2, 3, "g", "w2", 2, "trips-1")
	b.plainCommit("W1", 4, 5, "g", "w1", 1, "trips-1", 9)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// Called after W2's answer, the early commit is a zombie's.
	b = kip848Handover()
	early := b.plainCommit("W1", 8, 14, "g", "w1", 1, "trips-1", 10)
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), early, "")
}

// The groupId-string overload to a consumer group (4.x takes it
// unchecked): W1's last heartbeat answered epoch 1, and W2 was given
// trips-0 at epoch 3 before W1 committed it, so W1's commit is a
// zombie's. W2's own commit, or W1's whose last heartbeat is unanswered,
// is not judged so.
func TestOffsetsMonotonicConsumerGroupZombieOverload(t *testing.T) {
	b := &historyBuilder{}
	last := b.consumerHeartbeat("W1", 0, 1, "g", "w1", 1, "trips-0")
	given := b.consumerHeartbeat("W2", 2, 3, "g", "w2", 3, "trips-0")
	zombie := b.txnOffsetCommit("W1", 10, 11, ctp, "g", -1, "trips-0", 9)
	b.endTxn("W1", 12, 13, ctp, true)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, zombie, "txn_offset_commit of consumer group g for trips-0 with no member epoch (groupId string) accepted from W1, "+
		"whose last heartbeat (op 0) answered member epoch 1, after op 1 gave trips-0 to W2 at epoch 3")
	require.Equal(t, []int{last, given}, v.Violations[0].Related)

	b.op(zombie).Proc = "W2"
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	b.op(zombie).Proc = "W1"
	b.lose(b.consumerHeartbeat("W1", 5, 6, "g", "w1", 1))
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
}

// An offset past offsets.retention.minutes may have been deleted by the
// group coordinator's cleanup, so a fetch answered -1 then is no
// regression; before the retention has passed, it is one.
func TestOffsetsMonotonicExpiredOffset(t *testing.T) {
	history := func(tickMs int64) (histories.History, int) {
		b := &historyBuilder{}
		b.h.Expiry = model.Expiry{OffsetsRetentionMinutes: 1}
		b.plainCommit("C", 0, 1, "g", "", -1, "trips-0", 5)
		b.offsetFetch("C", 2, 3, "g", "trips-0", 5)
		b.add("clock", 4, 4, model.Tick, model.Request{Ms: tickMs}, model.NewResponse())
		return b.h, b.offsetFetch("C", 5, 6, "g", "trips-0", model.NoOffset)
	}
	expired, _ := history(60_000)
	requireHeld(t, CheckOne(expired, OffsetsMonotonic))
	early, fetch := history(59_999)
	requireViolation(t, CheckOne(early, OffsetsMonotonic), fetch, "offset_fetch of group g trips-0 returned -1 after op 1 returned 5")
}

// A group deleted once Empty (offset expiry) starts again at generation
// 1: a commit at it is no zombie's, though an older join answered
// generation 5. Without the later join at 1, the commit is stale.
func TestOffsetsMonotonicGroupMadeAgain(t *testing.T) {
	history := func(remade bool) (histories.History, int) {
		b := &historyBuilder{}
		b.joinGroup("C", 0, 1, "g", 5, "trips-0")
		if remade {
			b.joinGroup("D", 10, 11, "g", 1, "trips-0")
		}
		return b.h, b.plainCommit("D", 12, 13, "g", "d", 1, "trips-0", 3)
	}
	remade, _ := history(true)
	requireHeld(t, CheckOne(remade, OffsetsMonotonic))
	stale, commit := history(false)
	requireViolation(t, CheckOne(stale, OffsetsMonotonic), commit, "offset_commit of group g at generation 1 accepted after op 0 returned generation 5")
}

// A commit whose answer refused one partition alone (its metadata too
// large) committed the others and not that one: offsets-monotonic
// judges each partition by its own answer.
func TestOffsetsMonotonicPartitionRefusedAlone(t *testing.T) {
	b := &historyBuilder{}
	b.plainCommit("A", 0, 1, "g", "", -1, "trips-0", 6)
	b.plainCommit("A", 2, 3, "g", "", -1, "trips-1", 6)
	partial := b.plainCommit("B", 4, 5, "g", "", -1, "trips-0", 3)
	b.op(partial).Req.Offsets["trips-1"] = 9
	b.op(partial).Result.Resp.PartitionErrors = map[model.Partition]model.Code{"trips-0": model.OffsetMetadataTooLarge}
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))
	b.offsetFetch("A", 6, 7, "g", "trips-0", 6)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// The refused partition's offset does not count, so a fetch of it
	// that shows the offset before is right, and one of the taken
	// partition that shows the offset before is not.
	stale := b.offsetFetch("A", 10, 11, "g", "trips-1", 6)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, stale, "offset_fetch of group g trips-1 returned 6 after op 2 committed 9")

	// Taken whole, the commit moves trips-0 back.
	b.op(partial).Result.Resp.PartitionErrors = nil
	v = CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, partial, "group g trips-0 committed offset 3 after op 0 had committed 6")
}

// The fold judges a fetch in call order, but a tick called after the
// fetch and by its return still moves the clock the retention counts
// by. So a -1 answered then waits: the tick at 7 may have expired the
// offset before the return at 10, and a tick at 11 may not.
func TestOffsetsMonotonicExpiryByATickBeforeTheReturn(t *testing.T) {
	history := func(tickAt int64) (histories.History, int) {
		b := &historyBuilder{}
		b.h.Expiry = model.Expiry{OffsetsRetentionMinutes: 1}
		b.plainCommit("C", 0, 1, "g", "", -1, "trips-0", 5)
		b.offsetFetch("C", 2, 3, "g", "trips-0", 5)
		fetch := b.offsetFetch("C", 5, 10, "g", "trips-0", model.NoOffset)
		b.add("clock", tickAt, tickAt, model.Tick, model.Request{Ms: 60_000}, model.NewResponse())
		return b.h, fetch
	}
	within, _ := history(7)
	requireHeld(t, CheckOne(within, OffsetsMonotonic))
	at, _ := history(10)
	requireHeld(t, CheckOne(at, OffsetsMonotonic))
	after, fetch := history(11)
	requireViolation(t, CheckOne(after, OffsetsMonotonic), fetch, "offset_fetch of group g trips-0 returned -1 after op 1 returned 5")
}

// A fetch of all partitions reads a partition it left out as -1 only when
// a commit of the history names it, and that commit may be called after
// the fetch. Here only an earlier answer listed trips-0 when the fetch
// left it out.
func TestOffsetsMonotonicFetchOfAllPartitionsCommitCalledLater(t *testing.T) {
	b := &historyBuilder{}
	listed := b.offsetFetchAll("B", 0, 1, "g", map[model.Partition]int64{"trips-0": 6})
	left := b.offsetFetchAll("B", 2, 3, "g", nil)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	b.plainCommit("A", 4, 5, "g", "", -1, "trips-0", 7)
	v := CheckOne(b.h, OffsetsMonotonic)
	requireViolation(t, v, left, "offset_fetch of group g trips-0 returned -1 after op 0 returned 6")
	require.Equal(t, []int{listed}, v.Violations[0].Related)

	// A partition listed below an earlier answer comes after it in
	// partition order, so the left-out one is the fetch's finding.
	b.op(left).Result.Resp.FetchedOffsets = map[model.Partition]int64{"trips-1": 0}
	b.op(listed).Result.Resp.FetchedOffsets["trips-1"] = 3
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), left, "offset_fetch of group g trips-0 returned -1 after op 0 returned 6")
}

// A topic's deletion removes its offsets at a moment no answer bounds
// (OffsetMetadataManager.onPartitionsDeleted), so a fetch called after
// the deletion's call that shows none, or a commit that starts over, is
// no step back. The same fetch with no deletion, or with a refused one,
// is.
func TestOffsetsMonotonicAfterTopicDeletion(t *testing.T) {
	b := &historyBuilder{}
	b.commitOffset("C", 0, ctp, -1, 6)
	b.offsetFetch("C", 10, 11, "g", "trips-0", 6)
	del := model.NewRequest()
	del.Topic = "trips"
	deletion := b.add("admin", 20, 21, model.DeleteTopics, del, model.NewResponse())
	gone := b.offsetFetch("C", 30, 31, "g", "trips-0", model.NoOffset)
	b.commitOffset("C", 40, ctp, -1, 2)
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	b.op(deletion).Result = model.Fail(model.TopicDeletionDisabled)
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), gone, "offset_fetch of group g trips-0 returned -1 after op 2 returned 6")

	b.op(deletion).Result = model.OK(model.NewResponse())
	b.op(deletion).Req.Topic = "fares"
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), gone, "offset_fetch of group g trips-0 returned -1 after op 2 returned 6")
}

// A fetch of all partitions after a topic's deletion may leave the
// topic's partitions out: the deletion removed their offsets.
func TestOffsetsMonotonicFetchOfAllPartitionsAfterTopicDeletion(t *testing.T) {
	b := &historyBuilder{}
	b.plainCommit("A", 0, 1, "g", "", -1, "trips-0", 6)
	b.plainCommit("A", 2, 3, "g", "", -1, "fares-0", 4)
	del := model.NewRequest()
	del.Topic = "trips"
	deletion := b.add("admin", 10, 11, model.DeleteTopics, del, model.NewResponse())
	after := b.offsetFetchAll("B", 20, 21, "g", map[model.Partition]int64{"fares-0": 4})
	requireHeld(t, CheckOne(b.h, OffsetsMonotonic))

	// Another topic's partitions are judged as before.
	b.op(after).Result.Resp.FetchedOffsets = nil
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), after, "offset_fetch of group g fares-0 returned -1 after op 1 committed 4")

	// Without the deletion, leaving trips-0 out is a regression.
	b.op(after).Result.Resp.FetchedOffsets = map[model.Partition]int64{"fares-0": 4}
	b.op(deletion).Req.Topic = "other"
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), after, "offset_fetch of group g trips-0 returned -1 after op 0 committed 6")
}
