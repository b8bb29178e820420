package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The table says what Kafka's source says. Each row names where.
func TestCodesMeanWhatKafkaDoes(t *testing.T) {
	for _, c := range []struct {
		kind  Kind
		code  Code
		class Class // "" when Kafka never answers kind with code
	}{
		// Partition.appendRecordsToLeader: before the append.
		{Produce, NotEnoughReplicas, NoEffect},
		// TransactionStateManager.appendTransactionToLog turns it into
		// COORDINATOR_NOT_AVAILABLE.
		{EndTxn, NotEnoughReplicas, ""},
		{EndTxn, CoordinatorNotAvailable, Undecided},
		{EndTxn, NotCoordinator, Undecided},
		// getTransactionState after a successful append.
		{InitProducerID, CoordinatorLoadInProgress, Undecided},
		{InitProducerID, InvalidTransactionTimeout, NoEffect},
		{AddOffsets, GroupAuthorizationFailed, NoEffect},
		{Produce, GroupAuthorizationFailed, ""},
		{Produce, NotEnoughReplicasAfterAppend, Undecided},
		// DelayedProduce.tryComplete, after the append.
		{Produce, NotLeaderOrFollower, Undecided},
		{Fetch, OffsetOutOfRange, NoEffect},
		{Produce, OffsetOutOfRange, ""},
		{Heartbeat, RebalanceInProgress, Undecided},
		{JoinGroup, MemberIDRequired, NoEffect},
		{TxnOffsetCommit, OffsetMetadataTooLarge, NoEffect},
		{JoinGroup, NetworkException, Undecided},
		// KafkaApis.handleAddPartitionsToTxnRequest: skipped because
		// another partition failed, before the coordinator runs.
		{AddPartitions, OperationNotAttempted, NoEffect},
		// A client library's word for a fenced producer's batch.
		{Produce, OperationNotAttempted, FencedProducer},
		{TxnOffsetCommit, OperationNotAttempted, FencedProducer},
		{EndTxn, OperationNotAttempted, ""},
		// A plain OffsetCommit: ClassicGroup.validateOffsetCommit (4.x),
		// GroupCoordinator.validateOffsetCommit (3.9) refuse before the
		// write; it has no producer to fence.
		{OffsetCommit, UnknownMemberID, FencedConsumer},
		{OffsetCommit, IllegalGeneration, FencedConsumer},
		{OffsetCommit, GroupIDNotFound, NoEffect},
		{OffsetCommit, InvalidCommitOffsetSize, NoEffect},
		{OffsetCommit, RebalanceInProgress, Undecided},
		{OffsetCommit, NotCoordinator, Undecided},
		{OffsetCommit, ProducerFenced, ""},
		{OffsetCommit, InvalidTxnState, ""},
	} {
		require.Equal(t, c.class != "", Answers(c.kind, c.code), "%s answered %s", c.kind, c.code)
		if c.class != "" {
			require.Equal(t, c.class, ClassOf(c.kind, c.code), c.code)
		}
	}
}

// Every code a request may get is one the format knows, and every known
// code is answered to some request.
func TestEveryCodeHasARequest(t *testing.T) {
	for _, code := range Codes {
		require.True(t, KnownCode(code))
		var some bool
		for _, k := range Kinds {
			some = some || Answers(k, code)
		}
		require.True(t, some, "no request gets %s", code)
	}
	require.False(t, KnownCode(""))
	require.Equal(t, UnknownErrorCode, ClassOf(Produce, "NOT_A_KAFKA_CODE"))
}

// A refusal with no effect fits any state and leaves it as it was.
func TestNoEffectRefusalChangesNothing(t *testing.T) {
	s := Init(Options{})
	op := Op{Kind: Produce, Req: Request{ProducerID: 5, Epoch: 0, Partition: "p-0", Records: []Record{{Key: "a"}}}}
	next, err := Check(s, op, Fail(NotEnoughReplicas))
	require.NoError(t, err)
	require.True(t, Equal(s, next))
	next, err = Check(s, op, Fail(NotEnoughReplicasAfterAppend))
	require.NoError(t, err)
	require.False(t, Equal(s, next), "an undecided answer is taken as having taken effect")
	require.False(t, isRefusal(Undecided))
	require.True(t, isRefusal(NoEffect))
}

// A code whose meaning depends on the request has one row for each
// request, and is undecided for every request or for none, so that
// Result.Undecided needs no request.
func TestUndecidedForEveryRequest(t *testing.T) {
	for code, rows := range rowsOf {
		var kinds []Kind
		for _, row := range rows {
			for _, k := range row.kinds {
				require.NotContains(t, kinds, k, "%s has two rows for %s", code, k)
				kinds = append(kinds, k)
			}
			require.Equal(t, rows[0].class == Undecided, row.class == Undecided, "%s is undecided for some requests only", code)
		}
	}
	require.False(t, Fail(OperationNotAttempted).Undecided())
	require.True(t, Fail(NotCoordinator).Undecided())
}
