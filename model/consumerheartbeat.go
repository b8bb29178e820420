package model

import (
	"fmt"
	"maps"
	"slices"
)

// consumerGroupHeartbeat is KIP-848's ConsumerGroupHeartbeat
// (GroupMetadataManager.consumerGroupHeartbeat): a leave when the member
// epoch is -1 or -2, else a join (epoch 0) or a heartbeat.
func (st *step) consumerGroupHeartbeat(r Request) outcome {
	if out, invalid := st.consumerHeartbeatInvalid(r); invalid {
		return out
	}
	if st.s.consumer[r.Group].mayBeClassic {
		return st.takenUnjudged("consumer-may-be-classic", "group %s may have been converted to a classic group, "+
			"which group.consumer.migration.policy decides (GroupMetadataManager.convertToClassicGroup)", r.Group)
	}
	if r.MemberEpoch == LeaveMemberEpoch || r.MemberEpoch == StaticLeaveMemberEpoch {
		return st.consumerGroupLeave(r)
	}
	if out, refused := st.upgradeClassicGroup(r); refused {
		return out
	}
	return st.consumerGroupBeat(r)
}

// consumerHeartbeatInvalid is GroupMetadataManager.
// throwIfConsumerGroupHeartbeatRequestIsInvalid: INVALID_REQUEST, or
// UNSUPPORTED_ASSIGNOR for an assignor the broker does not have; tests:
// GroupMetadataManagerTest#testConsumerHeartbeatRequestValidation.
// Where 3.9 (and trunk of October 2024) refuse and 4.x accepts, the
// broker's answer decides (both are Kafka's).
func (st *step) consumerHeartbeatInvalid(r Request) (outcome, bool) {
	join := r.MemberEpoch == JoinMemberEpoch
	invalid := func(why string) (outcome, bool) {
		return refuse("consumer-invalid-request", InvalidRequest, "%s (GroupMetadataManager."+
			"throwIfConsumerGroupHeartbeatRequestIsInvalid)", why), true
	}
	// 4.x refuses what 3.9 takes, or the other way round: a judged
	// broker's INVALID_REQUEST says which version answered.
	eitherVersion := func(why string) (outcome, bool) {
		if st.answered(InvalidRequest) {
			return invalid(why)
		}
		return outcome{}, false
	}
	switch {
	case r.MemberID == "" && !join:
		return invalid("MemberId can't be empty")
	case r.MemberEpoch < StaticLeaveMemberEpoch:
		return invalid("MemberEpoch is invalid")
	case r.MemberEpoch == StaticLeaveMemberEpoch && r.InstanceID == "" &&
		(!st.allows(StaticLeaveWithoutInstance) || st.answered(InvalidRequest)):
		// The deviation widens: Kafka's refusal is still taken.
		return invalid("InstanceId can't be null")
	case join && r.RebalanceTimeoutMs == 0:
		return invalid("RebalanceTimeoutMs must be provided in first request")
	case join && (r.OwnedPartitions == nil || len(*r.OwnedPartitions) > 0):
		return invalid("TopicPartitions must be empty when (re-)joining")
	case join && r.SubscribedTopics == nil && r.SubscribedRegex == "":
		return invalid("SubscribedTopicNames must be set in first request")
	case r.MemberID == "" && st.clientChoosesMemberID():
		return invalid("MemberId can't be empty: from ConsumerGroupHeartbeat v1 (KIP-1082, 4.0) the client chooses it")
	case r.MemberID == "":
		// Before 4.0 the coordinator chose the id.
		return eitherVersion("MemberId can't be empty (4.0 and later, KIP-1082)")
	case join && r.SubscribedTopics != nil && len(*r.SubscribedTopics) == 0 && r.SubscribedRegex == "":
		// 4.x takes a member subscribed to nothing.
		return eitherVersion("SubscribedTopicNames must be set in first request (3.9)")
	case r.SubscribedRegex != "":
		return eitherVersion("SubscribedTopicRegex is not supported yet (3.9)")
	case r.ServerAssignor != "" && !slices.Contains(consumerGroupAssignors, r.ServerAssignor):
		return refuse("consumer-unsupported-assignor", UnsupportedAssignor,
			"ServerAssignor %s is not supported; Kafka has %v by default (group.consumer.assignors)",
			r.ServerAssignor, consumerGroupAssignors), true
	}
	return outcome{}, false
}

