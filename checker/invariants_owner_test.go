package checker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// owning sets what heartbeat id sends: its member epoch, and the
// partitions it owns.
func (b *historyBuilder) owning(id int, epoch int32, owned ...model.Partition) int {
	if owned == nil {
		owned = []model.Partition{}
	}
	b.op(id).Req.MemberEpoch, b.op(id).Req.OwnedPartitions = epoch, &owned
	return id
}

// joins makes heartbeat id a join with a rebalance timeout of 300 s.
func (b *historyBuilder) joins(id int) int {
	b.op(id).Req.RebalanceTimeoutMs = 300_000
	return b.owning(id, model.JoinMemberEpoch)
}

// ownerHandover is kip848-revoke-then-reassign up to W1's revocation:
// W1 holds trips-0 and trips-1 at epoch 1, W2 joins at epoch 2 with
// nothing, and W1, still owning both, is told to revoke trips-1.
func ownerHandover() *historyBuilder {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0", "trips-1"))
	b.joins(b.consumerHeartbeat("W2", 20, 30, "g", "w2", 2, []model.Partition{}...))
	b.owning(b.consumerHeartbeat("W1", 40, 50, "g", "w1", 1, "trips-0"), 1, "trips-0", "trips-1")
	return b
}

func TestOneOwnerRevokeThenReassign(t *testing.T) {
	b := ownerHandover()
	b.owning(b.consumerHeartbeat("W1", 60, 70, "g", "w1", 2), 1, "trips-0")
	b.owning(b.consumerHeartbeat("W2", 80, 90, "g", "w2", 2, "trips-1"), 2)
	requireHeld(t, CheckOne(b.h, OneOwner))
}

