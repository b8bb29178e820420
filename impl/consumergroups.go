package impl

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// KIP-848 consumer groups (group.protocol=consumer): one request,
// ConsumerGroupHeartbeat, joins, heartbeats, reconciles and leaves. The
// coordinator versions the group by its group epoch and each member by its
// member epoch. Its assignor computes a target assignment at each new group
// epoch, and each member moves towards its target one heartbeat at a time:
// it revokes first, and a partition goes to its new owner only once no
// other member holds it (Kafka's CurrentAssignmentBuilder).
//
// The broker answers as Kafka 3.9 answers ConsumerGroupHeartbeat v0, where
// the model (model/consumergroups.go) takes more than one answer: the
// coordinator chooses the id of a member that joins with none; it refuses
// an empty subscription and a regex; and a TxnOffsetCommit must carry the
// member's current epoch. Its assignor is range-like and is not Kafka's;
// the model takes any assignor that keeps the rules.

// consumerGroup is a KIP-848 group at the coordinator.
type consumerGroup struct {
	// epoch is the group epoch: a member joining, leaving, being fenced
	// or changing its subscription bumps it.
	epoch int32
	// assignmentEpoch is the epoch of target, the target assignment:
	// the assignor runs again at the first heartbeat after the group
	// epoch moved past it.
	assignmentEpoch int32
	target          map[string][]model.Partition
	members         map[string]consumerMember
	// refreshDue: a topic the group subscribes to changed, and no
	// heartbeat has refreshed its subscription metadata yet (topics.go).
	refreshDue bool
}

// consumerMember is one member (Kafka's ConsumerGroupMember). Its state
// in Kafka's terms follows from its fields: revoking is
// UNREVOKED_PARTITIONS; behind its target, or short of it, is
// UNRELEASED_PARTITIONS or a member still to reconcile; else STABLE.
type consumerMember struct {
	epoch, prevEpoch int32
	instance         string
	topics           []string
	rebalanceMs      int64
	// assigned is what the member was told it owns; revoking is what it
	// was told to give up and has not yet released.
	assigned, revoking []model.Partition
	// lastSeen starts the session timer, revokingSince the rebalance
	// timer. Neither is written to the log: a restart starts both again.
	lastSeen, revokingSince int64
}

// consumerRecord is a consumer group's whole state after a change, as
// Kafka writes its ConsumerGroup* records to __consumer_offsets. The
// record owns its maps.
type consumerRecord struct {
	group string
	state consumerGroup
}

func (r consumerRecord) groupName() string { return r.group }

// clone is g with maps of its own, so that a record and the table never
// share one. Partition slices are never written in place.
func (g *consumerGroup) clone() consumerGroup {
	c := *g
	c.target = maps.Clone(g.target)
	c.members = maps.Clone(g.members)
	if c.target == nil {
		c.target = map[string][]model.Partition{}
	}
	if c.members == nil {
		c.members = map[string]consumerMember{}
	}
	return c
}

// writeConsumer logs g as the group's state and makes it the table's.
func (s *groupShard) writeConsumer(name string, g consumerGroup) {
	s.write(consumerRecord{group: name, state: g.clone()})
}

// consumerAssignors are the server assignors a heartbeat may name
// (Kafka's group.consumer.assignors default: uniform, range); this broker
// runs its own for either.
var consumerAssignors = []string{"uniform", "range"}

// ConsumerGroupHeartbeat answers KIP-848's ConsumerGroupHeartbeat: a
// leave when the member epoch is -1 or -2, else a join (epoch 0) or a
// heartbeat (model.ConsumerGroupHeartbeater, which model.Send dispatches
// to).
func (b *Broker) ConsumerGroupHeartbeat(_ context.Context, r model.Request) model.Result {
	return b.consumerGroupHeartbeat(r)
}

var _ model.ConsumerGroupHeartbeater = (*Broker)(nil)