// clientChoosesMemberID reports whether the request was sent at v1 or
// later, where the client chooses its member id (KIP-1082,
// CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION in 4.0 and later).
func (st *step) clientChoosesMemberID() bool {
	n, known := st.op.APIVersion.Number()
	return known && n >= 1
}

// consumerGroupLeave is GroupMetadataManager.consumerGroupLeave: a member
// leaving (-1) is fenced, its partitions released and the group epoch
// bumped; a static member leaving for a while (-2) keeps its assignment
// but for the partitions pending revocation (consumerGroupStaticMemberGroupLeave).
// No epoch is checked. Tests: GroupMetadataManagerTest#testLeavingMemberBumpsGroupEpoch,
// #testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves,
// #testLeavingStaticMemberBumpsGroupEpoch,
// #testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves,
// #testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves.
func (st *step) consumerGroupLeave(r Request) outcome {
	g, exists := st.s.consumer[r.Group]
	if !exists {
		return refuse("consumer-unknown-group", GroupIDNotFound, "group %s is not a consumer group (consumerGroup)", r.Group)
	}
	id, out := st.consumerMemberToLeave(&g, r)
	if out != nil {
		return *out
	}
	if obs := st.observed(); obs != nil && obs.MemberEpoch != 0 && obs.MemberEpoch != r.MemberEpoch {
		return bad("consumer-leave-epoch", "a leave is answered with the epoch it sent, %d, got %d "+
			"(GroupMetadataManager.consumerGroupLeave)", r.MemberEpoch, obs.MemberEpoch)
	}
	if r.MemberEpoch == StaticLeaveMemberEpoch && (r.InstanceID != "" || g.members[id].instanceID != "") {
		// A -2 with no instance id reaches here only as a deviation
		// (StaticLeaveWithoutInstance): a static member then leaves for
		// a while, and a dynamic one for good.
		m := g.members[id]
		m.epoch, m.revoking = StaticLeaveMemberEpoch, nil
		st.s.setConsumerGroup(r.Group, g.withMember(id, m))
	} else {
		st.s.fenceConsumerMember(r.Group, g, id, max(st.s.now, st.op.Span.To))
	}
	resp := NewResponse()
	resp.MemberID, resp.MemberEpoch = r.MemberID, r.MemberEpoch
	return ok(resp)
}

// consumerMemberToLeave is the member a leave names: by its instance id
// for a static member (throwIfStaticMemberIsUnknown,
// throwIfInstanceIdIsFenced), else by its member id.
func (st *step) consumerMemberToLeave(g *consumerGroup, r Request) (string, *outcome) {
	if r.InstanceID == "" {
		if _, known := g.members[r.MemberID]; !known && !st.adoptUnseenJoin(g, r.MemberID) {
			out := refuse("consumer-unknown-member", UnknownMemberID, "member %s is not in group %s", r.MemberID, r.Group)
			return "", &out
		}
		return r.MemberID, nil
	}
	id, out := staticMemberOf(*g, r)
	return id, out
}

// staticMemberOf is the member holding the request's instance id, which
// must be the request's member: UNKNOWN_MEMBER_ID for an instance id no
// member holds, FENCED_INSTANCE_ID for another member's
// (GroupMetadataManager.throwIfStaticMemberIsUnknown,
// throwIfInstanceIdIsFenced).
func staticMemberOf(g consumerGroup, r Request) (string, *outcome) {
	id := g.staticMember(r.InstanceID)
	if id == "" {
		out := refuse("consumer-unknown-member", UnknownMemberID, "instance id %s is unknown", r.InstanceID)
		return "", &out
	}
	if id != r.MemberID {
		out := refuse("consumer-fenced-instance", FencedInstanceID, "instance id %s is member %s's, not %s",
			r.InstanceID, id, r.MemberID)
		return "", &out
	}
	return id, nil
}

// adoptUnseenJoin takes id as a member whose join's answer was lost, when
// there is one and the broker did not refuse it as unknown: Kafka chose
// its id, which no answer showed.
func (st *step) adoptUnseenJoin(g *consumerGroup, id string) bool {
	if g.unseenJoins == 0 || st.got == nil || st.answered(UnknownMemberID) {
		return false
	}
	g.unseenJoins--
	*g = g.withMember(id, consumerMember{unsure: true, lastSeen: st.s.now})
	return true
}

