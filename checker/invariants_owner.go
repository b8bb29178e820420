package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// checkOneOwner: in a KIP-848 consumer group no two members hold one
// partition at once, as the answers show it (kafka-tlaplus,
// consumer_group_protocol_kip_848: NoDoubleClientAssignment). A member
// holds a partition from an answer whose assignment lists it until the
// history shows that it may have given it up. A partition an answer
// takes away is still held while it is pending revocation, because the
// coordinator gives it to no one else before the member acknowledges the
// revocation (CurrentAssignmentBuilder.computeNextAssignment leaves out
// every partition whose currentPartitionEpoch is not -1, in 3.9 and
// 4.x). So the check breaks when an answer lists a partition for one
// member while another member certainly holds it. It judges answers only,
// never the model, and gives the benefit of the doubt wherever the
// history cannot tell: a lost answer, a tick that may have ended a
// session.
func checkOneOwner(a *analysis) Verdict {
	members := membersOf(a.h)
	if members == nil {
		return Verdict{Check: OneOwner, Status: Skipped, Reason: "the history has no consumer_group_heartbeat"}
	}
	timers := timersOf(a.h)
	var violations []Violation
	for _, op := range counted(a.progress, inCallOrder(a.h.Ops)) {
		key, ok := memberOf(op)
		if !ok || !op.Result.Succeeded() || op.Result.Resp.MemberAssignment == nil {
			continue
		}
		for _, p := range *op.Result.Resp.MemberAssignment {
			if v, bad := members.heldElsewhere(key, p, op, timers); bad {
				violations = append(violations, v)
				break
			}
		}
	}
	return a.verdict(OneOwner, violations)
}

// memberKey names a member: its group and its member id.
type memberKey struct{ group, id string }

// memberOf is the member a consumer_group_heartbeat is of: the id its
// answer names, or the one it sent. Before Kafka 4.0 a join sent "" and
// the coordinator chose the id (KIP-1082), so a join whose answer is lost
// is of no member the history can name.
func memberOf(op histories.Op) (memberKey, bool) {
	if op.Kind != model.ConsumerGroupHeartbeat {
		return memberKey{}, false
	}
	id := op.Req.MemberID
	if op.Result.Succeeded() && op.Result.Resp.MemberID != "" {
		id = op.Result.Resp.MemberID
	}
	return memberKey{op.Req.Group, id}, id != ""
}

// consumerMember is what the history shows of one member: its
// heartbeats in call order.
type consumerMember struct {
	beats []histories.Op
}

type consumerMembers map[memberKey]*consumerMember

// membersOf gathers the heartbeats of each member; nil when the
// history has none.
func membersOf(h histories.History) consumerMembers {
	var members consumerMembers
	for _, op := range inCallOrder(h.Ops) {
		key, ok := memberOf(op)
		if op.Kind == model.ConsumerGroupHeartbeat && members == nil {
			members = consumerMembers{}
		}
		if !ok {
			continue
		}
		m := members[key]
		if m == nil {
			m = &consumerMember{}
			members[key] = m
		}
		m.beats = append(m.beats, op)
	}
	return members
}

// heldElsewhere reports another member of given's group that certainly
// holds p when the answer given lists it for member key. A member
// certainly holds p when an answer of its own listed p before given was
// sent, and nothing it did since, up to given's answer, may have given p
// up (gaveUp), nor may a timer have fenced it (timers.mayHaveFired).
func (ms consumerMembers) heldElsewhere(key memberKey, p model.Partition, given histories.Op, timers timers) (Violation, bool) {
	var found Violation
	bad := false
	for other, m := range ms {
		if other == key || other.group != key.group {
			continue
		}
		holding, ok := m.lastHolding(p, given.Call)
		if !ok || m.mayHaveGivenUp(p, holding, given.Return) || timers.mayHaveFired(m.timeoutMs(given.Return), m.timersFrom(holding), given.Return) {
			continue
		}
		v := Violation{Op: given.ID, Related: []int{holding.ID},
			Reason: fmt.Sprintf("the answer gives %s to member %s at epoch %d, but member %s, given it by op %d at epoch %d, "+
				"still holds it: it has not left it out of its owned partitions, left, nor been fenced, and no session "+
				"or rebalance timeout can have ended since (CurrentAssignmentBuilder assigns no partition that another "+
				"member holds, assigned or pending revocation)",
				p, key.id, given.Result.Resp.MemberEpoch, other.id, holding.ID, holding.Result.Resp.MemberEpoch)}
		// The first holder by id, so that the reason does not depend on
		// the map's order.
		if !bad || holding.ID < found.Related[0] {
			found, bad = v, true
		}
	}
	return found, bad
}

// lastHolding is the member's last answer, returned before the instant
// before, whose assignment lists p: the coordinator had assigned p to the
// member by then. An answer that leaves the assignment out says nothing
// new, so it is not counted (the benefit of the doubt).
func (m *consumerMember) lastHolding(p model.Partition, before int64) (histories.Op, bool) {
	for _, op := range slices.Backward(m.beats) {
		if !op.Returned || op.Return >= before || !op.Result.Succeeded() || op.Result.Resp.MemberAssignment == nil {
			continue
		}
		if slices.Contains(*op.Result.Resp.MemberAssignment, p) {
			return op, true
		}
	}
	return histories.Op{}, false
}

