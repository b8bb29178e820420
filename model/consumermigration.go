package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KIP-848's online migration: a member on the classic protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) in a consumer group.
// Kafka keeps one group per group id, of one type. A classic request to
// a consumer group is answered by the consumer group, under its rules:
// the member's generation is its member epoch, and the server's assignor
// picks its partitions, as it does for every member.
//
// Sources: GroupMetadataManager.classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
// classicGroupLeaveToConsumerGroup, validateConsumerGroupMember,
// validateOnlineDowngradeWithFencedMember,
// validateOnlineDowngradeWithReplacedMemberId and convertToClassicGroup,
// at 3.9.0 and trunk 1eb7644 (4.0-SNAPSHOT), which agree on them. The
// tests are GroupMetadataManagerTest's (see
// testdata/kafka/GroupMetadataManagerTest.group-coordinator.txt).
//
// A classic JoinGroup carries no owned partitions in a history, where
// Kafka reads them from the subscription it embeds. An eager client
// sends none, a cooperative one sends what it owns. So an answer is
// taken if either reading explains it.
//
// The conversion of a consumer group back to a classic group, when its
// last member on the consumer protocol leaves, depends on
// group.consumer.migration.policy, which a history may not name, and on
// the classic group's size limit. Where the history names a policy that
// downgrades and the model knows the group for certain, it builds the
// classic group the conversion makes (toClassicGroup). Where the
// conversion may have happened otherwise, it takes any answer on that
// group id from then on (consumerGroup.mayBeClassic). Where the history
// names a policy that does not downgrade, the group stays a consumer
// group, and where it names one that does not upgrade, a
// ConsumerGroupHeartbeat join to a classic group with members is
// GROUP_ID_NOT_FOUND.

// MigrationPolicyConfig is the broker config that says which way a
// group with members may be converted, under Kafka's name
// (GroupCoordinatorConfig.CONSUMER_GROUP_MIGRATION_POLICY_CONFIG).
const MigrationPolicyConfig = "group.consumer.migration.policy"

// MigrationPolicy is a value of group.consumer.migration.policy
// (ConsumerGroupMigrationPolicy): upgrade converts a classic group with
// members to a consumer group, downgrade the other way, bidirectional
// both and disabled neither. Empty groups are converted under every
// policy. Kafka's default is disabled in 3.9 and bidirectional from 4.0.
type MigrationPolicy string

// The policies, as Kafka names them, and the one a history does not name.
const (
	MigrationPolicyUnknown MigrationPolicy = ""
	MigrationDisabled      MigrationPolicy = "disabled"
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationBidirectional MigrationPolicy = "bidirectional"
)

// ParseMigrationPolicy reads a policy as Kafka does, in any case; a name
// Kafka does not have is an error, because its config validation refuses
// it (ConfigDef.CaseInsensitiveValidString).
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	p := MigrationPolicy(strings.ToLower(s))
	switch p {
	case MigrationDisabled, MigrationUpgrade, MigrationDowngrade, MigrationBidirectional:
		return p, nil
	}
	return "", fmt.Errorf("%q is not a migration policy: Kafka has disabled, upgrade, downgrade and bidirectional", s)
}

// mayUpgrade and mayDowngrade report whether the policy may allow each
// way (isUpgradeEnabled, isDowngradeEnabled): an unknown policy may.
func (p MigrationPolicy) mayUpgrade() bool { return p != MigrationDisabled && p != MigrationDowngrade }
func (p MigrationPolicy) mayDowngrade() bool {
	return p != MigrationDisabled && p != MigrationUpgrade
}

// classicProtocolType is the protocol type a consumer's JoinGroup names
// (ConsumerProtocol.PROTOCOL_TYPE).
const classicProtocolType = "consumer"

// consumerGroupFor is the consumer group a classic request of kind
// meets, when Kafka's one group of that id is a consumer group. A
// JoinGroup meets it only when it has members
// (GroupMetadataManager.classicGroupJoin: an empty consumer group is
// deleted and the join makes a classic group). A SyncGroup, a Heartbeat
// and a LeaveGroup meet any consumer group (classicGroupSync,
// classicGroupHeartbeat, classicGroupLeave). A classic group with
// members of the same id keeps the request: a ConsumerGroupHeartbeat
// that Kafka refused to upgrade it (upgradeClassicGroup) left it so.
func (st *step) consumerGroupFor(r Request) (consumerGroup, bool) {
	g, ok := st.s.consumer[r.Group]
	if !ok || len(st.s.groups[r.Group].members) > 0 {
		return consumerGroup{}, false
	}
	if st.op.Kind == JoinGroup && len(g.members) == 0 && g.unseenJoins == 0 && !g.mayBeClassic {
		// maybeDeleteEmptyConsumerGroup: the classic group takes the id.
		st.s.consumer = maps.Clone(st.s.consumer)
		delete(st.s.consumer, r.Group)
		return consumerGroup{}, false
	}
	return g, true
}