// consumerGroupBeat is a join (member epoch 0) or a heartbeat: find or
// create the member, check its epoch, update its subscription (a change
// bumps the group epoch), then reconcile it towards the target
// assignment the broker chose.
func (st *step) consumerGroupBeat(r Request) outcome {
	g, exists := st.s.consumer[r.Group]
	if !exists && r.MemberEpoch != JoinMemberEpoch {
		// getOrMaybeCreateConsumerGroup(groupId, createIfNotExists=false);
		// test: GroupMetadataManagerTest#testUnknownGroupId.
		return refuse("consumer-unknown-group", GroupIDNotFound, "group %s does not exist and the member does not join", r.Group)
	}
	if full := st.consumerGroupFull(r, g); full != nil {
		return *full
	}
	id, m, out := st.consumerMemberOf(&g, r)
	if out != nil {
		return *out
	}
	updated := m.subscribedBy(r)
	// A ConsumerGroupHeartbeat puts the member on the consumer protocol
	// (consumerGroupHeartbeat: setClassicMemberMetadata(null)).
	updated.classic, updated.classicSessionMs, updated.classicProtocols = false, 0, nil
	updated.syncPending, updated.classicDue, updated.loadedSession = false, 0, false
	bumped := !slices.Equal(updated.topics, m.topics) || updated.regex != m.regex
	if bumped {
		// hasMemberSubscriptionChanged: a new member's subscription
		// changes from none, so a join bumps the group epoch too.
		g.epoch++
	}
	st.refreshMetadata(&g, bumped)
	if updated.regex != "" {
		// 4.x resolves a regex on its own and bumps the group epoch when
		// it has.
		g.loose = true
	}
	return st.reconcileConsumer(r, g, id, updated)
}

// subscribedBy is m with what the request changes; a field left out is
// unchanged (ConsumerGroupMember.Builder.maybeUpdate*).
func (m consumerMember) subscribedBy(r Request) consumerMember {
	if r.SubscribedTopics != nil {
		m.topics = slices.Compact(slices.Sorted(slices.Values(*r.SubscribedTopics)))
	}
	if r.SubscribedRegex != "" {
		m.regex = r.SubscribedRegex
	}
	if r.RebalanceTimeoutMs > 0 {
		m.rebalanceMs = r.RebalanceTimeoutMs
	}
	if r.InstanceID != "" {
		m.instanceID = r.InstanceID
	}
	return m
}

// consumerMemberOf finds the request's member, or makes a new one for a
// join (getOrMaybeSubscribeDynamicConsumerGroupMember,
// getOrMaybeSubscribeStaticConsumerGroupMember), and checks its epoch.
// g loses a static member the request replaces.
func (st *step) consumerMemberOf(g *consumerGroup, r Request) (string, consumerMember, *outcome) {
	join := r.MemberEpoch == JoinMemberEpoch
	if r.InstanceID != "" && join {
		return st.staticJoin(g, r)
	}
	id, m := r.MemberID, consumerMember{}
	if r.InstanceID != "" {
		var out *outcome
		if id, out = staticMemberOf(*g, r); out != nil {
			return "", m, out
		}
	}
	if id == "" {
		id, out := st.newConsumerMemberID(*g)
		return id, consumerMember{}, out
	}
	m, known := g.members[id]
	if !known && join {
		return id, consumerMember{}, nil
	}
	if !known && !st.adoptUnseenJoin(g, id) {
		// test: GroupMetadataManagerTest#testUnknownMemberIdJoinsConsumerGroup.
		out := refuse("consumer-unknown-member", UnknownMemberID, "member %s is not in group %s and does not join", id, r.Group)
		return "", m, &out
	}
	m = g.members[id]
	return id, m, st.checkMemberEpoch(m, r)
}

