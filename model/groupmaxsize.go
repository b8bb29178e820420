package model

// GroupMaxSizeConfig is the broker config that bounds how many members a
// classic group takes, under Kafka's name.
const GroupMaxSizeConfig = "group.max.size"

// ConsumerGroupMaxSizeConfig is the broker config that bounds how many
// members a KIP-848 consumer group takes, under Kafka's name
// (GroupCoordinatorConfig.CONSUMER_GROUP_MAX_SIZE_CONFIG).
const ConsumerGroupMaxSizeConfig = "group.consumer.max.size"

// groupMaxSize is Kafka's acceptJoiningMember, which a JoinGroup meets
// before the group's other rules (GroupCoordinator.handleJoinGroup, 3.9;
// GroupMetadataManager.classicGroupJoinToClassicGroup, 4.x). An Empty
// group takes any member. A Stable or CompletingRebalance group takes a
// member it holds, and another while it holds fewer than group.max.size
// members. A group preparing a rebalance takes a member that has already
// rejoined it, and another while fewer than group.max.size have. A
// refused member is removed (group.remove), so that the last members to
// rejoin are kicked out. Tests: GroupCoordinatorTest and
// GroupMetadataManagerTest, #testJoinGroupShouldReceiveErrorIfGroupOverMaxSize,
// #testDynamicMembersJoinGroupWithMaxSize and the other WithMaxSize tests.
//
// The model does not count which members have rejoined a round being
// prepared, nor is every member it holds one for sure. So it refuses a
// join only when the group holds group.max.size members for sure and
// prepares no rebalance (its own answers: holds that many). A refusal is wrong while the group holds fewer
// members than that, because Kafka's every count is at most the group's
// size. A known member's refusal is wrong while the group holds no more
// than that, because the member itself has not rejoined yet. Between the
// two, both answers are taken. With the config unknown (0), every answer
// is taken, as before the config was known.
func (st *step) groupMaxSize(r Request, g group) *outcome {
	maxSize := st.s.opts.GroupMaxSize
	if maxSize <= 0 || len(g.members) == 0 {
		return nil // not known, or an Empty group: any member is taken
	}
	_, known := g.members[r.MemberID]
	refused := st.got != nil && st.got.Answered && st.got.Err == GroupMaxSizeReached
	held := g.sureMembers(st.s.now)
	if st.got == nil {
		// The model's own answer counts every member it holds: its own
		// rounds complete at once, so no member has rejoined a round
		// being prepared, and Kafka would take any member then too.
		held = len(g.members)
	}
	if !known && !g.preparingRebalance() && held >= maxSize {
		return st.groupFull(r, g, known, maxSize)
	}
	if refused && !g.roomFor(known, maxSize) {
		return st.groupFull(r, g, known, maxSize)
	}
	return nil
}

// groupFull refuses r: the group holds maxSize members. A member it held
// is removed, as Kafka's group.remove does.
func (st *step) groupFull(r Request, g group, known bool, maxSize int) *outcome {
	out := refuse("group-max-size", GroupMaxSizeReached, "%s holds %d members, group.max.size %d", r.Group, len(g.members), maxSize)
	if known {
		st.s.setGroup(r.Group, g.withoutMember(r.MemberID))
		out.effects = true
	}
	return &out
}

// sureMembers counts g's members that are members for sure at now: not
// one a completed round may have dropped, nor one whose session may have
// expired, nor one whose join was not answered (that join may have been
// refused).
func (g group) sureMembers(now int64) int {
	n := 0
	for id, m := range g.members {
		if !unnamed(id) && !m.mayBeGone && !m.mayBeReplaced && !m.expiredBy(now) {
			n++
		}
	}
	return n
}

// roomFor reports whether the group surely takes a join of a new member
// (known false) or of a member it holds: Kafka's counts are at most the
// group's size, and a member's own rejoin is not among those counted. A
// join whose answer was lost may have added a member the model does not
// count, so a group holding one has no room for sure.
func (g group) roomFor(known bool, maxSize int) bool {
	if _, lost := g.members[lostMember]; lost {
		return false
	}
	if known {
		return len(g.members) <= maxSize
	}
	return len(g.members) < maxSize
}