// classicToConsumerGroup answers a classic request to a consumer group,
// and reports false when the request meets a classic group.
func (st *step) classicToConsumerGroup(r Request) (outcome, bool) {
	g, ok := st.consumerGroupFor(r)
	if !ok {
		return outcome{}, false
	}
	if g.mayBeClassic {
		return st.takenUnjudged("consumer-may-be-classic", "group %s may have been converted to a classic group, "+
			"which group.consumer.migration.policy decides (GroupMetadataManager.convertToClassicGroup)", r.Group), true
	}
	switch st.op.Kind {
	case JoinGroup:
		return st.classicJoinToConsumerGroup(r, g), true
	case SyncGroup:
		return st.classicSyncToConsumerGroup(r, g), true
	case Heartbeat:
		return st.classicHeartbeatToConsumerGroup(r, g), true
	case LeaveGroup:
		return st.classicLeaveToConsumerGroup(r, g), true
	}
	return outcome{}, false
}

// takenUnjudged takes whatever the broker answered, with no effect: the
// model cannot say which answer is due. Its own answer is a success.
func (st *step) takenUnjudged(rule, format string, args ...any) outcome {
	if st.got != nil && st.got.Answered && st.got.Err != "" {
		return refuse(rule, st.got.Err, format, args...)
	}
	if obs := st.observed(); obs != nil {
		return ok(*obs)
	}
	return ok(NewResponse())
}

// classicMemberOf is GroupMetadataManager.validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol: the member a SyncGroup, a
// Heartbeat or a LeaveGroup names, by its instance id for a static
// member (UNKNOWN_MEMBER_ID for an instance no member holds,
// FENCED_INSTANCE_ID for another member id's), else by its member id
// (UNKNOWN_MEMBER_ID); and a member on the consumer protocol is
// UNKNOWN_MEMBER_ID to a classic request. Tests:
// GroupMetadataManagerTest#testClassicGroupHeartbeatToConsumerWithUnknownMember,
// #testClassicGroupHeartbeatToConsumerWithFencedInstanceId,
// #testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol,
// #testClassicGroupSyncToConsumerGroupWithUnknownMemberId,
// #testClassicGroupSyncToConsumerGroupWithFencedInstanceId,
// #testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember.
func (st *step) classicMemberOf(g *consumerGroup, r Request) (string, consumerMember, *outcome) {
	var id string
	if r.InstanceID == "" || (st.op.Kind == LeaveGroup && r.MemberID == "") {
		// A LeaveGroup may name the instance alone (an admin's removal).
		id = r.MemberID
		if r.InstanceID != "" {
			id = g.staticMember(r.InstanceID)
		}
		if _, known := g.members[id]; id == "" || (!known && !st.adoptUnseenJoin(g, id)) {
			out := refuse("classic-to-consumer-unknown-member", UnknownMemberID, "%s is not a member of consumer group %s "+
				"(ConsumerGroup.getOrMaybeCreateMember)", r.MemberID, r.Group)
			return "", consumerMember{}, &out
		}
	} else {
		var out *outcome
		if id, out = staticMemberOf(*g, r); out != nil {
			out.rule = "classic-to-" + out.rule
			return "", consumerMember{}, out
		}
	}
	m := g.members[id]
	if !m.classic && !m.unsure {
		out := refuse("classic-to-consumer-unknown-member", UnknownMemberID, "member %s of consumer group %s uses the "+
			"consumer protocol, not the classic one (throwIfMemberDoesNotUseClassicProtocol)", id, r.Group)
		return "", m, &out
	}
	return id, m, nil
}