func (b *Broker) consumerGroupHeartbeat(r model.Request) model.Result {
	if code := heartbeatInvalid(r); code != "" {
		return model.Fail(code)
	}
	sh := b.lockGroupShard(r.Group)
	defer sh.mu.Unlock()
	if r.MemberEpoch == model.LeaveMemberEpoch || r.MemberEpoch == model.StaticLeaveMemberEpoch {
		return b.consumerGroupLeave(sh, r)
	}
	return b.consumerGroupBeat(sh, r)
}

// heartbeatInvalid is Kafka 3.9's
// GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid, ""
// for a request it takes.
func heartbeatInvalid(r model.Request) model.Code {
	join := r.MemberEpoch == model.JoinMemberEpoch
	switch {
	case r.MemberID == "" && !join,
		r.MemberEpoch < model.StaticLeaveMemberEpoch,
		r.MemberEpoch == model.StaticLeaveMemberEpoch && r.InstanceID == "",
		join && r.RebalanceTimeoutMs == 0,
		join && (r.OwnedPartitions == nil || len(*r.OwnedPartitions) > 0),
		join && r.SubscribedTopics == nil && r.SubscribedRegex == "",
		// 3.9 needs a topic to subscribe to, and has no regex yet.
		join && r.SubscribedTopics != nil && len(*r.SubscribedTopics) == 0 && r.SubscribedRegex == "",
		r.SubscribedRegex != "":
		return model.InvalidRequest
	case r.ServerAssignor != "" && !slices.Contains(consumerAssignors, r.ServerAssignor):
		return model.UnsupportedAssignor
	}
	return ""
}

// consumerGroupLeave is GroupMetadataManager.consumerGroupLeave: epoch -1
// fences the member, which releases its partitions and bumps the group
// epoch; a static member's -2 keeps its assignment, but for what it was
// revoking, until it comes back or its session ends. No epoch is checked.
func (b *Broker) consumerGroupLeave(sh *groupShard, r model.Request) model.Result {
	cur := sh.consumer[r.Group]
	if cur == nil {
		return model.Fail(model.GroupIDNotFound)
	}
	id := r.MemberID
	if r.InstanceID == "" {
		if _, known := cur.members[id]; !known {
			return model.Fail(model.UnknownMemberID)
		}
	} else if code := staticMemberRefusal(cur, r); code != "" {
		return model.Fail(code)
	}
	g := cur.clone()
	if r.MemberEpoch == model.StaticLeaveMemberEpoch {
		m := g.members[id]
		m.epoch, m.revoking = model.StaticLeaveMemberEpoch, nil
		g.members[id] = m
	} else {
		g.fence(id)
	}
	sh.writeConsumer(r.Group, g)
	resp := model.NewResponse()
	resp.MemberID, resp.MemberEpoch = r.MemberID, r.MemberEpoch
	return model.OK(resp)
}

// staticMemberRefusal: the instance id must be held, by the request's
// member id (throwIfStaticMemberIsUnknown, throwIfInstanceIdIsFenced).
func staticMemberRefusal(g *consumerGroup, r model.Request) model.Code {
	switch holder := g.staticMember(r.InstanceID); holder {
	case "":
		return model.UnknownMemberID
	case r.MemberID:
		return ""
	}
	return model.FencedInstanceID
}

// fence removes a member: its partitions are free, and the group epoch
// moves on, so that the next heartbeat computes a new target
// (consumerGroupFenceMember). It writes g's maps, which must be its own.
func (g *consumerGroup) fence(id string) {
	delete(g.members, id)
	delete(g.target, id)
	g.epoch++
}

// staticMember is the member holding instance, "" when none does.
func (g *consumerGroup) staticMember(instance string) string {
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if g.members[id].instance == instance {
			return id
		}
	}
	return ""
}

