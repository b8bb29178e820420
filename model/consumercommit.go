package model

import "fmt"

// consumerCommit reports whether r is an offset commit, plain or
// transactional, to a KIP-848 consumer group. Kafka looks the group up by
// name whatever its type (GroupMetadataManager.group), so such a commit
// is validated by the consumer group, by member epoch.
func (st *step) consumerCommit(r Request) bool {
	_, consumer := st.s.consumer[r.Group]
	return consumer && (st.op.Kind == TxnOffsetCommit || st.op.Kind == OffsetCommit)
}

// checkConsumerCommit is ConsumerGroup.validateOffsetCommit for either
// kind of commit to a KIP-848 consumer group, nil when it is taken. In
// an offset commit the generation carries the member epoch (Kafka's
// GenerationIdOrMemberEpoch).
//
// A commit with a member epoch below 0 to a group with no members is
// taken unchecked, as an admin's or a simple consumer's. Otherwise the
// member must be the group's (UNKNOWN_MEMBER_ID), a plain commit must be
// OffsetCommit v9 or later (UNSUPPORTED_VERSION), and the epoch must be
// the member's current one. Kafka answers STALE_MEMBER_EPOCH to a plain
// commit at another epoch, and
// OffsetMetadataManager.validateTransactionalOffsetCommit turns it into
// ILLEGAL_GENERATION for a TxnOffsetCommit below v6. KIP-1319's
// TxnOffsetCommit v6 gets STALE_MEMBER_EPOCH as it is (staleEpochCode).
// From KIP-1251 an older epoch
// is taken for partitions the member held by then (assignedBy).
// FENCED_MEMBER_EPOCH is the heartbeat's alone. 3.9 and 4.x agree on
// all of this, but for the TxnOffsetCommit with no member below. Tests:
// ConsumerGroupTest#testValidateOffsetCommit,
// #testValidateTransactionalOffsetCommit,
// OffsetMetadataManagerTest#testConsumerGroupOffsetCommit,
// #testConsumerGroupOffsetCommitWithUnknownMemberId,
// #testConsumerGroupOffsetCommitWithStaleMemberEpoch,
// #testConsumerGroupOffsetCommitFromAdminClient,
// #testConsumerGroupTransactionalOffsetCommit,
// #testConsumerGroupTransactionalOffsetCommitWithUnknownMemberId,
// #testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch.
func (st *step) checkConsumerCommit(r Request) *outcome {
	g := st.s.consumer[r.Group]
	if g.mayBeClassic {
		// A classic group's generation may judge it (consumermigration.go).
		if out := st.takenUnjudged("consumer-may-be-classic", "group %s may have been converted to a classic group",
			r.Group); out.refuse != "" {
			return &out
		}
		return nil
	}
	if r.GenerationID < 0 && len(g.members) == 0 {
		return nil
	}
	if st.op.Kind == TxnOffsetCommit && r.GenerationID == NoGeneration && r.MemberID == "" && !st.answered(UnknownMemberID) {
		// The groupId-string overload sends no member: 4.x releases take
		// it unchecked ("The TxnOffsetCommit API does not require the
		// member id"); 3.9 and 4.0-SNAPSHOT look the member "" up and
		// answer UNKNOWN_MEMBER_ID. A plain commit has no such return in
		// any version, so its member "" is UNKNOWN_MEMBER_ID.
		return nil
	}
	m, known := g.members[r.MemberID]
	if !known {
		if g.unseenJoins > 0 && r.MemberID != "" && !st.answered(UnknownMemberID) {
			// A member whose join's answer was lost may be this one.
			return nil
		}
		who := r.MemberID + " is not a member"
		if r.MemberID == "" {
			who = "a commit with no member id names no member"
		}
		out := refuse("consumer-commit-unknown-member", UnknownMemberID, "%s of consumer group %s "+
			"(ConsumerGroup.validateOffsetCommit)", who, r.Group)
		return &out
	}
	if n, known := st.op.APIVersion.Number(); st.op.Kind == OffsetCommit && known && n < 9 && !m.classic {
		out := refuse("consumer-commit-version", UnsupportedVersion, "%s is a consumer group member, which must commit with "+
			"OffsetCommit v9 or later, not v%d (ConsumerGroup.validateOffsetCommit)", r.MemberID, n)
		return &out
	}
	stale, rule := st.staleEpochCode(), "consumer-commit-stale-epoch"
	if m.classic {
		// A classic member's commit carries its generation, its member
		// epoch: ILLEGAL_GENERATION when it is another
		// (ConsumerGroup.validateMemberEpoch, useClassicProtocol). No
		// version of either commit converts it, so it has a rule of its
		// own, which no version rule reads.
		stale, rule = IllegalGeneration, "consumer-commit-classic-generation"
	}
	switch {
	case m.unsure:
		// A heartbeat whose answer was lost may have moved the
		// member's epoch, even one the commit carries
		// (CurrentAssignmentBuilder): a late join at epoch 0 of a
		// known member, say, moves it to the target's epoch. Either
		// answer is Kafka's.
		if !st.answered(stale) {
			return nil
		}
	case r.GenerationID == m.epoch:
		return nil
	}
	if m.assignedBy(r.Offsets, r.GenerationID) && !st.answered(stale) {
		// KIP-1251 (trunk of March 2026, KAFKA-20066): an older epoch is
		// taken when each partition was the member's by then
		// (ConsumerGroup.createAssignmentEpochValidator, which
		// OffsetMetadataManager.commitOffset and commitTransactionalOffset
		// run on each partition). Earlier releases refuse it.
		return nil
	}
	out := refuse(rule, stale, "%s", st.staleCommitEpoch(r, m, stale))
	return &out
}