// classicJoinToConsumerGroup is GroupMetadataManager.
// classicGroupJoinToConsumerGroup: the JoinGroup's protocol must be the
// consumer protocol, with a protocol name every classic member supports
// (INCONSISTENT_GROUP_PROTOCOL). A dynamic member is found or made under
// its member id (no epoch is checked). A static member with no member id
// takes over the member holding its instance, with that member's
// assignment; with a member id it must be the holder. The member's
// subscription is the protocol's, and it reconciles as a heartbeat
// does: its generation is its new member epoch, and its assignment the
// SyncGroup's. Tests: GroupMetadataManagerTest#testJoiningConsumerGroupWithNewDynamicMember,
// #testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported,
// #testReconciliationInJoiningConsumerGroupWithEagerProtocol,
// #testReconciliationInJoiningConsumerGroupWithCooperativeProtocol.
func (st *step) classicJoinToConsumerGroup(r Request, g consumerGroup) outcome {
	if full := st.consumerGroupFull(r, g); full != nil {
		return *full
	}
	if out := classicProtocolRefusal(g, r); out != nil {
		return *out
	}
	id, m, replaced, refused := st.classicJoiner(&g, r)
	if refused != nil {
		return *refused
	}
	var out *outcome
	updated := m.subscribedBy(consumerSubscription(r))
	updated.classic, updated.classicSessionMs = true, sessionTimeout(r)
	updated.classicProtocols = protocolNames(r)
	if !slices.Equal(updated.topics, m.topics) {
		g.epoch++ // hasMemberSubscriptionChanged
	}
	downgrade := replaced != "" && g.allClassicBut(replaced) && st.s.opts.MigrationPolicy.mayDowngrade()
	certain := downgrade && g.certainReplacedDowngrade(st.s, st.op.Span.To)

	if downgrade && !certain {
		// validateOnlineDowngradeWithReplacedMemberId: the group may
		// become a classic group, as the migration policy says. The
		// join is answered either way; what follows is unjudged.
		g.mayBeClassic = true
	}
	if r.JoinOnly {
		g.phasedClassic = true
	}
	out, _ = st.reconcileClassic(r, g, id, updated, r.JoinOnly, NoGeneration)
	if certain && out.refuse == "" && out.bad == nil {
		// validateOnlineDowngradeWithReplacedMemberId, then
		// convertToClassicGroup with the joining member: a stable
		// classic group, with no rebalance.
		st.s.toClassicGroup(r.Group, st.s.consumer[r.Group], replaced, true, max(st.s.now, st.op.Span.To))
	}
	return *out
}

// certainReplacedDowngrade reports whether Kafka converts g, from which a
// classic JoinGroup just took a static member's place, to a classic
// group for certain: the model knows the policy and the group
// (downgradeKnown), and the group, with the joining member, is within
// group.max.size (validateOnlineDowngradeWithReplacedMemberId).
func (g consumerGroup) certainReplacedDowngrade(s State, at int64) bool {
	return g.downgradeKnown("", s, at) && (s.opts.GroupMaxSize <= 0 || len(g.members)+1 <= s.opts.GroupMaxSize)
}

// classicJoiner is the member a classic JoinGroup joins as
// (getOrMaybeSubscribeDynamicConsumerGroupMember and
// getOrMaybeSubscribeStaticConsumerGroupMember with the classic protocol),
// and the member it replaced, if any.
func (st *step) classicJoiner(g *consumerGroup, r Request) (string, consumerMember, string, *outcome) {
	id := r.MemberID
	if id == "" {
		var out *outcome
		if id, out = st.newConsumerMemberID(*g); out != nil {
			return "", consumerMember{}, "", out
		}
	}
	if r.InstanceID == "" {
		return id, g.members[id], "", nil
	}
	old := g.staticMember(r.InstanceID)
	if r.MemberID != "" {
		// throwIfStaticMemberIsUnknown, throwIfInstanceIdIsFenced.
		sid, out := staticMemberOf(*g, r)
		if out != nil {
			out.rule = "classic-to-" + out.rule
			return "", consumerMember{}, "", out
		}
		return sid, g.members[sid], "", nil
	}
	if old == "" {
		return id, consumerMember{}, "", nil
	}
	// A classic member replaces the instance's member whether or not it
	// left (no throwIfInstanceIdIsUnreleased for the classic protocol).
	prev := g.members[old]
	g.members = maps.Clone(g.members)
	delete(g.members, old)
	prev.epoch, prev.prevEpoch, prev.revoking = 0, 0, nil
	return id, prev, old, nil
}

// classicProtocolRefusal is throwIfClassicProtocolIsNotSupported
// (ConsumerGroup.supportsClassicProtocols): the protocol type must be
// the consumer protocol's, and one protocol name must be supported by
// every classic member. Where the join does not say, nothing is judged.
func classicProtocolRefusal(g consumerGroup, r Request) *outcome {
	if r.ProtocolType != "" && r.ProtocolType != classicProtocolType {
		out := refuse("classic-to-consumer-protocol", InconsistentGroupProtocol, "a consumer group takes the %q "+
			"protocol type, not %q (ConsumerGroup.supportsClassicProtocols)", classicProtocolType, r.ProtocolType)
		return &out
	}
	names := protocolNames(r)
	if len(names) == 0 {
		return nil
	}
	for _, name := range names {
		all := true
		for _, m := range g.members {
			if m.classic && len(m.classicProtocols) > 0 && !slices.Contains(m.classicProtocols, name) {
				all = false
			}
		}
		if all {
			return nil
		}
	}
	out := refuse("classic-to-consumer-protocol", InconsistentGroupProtocol, "no protocol of %v is supported by every "+
		"classic member of consumer group %s (ConsumerGroup.supportsClassicProtocols)", names, r.Group)
	return &out
}

