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
	groups := membersOf(a.h)
	if groups == nil {
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
			if v, bad := groups[key.group].heldElsewhere(key.id, p, op, timers); bad {
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

// groupMembers are the members of one group by id, and their ids in
// order, so that a reason does not depend on a map's order.
type groupMembers struct {
	byID map[string]*consumerMember
	ids  []string
}

// membersOf gathers the heartbeats of each member of each group; nil when
// the history has none.
func membersOf(h histories.History) map[string]*groupMembers {
	var groups map[string]*groupMembers
	for _, op := range inCallOrder(h.Ops) {
		if op.Kind == model.ConsumerGroupHeartbeat && groups == nil {
			groups = map[string]*groupMembers{}
		}
		key, ok := memberOf(op)
		if !ok {
			continue
		}
		g := groups[key.group]
		if g == nil {
			g = &groupMembers{byID: map[string]*consumerMember{}}
			groups[key.group] = g
		}
		m := g.byID[key.id]
		if m == nil {
			m = &consumerMember{id: key.id}
			g.byID[key.id] = m
			g.ids = append(g.ids, key.id)
		}
		m.beats = append(m.beats, op)
	}
	for _, g := range groups {
		slices.Sort(g.ids)
		for _, m := range g.byID {
			m.index()
		}
	}
	return groups
}

// heldElsewhere reports another member of the group that certainly holds
// p when the answer given lists it for member id. A member certainly
// holds p when an answer of its own listed p before given was sent, and
// nothing it did since, up to given's answer, may have given p up
// (gaveUp), nor may a timer have fenced it (mayBeFenced).
func (g *groupMembers) heldElsewhere(id string, p model.Partition, given histories.Op, timers timers) (Violation, bool) {
	for _, other := range g.ids {
		m := g.byID[other]
		if other == id {
			continue
		}
		holding, ok := m.lastHolding(p, given.Call)
		if !ok || m.mayHaveGivenUp(p, holding, given.Return) || m.mayBeFenced(holding, given.Return, timers) {
			continue
		}
		return Violation{Op: given.ID, Related: []int{holding.ID},
			Reason: fmt.Sprintf("the answer gives %s to member %s at epoch %d, but member %s, given it by op %d at epoch %d, "+
				"still holds it: it has not left it out of its owned partitions, left, nor been fenced, and no session "+
				"or rebalance timeout can have ended since (CurrentAssignmentBuilder assigns no partition that another "+
				"member holds, assigned or pending revocation)",
				p, id, given.Result.Resp.MemberEpoch, other, holding.ID, holding.Result.Resp.MemberEpoch)}, true
	}
	return Violation{}, false
}

// consumerMember is what the history shows of one member, indexed so
// that a long recording is judged in time in proportion to its length.
type consumerMember struct {
	id string
	// beats are its heartbeats in call order.
	beats []histories.Op
	// holdings are, for each partition, the indexes in beats of the
	// answers whose assignment lists it, in the order of their return.
	holdings map[model.Partition][]int
	// gaveUp are, for each partition it held, the heartbeats that may
	// have given it up (gaveUp), in call order, and the latest instant
	// at which each of them and those before it may take effect.
	gaveUp map[model.Partition]*gaveUpIndex
	// epochs are its answers that name an epoch, in the order of their
	// return, each with the one before it that names a lower epoch
	// (-1 when none does): a monotonic stack's "previous smaller".
	epochs []epochAnswer
	// successes are its answered heartbeats, in the order of their
	// return, each with the latest call of those up to it.
	successes []success
	// revoking are the heartbeats that may have begun a revocation
	// (mayBeginRevoking), in call order, and the latest instant at
	// which each of them and those before it may take effect.
	revoking gaveUpIndex
	// rebalanceMs is the least rebalance timeout it sent; 1 when it
	// sent none, because it may have any.
	rebalanceMs int64
}

type success struct{ at, latestCall int64 }

type gaveUpIndex struct {
	ops    []int   // indexes in beats, in call order
	latest []int64 // the latest effect of ops[0..i]: math.MaxInt64 for one unanswered
}

type epochAnswer struct {
	at, epoch int64
	lower     int
}

func (m *consumerMember) index() {
	m.holdings = map[model.Partition][]int{}
	for i, op := range m.beats {
		if op.Returned && op.Result.Succeeded() && op.Result.Resp.MemberAssignment != nil {
			for _, p := range *op.Result.Resp.MemberAssignment {
				m.holdings[p] = append(m.holdings[p], i)
			}
		}
	}
	m.gaveUp = map[model.Partition]*gaveUpIndex{}
	for p, held := range m.holdings {
		slices.SortStableFunc(held, func(i, j int) int { return cmp.Compare(m.beats[i].Return, m.beats[j].Return) })
		x := &gaveUpIndex{}
		for i, op := range m.beats {
			if gaveUp(op, p) {
				x.add(i, op)
			}
		}
		m.gaveUp[p] = x
	}
	m.indexEpochs()
	for i, op := range m.beats {
		if op.Returned && op.Result.Succeeded() {
			m.successes = append(m.successes, success{at: op.Return, latestCall: op.Call})
		}
		if mayBeginRevoking(op) {
			m.revoking.add(i, op)
		}
	}
	slices.SortStableFunc(m.successes, func(a, b success) int { return cmp.Compare(a.at, b.at) })
	for i := 1; i < len(m.successes); i++ {
		m.successes[i].latestCall = max(m.successes[i].latestCall, m.successes[i-1].latestCall)
	}
	m.rebalanceMs = rebalanceMs(m.beats)
}

// add appends beats[i], op, which comes after those it holds in call
// order.
func (x *gaveUpIndex) add(i int, op histories.Op) {
	end := int64(math.MaxInt64)
	if op.Returned {
		end = op.Return
	}
	if n := len(x.latest); n > 0 {
		end = max(end, x.latest[n-1])
	}
	x.ops, x.latest = append(x.ops, i), append(x.latest, end)
}

// lastHolding is the member's last answer, returned before the instant
// before, whose assignment lists p: the coordinator had assigned p to the
// member by then. An answer that leaves the assignment out says nothing
// new, so it is not counted (the benefit of the doubt).
func (m *consumerMember) lastHolding(p model.Partition, before int64) (histories.Op, bool) {
	held := m.holdings[p]
	n, _ := slices.BinarySearchFunc(held, before, func(i int, t int64) int { return cmp.Compare(m.beats[i].Return, t) })
	if n == 0 {
		return histories.Op{}, false
	}
	return m.beats[held[n-1]], true
}

// mayHaveGivenUp reports whether a heartbeat of the member may have
// taken p from it after the answer holding and before the instant until.
// A heartbeat takes effect at some moment between its call and its
// answer, or at any moment after its call when it has no answer: one
// called before holding counts when it may take effect after holding's
// call.
func (m *consumerMember) mayHaveGivenUp(p model.Partition, holding histories.Op, until int64) bool {
	x := m.gaveUp[p]
	if x == nil {
		return false
	}
	call := func(i int, t int64) int { return cmp.Compare(m.beats[i].Call, t) }
	from, _ := slices.BinarySearchFunc(x.ops, holding.Call, call)
	to, found := slices.BinarySearchFunc(x.ops, until, call)
	for found && to < len(x.ops) && m.beats[x.ops[to]].Call == until {
		to++
	}
	if from > 0 && x.latest[from-1] > holding.Call {
		return true
	}
	for _, i := range x.ops[from:to] {
		if m.beats[i].ID != holding.ID {
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
//
// An answer that takes p away is no release: p is then pending
// revocation, and held still.
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

// rebalanceMs is the least rebalance timeout of these heartbeats; 1
// when they sent none, because the member may have any.
func rebalanceMs(beats []histories.Op) int64 {
	least := int64(math.MaxInt64)
	for _, op := range beats {
		if op.Req.RebalanceTimeoutMs > 0 {
			least = min(least, op.Req.RebalanceTimeoutMs)
		}
	}
	if least == math.MaxInt64 {
		return 1
	}
	return least
}

// mayBeginRevoking reports whether the heartbeat op may have begun a
// revocation, and so the member's rebalance timer
// (GroupMetadataManager.maybeReconcile schedules it when the member
// enters UNREVOKED_PARTITIONS). Such a change takes partitions out of the
// member's assignment, so Kafka sends the assignment with its answer
// (hasAssignedPartitionsChanged): an answer without one began none, and
// neither did one that leaves out nothing the member may still own. A
// heartbeat with no answer, or an error, may have.
func mayBeginRevoking(op histories.Op) bool {
	if !op.Result.Succeeded() {
		return true
	}
	assigned := op.Result.Resp.MemberAssignment
	if assigned == nil {
		return false
	}
	owned := op.Req.OwnedPartitions
	if owned == nil {
		return true
	}
	for _, p := range *owned {
		if !slices.Contains(*assigned, p) {
			return true
		}
	}
	return false
}

// mayBeFenced reports whether a timer may have fenced the member, from
// the answer holding on, by the instant until.
//
// Its session timer (group.consumer.session.timeout.ms: Kafka's default,
// which the model takes too, because a history does not say) starts again
// at each heartbeat, and a fenced member's heartbeats are UNKNOWN_MEMBER_ID
// (GroupMetadataManager.consumerGroupFenceMember removes it). So the
// session can only have ended after the last heartbeat answered with
// success by then.
//
// Its rebalance timer fences it when it has not revoked what it was told
// to within its rebalance timeout. The timer is scheduled with the
// member's epoch when it begins revoking, and fences only a member still
// at that epoch (scheduleConsumerGroupRebalanceTimeout); a member that
// revokes moves to a later epoch. So the timer can only run from a
// heartbeat that may have begun a revocation (mayBeginRevoking), at
// holding's epoch or later.
func (m *consumerMember) mayBeFenced(holding histories.Op, until int64, t timers) bool {
	n, _ := slices.BinarySearchFunc(m.successes, until+1, func(s success, v int64) int { return cmp.Compare(s.at, v) })
	lastBeat := holding.Call
	if n > 0 {
		lastBeat = max(lastBeat, m.successes[n-1].latestCall)
	}
	if t.mayHaveFired(model.DefaultConsumerSessionTimeoutMs, lastBeat, until) {
		return true
	}
	from := m.epochFrom(holding)
	x := m.revoking
	first, _ := slices.BinarySearchFunc(x.ops, from, func(i int, v int64) int { return cmp.Compare(m.beats[i].Call, v) })
	switch {
	case first > 0 && x.latest[first-1] > from:
		// A heartbeat sent before may take effect at this epoch.
	case first < len(x.ops) && m.beats[x.ops[first]].Call <= until:
		from = m.beats[x.ops[first]].Call
	default:
		return false
	}
	return t.mayHaveFired(m.rebalanceMs, from, until)
}

// indexEpochs lists the answers that name an epoch, by return, each with
// the last one before it at a lower epoch.
func (m *consumerMember) indexEpochs() {
	var order []int
	for i, op := range m.beats {
		if op.Returned && op.Result.Succeeded() && op.Result.Resp.MemberEpoch > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(m.beats[i].Return, m.beats[j].Return) })
	var stack []int
	for _, i := range order {
		a := epochAnswer{at: m.beats[i].Return, epoch: int64(m.beats[i].Result.Resp.MemberEpoch), lower: -1}
		for len(stack) > 0 && m.epochs[stack[len(stack)-1]].epoch >= a.epoch {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			a.lower = stack[len(stack)-1]
		}
		stack = append(stack, len(m.epochs))
		m.epochs = append(m.epochs, a)
	}
}

// epochFrom is the earliest instant at which the member may have been at
// the epoch of holding, or at a later one: not before an answer that
// showed it at an older epoch, nor before its first heartbeat.
func (m *consumerMember) epochFrom(holding histories.Op) int64 {
	from := m.beats[0].Call
	epoch := int64(holding.Result.Resp.MemberEpoch)
	if epoch <= 0 {
		return from
	}
	// The answers returned before holding's call, and the last of them
	// at a lower epoch than holding's.
	n, _ := slices.BinarySearchFunc(m.epochs, holding.Call, func(a epochAnswer, t int64) int { return cmp.Compare(a.at, t) })
	for i := n - 1; i >= 0; {
		if m.epochs[i].epoch < epoch {
			return min(max(from, m.epochs[i].at), holding.Call)
		}
		i = m.epochs[i].lower
	}
	return min(from, holding.Call)
}

// timers is how the history's clock moves the coordinator's timers: at
// its ticks (each the instant and the milliseconds it moves, and the
// milliseconds of the ticks up to it), or, on a wall clock, with the
// clock itself.
type timers struct {
	wall  bool
	ticks []tick
}

type tick struct{ at, ms, upTo int64 }

func timersOf(h histories.History) timers {
	t := timers{wall: h.WallClock}
	for _, op := range h.Ops {
		if op.Kind == model.Tick {
			t.ticks = append(t.ticks, tick{at: op.Call, ms: op.Req.Ms})
		}
	}
	slices.SortStableFunc(t.ticks, func(a, b tick) int { return cmp.Compare(a.at, b.at) })
	var sum int64
	for i := range t.ticks {
		sum = min(sum+t.ticks[i].ms, math.MaxInt64/2)
		t.ticks[i].upTo = sum
	}
	return t
}

// mayHaveFired reports whether a timer of timeoutMs, started no earlier
// than from, may have fired by until: the ticks from from to until move
// the clock by timeoutMs at least.
func (t timers) mayHaveFired(timeoutMs, from, until int64) bool {
	if t.wall {
		return until-from >= timeoutMs
	}
	at := func(k tick, v int64) int { return cmp.Compare(k.at, v) }
	first, _ := slices.BinarySearchFunc(t.ticks, from, at)
	last, found := slices.BinarySearchFunc(t.ticks, until, at)
	for found && last < len(t.ticks) && t.ticks[last].at == until {
		last++
	}
	if last <= first {
		return false
	}
	moved := t.ticks[last-1].upTo
	if first > 0 {
		moved -= t.ticks[first-1].upTo
	}
	return moved >= timeoutMs
}
