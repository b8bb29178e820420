package model

import (
	"fmt"
	"maps"
	"slices"
)

// reconcileConsumer answers the member id's heartbeat: the member, with
// its subscription updated (m), moves towards the target assignment the
// broker's assignor chose (CurrentAssignmentBuilder). Judging, the answer
// shows the broker's choice, held to the rules every assignor keeps.
func (st *step) reconcileConsumer(r Request, g consumerGroup, id string, m consumerMember) outcome {
	owned := r.OwnedPartitions
	revoking := m.revoking
	m.revoking = m.releasedBy(owned)
	var released []Partition
	if len(m.revoking) == 0 {
		released = revoking
	}
	if st.undecided() {
		return st.lostHeartbeat(r, g, id, m)
	}
	resp, out := st.consumerAnswer(r, g, id, m, len(released) > 0)
	if out != nil {
		return *out
	}
	if resp.MemberID != "" && resp.MemberID != id {
		return bad("consumer-member-id", "the answer names member %s, but the heartbeat is member %s's", resp.MemberID, id)
	}
	if out := st.checkPartitionsExist(resp); out != nil {
		return *out
	}
	next, out := st.nextConsumerMember(g, id, m, resp, owned, released)
	if out != nil {
		return *out
	}
	if resp.MemberEpoch > g.epoch {
		// Only a loose group gets here (consumerAnswer).
		g.epoch = resp.MemberEpoch
	}
	next.lastSeen = st.s.now
	st.s.setConsumerGroup(r.Group, g.withMember(id, next))
	resp.MemberID = id
	return ok(resp)
}

// releasedBy is the member's partitions pending revocation once the
// request is taken: all of them are released when the owned partitions
// it sends hold none (CurrentAssignmentBuilder.ownsRevokedPartitions; a
// request that does not send them owns them still). KIP-848, "Assignment
// Reconciliation"; test: GroupMetadataManagerTest#testReconciliationProcess.
func (m consumerMember) releasedBy(owned *[]Partition) []Partition {
	if owned == nil {
		return m.revoking
	}
	for _, p := range *owned {
		if slices.Contains(m.revoking, p) {
			return m.revoking
		}
	}
	return nil
}

// consumerAnswer is the answer to take: the broker's when judging, else
// the model's own (ownAnswer). The answer's epoch is held to the group
// epoch.
func (st *step) consumerAnswer(r Request, g consumerGroup, id string, m consumerMember, justReleased bool) (Response, *outcome) {
	if obs := st.observed(); obs != nil {
		resp := *obs
		if resp.MemberEpoch > g.epoch && !g.loose {
			out := bad("consumer-epoch-above-group", "member epoch %d is above the group epoch %d "+
				"(the member's epoch is the target assignment's, which is at most the group's: "+
				"GroupMetadataManager.consumerGroupHeartbeat)", resp.MemberEpoch, g.epoch)
			return resp, &out
		}
		return resp, nil
	}
	return st.ownAnswer(r, g, id, m, justReleased), nil
}

// ownAnswer is the model's own answer, as Kafka's CurrentAssignmentBuilder
// builds it towards the target of the model's assignor (ownTarget). A
// member revoking partitions waits at its epoch with what it has. A
// member that owns partitions its target leaves out begins revoking them,
// and gets nothing new. Else it keeps what its target keeps, gets what
// its target adds that no other member holds, and moves to the group
// epoch. The assignment is sent when it changed, and to a join or a full
// heartbeat.
func (st *step) ownAnswer(r Request, g consumerGroup, id string, m consumerMember, justReleased bool) Response {
	resp := NewResponse()
	resp.HeartbeatIntervalMs = DefaultConsumerHeartbeatIntervalMs
	resp.MemberEpoch = m.epoch
	assigned := m.assigned
	if len(m.revoking) == 0 {
		target := st.ownTarget(g, id, m)
		kept := common(m.assigned, target)
		switch dropped := without(m.assigned, target); {
		case len(dropped) > 0 && ownsAny(r.OwnedPartitions, dropped):
			// startRevoking: the next epoch when the member just
			// released what it revoked before.
			if justReleased {
				resp.MemberEpoch = min(m.epoch+1, g.epoch)
			}
			assigned = kept
		default:
			resp.MemberEpoch = g.epoch
			assigned = kept
			for _, p := range without(target, kept) {
				if g.holder(p, id) == "" {
					assigned = append(assigned, p)
				}
			}
		}
	}
	assigned = slices.Sorted(slices.Values(assigned))
	if r.MemberEpoch == JoinMemberEpoch || isFullHeartbeat(r) || !slices.Equal(assigned, m.assigned) {
		resp.MemberAssignment = &assigned
	}
	return resp
}