// consumerSubscription is a classic JoinGroup read as the heartbeat it
// is to the consumer group: the topics of its first protocol's
// subscription (GroupMetadataManager.deserializeSubscription), its
// rebalance timeout and its instance id.
func consumerSubscription(r Request) Request {
	c := NewRequest()
	c.Group, c.MemberID, c.InstanceID, c.RebalanceTimeoutMs = r.Group, r.MemberID, r.InstanceID, r.RebalanceTimeoutMs
	if len(r.Protocols) > 0 {
		topics := slices.Clone(r.Protocols[0].Topics)
		c.SubscribedTopics = &topics
	}
	return c
}

// allClassicBut reports whether every member but id uses the classic
// protocol (ConsumerGroup.allMembersUseClassicProtocolExcept).
func (g consumerGroup) allClassicBut(id string) bool {
	for mid, m := range g.members {
		if mid != id && !m.classic {
			return false
		}
	}
	return true
}

// reconcileClassic reconciles a classic member as reconcileConsumer does
// a heartbeat, with the classic answer read as a heartbeat's: its
// generation is the member epoch and its assignment (the SyncGroup's)
// the member's; a JoinGroup alone shows no assignment, which the member's
// SyncGroup then shows (syncPending). The member's owned partitions are
// not in the history: an eager client owns none when it joins, a
// cooperative one owns its assignment. Judging, an answer either
// reading explains is taken, the cooperative one first; the model's own
// answer is the cooperative one's.
//
// gen is the generation the answer is at, NoGeneration for a JoinGroup,
// whose answer says it.
func (st *step) reconcileClassic(r Request, g consumerGroup, id string, m consumerMember, joinOnly bool, gen int32) (*outcome, bool) {
	beat := consumerSubscription(r)
	beat.MemberID, beat.MemberEpoch = id, m.epoch
	if r.MemberID == "" && r.InstanceID == "" && st.undecided() {
		// A lost answer leaves the id Kafka chose unknown.
		beat.MemberID = ""
	}
	saved, savedGot := st.s, st.got
	defer func() { st.got = savedGot }()
	if savedGot != nil && savedGot.Answered && savedGot.Err == "" {
		got := *savedGot
		got.Resp.MemberEpoch = got.Resp.GenerationID
		if gen != NoGeneration {
			got.Resp.MemberEpoch = gen
		}
		got.Resp.MemberAssignment = nil
		if !joinOnly {
			assigned := slices.Clone(got.Resp.Assignment)
			got.Resp.MemberAssignment = &assigned
		}
		st.got = &got
	}
	var out outcome
	// The cooperative reading first: it keeps what the member may still
	// own held, so that no other member is given it.
	for i, owned := range [][]Partition{slices.Concat(m.assigned, m.revoking), {}} {
		if savedGot == nil && i == 1 {
			break // the model's own answer is the cooperative client's
		}
		st.s = saved
		beat.OwnedPartitions = &owned
		out = st.reconcileConsumer(beat, g, id, m)
		if out.bad == nil {
			break
		}
	}
	if out.bad != nil || out.refuse != "" || st.undecided() {
		return &out, false
	}
	next := st.s.consumer[r.Group]
	member := next.members[id]
	member.syncPending, member.loadedSession = joinOnly, false
	if joinOnly && member.rebalanceMs > 0 {
		// scheduleConsumerGroupSyncTimeout: a member that sends no
		// SyncGroup within its rebalance timeout is fenced.
		member.classicDue = st.s.now + member.rebalanceMs
	} else {
		member.classicDue = 0
	}
	st.s.setConsumerGroup(r.Group, next.withMember(id, member))
	resp := classicAnswer(out.resp, member)
	if savedGot != nil && savedGot.Answered && savedGot.Err == "" {
		resp.Assignment = savedGot.Resp.Assignment
	}
	answer := ok(resp)
	return &answer, true
}