// consumerGroupBeat is a join or a heartbeat: find or make the member and
// check its epoch, take its subscription (a change bumps the group epoch),
// run the assignor when the group epoch moved past the target's, then
// reconcile the member one step towards its target.
func (b *Broker) consumerGroupBeat(sh *groupShard, r model.Request) model.Result {
	cur := sh.consumer[r.Group]
	if cur == nil && r.MemberEpoch != model.JoinMemberEpoch {
		return model.Fail(model.GroupIDNotFound)
	}
	if cur == nil {
		cur = &consumerGroup{}
	}
	g := cur.clone()
	if _, member := g.members[r.MemberID]; b.consumerGroupMaxSize > 0 && len(g.members) >= b.consumerGroupMaxSize &&
		(r.MemberID == "" || !member) {
		// throwIfConsumerGroupIsFull (model: consumer-group-max-size).
		return model.Fail(model.GroupMaxSizeReached)
	}
	id, m, code := b.consumerMemberOf(&g, r)
	if code != "" {
		return model.Fail(code)
	}
	updated := m
	if r.SubscribedTopics != nil {
		updated.topics = slices.Compact(slices.Sorted(slices.Values(*r.SubscribedTopics)))
	}
	if r.RebalanceTimeoutMs > 0 {
		updated.rebalanceMs = r.RebalanceTimeoutMs
	}
	if r.InstanceID != "" {
		updated.instance = r.InstanceID
	}
	bumped := !slices.Equal(updated.topics, m.topics)
	if bumped {
		// hasMemberSubscriptionChanged: a new member's subscription
		// changes from none, so a join bumps the group epoch too.
		g.epoch++
	}
	if g.refreshDue && !bumped {
		// A topic the group subscribes to changed: this heartbeat
		// refreshes the subscription metadata, one bump with any other
		// (model: refreshMetadata).
		g.epoch++
	}
	g.refreshDue = false
	g.members[id] = updated
	if g.epoch > g.assignmentEpoch {
		g.target, g.assignmentEpoch = b.assign(g.members), g.epoch
	}
	next := b.reconcile(&g, id, updated, r.OwnedPartitions)
	next.lastSeen = b.now.Load()
	g.members[id] = next
	sh.writeConsumer(r.Group, g)

	resp := model.NewResponse()
	resp.MemberID, resp.MemberEpoch = id, next.epoch
	resp.HeartbeatIntervalMs = model.DefaultConsumerHeartbeatIntervalMs
	// A full request (a join, or one after an error, which sends every
	// field) gets the whole assignment; else only a changed one is sent.
	full := r.MemberEpoch == model.JoinMemberEpoch ||
		(r.RebalanceTimeoutMs > 0 && r.SubscribedTopics != nil && r.OwnedPartitions != nil)
	if full || !slices.Equal(next.assigned, m.assigned) {
		assigned := slices.Clone(next.assigned)
		resp.MemberAssignment = &assigned
	}
	return model.OK(resp)
}

// consumerMemberOf is the request's member: a new one for a join, the
// member a static member's join replaces, or a known one whose epoch is
// checked (getOrMaybeSubscribeDynamicConsumerGroupMember,
// getOrMaybeSubscribeStaticConsumerGroupMember). g loses a static member
// the request replaces.
func (b *Broker) consumerMemberOf(g *consumerGroup, r model.Request) (string, consumerMember, model.Code) {
	join := r.MemberEpoch == model.JoinMemberEpoch
	id := r.MemberID
	if id == "" {
		// Only a join gets here without an id: the coordinator
		// chooses one (before KIP-1082 the client sent none).
		id = b.newConsumerMemberID(g)
	}
	if r.InstanceID != "" && join {
		return b.staticJoin(g, id, r.InstanceID)
	}
	if r.InstanceID != "" {
		if code := staticMemberRefusal(g, r); code != "" {
			return "", consumerMember{}, code
		}
	}
	m, known := g.members[id]
	switch {
	case !known && join:
		return id, consumerMember{}, ""
	case !known:
		return "", m, model.UnknownMemberID
	}
	return id, m, m.epochFence(r)
}

// staticJoin is a static member's join: a new member for an instance id
// no member holds; the member that left with -2, under the new id, with
// its assignment and target (replaceMember); else UNRELEASED_INSTANCE_ID.
// A known member id joining under a free instance id is taken as it is,
// as Kafka 3.9's getOrMaybeCreateMember does.
func (b *Broker) staticJoin(g *consumerGroup, id, instance string) (string, consumerMember, model.Code) {
	old := g.staticMember(instance)
	if old == "" {
		return id, g.members[id], ""
	}
	prev := g.members[old]
	if prev.epoch != model.StaticLeaveMemberEpoch {
		return "", prev, model.UnreleasedInstanceID
	}
	delete(g.members, old)
	if target, ok := g.target[old]; ok {
		delete(g.target, old)
		g.target[id] = target
	}
	prev.epoch, prev.prevEpoch, prev.revoking = 0, 0, nil
	return id, prev, ""
}