// ownTarget is the target assignment of member id by the model's own
// assignor: for each topic it subscribes to by name, the partitions the
// model's logs hold of it, cut into ranges, one per member subscribed to
// it in member id order, as Kafka's range assignor does
// (RangeAssignor). A partition the logs do not hold, which a judged
// answer gave, stays where it is. Kafka's assignor is the coordinator's
// choice; judging, the model takes the broker's. A member subscribed by
// regex gets no more.
func (st *step) ownTarget(g consumerGroup, id string, m consumerMember) []Partition {
	var target []Partition
	for _, p := range m.assigned {
		topic, _ := p.Topic()
		if _, logged := st.s.parts[p]; !logged && !st.s.topicKnown(topic) {
			target = append(target, p)
		}
	}
	for _, topic := range m.topics {
		parts := st.s.topicPartitions(topic)
		var subs []string
		for other, om := range g.members {
			if other != id && slices.Contains(om.topics, topic) {
				subs = append(subs, other)
			}
		}
		subs = append(subs, id)
		slices.Sort(subs)
		i, n := slices.Index(subs, id), len(subs)
		per, extra := len(parts)/n, len(parts)%n
		start := i*per + min(i, extra)
		count := per
		if i < extra {
			count++
		}
		target = append(target, parts[start:start+count]...)
	}
	return target
}

// checkPartitionsExist: an answer assigns no partition that never
// existed, as far as the history's admin requests tell (the assignor
// takes the partitions from the metadata image: ConsumerGroup.
// computeSubscriptionMetadata). A topic no admin request named may have
// any number of partitions.
func (st *step) checkPartitionsExist(resp Response) *outcome {
	if resp.MemberAssignment == nil {
		return nil
	}
	for _, p := range *resp.MemberAssignment {
		if !st.s.topicPartitionExists(p) {
			topic, _ := p.Topic()
			out := bad("consumer-partition-unknown", "the answer assigns %s, but topic %s never had more than %d "+
				"partitions (ConsumerGroup.computeSubscriptionMetadata)", p, topic, st.s.topics[topic].most)
			return &out
		}
	}
	return nil
}

// isFullHeartbeat is Kafka's test for a request that sends everything
// (after an error, say), which is answered with the whole assignment.
func isFullHeartbeat(r Request) bool {
	return r.RebalanceTimeoutMs > 0 && r.SubscribedTopics != nil && r.OwnedPartitions != nil
}

