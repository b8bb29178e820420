package model

import "slices"

// A classic group's round in two parts: JoinGroups answered alone
// (Request.JoinOnly), then SyncGroups (sync_group). Kafka's group moves
// through PreparingRebalance (a leave, an expiry or a join started a
// round; joins wait), CompletingRebalance (the JoinGroups are answered;
// SyncGroups wait for the leader's) and Stable (the leader's assignment
// is handed out). Sources: 4.x GroupMetadataManager.classicGroupSyncGroup,
// classicGroupSyncToClassicGroup, validateSyncGroup,
// classicGroupHeartbeatToClassicGroup; 3.9 GroupCoordinator.doSyncGroup
// and handleHeartbeat, which answer the same.

// rebalancing reports whether a round is in progress: the group prepares
// a rebalance (PreparingRebalance) or awaits its leader's SyncGroup
// (CompletingRebalance). Kafka refuses an OffsetCommit of the current
// generation with REBALANCE_IN_PROGRESS in the second
// (ClassicGroup.validateOffsetCommit, 4.x; GroupMetadata
// .validateOffsetCommit's caller, 3.9).
func (g group) rebalancing() bool { return g.preparingRebalance() || g.syncDue != 0 }

// preparingRebalance reports whether a leave or an expiry moved the group
// on and no join round has answered since: Kafka's PreparingRebalance.
func (g group) preparingRebalance() bool { return g.generation > g.answered }

// joinedAlone is m, the member id whose JoinGroup alone was answered,
// before its SyncGroup. A member already holding an assignment in this
// generation keeps it: a follower's rejoin of a stable group is answered
// the current generation, and its SyncGroup what it holds
// (classicGroupJoinExistingMember, then classicGroupSyncToClassicGroup,
// STABLE). Otherwise what the member holds is unknown until the leader
// syncs.
func (g group) joinedAlone(id string, m member, newRound bool) member {
	m.syncPending = true
	if held, ok := g.members[id]; ok && !newRound && held.gen == m.gen {
		m.assignment, m.assignmentUnknown = held.assignment, held.assignmentUnknown
		return m
	}
	// Unknown until the leader's SyncGroup hands it out (leaderSync).
	m.assignment, m.assignmentUnknown = nil, true
	return m
}

// awaitingSync is g once a JoinGroup alone was answered generation gen:
// a round that completed there awaits its leader's SyncGroup
// (CompletingRebalance), and the group's requests are all in the history
// from now on (phased).
func (g group) awaitingSync(gen int32, newRound bool) group {
	g.phased = true
	if newRound {
		g.syncDue = gen
	}
	return g
}

// syncGroup is a SyncGroup. Kafka checks the member, then the
// generation (validateSyncGroup: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION),
// then the group's state: REBALANCE_IN_PROGRESS while it prepares a
// rebalance; while it awaits the leader, the leader's SyncGroup hands out
// its assignment and a follower's waits for it; a stable group answers
// the member's assignment (classicGroupSyncToClassicGroup, 4.x;
// GroupCoordinator.doSyncGroup, 3.9; tests:
// GroupMetadataManagerTest#testSyncGroupFromUnknownMember,
// #testSyncGroupFromIllegalGeneration, #testSyncGroupLeaderAfterFollower,
// #testSyncGroupFollowerAfterLeader, 3.8 to 4.x).
func (st *step) syncGroup(r Request) outcome {
	if out, consumer := st.classicToConsumerGroup(r); consumer {
		return out
	}
	if out := st.checkStaticMember(r); out != nil {
		return *out
	}
	g, m, known := st.member(r)
	if !known {
		return refuse("unknown-member", UnknownMemberID, "%s is not a member of %s", r.MemberID, r.Group)
	}
	if out, late := st.syncAfterTimeout(r, g, m); late {
		return out
	}
	if out := st.checkGeneration(r); out != nil {
		return *out
	}
	if out := st.syncProtocolRefusal(r, g); out != nil {
		return *out
	}
	g.phased = true
	switch {
	case g.preparingRebalance():
		st.s.setGroup(r.Group, g)
		return refuse("sync-while-preparing", RebalanceInProgress,
			"%s prepares a rebalance, so a SyncGroup is answered REBALANCE_IN_PROGRESS (classicGroupSyncToClassicGroup, PREPARING_REBALANCE)", r.Group)
	case g.syncDue == r.GenerationID && st.leadsSync(r, g):
		return st.leaderSync(r, g)
	case g.syncDue == r.GenerationID && g.leaderAwaitsSync():
		return st.followerWaits(r, g, m)
	}
	return st.stableSync(r, g, m)
}