// staticJoin is a static member's join: a new member for an instance id
// no member holds; else the member that left with epoch -2, under the
// request's member id, with its assignment (replaceMember); else
// UNRELEASED_INSTANCE_ID (throwIfInstanceIdIsUnreleased). Tests:
// GroupMetadataManagerTest#testStaticMemberGetsBackAssignmentUponRejoin,
// #testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId.
func (st *step) staticJoin(g *consumerGroup, r Request) (string, consumerMember, *outcome) {
	id := r.MemberID
	if id == "" {
		var out *outcome
		if id, out = st.newConsumerMemberID(*g); out != nil {
			return "", consumerMember{}, out
		}
	}
	old := g.staticMember(r.InstanceID)
	if old == "" {
		m, known := g.members[id]
		if known {
			return id, m, st.checkMemberEpoch(m, r)
		}
		return id, consumerMember{}, nil
	}
	prev := g.members[old]
	// A member on the consumer protocol replaces a classic one whether or
	// not it left (getOrMaybeSubscribeStaticConsumerGroupMember; test:
	// GroupMetadataManagerTest#testConsumerGroupHeartbeatFromExistingClassicStaticMember).
	if !prev.classic && prev.epoch != StaticLeaveMemberEpoch && !prev.unsure {
		out := refuse("consumer-unreleased-instance", UnreleasedInstanceID,
			"instance id %s is held by member %s, which has not left with epoch -2", r.InstanceID, old)
		return "", prev, &out
	}
	g.members = maps.Clone(g.members)
	delete(g.members, old)
	prev.epoch, prev.prevEpoch, prev.revoking = 0, 0, nil
	return id, prev, nil
}

// newConsumerMemberID is the id the coordinator gives a member that
// joined with member id "": the broker's answer, or the model's own. It
// is no member's yet (a random UUID: GroupMetadataManager.consumerGroupHeartbeat).
func (st *step) newConsumerMemberID(g consumerGroup) (string, *outcome) {
	obs := st.observed()
	if obs == nil || obs.MemberID == "" {
		id := fmt.Sprintf("consumer-%d", st.s.nextMember)
		st.s.nextMember++
		return id, nil
	}
	if _, taken := g.members[obs.MemberID]; taken {
		out := bad("consumer-member-id", "a new member is given the id %s, which a member of the group "+
			"already has (Kafka draws a random UUID)", obs.MemberID)
		return "", &out
	}
	return obs.MemberID, nil
}

// checkMemberEpoch is GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid:
// FENCED_MEMBER_EPOCH for an epoch ahead of the member's, or behind it,
// but for its previous epoch sent with owned partitions that are a
// subset of its assignment (the answer that moved it on may have been
// lost). Tests: GroupMetadataManagerTest#testConsumerGroupMemberEpochValidation,
// #testConsumerGroupMemberEpochValidationForStaticMember.
func (st *step) checkMemberEpoch(m consumerMember, r Request) *outcome {
	why := m.epochFence(r)
	if why == "" && m.prevUnsure && r.MemberEpoch == m.prevEpoch && r.MemberEpoch < m.epoch &&
		st.answered(FencedMemberEpoch) {
		// Kafka may have moved the previous epoch up unseen (setEpoch).
		why = fmt.Sprintf("member epoch %d may no longer be the member's previous one", r.MemberEpoch)
	}
	if why != "" && r.MemberEpoch == JoinMemberEpoch && !st.answered(FencedMemberEpoch) {
		// KAFKA-19233 (trunk of January 2026): a member fenced by its
		// epoch joins again under its own id at epoch 0, as KIP-848
		// says; earlier releases fence that too, unless its previous
		// epoch is 0. Both are Kafka's.
		return nil
	}
	if m.unsure {
		// The answer that may have moved the member on was lost: its
		// epoch may be any, so either answer is Kafka's.
		why = fmt.Sprintf("member epoch %d may no longer be the member's (an answer was lost)", r.MemberEpoch)
		if !st.answered(FencedMemberEpoch) {
			return nil
		}
	}
	if why == "" {
		return nil
	}
	out := refuse("consumer-fenced-epoch", FencedMemberEpoch, "%s", why)
	return &out
}

// epochFence says why the request's epoch fences m, "" when it does not.
func (m consumerMember) epochFence(r Request) string {
	sent := r.MemberEpoch
	switch {
	case sent > m.epoch:
		return fmt.Sprintf("member epoch %d is ahead of the coordinator's %d", sent, m.epoch)
	case sent == m.epoch:
		return ""
	case sent != m.prevEpoch:
		return fmt.Sprintf("member epoch %d is behind the coordinator's %d, and not its previous %d", sent, m.epoch, m.prevEpoch)
	case r.OwnedPartitions == nil || !subsetOf(*r.OwnedPartitions, m.assigned):
		return fmt.Sprintf("member epoch %d is the previous one, but the owned partitions are not a subset of %v", sent, m.assigned)
	}
	return ""
}

func subsetOf(sub, set []Partition) bool {
	for _, p := range sub {
		if !slices.Contains(set, p) {
			return false
		}
	}
	return true
}