// W2 is given trips-1 while W1, told to revoke it, still owns it: W1's
// acknowledgement comes after.
func TestOneOwnerReassignedBeforeRevoked(t *testing.T) {
	b := ownerHandover()
	given := b.owning(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-1"), 2)
	b.owning(b.consumerHeartbeat("W1", 80, 90, "g", "w1", 2), 1, "trips-0")
	v := CheckOne(b.h, OneOwner)
	requireViolation(t, v, given, "the answer gives trips-1 to member w2 at epoch 2, but member w1, given it by op 0 at epoch 1, "+
		"still holds it: it has not left it out of its owned partitions, left, nor been fenced, and no session or rebalance "+
		"timeout can have ended since (CurrentAssignmentBuilder assigns no partition that another member holds, assigned "+
		"or pending revocation)")
	require.Equal(t, []int{0}, v.Violations[0].Related)
	require.Len(t, v.Violations, 1, "W1's later answers list trips-0 alone")
}

// A partition the answers give two members at once, with no revocation
// at all (the seeded bug assign-before-revoke).
func TestOneOwnerDoubleAssignment(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0", "trips-1", "trips-2"))
	given := b.joins(b.consumerHeartbeat("W2", 20, 30, "g", "w2", 2, "trips-2"))
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")

	// In another group the same partition is no one else's.
	b.op(given).Req.Group = "h"
	requireHeld(t, CheckOne(b.h, OneOwner))
}

// Where the history cannot tell whether W1 gave trips-1 up before W2 was
// given it, the broker has the benefit of the doubt.
func TestOneOwnerBenefitOfTheDoubt(t *testing.T) {
	cases := map[string]func(b *historyBuilder){
		// W1's acknowledgement is lost: it may have taken effect.
		"lost acknowledgement": func(b *historyBuilder) {
			b.lose(b.owning(b.consumerHeartbeat("W1", 55, 0, "g", "w1", 0), 1, "trips-0"))
		},
		// Its answer is undecided.
		"acknowledgement timed out": func(b *historyBuilder) {
			b.fail(b.owning(b.consumerHeartbeat("W1", 55, 58, "g", "w1", 0), 1, "trips-0"), model.RequestTimedOut)
		},
		// W1 acknowledges while W2's heartbeat is in flight.
		"concurrent acknowledgement": func(b *historyBuilder) {
			b.owning(b.consumerHeartbeat("W1", 65, 75, "g", "w1", 2), 1, "trips-0")
		},
		// A leave sends no owned partitions: its epoch says it all.
		"leave": func(b *historyBuilder) {
			b.op(b.consumerHeartbeat("W1", 55, 58, "g", "w1", model.LeaveMemberEpoch)).Req.MemberEpoch = model.LeaveMemberEpoch
		},
		"static leave": func(b *historyBuilder) {
			b.op(b.consumerHeartbeat("W1", 55, 58, "g", "w1", model.StaticLeaveMemberEpoch)).Req.MemberEpoch = model.StaticLeaveMemberEpoch
		},
		// W1 joins again, as a member does after it was fenced, and the
		// history leaves out what it owned.
		"rejoin": func(b *historyBuilder) {
			b.op(b.consumerHeartbeat("W1", 55, 58, "g", "w1", 3)).Req.MemberEpoch = model.JoinMemberEpoch
		},
		"fenced": func(b *historyBuilder) {
			b.fail(b.owning(b.consumerHeartbeat("W1", 55, 58, "g", "w1", 0), 1, "trips-0", "trips-1"), model.FencedMemberEpoch)
		},
		"unknown member": func(b *historyBuilder) {
			b.fail(b.owning(b.consumerHeartbeat("W1", 55, 58, "g", "w1", 0), 1, "trips-0", "trips-1"), model.UnknownMemberID)
		},
		// The clock moves past the session: the coordinator may have
		// fenced W1.
		"session timeout": func(b *historyBuilder) {
			b.add("clock", 55, 55, model.Tick, model.Request{Ms: 46_000}, model.NewResponse())
		},
	}
	for name, happens := range cases {
		t.Run(name, func(t *testing.T) {
			b := ownerHandover()
			happens(b)
			b.owning(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-1"), 2)
			requireHeld(t, CheckOne(b.h, OneOwner))
		})
	}
}

// A tick shorter than the session and the rebalance timeout fences no
// one.
func TestOneOwnerShortTickFencesNoOne(t *testing.T) {
	b := ownerHandover()
	b.add("clock", 55, 55, model.Tick, model.Request{Ms: 10_000}, model.NewResponse())
	given := b.owning(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-1"), 2)
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")
}

// W1's rebalance timer began when it was told to revoke trips-1 at epoch
// 1 (op 2, the first tick may come after it), before its next answer
// listed trips-0 again (op 4): the two ticks together pass its rebalance
// timeout, so the coordinator may have fenced it, and trips-0 may go to
// W2.
func TestOneOwnerRebalanceTimerBeganBeforeTheLastAnswer(t *testing.T) {
	b := ownerHandover()
	b.op(0).Req.RebalanceTimeoutMs = 20_000
	b.add("clock", 45, 45, model.Tick, model.Request{Ms: 15_000}, model.NewResponse())
	b.owning(b.consumerHeartbeat("W1", 54, 56, "g", "w1", 1, "trips-0"), 1, "trips-0", "trips-1")
	b.add("clock", 57, 57, model.Tick, model.Request{Ms: 15_000}, model.NewResponse())
	given := b.owning(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-0"), 2)
	requireHeld(t, CheckOne(b.h, OneOwner))

	// Had W1's epoch moved on at op 4, a timer that fences it at epoch 2
	// would have begun after op 2's answer, and so after the first tick.
	b.op(4).Result.Resp.MemberEpoch = 2
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")
}

// On a wall clock a timer fires at any moment once it is due, with no
// tick.
func TestOneOwnerWallClock(t *testing.T) {
	b := ownerHandover()
	b.h.WallClock = true
	given := b.owning(b.consumerHeartbeat("W2", 60_000, 60_010, "g", "w2", 2, "trips-1"), 2)
	requireHeld(t, CheckOne(b.h, OneOwner))

	b.op(given).Call, b.op(given).Return = 1_000, 1_010
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")
}

// An answer that came back after W2's heartbeat was sent may have taken
// effect after W2's: then W2 held trips-1 first, and the answers show no
// order in which one of them breaks the rule.
func TestOneOwnerConcurrentAnswersAreNoOrder(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 30, "g", "w1", 1, "trips-0"))
	b.joins(b.consumerHeartbeat("W2", 20, 40, "g", "w2", 2, "trips-0"))
	requireHeld(t, CheckOne(b.h, OneOwner))
}

// A member that joins with no id is named by its answer.
func TestOneOwnerMemberNamedByItsAnswer(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "consumer-1", 1, "trips-0"))
	b.op(0).Req.MemberID = ""
	b.owning(b.consumerHeartbeat("W1", 20, 30, "g", "consumer-1", 2, []model.Partition{}...), 1, "trips-0")
	given := b.joins(b.consumerHeartbeat("W2", 40, 50, "g", "consumer-2", 2, "trips-0"))
	b.op(given).Req.MemberID = ""
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")
}