// classicAnswer is the JoinGroup answer of a consumer group: the member
// epoch as the generation, the consumer protocol type, the member's
// first protocol and no leader (classicGroupJoinToConsumerGroup), and
// for a whole round the SyncGroup's assignment.
func classicAnswer(beat Response, m consumerMember) Response {
	resp := NewResponse()
	resp.MemberID, resp.GenerationID = beat.MemberID, m.epoch
	resp.ProtocolType = classicProtocolType
	if len(m.classicProtocols) > 0 {
		resp.Protocol = m.classicProtocols[0]
	}
	resp.Assignment = slices.Clone(m.assigned)
	return resp
}

// classicSyncToConsumerGroup is GroupMetadataManager.
// classicGroupSyncToConsumerGroup: a SyncGroup to a group with no
// members is UNKNOWN_MEMBER_ID; then the member (classicMemberOf), a
// generation other than its member epoch (ILLEGAL_GENERATION), a protocol
// type or name other than the member's (INCONSISTENT_GROUP_PROTOCOL), and
// a member behind the group epoch that is not revoking
// (REBALANCE_IN_PROGRESS: it must join again). Else it is answered its
// assignment, and its session is renewed. Tests:
// GroupMetadataManagerTest#testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions,
// #testClassicGroupSyncToConsumerGroupWithIllegalGeneration,
// #testClassicGroupSyncToConsumerGroupWithInconsistentGroupProtocol,
// #testClassicGroupSyncToConsumerGroupRebalanceInProgress.
func (st *step) classicSyncToConsumerGroup(r Request, g consumerGroup) outcome {
	if len(g.members) == 0 && g.unseenJoins == 0 {
		return refuse("classic-to-consumer-unknown-member", UnknownMemberID, "consumer group %s has no members "+
			"(GroupMetadataManager.classicGroupSync)", r.Group)
	}
	id, m, out := st.classicMemberOf(&g, r)
	if out != nil {
		return *out
	}
	if out := st.classicGeneration(r, m); out != nil {
		return *out
	}
	if r.ProtocolType != "" && r.ProtocolType != classicProtocolType ||
		r.Protocol != "" && len(m.classicProtocols) > 0 && r.Protocol != m.classicProtocols[0] {
		return refuse("classic-to-consumer-protocol", InconsistentGroupProtocol, "the SyncGroup's protocol %q %q is "+
			"not the member's (throwIfClassicProtocolUnmatched)", r.ProtocolType, r.Protocol)
	}
	// A member whose JoinGroup left it behind the group epoch is
	// revoking (UNREVOKED_PARTITIONS), which a JoinGroup alone does not
	// show: its SyncGroup is answered.
	if g.epoch > m.epoch && len(m.revoking) == 0 && !m.unsure && !m.syncPending {
		out := refuse("classic-to-consumer-rebalance", RebalanceInProgress, "group epoch %d is past member %s's "+
			"epoch %d, so it must join again (throwIfRebalanceInProgress)", g.epoch, id, m.epoch)
		if g.loose {
			out.also = Success
		}
		return out
	}
	if m.syncPending || m.unsure {
		// The JoinGroup alone did not show the assignment: the SyncGroup
		// does, held to the rules of a heartbeat's answer.
		out, _ := st.reconcileClassic(r, g, id, m, false, m.epoch)
		return *out
	}
	resp := NewResponse()
	resp.Assignment = slices.Clone(m.assigned)
	if obs := st.observed(); obs != nil && !sameSet(obs.Assignment, m.assigned) {
		return bad("classic-to-consumer-sync-assignment", "the SyncGroup answers %v, but member %s holds %v "+
			"(classicGroupSyncToConsumerGroup answers the member's assigned partitions)", obs.Assignment, id, m.assigned)
	}
	m.lastSeen, m.classicDue, m.loadedSession = st.s.now, 0, false
	st.s.setConsumerGroup(r.Group, g.withMember(id, m))
	return ok(resp)
}

// classicGeneration is throwIfGenerationIdUnmatched: a classic member's
// generation is its member epoch, else ILLEGAL_GENERATION. After a lost
// answer its epoch is unknown, so either answer is taken.
func (st *step) classicGeneration(r Request, m consumerMember) *outcome {
	if r.GenerationID == m.epoch || (m.unsure && !st.answered(IllegalGeneration)) {
		return nil
	}
	out := refuse("classic-to-consumer-generation", IllegalGeneration, "generation %d is not the member's epoch %d "+
		"(throwIfGenerationIdUnmatched)", r.GenerationID, m.epoch)
	return &out
}

