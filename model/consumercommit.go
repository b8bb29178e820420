package model

import "fmt"

// checkConsumerCommit is ConsumerGroup.validateOffsetCommit for a
// TxnOffsetCommit to a KIP-848 consumer group, nil when it is taken.
// A commit with a member epoch below 0 to a group with no members is
// taken unchecked, as an admin's or a simple consumer's. Otherwise the
// member must be the group's (UNKNOWN_MEMBER_ID), at its current epoch:
// Kafka answers STALE_MEMBER_EPOCH to a plain OffsetCommit at another
// epoch, and OffsetMetadataManager.validateTransactionalOffsetCommit
// turns it into ILLEGAL_GENERATION. From KIP-1251 an older epoch is
// taken for partitions the member held by then (assignedBy). FENCED_MEMBER_EPOCH is the
// heartbeat's alone. Tests: OffsetMetadataManagerTest#
// testConsumerGroupTransactionalOffsetCommit,
// #testConsumerGroupTransactionalOffsetCommitWithUnknownMemberId,
// #testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch.
func (st *step) checkConsumerCommit(r Request) *outcome {
	g := st.s.consumer[r.Group]
	if r.GenerationID < 0 && len(g.members) == 0 {
		return nil
	}
	if r.GenerationID == NoGeneration && r.MemberID == "" && !st.answered(UnknownMemberID) {
		// The groupId-string overload sends no member: 4.x releases take
		// it unchecked ("The TxnOffsetCommit API does not require the
		// member id"); 3.9 and 4.0-SNAPSHOT look the member "" up and
		// answer UNKNOWN_MEMBER_ID.
		return nil
	}
	m, known := g.members[r.MemberID]
	if !known {
		if g.unseenJoins > 0 && !st.answered(UnknownMemberID) {
			// A member whose join's answer was lost may be this one.
			return nil
		}
		out := refuse("consumer-commit-unknown-member", UnknownMemberID, "%s is not a member of consumer group %s "+
			"(ConsumerGroup.validateOffsetCommit)", r.MemberID, r.Group)
		return &out
	}
	if r.GenerationID == m.epoch || (m.unsure && !st.answered(IllegalGeneration)) {
		return nil
	}
	if m.assignedBy(r.Offsets, r.GenerationID) && !st.answered(IllegalGeneration) {
		// KIP-1251 (trunk of March 2026, KAFKA-20066): an older epoch is
		// taken when each partition was the member's by then
		// (ConsumerGroup.createAssignmentEpochValidator). Earlier
		// releases refuse it.
		return nil
	}
	out := refuse("consumer-commit-stale-epoch", IllegalGeneration, "%s", staleCommitEpoch(r, m))
	return &out
}

// assignedBy reports whether epoch is below m's and at or after the
// assignment epoch of every partition of offsets, each of them m's:
// KIP-1251's assignmentEpoch <= clientEpoch <= brokerEpoch.
func (m consumerMember) assignedBy(offsets map[Partition]int64, epoch int32) bool {
	if epoch >= m.epoch || len(offsets) == 0 {
		return false
	}
	for p := range offsets {
		at, held := m.assignedAt[p]
		if !held || at > epoch {
			return false
		}
	}
	return true
}

func staleCommitEpoch(r Request, m consumerMember) string {
	return fmt.Sprintf("member epoch %d is not %s's, %d: STALE_MEMBER_EPOCH, which a TxnOffsetCommit answers "+
		"ILLEGAL_GENERATION (OffsetMetadataManager.validateTransactionalOffsetCommit)", r.GenerationID, r.MemberID, m.epoch)
}