// leaderAwaitsSync reports whether the leader's own JoinGroup of the
// round awaiting its SyncGroup is in the history, so that its SyncGroup
// is too. A leader whose join went unrecorded (a client outside the
// recording) may have synced unseen: then a follower's answer is taken
// as a stable group's (stableSync).
func (g group) leaderAwaitsSync() bool {
	l, ok := g.members[g.leader]
	return ok && l.syncPending && l.gen == g.syncDue
}

// followerWaits is a follower's SyncGroup before its leader's: Kafka
// parks it until the leader's comes, or answers it REBALANCE_IN_PROGRESS
// when a rebalance is prepared first. So a success cannot come before
// the leader's SyncGroup. A parked SyncGroup keeps its member's session
// alive (expiredBy): judging a broker's answer, which came after the
// park, the member is parked; the model's own answer parks nothing.
// Test: GroupMetadataManagerTest#testLeaderFailureInSyncGroup.
func (st *step) followerWaits(r Request, g group, m member) outcome {
	out := refuse("sync-awaits-leader", RebalanceInProgress,
		"%s's SyncGroup waits for the leader's, which has not come: only the leader's SyncGroup completes the round (classicGroupSyncToClassicGroup, COMPLETING_REBALANCE)", r.MemberID)
	if st.got != nil {
		m.syncParked, m.lastSeen = true, st.s.now
		st.s.setGroup(r.Group, g.withMember(r.MemberID, m))
		out.effects = true
	}
	return out
}

// leadsSync reports whether r is the SyncGroup of g's leader. While the
// model does not know the leader, a SyncGroup that carries assignments
// is taken as the leader's.
func (st *step) leadsSync(r Request, g group) bool {
	if g.leader == "" || unnamed(g.leader) {
		return len(r.Assignments) > 0
	}
	return r.MemberID == g.leader
}

// leaderSync hands out the leader's assignment: every member of the
// generation gets its entry, or nothing when the map has none ("fill
// with an empty assignment"), and the group is stable. The leader's own
// answer is its entry.
func (st *step) leaderSync(r Request, g group) outcome {
	gen := r.GenerationID
	for _, id := range sortedMembers(g) {
		m := g.members[id]
		if m.gen != gen {
			continue
		}
		m.assignment, m.assignmentUnknown = r.Assignments[id], false
		if m.syncParked {
			// The parked SyncGroup is answered now, and its session
			// starts again (propagateAssignment).
			m.syncParked, m.syncPending, m.lastSeen = false, false, st.s.now
		}
		if id == r.MemberID {
			m.syncPending = false
		}
		g = g.withMember(id, m)
	}
	g.syncDue = 0
	own := r.Assignments[r.MemberID]
	if got := st.observed(); got != nil && !sameSet(got.Assignment, own) {
		return bad("sync-assignment-from-leader", "%s leads generation %d and assigned itself %v, but was answered %v", r.MemberID, gen, own, got.Assignment)
	}
	st.s.setGroup(r.Group, g)
	resp := NewResponse()
	resp.Assignment = own
	return ok(resp)
}

// stableSync is a SyncGroup to a stable group: the member's assignment,
// as the leader's SyncGroup set it or as the member held it
// (assignment-kept). When the model does not know it (the leader's
// SyncGroup was not seen), the answer is taken, if no other member of the
// generation holds one of its partitions (assignment-taken).
func (st *step) stableSync(r Request, g group, m member) outcome {
	m.syncPending = false
	if got := st.observed(); got != nil {
		if !m.assignmentUnknown && !sameSet(got.Assignment, m.assignment) {
			return bad("assignment-kept", "%s's SyncGroup of generation %d was answered %v, but the leader assigned it %v", r.MemberID, r.GenerationID, got.Assignment, m.assignment)
		}
		for _, p := range got.Assignment {
			if holder, held := g.holder(p, m.gen, r.MemberID); held {
				return bad("assignment-taken", "assigned %s, which %s already holds in generation %d", p, holder, m.gen)
			}
		}
		m.assignment, m.assignmentUnknown = got.Assignment, false
	}
	st.s.setGroup(r.Group, g.withMember(r.MemberID, m))
	resp := NewResponse()
	resp.Assignment = m.assignment
	return ok(resp)
}

