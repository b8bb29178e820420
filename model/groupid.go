package model

// emptyGroupID refuses a JoinGroup, SyncGroup, Heartbeat, LeaveGroup or
// TxnOffsetCommit whose group id is the empty string with
// INVALID_GROUP_ID, before anything else (rule invalid-group-id). Kafka
// checks it before the coordinator looks at the group: 3.9
// GroupCoordinator.validateGroupStatus (isValidGroupId: "groupId != null
// && groupId.nonEmpty" for these requests); 4.x GroupCoordinatorService
// (isGroupIdNotEmpty in joinGroup, syncGroup, heartbeat, leaveGroup and
// commitTransactionalOffsets). An OffsetCommit and an OffsetFetch take the
// empty group id as any other, "for backwards compatibility" (3.9
// isValidGroupId; 4.x commitOffsets and fetchOffsets refuse only a null
// one, which a history cannot hold), and so does AddOffsetsToTxn, which
// the transaction coordinator answers. Tests:
// GroupCoordinatorTest#testInvalidGroupId,
// #testCommitAndFetchOffsetsWithEmptyGroup.
func emptyGroupID(k Kind, r Request) *outcome {
	if !r.EmptyGroup || !refusesEmptyGroupID(k) {
		return nil
	}
	out := refuse("invalid-group-id", InvalidGroupID, "the group id is empty, which a %s may not name", k.APIName())
	return &out
}

// refusesEmptyGroupID reports whether Kafka answers a request of kind k
// that names the empty group id with INVALID_GROUP_ID.
func refusesEmptyGroupID(k Kind) bool {
	switch k {
	case JoinGroup, SyncGroup, Heartbeat, LeaveGroup, TxnOffsetCommit:
		return true
	}
	return false
}

// groupIDJudged reports whether got is an INVALID_GROUP_ID that the
// request's group id decides: to a JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup or TxnOffsetCommit Kafka answers it for the empty group id
// and for no other (emptyGroupID). The model's rules then judge it, as
// they judge a refusal the state decides. To an OffsetCommit or an
// OffsetFetch it is the answer to a null group id, which a history cannot
// hold, and a coordinator's answer for one group of a multi-group
// OffsetFetch is passed on as it is (KafkaApisTest
// #testHandleOffsetFetchWithMultipleGroups): there it is taken anywhere,
// as before.
func groupIDJudged(op Op, got Result) bool {
	return got.Answered && got.Err == InvalidGroupID && refusesEmptyGroupID(op.Kind)
}