// classicHeartbeatToConsumerGroup is GroupMetadataManager.
// classicGroupHeartbeatToConsumerGroup: the member (classicMemberOf) and
// its generation (classicGeneration) are checked, then its session is
// renewed. It is answered REBALANCE_IN_PROGRESS when the group epoch is
// past its epoch or it is revoking partitions, and its join timeout
// starts; a member waiting for partitions that are now free is answered
// so too, which the model cannot tell (it does not hold the target
// assignment), so there both answers are taken. Tests:
// GroupMetadataManagerTest#testClassicGroupHeartbeatToConsumerGroupMaintainsSession,
// #testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress,
// #testClassicGroupHeartbeatToConsumerWithIllegalGenerationId.
func (st *step) classicHeartbeatToConsumerGroup(r Request, g consumerGroup) outcome {
	id, m, out := st.classicMemberOf(&g, r)
	if out != nil {
		return *out
	}
	if out := st.classicGeneration(r, m); out != nil {
		return *out
	}
	m.lastSeen, m.loadedSession = st.s.now, false
	if m.epoch < g.epoch || len(m.revoking) > 0 {
		if m.classicDue == 0 && m.rebalanceMs > 0 {
			// scheduleConsumerGroupJoinTimeoutIfAbsent.
			m.classicDue = st.s.now + m.rebalanceMs
		}
		st.s.setConsumerGroup(r.Group, g.withMember(id, m))
		out := refuse("classic-to-consumer-rebalance", RebalanceInProgress, "member %s is at epoch %d of group "+
			"epoch %d, or revoking, so it must join again (classicGroupHeartbeatToConsumerGroup)", id, m.epoch, g.epoch)
		out.effects = true
		if g.loose || m.unsure {
			out.also = Success
		}
		return out
	}
	st.s.setConsumerGroup(r.Group, g.withMember(id, m))
	return ok(NewResponse())
}

// classicLeaveToConsumerGroup is GroupMetadataManager.
// classicGroupLeaveToConsumerGroup: the member (classicMemberOf; a
// member id with an instance must be the instance's holder) is removed
// and the group epoch bumped. No conversion follows a classic member's
// leave. Test:
// GroupMetadataManagerTest#testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember.
func (st *step) classicLeaveToConsumerGroup(r Request, g consumerGroup) outcome {
	id, _, out := st.classicMemberOf(&g, r)
	if out != nil {
		return *out
	}
	g.members = maps.Clone(g.members)
	delete(g.members, id)
	g.epoch++
	st.s.setConsumerGroup(r.Group, g)
	return ok(NewResponse())
}

// downgradable reports whether fencing member id may convert g to a
// classic group: every other member uses the classic protocol and one at
// least remains (validateOnlineDowngradeWithFencedMember); whether it
// does is group.consumer.migration.policy's, which a history does not
// name, and the classic group's size limit's.
//
// Kafka keeps the consumer group when the members other than id are more
// than group.max.size ("numMembers() - 1 > classicGroupMaxSize", 3.9.0
// and trunk 1eb7644; test:
// GroupMetadataManagerTest#testNoConversionWhenSizeExceedsClassicMaxGroupSize).
// Where s names group.max.size, the model counts only the members that
// are members for sure at at: not one whose last answer was lost, nor one
// whose session or rebalance timer is due by then, which Kafka may have
// fenced first. When those alone are more, the group stays a consumer
// group for sure.
func (g consumerGroup) downgradable(id string, s State, at int64) bool {
	if len(g.members) <= 1 || !g.allClassicBut(id) || !s.opts.MigrationPolicy.mayDowngrade() {
		return false
	}
	classicMax := s.opts.GroupMaxSize
	if classicMax <= 0 {
		return true
	}
	others := 0
	for other, m := range g.members {
		if other != id && !m.unsure && !s.consumerTimerDueAt(m, at) {
			others++
		}
	}
	return others <= classicMax
}

func (m consumerMember) classicString() string {
	if !m.classic {
		return ""
	}
	return fmt.Sprintf(" (classic, session %d ms)", m.classicSessionMs)
}