// newConsumerMemberID is an id no member of g has (Kafka draws a random
// UUID); ids go on from the broker's member counter.
func (b *Broker) newConsumerMemberID(g *consumerGroup) string {
	for {
		id := fmt.Sprintf("consumer-%d", b.nextMember.Add(1)-1)
		if _, taken := g.members[id]; !taken {
			return id
		}
	}
}

// epochFence is throwIfConsumerGroupMemberEpochIsInvalid: an epoch ahead
// of the member's is fenced, and one behind it too, but for the previous
// epoch sent with owned partitions that are a subset of the assignment
// (the answer that moved the member on may have been lost).
func (m consumerMember) epochFence(r model.Request) model.Code {
	sent := r.MemberEpoch
	switch {
	case sent == m.epoch:
		return ""
	case sent > m.epoch, sent != m.prevEpoch, r.OwnedPartitions == nil, !subsetOf(*r.OwnedPartitions, m.assigned):
		return model.FencedMemberEpoch
	}
	return ""
}

// reconcile is CurrentAssignmentBuilder.build: m, as the request left it,
// one step towards its target. A member revoking partitions waits until
// its owned partitions hold none of them, then goes on from the next
// epoch; a member behind its target, or short of it, takes the next step;
// a member at its target stays.
func (b *Broker) reconcile(g *consumerGroup, id string, m consumerMember, owned *[]model.Partition) consumerMember {
	target := g.target[id]
	switch {
	case len(m.revoking) > 0 && ownsAny(owned, m.revoking):
		return m
	case len(m.revoking) > 0:
		return b.nextAssignment(g, id, m, m.epoch+1, owned)
	case m.epoch != g.assignmentEpoch || !subsetOf(target, m.assigned):
		return b.nextAssignment(g, id, m, m.epoch, owned)
	}
	return m
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment. The
// member keeps what its target keeps. What the target takes away and the
// member still owns is pending revocation, at epoch: the member gets
// nothing new until it has released it. Else the member moves to the
// target's epoch with what its target adds, but for partitions another
// member, or its own pending revocation, still holds (Kafka's partition
// epochs): those come at a later heartbeat, once released.
func (b *Broker) nextAssignment(g *consumerGroup, id string, m consumerMember, epoch int32, owned *[]model.Partition) consumerMember {
	target := g.target[id]
	kept := common(m.assigned, target)
	dropped := without(m.assigned, kept)
	next := m
	next.prevEpoch = m.epoch
	if len(dropped) > 0 && ownsAny(owned, dropped) {
		next.epoch, next.assigned, next.revoking = epoch, kept, dropped
		next.revokingSince = b.now.Load()
		return next
	}
	assigned := kept
	for _, p := range without(target, kept) {
		if holder := g.holder(p); holder == "" || (holder != id && b.bugs.has(assignBeforeRevoke)) {
			assigned = append(assigned, p)
		}
	}
	slices.Sort(assigned)
	next.epoch, next.assigned, next.revoking = g.assignmentEpoch, assigned, nil
	return next
}

// holder is the member that holds p, assigned or pending revocation, ""
// when none does (Kafka's ConsumerGroup.currentPartitionEpoch).
func (g *consumerGroup) holder(p model.Partition) string {
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if slices.Contains(m.assigned, p) || slices.Contains(m.revoking, p) {
			return id
		}
	}
	return ""
}