// nextConsumerMember is m once the answer resp is taken: its epoch, its
// assignment and its partitions pending revocation. released are the
// partitions m was revoking, which the request released.
func (st *step) nextConsumerMember(g consumerGroup, id string, m consumerMember, resp Response,
	owned *[]Partition, released []Partition) (consumerMember, *outcome) {
	epoch := resp.MemberEpoch
	assigned := m.assigned
	if resp.MemberAssignment != nil {
		assigned = slices.Sorted(slices.Values(*resp.MemberAssignment))
	}
	if epoch == 0 {
		// The answer did not say: the next one will.
		epoch, m.unsure = m.epoch, true
	} else if out := m.checkEpochGrows(epoch); out != nil {
		return m, out
	}
	if len(m.revoking) > 0 && !m.unsure {
		return m.stillRevoking(epoch, assigned)
	}
	dropped := without(m.assigned, assigned)
	if len(dropped) > 0 && ownsAny(owned, dropped) {
		return st.startRevoking(g, id, m, epoch, assigned, dropped, len(released) > 0)
	}
	if out := m.checkGrants(g, id, without(assigned, m.assigned)); out != nil {
		return m, out
	}
	if len(released) > 0 && epoch == m.epoch && !m.unsure && m.subscribesToAny(released) {
		// UNREVOKED_PARTITIONS began when the target's epoch was past
		// the member's, so once it has released its partitions it moves
		// on (CurrentAssignmentBuilder.build); test:
		// CurrentAssignmentBuilderTest#testUnrevokedPartitionsToStable.
		// Newer releases also revoke the partitions of topics the member
		// no longer subscribes to at once, before the target moves, and
		// then stay at the epoch: Math.min(memberEpoch + 1,
		// targetAssignmentEpoch), updateCurrentAssignment.
		out := bad("consumer-revocation-pending", "the member released the partitions it was revoking, so it "+
			"moves past epoch %d to the target's, but the answer keeps it there (CurrentAssignmentBuilder, "+
			"UNREVOKED_PARTITIONS)", epoch)
		return m, &out
	}
	m.setEpoch(epoch, !slices.Equal(assigned, m.assigned))
	m.assignedAt = assignmentEpochs(m.assignedAt, assigned, epoch)
	m.assigned, m.revoking, m.unsure = assigned, nil, m.unsure && resp.MemberEpoch == 0
	return m, nil
}