// syncAfterTimeout is a SyncGroup answered UNKNOWN_MEMBER_ID from a
// member that joined the current round and has not synced: its SyncGroup
// came after the rebalance timeout, so the coordinator removed every
// member that had not synced and prepared the next round (4.x
// GroupMetadataManager.expirePendingSync; 3.9 GroupCoordinator
// .onExpirePendingSync; tests:
// GroupMetadataManagerTest#testRebalanceTimesOutWhenSyncRequestIsNotReceived,
// GroupCoordinatorTest#testRebalanceTimesOutWhenSyncRequestIsNotReceived).
// The timer runs on the broker's clock, which the model does not keep,
// so only the answer says it ran. The other members still pending may be
// gone too.
func (st *step) syncAfterTimeout(r Request, g group, m member) (outcome, bool) {
	late := st.got != nil && st.got.Answered && st.got.Err == UnknownMemberID
	if !late || !m.syncPending || m.gen != g.answered || g.preparingRebalance() {
		return outcome{}, false
	}
	for _, id := range sortedMembers(g) {
		if other := g.members[id]; other.syncPending && id != r.MemberID {
			other.mayBeGone = true
			g = g.withMember(id, other)
		}
	}
	g = g.withoutMember(r.MemberID).nextGeneration(g.generation + 1)
	st.s.setGroup(r.Group, g)
	out := refuse("late-sync", UnknownMemberID, "%s's SyncGroup of generation %d came after the rebalance timeout (expirePendingSync)", r.MemberID, m.gen)
	out.effects = true
	return out, true
}

// heartbeatWhilePreparing is a heartbeat of the generation a group
// still holds while it prepares a rebalance: Kafka renews the session
// and answers REBALANCE_IN_PROGRESS, so that the member rejoins
// (classicGroupHeartbeatToClassicGroup, PREPARING_REBALANCE; 3.9
// GroupCoordinator.handleHeartbeat; tests:
// GroupMetadataManagerTest#testHeartbeatDuringPreparingRebalance,
// GroupCoordinatorTest#testHeartbeatDuringRebalanceCausesRebalanceInProgress).
// Where the group's rounds are not all in the history (a whole-round
// join_group, whose client rejoins in the background unrecorded), the
// round may have completed unseen, so a success is taken too.
func (st *step) heartbeatWhilePreparing(g group) outcome {
	out := refuse("heartbeat-while-preparing", RebalanceInProgress,
		"the group prepares a rebalance, so a heartbeat is answered REBALANCE_IN_PROGRESS after it renewed the session (classicGroupHeartbeatToClassicGroup)")
	out.effects = true
	if !g.phased {
		out.also = Success
	}
	return out
}

func sortedMembers(g group) []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// protocolRefusal is INCONSISTENT_GROUP_PROTOCOL where it is due, nil
// where the join is taken or the model cannot say. A join to an Empty
// group must name a protocol type and at least one protocol; a join to a
// group with members must name the group's protocol type and a protocol
// every member supports, the joining member's own last join counted
// (ClassicGroup.supportsProtocols, from classicGroupJoinNewMember and
// classicGroupJoinExistingMember, 4.x; GroupMetadata.supportsProtocols,
// 3.9; tests: GroupMetadataManagerTest#testJoinGroupInconsistentGroupProtocol,
// #testClassicGroupJoinInconsistentProtocolType,
// #testJoinGroupWithEmptyGroupProtocol). Only a join that names its
// protocol type is judged: a whole round's join_group says nothing of
// its protocols. Where a member's protocols are unknown, or the member
// may be gone, the count Kafka makes is unknown too.
func protocolRefusal(r Request, g group) *outcome {
	refused := func(format string, args ...any) *outcome {
		out := refuse("protocol-unsupported", InconsistentGroupProtocol, format, args...)
		return &out
	}
	if r.EmptyProtocolType {
		// An Empty group needs a protocol type that is not empty, and a
		// group with members has one that is not (supportsProtocols;
		// tests: GroupCoordinatorTest#testJoinGroupWithEmptyProtocolType).
		return refused("the join names an empty protocol type (ClassicGroup.supportsProtocols)")
	}
	if r.ProtocolType == "" {
		return nil
	}
	names := protocolNames(r)
	if len(names) == 0 {
		return refused("the join names no protocol (ClassicGroup.supportsProtocols)")
	}
	ids := sortedMembers(g)
	for _, id := range ids {
		m := g.members[id]
		if m.protocolType == "" || m.mayBeGone || g.preparedRoundMayDrop(m) {
			return nil
		}
	}
	for _, id := range ids {
		if t := g.members[id].protocolType; t != r.ProtocolType {
			return refused("%s joined %s with protocol type %q, and this join names %q (ClassicGroup.supportsProtocols)", id, r.Group, t, r.ProtocolType)
		}
	}
	supported := g.supportedProtocols(ids)
	for _, name := range names {
		if supportedByEvery(supported, name) {
			return nil
		}
	}
	return refused("no protocol of %v is supported by every member of %s (ClassicGroup.supportsProtocols)", names, r.Group)
}

// protocolNames is the names of the protocols a join carries.
func protocolNames(r Request) []string {
	var names []string
	for _, p := range r.Protocols {
		names = append(names, p.Name)
	}
	return names
}