// assign is the broker's assignor, range-like: for each topic, its
// partitions (Config.TopicPartitions of them, or the count an admin's
// requests set: topicCount) are cut into ranges, one per
// member subscribed to it, in member id order, the first members taking
// one more when they do not divide evenly. A static member away with -2
// is a member still, and keeps its share.
func (b *Broker) assign(members map[string]consumerMember) map[string][]model.Partition {
	subscribers := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		for _, topic := range members[id].topics {
			if topic != "" {
				subscribers[topic] = append(subscribers[topic], id)
			}
		}
	}
	target := map[string][]model.Partition{}
	for topic, ids := range subscribers {
		count := b.topicCount(topic)
		per, extra := count/len(ids), count%len(ids)
		first := 0
		for i, id := range ids {
			n := per
			if i < extra {
				n++
			}
			for p := first; p < first+n; p++ {
				target[id] = append(target[id], model.Partition(fmt.Sprintf("%s-%d", topic, p)))
			}
			first += n
		}
	}
	for id := range target {
		slices.Sort(target[id])
	}
	return target
}

// expireConsumerMembers fences each member whose session timer, or whose
// rebalance timer while it revokes, is due (scheduleConsumerGroupSessionTimeout,
// scheduleConsumerGroupRebalanceTimeout). Tick calls it holding every
// group shard.
func (b *Broker) expireConsumerMembers() {
	now := b.now.Load()
	for _, name := range b.consumerGroupNames() {
		sh := b.groupShard(name)
		cur := sh.consumer[name]
		var due []string
		for _, id := range slices.Sorted(maps.Keys(cur.members)) {
			m := cur.members[id]
			session := now-m.lastSeen >= b.consumerSessionMs
			rebalance := len(m.revoking) > 0 && m.rebalanceMs > 0 && now-m.revokingSince >= m.rebalanceMs
			if session || rebalance {
				due = append(due, id)
			}
		}
		if len(due) == 0 {
			continue
		}
		g := cur.clone()
		for _, id := range due {
			g.fence(id)
		}
		sh.writeConsumer(name, g)
	}
}

// consumerGroupNames is every consumer group, sorted; the caller holds
// every group shard.
func (b *Broker) consumerGroupNames() []string {
	var names []string
	for i := range b.groups {
		names = slices.AppendSeq(names, maps.Keys(b.groups[i].consumer))
	}
	slices.Sort(names)
	return names
}

// consumerCommitRefusal is ConsumerGroup.validateOffsetCommit for a
// TxnOffsetCommit, as Kafka 3.9 answers it: a commit with an epoch below
// 0 to a group with no members is taken; else its member must be the
// group's (UNKNOWN_MEMBER_ID), at its current epoch (STALE_MEMBER_EPOCH,
// which OffsetMetadataManager.validateTransactionalOffsetCommit answers
// ILLEGAL_GENERATION).
func (b *Broker) consumerCommitRefusal(g *consumerGroup, r model.Request) model.Code {
	if r.GenerationID < 0 && len(g.members) == 0 {
		return ""
	}
	m, known := g.members[r.MemberID]
	switch {
	case !known:
		return model.UnknownMemberID
	case r.GenerationID != m.epoch && !b.bugs.has(txnCommitAcceptsStaleMemberEpoch):
		return model.IllegalGeneration
	}
	return ""
}

// restartConsumerTimers starts every member's session timer, and the
// rebalance timer of each member revoking partitions, again at now, as a
// coordinator that loads a group schedules them (onLoaded).
func (s *groupShard) restartConsumerTimers(now int64) {
	for _, g := range s.consumer {
		for id, m := range g.members {
			m.lastSeen, m.revokingSince = now, now
			g.members[id] = m
		}
	}
}

func ownsAny(owned *[]model.Partition, ps []model.Partition) bool {
	if owned == nil {
		// A request that does not send its owned partitions owns what
		// it owned (ownsRevokedPartitions).
		return true
	}
	return len(common(*owned, ps)) > 0
}

func subsetOf(sub, set []model.Partition) bool {
	for _, p := range sub {
		if !slices.Contains(set, p) {
			return false
		}
	}
	return true
}

// common is a's partitions that b holds too, in a's order.
func common(a, b []model.Partition) []model.Partition {
	var out []model.Partition
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

// without is a's partitions that b does not hold, in a's order.
func without(a, b []model.Partition) []model.Partition {
	var out []model.Partition
	for _, p := range a {
		if !slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}
