package model

import "maps"

// A plain OffsetCommit: a consumer's own commit outside a transaction, as
// an at-least-once consumer or an admin client sends it. Kafka validates
// it against the group of its name: a classic group
// (ClassicGroup.validateOffsetCommit and
// OffsetMetadataManager.validateOffsetCommit, 4.x;
// GroupCoordinator.handleCommitOffsets and validateOffsetCommit, 3.9),
// or a KIP-848 consumer group (ConsumerGroup.validateOffsetCommit,
// consumercommit.go). Then it writes one record per partition. The
// offsets are committed when the record is: no marker is involved.

// offsetCommit answers a plain OffsetCommit (tests:
// OffsetMetadataManagerTest#testSimpleGroupOffsetCommit,
// GroupCoordinatorTest#testFetchOffsets).
func (st *step) offsetCommit(r Request) outcome {
	if out := st.checkPlainCommit(r); out != nil {
		return *out
	}
	g := st.s.groups[r.Group]
	if m, member := g.members[r.MemberID]; member && r.GenerationID != NoGeneration && !st.consumerCommit(r) {
		// A member's commit renews its session, as a heartbeat does,
		// because Kafka takes it as a sign of life (4.x
		// OffsetMetadataManager.commitOffset calls
		// rescheduleClassicGroupMemberHeartbeat; 3.9
		// GroupCoordinator.doCommitOffsets calls
		// completeAndScheduleNextHeartbeatExpiration; tests:
		// OffsetMetadataManagerTest#testGenericGroupOffsetCommitMaintainsSession,
		// GroupCoordinatorTest#testCommitMaintainsSession). A
		// TxnOffsetCommit does not, nor a commit to a consumer group,
		// whose members only a ConsumerGroupHeartbeat keeps.
		m.lastSeen = st.s.now
		g = g.withMember(r.MemberID, m)
	}
	st.s.setGroup(r.Group, g.withCommitted(r.Offsets, st.s.now).withMetadata(r.Offsets, r.OffsetMetadata))
	return ok(NewResponse())
}

// withCommitted is g with offsets committed by a plain commit's records,
// written next in the group's __consumer_offsets partition. A
// transactional offset pending meanwhile stays pending. If its
// transaction commits later, the record written last wins, whichever
// marker lands when (see settle). So a plain commit made after a
// transaction's TxnOffsetCommit stays.
func (g group) withCommitted(offsets map[Partition]int64, now int64) group {
	g = g.clonedCommitted()
	g.writes++
	for p, off := range offsets {
		g.committed[p], g.committedAt[p], g.committedTime[p] = off, g.writes, now
	}
	return g
}

// clonedCommitted is g with its committed offsets' maps copied, so that
// they may be written.
func (g group) clonedCommitted() group {
	g.committed, g.committedAt, g.committedTime = maps.Clone(g.committed), maps.Clone(g.committedAt), maps.Clone(g.committedTime)
	if g.committed == nil {
		g.committed, g.committedAt = map[Partition]int64{}, map[Partition]int64{}
	}
	if g.committedTime == nil {
		g.committedTime = map[Partition]int64{}
	}
	return g
}

// checkPlainCommit is the group coordinator's validation of a plain
// commit; nil when the commit is taken. A commit to a KIP-848 consumer
// group is validated by member epoch (checkConsumerCommit).
//
// Generation -1 is a consumer that does not use the group (a "simple"
// consumer, or the admin client). Its commit is taken while the group is
// Empty, whatever member it names, and creates a group that does not
// exist. To a group with members, a commit with no member is
// UNKNOWN_MEMBER_ID; one with a member is checked as any member's, and
// -1 is never its generation (ILLEGAL_GENERATION). 3.9 and 4.x agree on
// this (tests: OffsetMetadataManagerTest#testGenericGroupOffsetCommitWithoutMemberIdAndGeneration,
// GroupCoordinatorTest#testCommitOffsetFromUnknownGroup and
// #testCommitOffsetWithDefaultGeneration).
//
// A generation for a group that does not exist is ILLEGAL_GENERATION in
// 3.9, and GROUP_ID_NOT_FOUND from OffsetCommit v9 on in 4.x
// (OffsetMetadataManagerTest#testOffsetCommitWithUnknownGroup). The second
// is a refusal with no effect, which the model takes anywhere.
func (st *step) checkPlainCommit(r Request) *outcome {
	if st.consumerCommit(r) {
		return st.checkConsumerCommit(r) // KIP-848 (consumercommit.go)
	}
	g := st.s.groups[r.Group]
	switch {
	case r.GenerationID == NoGeneration && st.takenAsEmpty(r.Group):
		return nil
	case !g.exists():
		out := refuse("unknown-group", IllegalGeneration, "%s does not exist, so no generation %d of it does (GroupCoordinator.handleCommitOffsets)", r.Group, r.GenerationID)
		return &out
	case r.GenerationID == NoGeneration && r.MemberID == "":
		out := refuse("commit-needs-member", UnknownMemberID, "%s has members, so only a member may commit its offsets (ClassicGroup.validateOffsetCommit)", r.Group)
		return &out
	}
	if out := st.checkGeneration(r); out != nil {
		return out
	}
	if st.completingRebalance(g) {
		// The member holds the new generation, but not its assignment
		// yet: Kafka asks it to finish the round first. A
		// TxnOffsetCommit is not checked so (tests:
		// OffsetMetadataManagerTest#testGenericGroupOffsetCommitWhileInCompletingRebalanceState,
		// GroupCoordinatorTest#testCommitOffsetInCompletingRebalance).
		out := refuse("rebalance-in-progress", RebalanceInProgress, "%s is completing the rebalance of generation %d (ClassicGroup.validateOffsetCommit)", r.Group, g.generation)
		return &out
	}
	return nil
}

// completingRebalance reports whether g's round has answered its joins
// and awaits the leader's SyncGroup (Kafka's CompletingRebalance). Only
// a round recorded in two parts (join_only, rounds.go) is known to be
// there, and only while the leader's own JoinGroup is in the history: a
// leader outside the recording may have synced unseen. A whole round's
// join_group includes its SyncGroup, so such a group is never there.
func (st *step) completingRebalance(g group) bool {
	return g.syncDue != 0 && g.syncDue == g.generation && g.leaderAwaitsSync()
}