// staleEpochCode is what Kafka answers a commit at a member epoch that
// is not the member's: STALE_MEMBER_EPOCH to a plain commit, and to a
// TxnOffsetCommit ILLEGAL_GENERATION below v6 and STALE_MEMBER_EPOCH from
// v6 (KIP-1319, TxnOffsetCommitRequest.supportsStaleMemberEpochError).
// At a version the history does not name, the refusal takes either code,
// because the version rule of the pair judges only a known version
// (versionRules, wrongForVersion).
func (st *step) staleEpochCode() Code {
	if st.op.Kind == OffsetCommit {
		return StaleMemberEpoch
	}
	if n, known := st.op.APIVersion.Number(); known && n >= txnStaleMemberEpochSince {
		return StaleMemberEpoch
	}
	return IllegalGeneration
}

// txnStaleMemberEpochSince is the first TxnOffsetCommit version that
// gets STALE_MEMBER_EPOCH (KIP-1319).
const txnStaleMemberEpochSince = 6

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

func (st *step) staleCommitEpoch(r Request, m consumerMember, stale Code) string {
	if st.op.Kind == OffsetCommit || stale == StaleMemberEpoch || m.classic {
		return fmt.Sprintf("member epoch %d is not %s's, %d (ConsumerGroup.validateMemberEpoch)", r.GenerationID, r.MemberID, m.epoch)
	}
	return fmt.Sprintf("member epoch %d is not %s's, %d: STALE_MEMBER_EPOCH, which a TxnOffsetCommit below v6 answers "+
		"ILLEGAL_GENERATION (OffsetMetadataManager.validateTransactionalOffsetCommit; v6 gets it as it is, KIP-1319)", r.GenerationID, r.MemberID, m.epoch)
}

// checkConsumerFetch is ConsumerGroup.validateOffsetFetch for an
// OffsetFetch of a KIP-848 consumer group, nil when it is taken.
// OffsetFetch v9 and later carry the member id and member epoch. A
// fetch with neither (an admin's) is taken; otherwise the member must be
// the group's (UNKNOWN_MEMBER_ID) and the epoch its current one
// (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a member on the classic
// protocol). Nothing is read then: the whole group's answer is
// the error (OffsetMetadataManager.fetchOffsets validates before it
// reads). A classic group checks nothing (ClassicGroup.validateOffsetFetch).
// Kafka read: ConsumerGroup.java, OffsetMetadataManager.java at trunk
// 1eb7644. Tests: OffsetMetadataManagerTest#testConsumerGroupOffsetFetchWithMemberIdAndEpoch,
// #testConsumerGroupOffsetFetchFromAdminClient,
// #testConsumerGroupOffsetFetchWithUnknownMemberId,
// #testConsumerGroupOffsetFetchWithStaleMemberEpoch,
// #testConsumerGroupOffsetFetchWithIllegalGenerationId.
//
// A history whose offset_fetch names no member may come from a recorder
// that does not write it, so either refusal is taken there too.
func (st *step) checkConsumerFetch(r Request) *outcome {
	g, consumer := st.s.consumer[r.Group]
	if !consumer {
		return nil
	}
	if r.MemberID == "" {
		if st.got == nil || !st.got.Answered || st.got.Err != StaleMemberEpoch && st.got.Err != UnknownMemberID {
			return nil
		}
		out := refuse("consumer-fetch-member", st.got.Err, "the fetch does not say which member of consumer group %s "+
			"sent it, at which epoch (OffsetFetch v9+ carries both: ConsumerGroup.validateOffsetFetch)", r.Group)
		return &out
	}
	m, known := g.members[r.MemberID]
	if !known {
		if g.unseenJoins > 0 && !st.answered(UnknownMemberID) {
			return nil // a member whose join's answer was lost may be this one
		}
		out := refuse("consumer-fetch-member", UnknownMemberID, "%s is not a member of consumer group %s "+
			"(ConsumerGroup.validateOffsetFetch)", r.MemberID, r.Group)
		return &out
	}
	if r.MemberEpoch == m.epoch && !m.unsure || m.unsure && !st.answered(StaleMemberEpoch) {
		// After a heartbeat whose answer was lost, the member's epoch is
		// unknown: either answer is Kafka's.
		return nil
	}
	stale := StaleMemberEpoch
	if m.classic {
		// A member on the classic protocol is told ILLEGAL_GENERATION
		// (validateMemberEpoch, useClassicProtocol); test:
		// OffsetMetadataManagerTest#testConsumerGroupOffsetFetchWithIllegalGenerationId.
		stale = IllegalGeneration
	}
	out := refuse("consumer-fetch-member", stale, "member epoch %d is not %s's, %d "+
		"(ConsumerGroup.validateOffsetFetch, validateMemberEpoch)", r.MemberEpoch, r.MemberID, m.epoch)
	return &out
}