// upgradeClassicGroup is the upgrade of a classic group with members to a
// consumer group when a ConsumerGroupHeartbeat joins it
// (GroupMetadataManager.getOrMaybeCreateConsumerGroup,
// validateOnlineUpgrade, convertToConsumerGroup). Kafka converts it when
// group.consumer.migration.policy allows, its members use the consumer
// protocol type and it is not too large; else the join is
// GROUP_ID_NOT_FOUND. The policy is not in the history, so the answer
// says which: a success converts, GROUP_ID_NOT_FOUND leaves the classic
// group as it was. A join of a known protocol type other than
// "consumer" is GROUP_ID_NOT_FOUND under every policy. It reports true
// with the refusal; else the join goes on in the converted group.
// Tests: GroupMetadataManagerTest#testConsumerGroupHeartbeatWithStableClassicGroup,
// #testConsumerGroupHeartbeatWithNonEmptyClassicGroup,
// #testConsumerGroupHeartbeatWithEmptyClassicGroup,
// #testConsumerGroupHeartbeatToClassicGroupFromExistingStaticMember.
func (st *step) upgradeClassicGroup(r Request) (outcome, bool) {
	if r.MemberEpoch != JoinMemberEpoch {
		return outcome{}, false
	}
	if _, consumer := st.s.consumer[r.Group]; consumer {
		return outcome{}, false
	}
	cg := st.s.groups[r.Group]
	if len(cg.members) == 0 {
		// maybeDeleteEmptyClassicGroup: the join makes a consumer group.
		return outcome{}, false
	}
	refusal := refuse("consumer-upgrade", GroupIDNotFound, "group %s is a classic group with members, which "+
		"the migration policy may keep (validateOnlineUpgrade)", r.Group)
	for _, m := range cg.members {
		if m.protocolType != "" && m.protocolType != classicProtocolType {
			refusal.why = fmt.Sprintf("group %s is a classic group of protocol type %q, not %q "+
				"(ClassicGroup.usesConsumerGroupProtocol)", r.Group, m.protocolType, classicProtocolType)
			return refusal, true
		}
	}
	if !st.s.opts.MigrationPolicy.mayUpgrade() {
		refusal.why = fmt.Sprintf("group %s is a classic group with members, and group.consumer.migration.policy %s "+
			"does not upgrade it (validateOnlineUpgrade)", r.Group, st.s.opts.MigrationPolicy)
		return refusal, true
	}
	if st.answered(GroupIDNotFound) {
		return refusal, true
	}
	converted := consumerGroupFrom(cg)
	if old := converted.staticMember(r.InstanceID); r.InstanceID != "" && old != "" &&
		(r.SubscribedTopics == nil || slices.Equal(converted.members[old].topics, slices.Compact(slices.Sorted(slices.Values(*r.SubscribedTopics))))) {
		// The converted group has no subscription metadata, so the
		// join computes it anew and bumps the group epoch, even where a
		// static member takes its instance's subscription over
		// unchanged (convertToConsumerGroup: "the group epoch being
		// bumped"; test:
		// GroupMetadataManagerTest#testConsumerGroupHeartbeatToClassicGroupFromExistingStaticMember).
		converted.epoch++
	}
	if st.undecided() {
		// Whether the group was converted is unknown.
		converted.mayBeClassic = true
	}
	cg.members, cg.leader, cg.syncDue = nil, "", 0
	st.s.setGroup(r.Group, cg)
	st.s.setConsumerGroup(r.Group, converted)
	return outcome{}, false
}

// consumerGroupFrom is ConsumerGroup.fromClassicGroup: the group epoch
// and every member's epoch are the classic generation, each member is on
// the classic protocol, subscribed to the topics of its protocol and
// holding its last assignment. Where the model does not know a member's
// generation or assignment for certain (a lost answer, a round that may
// have completed unseen, a SyncGroup not yet answered), the member's
// epoch and partitions are what its next answer says (unsure), and it
// is held to hold nothing meanwhile, so that no answer is called wrong
// for it.
func consumerGroupFrom(cg group) consumerGroup {
	g := consumerGroup{epoch: cg.answered, loose: cg.unseenRound > cg.answered || cg.generation != cg.answered}
	for _, id := range sortedMembers(cg) {
		mm := cg.members[id]
		if unnamed(id) {
			g.unseenJoins++
			g.loose = true
			continue
		}
		m := consumerMember{epoch: g.epoch, prevEpoch: g.epoch, instanceID: mm.instance, classic: true,
			classicSessionMs: mm.sessionMs, classicProtocols: slices.Clone(mm.protocols), lastSeen: mm.lastSeen}
		m.topics = subscribedTopics(mm, cg.protocol)
		certain := !g.loose && mm.gen == cg.answered && !mm.assignmentUnknown && !mm.syncPending && !mm.mayBeGone &&
			cg.syncDue == 0 && m.topics != nil
		if certain {
			m.assigned = slices.Sorted(slices.Values(mm.assignment))
			m.assignedAt = assignmentEpochs(nil, m.assigned, g.epoch)
		} else {
			m.unsure = true
		}
		g = g.withMember(id, m)
	}
	return g
}