// mayHaveGivenUp reports whether a heartbeat of the member may have
// taken p from it after the answer holding and before the instant until.
// A heartbeat takes effect at some moment between its call and its
// answer, or at any moment after its call when it has no answer.
func (m *consumerMember) mayHaveGivenUp(p model.Partition, holding histories.Op, until int64) bool {
	for _, op := range m.beats {
		if op.ID == holding.ID || op.Call > until || (op.Call < holding.Call && op.Returned && op.Return <= holding.Call) {
			continue
		}
		if gaveUp(op, p) {
			return true
		}
	}
	return false
}

// gaveUp reports whether the heartbeat op may have ended its member's
// hold of p at the coordinator, whatever its answer (a lost answer may
// have taken effect):
//   - its owned partitions leave p out: the member acknowledges the
//     revocation (CurrentAssignmentBuilder.ownsRevokedPartitions; a
//     request that sends no owned partitions still owns them all);
//   - it leaves, with epoch -1 or -2 (GroupMetadataManager.consumerGroupLeave,
//     consumerGroupStaticMemberGroupLeave: a static member's partitions
//     wait for its instance id, which is not another member's hold);
//   - it joins again with epoch 0, as a member does after it was fenced;
//   - it is answered FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or
//     FENCED_INSTANCE_ID: the member gives up all its partitions
//     (throwIfConsumerGroupMemberEpochIsInvalid), and the coordinator
//     may have removed it before.
func gaveUp(op histories.Op, p model.Partition) bool {
	r := op.Req
	switch {
	case r.OwnedPartitions != nil && !slices.Contains(*r.OwnedPartitions, p):
		return true
	case r.MemberEpoch == model.LeaveMemberEpoch || r.MemberEpoch == model.StaticLeaveMemberEpoch || r.MemberEpoch == model.JoinMemberEpoch:
		return true
	}
	return op.Result.Answered && model.ClassOf(op.Kind, op.Result.Err) == model.FencedConsumer
}

// timeoutMs is the least time after which a timer may fence the member:
// its session (group.consumer.session.timeout.ms, Kafka's default, as the
// model takes it) or its rebalance timeout, the least it sent by until
// (GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout fences a
// member that has not revoked its partitions by then). A member that sent
// none may have any, so any time at all may do.
func (m *consumerMember) timeoutMs(until int64) int64 {
	least := int64(model.DefaultConsumerSessionTimeoutMs)
	sent := false
	for _, op := range m.beats {
		if op.Call <= until && op.Req.RebalanceTimeoutMs > 0 {
			least, sent = min(least, op.Req.RebalanceTimeoutMs), true
		}
	}
	if !sent {
		return 1
	}
	return least
}

// timersFrom is the earliest instant at which a timer that may fence the
// member at the epoch of holding can have started. The session timer
// starts again at each heartbeat, the last of which is holding's at the
// earliest. The rebalance timer started when the member began revoking,
// at its epoch (GroupMetadataManager.maybeReconcile schedules it with
// the member's epoch, and it fences only a member still at that epoch),
// which may be before holding: but not before an answer that showed the
// member at an older epoch, nor before the member's first heartbeat.
func (m *consumerMember) timersFrom(holding histories.Op) int64 {
	from := m.beats[0].Call
	epoch := holding.Result.Resp.MemberEpoch
	for _, op := range m.beats {
		if epoch > 0 && op.Returned && op.Return < holding.Call && op.Result.Succeeded() &&
			op.Result.Resp.MemberEpoch > 0 && op.Result.Resp.MemberEpoch < epoch {
			from = max(from, op.Return)
		}
	}
	return min(from, holding.Call)
}

// timers is how the history's clock moves the coordinator's timers: at
// its ticks (each the instant and the milliseconds it moves), or, on a
// wall clock, with the clock itself.
type timers struct {
	wall  bool
	ticks []tick
}

type tick struct{ at, ms int64 }

func timersOf(h histories.History) timers {
	t := timers{wall: h.WallClock}
	for _, op := range h.Ops {
		if op.Kind == model.Tick {
			t.ticks = append(t.ticks, tick{op.Call, op.Req.Ms})
		}
	}
	slices.SortFunc(t.ticks, func(a, b tick) int { return cmp.Compare(a.at, b.at) })
	return t
}

// mayHaveFired reports whether a timer of timeoutMs, started no earlier
// than from, may have fired by until. Both timers of a member start at a
// heartbeat's effect at the earliest (the session timer at each, the
// rebalance timer when it begins revoking), and the holding answer's
// heartbeat took effect after its call.
func (t timers) mayHaveFired(timeoutMs, from, until int64) bool {
	if t.wall {
		return until-from >= timeoutMs
	}
	var moved int64
	for _, k := range t.ticks {
		if k.at >= from && k.at <= until {
			moved = min(moved+k.ms, math.MaxInt64/2)
		}
	}
	return moved >= timeoutMs
}