// JudgedByState reports whether got, a refusal of a class that changes
// nothing, is one the state decides, so that it is not taken in any
// state: GROUP_MAX_SIZE_REACHED once group.max.size is known, and a
// MEMBER_ID_REQUIRED that names the id it hands out (pending.go), which
// a history's join_group never does, and an INVALID_GROUP_ID, which the
// group id decides (groupid.go).
func JudgedByState(groupMaxSize int, op Op, got Result) bool {
	if groupIDJudged(op, got) {
		return true
	}
	if op.Kind != JoinGroup || !got.Answered {
		return false
	}
	switch got.Err {
	case GroupMaxSizeReached:
		return groupMaxSize > 0
	case MemberIDRequired:
		return got.Resp.MemberID != ""
	}
	return false
}

// consumerGroupFull is Kafka's throwIfConsumerGroupIsFull, which a
// ConsumerGroupHeartbeat meets once its group is found or made, and a
// classic JoinGroup to a consumer group before its protocols are
// checked (GroupMetadataManager.consumerGroupHeartbeat,
// classicGroupJoinToConsumerGroup, 3.9.0 and trunk 1eb7644). A group
// holding group.consumer.max.size members refuses a member id it does
// not hold, an empty one included: GROUP_MAX_SIZE_REACHED. Tests:
// GroupMetadataManagerTest#testNewMemberIsRejectedWithMaximumMembersIsReached,
// #testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize.
//
// GROUP_MAX_SIZE_REACHED changes nothing, so a judged broker's refusal
// is taken in any state, as before the config was known. A success is
// wrong when the group holds that many members for sure: not a member
// whose last answer was lost (its join may not have happened), and
// with no join whose answer was lost, which may have made the sender a
// member. A member whose session may have expired is let go by the
// timers the judge fires (checkFiring).
//
// A static member that takes over its instance under a new member id
// is refused too in 3.9.0 to 4.x, but Kafka's trunk lets it in
// (KAFKA-20601, apache/kafka#22356, backported to 4.2 by #23120): so
// both answers are taken for it, and the model's own answer refuses.
//
// A classic JoinGroup's GROUP_MAX_SIZE_REACHED is judged by the state
// once group.max.size is known (JudgedByState), which says nothing of a
// consumer group's limit. So such a refusal is taken here unless the
// group surely takes the member.
func (st *step) consumerGroupFull(r Request, g consumerGroup) *outcome {
	maxSize := st.s.opts.ConsumerGroupMaxSize
	_, known := g.members[r.MemberID]
	known = known && r.MemberID != ""
	held := 0
	for _, m := range g.members {
		if !m.unsure {
			held++
		}
	}
	full := maxSize > 0 && g.unseenJoins == 0 && !known && held >= maxSize
	if full && r.InstanceID != "" && g.staticMember(r.InstanceID) != "" && st.got != nil {
		return nil // KAFKA-20601: a full group takes a static member's rejoin
	}
	room := maxSize > 0 && (known && !g.members[r.MemberID].unsure || len(g.members)+g.unseenJoins < maxSize)
	if full {
		out := refuse("consumer-group-max-size", GroupMaxSizeReached, "consumer group %s holds %d members, "+
			"group.consumer.max.size %d, and %q is not one (throwIfConsumerGroupIsFull)", r.Group, held, maxSize, r.MemberID)
		return &out
	}
	refused := st.got != nil && st.got.Answered && st.got.Err == GroupMaxSizeReached
	if room || st.op.Kind != JoinGroup || !refused {
		return nil
	}
	out := refuse("consumer-group-max-size", GroupMaxSizeReached, "consumer group %s may hold "+
		"group.consumer.max.size members (throwIfConsumerGroupIsFull)", r.Group)
	return &out
}