func TestOneOwnerSkippedWithoutConsumerGroups(t *testing.T) {
	b, _ := seed000()
	require.Equal(t, Skipped, CheckOne(b.h, OneOwner).Status)
}

// A long recording: four members heartbeat 30,000 times, each answer
// listing its two partitions, with a tick every 100 heartbeats. One
// answer near the end gives w0's trips-0 to w1 as well: it is named, and
// only it. The check indexes each member's heartbeats, so that it does
// not go over them all again for each answer.
func TestOneOwnerLongRecording(t *testing.T) {
	b := &historyBuilder{}
	const members, beats = 4, 30_000
	var clock int64
	bad := -1
	for i := range beats {
		m := i % members
		mine := []model.Partition{model.Partition(fmt.Sprintf("trips-%d", m)), model.Partition(fmt.Sprintf("trips-%d", m+members))}
		if i == beats-3 && m == 1 {
			mine = append(mine, "trips-0")
		}
		clock += 2
		id := b.owning(b.consumerHeartbeat(fmt.Sprintf("W%d", m), clock, clock+1, "g", fmt.Sprintf("w%d", m), 1, mine...), 1, mine...)
		if len(mine) == 3 {
			bad = id
		}
		if i%100 == 0 {
			b.add("clock", clock, clock, model.Tick, model.Request{Ms: 1000}, model.NewResponse())
		}
	}
	require.NotEqual(t, -1, bad)
	v := CheckOne(b.h, OneOwner)
	requireViolation(t, v, bad, "")
	require.Len(t, v.Violations, 1, "%s", v)
}

// The rebalance timer runs only once a revocation may have begun: a
// heartbeat whose answer is lost may have begun one, so a tick past the
// rebalance timeout may have fenced W1; an answer that keeps all W1 owns
// began none, and the same tick, short of the session, fences no one.
func TestOneOwnerRebalanceTimerNeedsARevocation(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0", "trips-1"))
	b.op(0).Req.RebalanceTimeoutMs = 20_000
	beat := b.owning(b.consumerHeartbeat("W1", 40, 45, "g", "w1", 1, "trips-0", "trips-1"), 1, "trips-0", "trips-1")
	b.add("clock", 50, 50, model.Tick, model.Request{Ms: 25_000}, model.NewResponse())
	given := b.joins(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-0"))
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")

	b.lose(beat)
	requireHeld(t, CheckOne(b.h, OneOwner))
}

// A heartbeat of W1's, sent on another lane of its client before the
// answer that last listed trips-1 and never answered, may take effect
// after it: its owned partitions leave trips-1 out.
func TestOneOwnerLostHeartbeatSentBeforeTheHolding(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0", "trips-1"))
	lost := b.owning(b.consumerHeartbeat("W1b", 15, 0, "g", "w1", 0), 1, "trips-0")
	b.owning(b.consumerHeartbeat("W1", 20, 30, "g", "w1", 1, "trips-0", "trips-1"), 1, "trips-0", "trips-1")
	given := b.joins(b.consumerHeartbeat("W2", 40, 50, "g", "w2", 2, "trips-1"))
	b.lose(lost)
	requireHeld(t, CheckOne(b.h, OneOwner))

	// Answered before op 2 was sent, it took effect before.
	b.op(lost).Returned, b.op(lost).Return, b.op(lost).Result = true, 18, model.OK(model.NewResponse())
	b.op(lost).Result.Resp.MemberEpoch = 1
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")
}

// Each heartbeat answered with success starts W1's session again: 60 s
// of ticks since it was given trips-0, but 30 s since its last heartbeat,
// end no session.
func TestOneOwnerHeartbeatsKeepTheSession(t *testing.T) {
	b := &historyBuilder{}
	b.joins(b.consumerHeartbeat("W1", 0, 10, "g", "w1", 1, "trips-0"))
	b.add("clock", 20, 20, model.Tick, model.Request{Ms: 30_000}, model.NewResponse())
	beat := b.owning(b.consumerHeartbeat("W1", 40, 45, "g", "w1", 1), 1, "trips-0")
	b.add("clock", 50, 50, model.Tick, model.Request{Ms: 30_000}, model.NewResponse())
	given := b.joins(b.consumerHeartbeat("W2", 60, 70, "g", "w2", 2, "trips-0"))
	requireViolation(t, CheckOne(b.h, OneOwner), given, "")

	// Had the heartbeat been refused, the session might have ended.
	b.fail(beat, model.CoordinatorNotAvailable)
	requireHeld(t, CheckOne(b.h, OneOwner))
}