// subscribesToAny reports whether a partition of ps is of a topic m
// subscribes to by name; a regex subscription may hold any.
func (m consumerMember) subscribesToAny(ps []Partition) bool {
	for _, p := range ps {
		if topic, _ := p.Topic(); m.regex != "" || slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

// assignmentEpochs is the assignment epochs of a member that now holds
// held: a partition it held before keeps its epoch, a new one gets epoch
// (KIP-1251).
func assignmentEpochs(before map[Partition]int32, held []Partition, epoch int32) map[Partition]int32 {
	var out map[Partition]int32
	for _, p := range held {
		if out == nil {
			out = map[Partition]int32{}
		}
		if at, kept := before[p]; kept {
			out[p] = at
		} else {
			out[p] = epoch
		}
	}
	return out
}

// checkEpochGrows: a member's epoch never goes back (KIP-848, "Member
// Epoch"; ConsumerGroupMember.Builder.updateMemberEpoch only ever takes
// the target's, which grows). A member at epoch 0 is one that joins.
func (m consumerMember) checkEpochGrows(epoch int32) *outcome {
	if epoch >= m.epoch || m.unsure {
		return nil
	}
	out := bad("consumer-epoch-went-back", "member epoch %d is below the member's %d", epoch, m.epoch)
	return &out
}

// stillRevoking is a member that still owns partitions pending
// revocation: it waits at its epoch with its assignment unchanged
// (CurrentAssignmentBuilder, UNREVOKED_PARTITIONS returns the member as
// it was). Test: GroupMetadataManagerTest#testReconciliationProcess.
// Newer releases take from it, at once, the partitions of topics it no
// longer subscribes to (updateCurrentAssignment): they join those
// pending revocation.
func (m consumerMember) stillRevoking(epoch int32, assigned []Partition) (consumerMember, *outcome) {
	dropped := without(m.assigned, assigned)
	if epoch == m.epoch && len(without(assigned, m.assigned)) == 0 && !m.subscribesToAny(dropped) {
		m.assigned, m.revoking = assigned, slices.Sorted(slices.Values(slices.Concat(m.revoking, dropped)))
		return m, nil
	}
	if epoch != m.epoch || !slices.Equal(assigned, m.assigned) {
		out := bad("consumer-revocation-pending", "the member still owns %v, pending revocation, so it stays at "+
			"epoch %d with %v, but the answer moved it to epoch %d with %v (CurrentAssignmentBuilder, "+
			"UNREVOKED_PARTITIONS)", m.revoking, m.epoch, m.assigned, epoch, assigned)
		return m, &out
	}
	return m, nil
}

// startRevoking takes partitions from a member that still owns them: they
// are pending revocation, and the answer gives it nothing new. It stays
// at its epoch, or moves to the next one when this request released what
// it was revoking before (CurrentAssignmentBuilder.build: STABLE and
// UNRELEASED_PARTITIONS compute the next assignment at memberEpoch,
// UNREVOKED_PARTITIONS at memberEpoch + 1; KIP-848, "Assignment
// Reconciliation"). Test: GroupMetadataManagerTest#testReconciliationProcess.
//
// After a lost answer (m.unsure) the member may hold more than the model
// saw: the lost answer may have moved it on and given it partitions that
// a later target keeps while it revokes others. Those are held to the
// rules of a grant (checkGrants). Test (model/testdata/consumer-groups.txt):
// a lost heartbeat's partitions kept while the next answer revokes.
func (st *step) startRevoking(g consumerGroup, id string, m consumerMember, epoch int32, assigned, dropped []Partition,
	justReleased bool) (consumerMember, *outcome) {
	if added := without(assigned, m.assigned); len(added) > 0 && !m.unsure {
		out := bad("consumer-revocation-pending", "the answer revokes %v, which the member still owns, and "+
			"gives it %v at once: a member revoking partitions gets nothing new until it has (CurrentAssignmentBuilder)",
			dropped, added)
		return m, &out
	} else if out := m.checkGrants(g, id, added); out != nil {
		return m, out
	}
	want := m.epoch
	if justReleased {
		want++
	}
	if epoch != want && !m.unsure {
		out := bad("consumer-revocation-pending", "the answer revokes %v and moves the member from epoch %d to %d: "+
			"a member that begins revoking is at epoch %d (CurrentAssignmentBuilder)", dropped, m.epoch, epoch, want)
		return m, &out
	}
	m.setEpoch(epoch, true)
	m.assigned, m.revoking, m.unsure = assigned, dropped, false
	m.revokingSince = st.s.now
	return m, nil
}

// setEpoch moves m to epoch. Kafka's builder sets the previous epoch to
// the current one each time it computes a new assignment
// (updateMemberEpoch), even at the same epoch: a member waiting for
// unreleased partitions gets one at every heartbeat. Whether it did when
// nothing the answer shows changed is unknown (prevUnsure).
func (m *consumerMember) setEpoch(epoch int32, changed bool) {
	moved := epoch != m.epoch || changed
	if moved {
		m.prevEpoch = m.epoch
	}
	m.prevUnsure = !moved
	m.epoch = epoch
}

// checkGrants: each partition the answer gives the member is held by no
// other member, assigned or pending revocation (KIP-848: a partition is
// assigned to its new owner only once its previous owner revoked it;
// CurrentAssignmentBuilder.computeNextAssignment leaves out partitions
// whose currentPartitionEpoch is not -1), and is of a topic it subscribes
// to (the target assignment is computed from the subscriptions), unless
// a lost answer left its subscription unknown.
func (m consumerMember) checkGrants(g consumerGroup, id string, added []Partition) *outcome {
	for _, p := range added {
		if holder := g.holder(p, id); holder != "" {
			out := bad("consumer-partition-not-released", "the answer gives %s to %s, but member %s has not "+
				"released it (CurrentAssignmentBuilder: unreleased partitions are not assigned)", p, id, holder)
			return &out
		}
		if topic, _ := p.Topic(); m.regex == "" && !m.unsure && !slices.Contains(m.topics, topic) {
			out := bad("consumer-topic-not-subscribed", "the answer gives %s to %s, which subscribes to %v", p, id, m.topics)
			return &out
		}
	}
	return nil
}

// lostHeartbeat is a heartbeat whose answer was lost: it may have moved
// the member's epoch and assignment, and released what it no longer
// sends as owned. The next answer says where the member is.
func (st *step) lostHeartbeat(r Request, g consumerGroup, id string, m consumerMember) outcome {
	g.loose = true
	if r.MemberID == "" {
		// Kafka chose an id no answer showed.
		g.unseenJoins++
		st.s.setConsumerGroup(r.Group, g)
		return ok(NewResponse())
	}
	if r.OwnedPartitions != nil {
		m.assigned = common(m.assigned, *r.OwnedPartitions)
		m.revoking = common(m.revoking, *r.OwnedPartitions)
		m.assignedAt = assignmentEpochs(m.assignedAt, slices.Concat(m.assigned, m.revoking), 0)
	}
	m.unsure, m.lastSeen = true, st.s.now
	st.s.setConsumerGroup(r.Group, g.withMember(id, m))
	return ok(NewResponse())
}

// expireConsumerMembers fences each member whose session or rebalance
// timer is due at now: GroupMetadataManager.scheduleConsumerGroupSessionTimeout
// (group.consumer.session.timeout.ms after its last heartbeat) and
// scheduleConsumerGroupRebalanceTimeout (its rebalance timeout after it
// began revoking, if it has not moved on since). Tests:
// GroupMetadataManagerTest#testSessionTimeoutExpiration,
// #testSessionTimeoutExpirationStaticMember, #testRebalanceTimeoutExpiration.
func (st *step) expireConsumerMembers() {
	for _, name := range slices.Sorted(maps.Keys(st.s.consumer)) {
		for _, id := range slices.Sorted(maps.Keys(st.s.consumer[name].members)) {
			g := st.s.consumer[name]
			if st.consumerTimerDue(g.members[id]) && st.s.fenceConsumerMember(name, g, id, st.s.now) {
				// A classic group now: its members' heartbeats were
				// rescheduled at the conversion.
				break
			}
		}
	}
}

func (st *step) consumerTimerDue(m consumerMember) bool {
	return st.s.consumerTimerDueAt(m, st.s.now)
}

// consumerTimerDueAt reports whether m's session or rebalance timer is
// due at now.
func (s State) consumerTimerDueAt(m consumerMember, now int64) bool {
	session := s.consumerSessionMs()
	if m.classic {
		// A classic member's session is its JoinGroup's, and its sync
		// and join timeouts fence it too (consumermigration.go).
		if !m.loadedSession {
			session = m.classicSessionMs
		}
		if m.classicDue > 0 && now >= m.classicDue {
			return true
		}
	}
	if now-m.lastSeen >= session {
		return true
	}
	return len(m.revoking) > 0 && m.rebalanceMs > 0 && now-m.revokingSince >= m.rebalanceMs
}

// dueConsumerTimers is s with the timers of op's consumer group that may
// have fired by op's answer, on a wall clock, where a timer fires at any
// moment after it is due: each member's on its own, then all together
// (as dueTimers does for classic groups).
func (s State) dueConsumerTimers(op Op) []State {
	g, ok := s.consumer[op.Req.Group]
	if !ok {
		return nil
	}
	var due []string
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if s.consumerTimerDueAt(g.members[id], op.Span.To) {
			due = append(due, id)
		}
	}
	fire := func(ids []string) State {
		fired := s
		for _, id := range ids {
			if fired.fenceConsumerMember(op.Req.Group, fired.consumer[op.Req.Group], id, op.Span.To) {
				break
			}
		}
		return fired
	}
	var out []State
	for _, id := range due {
		out = append(out, fire([]string{id}))
	}
	if len(due) > 1 {
		out = append(out, fire(due))
	}
	return out
}

// restartReloadsConsumerGroups: the coordinator loads each consumer group
// from its records, which it writes at every change, and schedules every
// member's session timer again, in full, and the rebalance timer of each
// member revoking partitions (GroupMetadataManager.onLoaded).
func (st *step) restartReloadsConsumerGroups() {
	for _, name := range slices.Sorted(maps.Keys(st.s.consumer)) {
		g := st.s.consumer[name]
		for _, id := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[id]
			m.lastSeen, m.revokingSince = st.s.now, st.s.now
			// onLoaded schedules every member's session with the
			// consumer group's timeout, and no sync or join timeout.
			m.loadedSession, m.classicDue = m.classic, 0
			g = g.withMember(id, m)
		}
		st.s.setConsumerGroup(name, g)
	}
}

func ownsAny(owned *[]Partition, ps []Partition) bool {
	if owned == nil {
		return true
	}
	return len(common(*owned, ps)) > 0
}

// common is a's partitions that b holds too, in a's order.
func common(a, b []Partition) []Partition {
	var out []Partition
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

// String of a member for the state's description.
func (m consumerMember) String() string {
	return fmt.Sprintf("epoch %d owns %v revoking %v", m.epoch, m.assigned, m.revoking)
}