// subscribedTopics is the topics of the member's subscription to the
// group's protocol (or its first, while the group's is unknown), sorted;
// nil when its join did not say.
func subscribedTopics(m member, protocol string) []string {
	for _, key := range m.subscription {
		name, topics, _ := strings.Cut(key, ":")
		if protocol == "" || name == protocol {
			if topics == "" {
				return []string{}
			}
			return slices.Compact(slices.Sorted(slices.Values(strings.Split(topics, "+"))))
		}
	}
	return nil
}

// certainDowngrade reports whether Kafka converts consumer group g to a
// classic group for certain as member leaving goes, at at: the model
// knows the policy and the group (downgradeKnown), and the group may be
// downgraded (downgradable). Where the policy is not named, or the model
// is unsure, the group may be classic (mayBeClassic), and every answer
// on its id is taken.
func (g consumerGroup) certainDowngrade(leaving string, s State, at int64) bool {
	return g.downgradeKnown(leaving, s, at) && g.downgradable(leaving, s, at)
}

// downgradeKnown reports whether the history names a policy that
// downgrades (downgrade or bidirectional), and the model knows g's group
// epoch and every member but except for certain, none of whose timers is
// due by at, so that no other fence may come first.
func (g consumerGroup) downgradeKnown(except string, s State, at int64) bool {
	p := s.opts.MigrationPolicy
	if p != MigrationDowngrade && p != MigrationBidirectional {
		return false
	}
	if g.loose || g.unseenJoins > 0 || g.mayBeClassic {
		return false
	}
	for id, m := range g.members {
		if id != except && (m.unsure || s.consumerTimerDueAt(m, at)) {
			return false
		}
	}
	return true
}

// toClassicGroup is GroupMetadataManager.convertToClassicGroup with
// ClassicGroup.fromConsumerGroup: consumer group name, holding g, becomes
// a classic group of the same id, its offsets kept. Its generation is
// the group epoch, and its members are g's but leaving, each with its
// classic session and protocols and its heartbeat rescheduled at at
// (rescheduleClassicGroupMemberHeartbeat). A member's assignment is its
// target assignment, which the model does not keep, so it is unknown.
// The leader is the first member of a hash map, so it is unknown too.
// Where the classic members' rounds were recorded as JoinGroup and
// SyncGroup apart (phasedClassic), every request of the classic group is
// in the history too (group.phased).
// Where a member left or was fenced (stable is false), the group then
// prepares a rebalance: the remaining members must rejoin, and the next
// round answers the next generation. Where a static member replaced the
// leaving one (stable), the group stays stable. Tests:
// ClassicGroupTest#testFromConsumerGroupWithoutJoiningMember,
// #testFromConsumerGroupWithJoiningMember;
// GroupMetadataManagerTest#testLastConsumerProtocolMemberLeavingConsumerGroup,
// #testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember.
func (s *State) toClassicGroup(name string, g consumerGroup, leaving string, stable bool, at int64) {
	cg := s.groups[name]
	cg.members = map[string]member{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if m := g.members[id]; id != leaving {
			cg.members[id] = member{gen: g.epoch, lastSeen: at, sessionMs: m.classicSessionMs, protocolType: classicProtocolType,
				protocols: slices.Clone(m.classicProtocols), instance: m.instanceID, assignmentUnknown: true,
				syncPending: m.syncPending}
		}
	}
	cg.answered, cg.generation = g.epoch, g.epoch
	if !stable {
		cg.generation++ // prepareRebalance
	}
	cg.leader, cg.syncDue, cg.unseenRound, cg.pending = "", 0, 0, nil
	cg.protocol, cg.protocolGen, cg.phased = "", 0, g.phasedClassic
	cg.removed = maps.Clone(cg.removed)
	if cg.removed == nil {
		cg.removed = map[string]bool{}
	}
	cg.removed[leaving] = true
	s.setGroup(name, cg)
	s.consumer = maps.Clone(s.consumer)
	delete(s.consumer, name)
}

// fenceConsumerMember fences member id of consumer group name, holding g,
// at at: the group becomes a classic group where Kafka converts it for
// certain (consumerGroupFenceMember, validateOnlineDowngradeWithFencedMember),
// and else stays a consumer group without the member (fenced). It
// reports whether the group was converted.
func (s *State) fenceConsumerMember(name string, g consumerGroup, id string, at int64) bool {
	if g.certainDowngrade(id, *s, at) {
		s.toClassicGroup(name, g, id, false, at)
		return true
	}
	s.setConsumerGroup(name, g.fenced(id, *s, at))
	return false
}
