package model

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Code is a Kafka error code name.
type Code string

// The error codes the history format knows. Their names are Kafka's
// (org.apache.kafka.common.protocol.Errors).
const (
	ProducerFenced           Code = "PRODUCER_FENCED"
	InvalidProducerEpoch     Code = "INVALID_PRODUCER_EPOCH"
	InvalidTxnState          Code = "INVALID_TXN_STATE"
	ConcurrentTransactions   Code = "CONCURRENT_TRANSACTIONS"
	OutOfOrderSequenceNumber Code = "OUT_OF_ORDER_SEQUENCE_NUMBER"
	DuplicateSequenceNumber  Code = "DUPLICATE_SEQUENCE_NUMBER"
	UnknownProducerID        Code = "UNKNOWN_PRODUCER_ID"
	InvalidProducerIDMapping Code = "INVALID_PRODUCER_ID_MAPPING"
	IllegalGeneration        Code = "ILLEGAL_GENERATION"
	UnknownMemberID          Code = "UNKNOWN_MEMBER_ID"
	FencedInstanceID         Code = "FENCED_INSTANCE_ID"
	UnstableOffsetCommit     Code = "UNSTABLE_OFFSET_COMMIT"
	TransactionAbortable     Code = "TRANSACTION_ABORTABLE"
	RequestTimedOut          Code = "REQUEST_TIMED_OUT"
	OperationNotAttempted    Code = "OPERATION_NOT_ATTEMPTED"

	// Refusals with no effect.
	TransactionalIDAuthorizationFailed Code = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
	GroupAuthorizationFailed           Code = "GROUP_AUTHORIZATION_FAILED"
	TopicAuthorizationFailed           Code = "TOPIC_AUTHORIZATION_FAILED"
	ClusterAuthorizationFailed         Code = "CLUSTER_AUTHORIZATION_FAILED"
	InvalidRequest                     Code = "INVALID_REQUEST"
	UnsupportedVersion                 Code = "UNSUPPORTED_VERSION"
	InvalidTransactionTimeout          Code = "INVALID_TRANSACTION_TIMEOUT"
	NotEnoughReplicas                  Code = "NOT_ENOUGH_REPLICAS"
	UnknownTopicOrPartition            Code = "UNKNOWN_TOPIC_OR_PARTITION"
	UnknownTopicID                     Code = "UNKNOWN_TOPIC_ID"
	MessageTooLarge                    Code = "MESSAGE_TOO_LARGE"
	RecordListTooLarge                 Code = "RECORD_LIST_TOO_LARGE"
	CorruptMessage                     Code = "CORRUPT_MESSAGE"
	InvalidRecord                      Code = "INVALID_RECORD"
	InvalidTimestamp                   Code = "INVALID_TIMESTAMP"
	InvalidRequiredAcks                Code = "INVALID_REQUIRED_ACKS"
	InvalidGroupID                     Code = "INVALID_GROUP_ID"
	GroupIDNotFound                    Code = "GROUP_ID_NOT_FOUND"
	InvalidSessionTimeout              Code = "INVALID_SESSION_TIMEOUT"
	InconsistentGroupProtocol          Code = "INCONSISTENT_GROUP_PROTOCOL"
	GroupMaxSizeReached                Code = "GROUP_MAX_SIZE_REACHED"
	MemberIDRequired                   Code = "MEMBER_ID_REQUIRED"
	UnreleasedInstanceID               Code = "UNRELEASED_INSTANCE_ID"
	OffsetMetadataTooLarge             Code = "OFFSET_METADATA_TOO_LARGE"
	InvalidCommitOffsetSize            Code = "INVALID_COMMIT_OFFSET_SIZE"
	OffsetOutOfRange                   Code = "OFFSET_OUT_OF_RANGE"
	FencedLeaderEpoch                  Code = "FENCED_LEADER_EPOCH"
	UnknownLeaderEpoch                 Code = "UNKNOWN_LEADER_EPOCH"
	ReplicaNotAvailable                Code = "REPLICA_NOT_AVAILABLE"
	InconsistentTopicID                Code = "INCONSISTENT_TOPIC_ID"
	UnsupportedCompressionType         Code = "UNSUPPORTED_COMPRESSION_TYPE"
	FetchSessionIDNotFound             Code = "FETCH_SESSION_ID_NOT_FOUND"
	InvalidFetchSessionEpoch           Code = "INVALID_FETCH_SESSION_EPOCH"

	// KIP-848's (consumergroups.go).
	FencedMemberEpoch        Code = "FENCED_MEMBER_EPOCH"
	UnsupportedAssignor      Code = "UNSUPPORTED_ASSIGNOR"
	InvalidSubscriptionRegex Code = "INVALID_SUBSCRIPTION_REGEX"
	StaleMemberEpoch         Code = "STALE_MEMBER_EPOCH"

	// Answers that may follow an effect.
	NotCoordinator               Code = "NOT_COORDINATOR"
	CoordinatorNotAvailable      Code = "COORDINATOR_NOT_AVAILABLE"
	CoordinatorLoadInProgress    Code = "COORDINATOR_LOAD_IN_PROGRESS"
	NotLeaderOrFollower          Code = "NOT_LEADER_OR_FOLLOWER"
	NotEnoughReplicasAfterAppend Code = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
	KafkaStorageError            Code = "KAFKA_STORAGE_ERROR"
	UnknownServerError           Code = "UNKNOWN_SERVER_ERROR"
	NetworkException             Code = "NETWORK_EXCEPTION"
	RebalanceInProgress          Code = "REBALANCE_IN_PROGRESS"
	PolicyViolation              Code = "POLICY_VIOLATION"
	InvalidConfig                Code = "INVALID_CONFIG"
	TopicAlreadyExists           Code = "TOPIC_ALREADY_EXISTS"
	InvalidPartitions            Code = "INVALID_PARTITIONS"
	InvalidReplicationFactor     Code = "INVALID_REPLICATION_FACTOR"
	InvalidTopicException        Code = "INVALID_TOPIC_EXCEPTION"
	TopicDeletionDisabled        Code = "TOPIC_DELETION_DISABLED"
	ThrottlingQuotaExceeded      Code = "THROTTLING_QUOTA_EXCEEDED"
)

// Class groups the codes that brokers answer for the same refusal. Brokers
// differ in which code of a class they send (Kafka itself changed several
// across versions), so answers are compared by class. The table below is
// the one place where codes are classified. A code has one class for each
// request: where its meaning depends on the request, it has a row for each
// meaning.
type Class string

const (
	Success         Class = "success"
	FencedProducer  Class = "fenced producer"   // KIP-98; KIP-588 renamed INVALID_PRODUCER_EPOCH to PRODUCER_FENCED outside produce
	FencedConsumer  Class = "fenced consumer"   // KIP-447: a stale generation, member or static instance
	BadTxnState     Class = "invalid txn state" // KIP-98; KIP-890 answers TRANSACTION_ABORTABLE where v1 said INVALID_TXN_STATE
	Busy            Class = "retriable"         // CONCURRENT_TRANSACTIONS: try again, nothing happened
	OutOfOrder      Class = "out of order"      // KIP-98; KIP-360 answers UNKNOWN_PRODUCER_ID where the leader lost the producer
	Duplicate       Class = "duplicate"         // the batch is already in the log: the producer takes it as success
	WrongProducerID Class = "wrong producer id"
	Unstable        Class = "unstable offsets" // KIP-447
	// NoEffect: Kafka answers it before it writes anything (authorization,
	// validation, a replica check ahead of the append). Any state allows
	// it, and it changes nothing. A produce or TxnOffsetCommit is the one
	// exception: under transactions v2 the coordinator's implicit add
	// (KIP-890) may come first, so that add may or may not have happened.
	NoEffect Class = "no effect"
	// Undecided: no answer, or one Kafka may send after it wrote (a failed
	// or unconfirmed append): may or may not have taken effect.
	Undecided        Class = "undecided"
	UnknownErrorCode Class = "unknown error"
)

// The requests by who answers them.
var (
	txnCoordinator   = []Kind{InitProducerID, AddPartitions, AddOffsets, EndTxn}
	groupCoordinator = []Kind{JoinGroup, SyncGroup, Heartbeat, LeaveGroup, TxnOffsetCommit, OffsetCommit, OffsetFetch}
	coordinators     = slices.Concat(txnCoordinator, groupCoordinator)
	txnWrites        = slices.Concat(txnCoordinator, []Kind{Produce, TxnOffsetCommit})
	groupMembers     = []Kind{JoinGroup, SyncGroup, Heartbeat, LeaveGroup, TxnOffsetCommit, OffsetCommit}
	// offsetCommits are both kinds of commit: their refusals before the
	// write are the same (OffsetMetadataManager.commitOffset and
	// commitTransactionalOffset, 4.x; GroupMetadataManager.storeOffsets, 3.9).
	offsetCommits = []Kind{TxnOffsetCommit, OffsetCommit}
	allRequests   = slices.Concat(txnCoordinator, groupCoordinator, []Kind{Produce, Fetch, DeleteRecords, AlterConfig}, topicAdmin)
	// topicAdmin are an admin's changes of a topic's partitions (topics.go).
	topicAdmin = []Kind{CreateTopics, CreatePartitions, DeleteTopics}
	// consumerGroups are KIP-848's requests (consumergroups.go), with
	// rows of their own at the end of the table.
	consumerGroups = []Kind{ConsumerGroupHeartbeat}
)

// codeInfo is one row of the table: a code's class for the requests
// Kafka (or, for a client's own codes, the client) answers with it. Rows
// of one code name different requests.
type codeInfo struct {
	code  Code
	class Class
	kinds []Kind
}

// table classifies every code the history format knows. Sources are
// Kafka 3.9 and 4.0 (apache/kafka, core/ and group-coordinator/). The
// transaction coordinator's TransactionStateManager.appendTransactionToLog
// and the group coordinator's
// CoordinatorOperationExceptionHelper.handleOperationException (and
// GroupMetadataManager.storeOffsets/storeGroup before 4.0) turn a failed
// or unconfirmed log append into NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE; appendTransactionToLog answers
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR even after a
// successful append when the cache moved meanwhile (getTransactionState).
// So those codes are undecided from every coordinator.
var table = []codeInfo{
	// TransactionCoordinator.handleInitProducerId, handleAddPartitionsToTransaction,
	// handleEndTransaction: a fenced or stale epoch (KIP-98, KIP-588). The
	// leader's ProducerStateManager answers INVALID_PRODUCER_EPOCH to a produce.
	{ProducerFenced, FencedProducer, txnWrites},
	{InvalidProducerEpoch, FencedProducer, txnWrites},
	// Under transactions v2 a client library reports a fenced producer's
	// batch as not attempted. Nothing was written. (An AddPartitionsToTxn
	// gets it with no effect, below.)
	{OperationNotAttempted, FencedProducer, []Kind{Produce, TxnOffsetCommit}},
	// TransactionCoordinator.logInvalidStateTransitionAndReturnError;
	// ReplicaManager.handleProduceAppend for a partition not in the
	// transaction (KIP-890 verification).
	{InvalidTxnState, BadTxnState, txnWrites},
	{TransactionAbortable, BadTxnState, txnWrites},
	// TransactionCoordinator: a pending transition (also from
	// the group coordinator's verification of a TxnOffsetCommit).
	{ConcurrentTransactions, Busy, txnWrites},
	// UnifiedLog.appendAsLeader via ProducerStateManager (KIP-98, KIP-360).
	{OutOfOrderSequenceNumber, OutOfOrder, []Kind{Produce}},
	{UnknownProducerID, OutOfOrder, []Kind{Produce}},
	{DuplicateSequenceNumber, Duplicate, []Kind{Produce}},
	// TransactionCoordinator: the producer id is not the transactional
	// id's; ReplicaManager.handleProduceAppend: two producer ids in one
	// produce.
	{InvalidProducerIDMapping, WrongProducerID, txnWrites},
	// GroupMetadataManager.validateClassicGroupHeartbeat,
	// validateSyncGroup (a SyncGroup to an unknown group or an Empty one
	// is UNKNOWN_MEMBER_ID too, classicGroupSyncGroup),
	// OffsetMetadataManager.validateTransactionalOffsetCommit (KIP-447),
	// and validateOffsetCommit for a plain commit (ClassicGroup
	// .validateOffsetCommit, 4.x; GroupCoordinator.validateOffsetCommit,
	// 3.9): refusals before anything is written. An OffsetFetch v9+ from
	// a classic member of a consumer group at another generation
	// (ConsumerGroup.validateOffsetFetch, validateMemberEpoch with
	// useClassicProtocol; OffsetMetadataManagerTest#testConsumerGroupOffsetFetchWithIllegalGenerationId):
	// nothing is read.
	{IllegalGeneration, FencedConsumer, append(slices.Clone(groupMembers), OffsetFetch)},
	{UnknownMemberID, FencedConsumer, []Kind{JoinGroup, SyncGroup, Heartbeat, LeaveGroup, TxnOffsetCommit, OffsetCommit, OffsetFetch}},
	{FencedInstanceID, FencedConsumer, groupMembers},
	// OffsetFetch with require_stable (KIP-447).
	{UnstableOffsetCommit, Unstable, []Kind{OffsetFetch}},

	// (a) No effect: answered before anything is written.
	//
	// KafkaApis.handleInitProducerIdRequest, handleAddPartitionsToTxnRequest,
	// handleAddOffsetsToTxnRequest, handleEndTxnRequest, handleProduceRequest,
	// handleTxnOffsetCommitRequest authorize the transactional id first.
	{TransactionalIDAuthorizationFailed, NoEffect, txnWrites},
	// KafkaApis.handleAddOffsetsToTxnRequest, handleTxnOffsetCommitRequest,
	// handleJoinGroupRequest, handleSyncGroupRequest, handleHeartbeatRequest,
	// handleLeaveGroupRequest, handleOffsetFetchRequest and
	// handleOffsetCommitRequest authorize the group first.
	{GroupAuthorizationFailed, NoEffect, []Kind{AddOffsets, TxnOffsetCommit, OffsetCommit, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch}},
	// KafkaApis.handleProduceRequest, handleFetchRequest,
	// handleAddPartitionsToTxnRequest, handleTxnOffsetCommitRequest,
	// handleOffsetCommitRequest, handleOffsetFetchRequest filter the
	// topics by authorization first.
	{TopicAuthorizationFailed, NoEffect, []Kind{Produce, Fetch, AddPartitions, TxnOffsetCommit, OffsetCommit, OffsetFetch}},
	// KafkaApis.handleInitProducerIdRequest: IDEMPOTENT_WRITE on the cluster
	// for a producer with no transactional id.
	{ClusterAuthorizationFailed, NoEffect, []Kind{InitProducerID}},
	// TransactionCoordinator.handleInitProducerId (empty transactional id),
	// handleAddPartitionsToTransaction, handleEndTransaction;
	// KafkaApis.handleProduceRequest (ProduceRequest.validateRecords);
	// GroupMetadataManager (InvalidRequestException in the join and leave
	// checks); request parsing for any request.
	{InvalidRequest, NoEffect, allRequests},
	// SocketServer/KafkaApis: a version the broker does not support.
	{UnsupportedVersion, NoEffect, allRequests},
	// TransactionCoordinator.handleInitProducerId, before any lookup.
	{InvalidTransactionTimeout, NoEffect, []Kind{InitProducerID}},
	// Partition.appendRecordsToLeader checks min.insync.replicas before
	// UnifiedLog.appendAsLeader; ReplicaManager.handleProduceAppend answers
	// it where the transaction's verification failed (KIP-890), before the
	// append. The coordinators turn it into COORDINATOR_NOT_AVAILABLE.
	{NotEnoughReplicas, NoEffect, []Kind{Produce}},
	// KafkaApis.handleProduceRequest, handleFetchRequest,
	// handleAddPartitionsToTxnRequest, handleTxnOffsetCommitRequest check
	// the metadata cache (handleOffsetCommitRequest too);
	// ReplicaManager.getPartitionOrException before an append or a read.
	{UnknownTopicOrPartition, NoEffect, []Kind{Produce, Fetch, AddPartitions, TxnOffsetCommit, OffsetCommit, OffsetFetch}},
	{UnknownTopicID, NoEffect, []Kind{Fetch}},
	// KafkaApis.handleAddPartitionsToTxnRequest puts it on the partitions
	// it skipped because another was unknown or unauthorized, before the
	// coordinator runs: the producer need not be fenced, and nothing is
	// added (KafkaApisTest#testAddPartitionsToTxnOperationNotAttempted,
	// 3.9.0 and trunk).
	{OperationNotAttempted, NoEffect, []Kind{AddPartitions}},
	// UnifiedLog.appendAsLeader and LogValidator refuse the batch before it
	// is written (ReplicaManager.appendToLocalLog).
	{MessageTooLarge, NoEffect, []Kind{Produce}},
	{RecordListTooLarge, NoEffect, []Kind{Produce}},
	// GroupMetadataManager.storeOffsets (3.9) passes the append's
	// CORRUPT_MESSAGE on to both kinds of commit, and stores nothing
	// (GroupMetadataManagerTest#testCommitOffsetFailure, core).
	{CorruptMessage, NoEffect, []Kind{Produce, Fetch, TxnOffsetCommit, OffsetCommit}},
	{InvalidRecord, NoEffect, []Kind{Produce}},
	{InvalidTimestamp, NoEffect, []Kind{Produce}},
	// ReplicaManager.appendRecords: acks other than -1, 0 or 1.
	{InvalidRequiredAcks, NoEffect, []Kind{Produce}},
	// GroupCoordinatorService: an empty or null group id, before the runtime.
	{InvalidGroupID, NoEffect, groupCoordinator},
	// GroupMetadataManager: a group of another type (KIP-848), or none.
	// OffsetMetadataManager.validateOffsetCommit answers it to a plain
	// commit with a generation for a group that does not exist, from
	// OffsetCommit v9 on (older versions get ILLEGAL_GENERATION, as 3.9's
	// GroupCoordinator.handleCommitOffsets answers every version). A
	// TxnOffsetCommit gets it for a group that does not exist from v6
	// (KIP-1319, TxnOffsetCommitRequest.supportsGroupIdNotFoundError;
	// older versions get ILLEGAL_GENERATION), and for a share group at
	// every version (ShareGroup.validateOffsetCommit), which no history
	// shows, so no version rule narrows it.
	{GroupIDNotFound, NoEffect, []Kind{TxnOffsetCommit, OffsetCommit, OffsetFetch, Heartbeat, LeaveGroup}},
	// GroupCoordinatorService.joinGroup: a session timeout out of bounds.
	{InvalidSessionTimeout, NoEffect, []Kind{JoinGroup}},
	// GroupMetadataManager.classicGroupJoin: a protocol the group does
	// not share; KafkaApis.handleJoinGroupRequest; validateSyncGroup: a
	// SyncGroup's protocol type or name is not the group's (KIP-559).
	{InconsistentGroupProtocol, NoEffect, []Kind{JoinGroup, SyncGroup, Heartbeat}},
	// GroupMetadataManager.classicGroupJoin removes the member it refuses.
	{GroupMaxSizeReached, NoEffect, []Kind{JoinGroup}},
	// GroupMetadataManager.classicGroupJoinNewMember (KIP-394): the new id
	// is only pending, not a member, until the client joins with it.
	{MemberIDRequired, NoEffect, []Kind{JoinGroup}},
	// GroupMetadataManager.throwIfStaticMemberIsUnknown and
	// classicGroupLeave: a static member with another member id.
	{UnreleasedInstanceID, NoEffect, []Kind{JoinGroup, LeaveGroup}},
	// OffsetMetadataManager.commitTransactionalOffset refuses the metadata
	// before it builds a record; GroupMetadataManager.storeOffsets (before
	// 4.0) turns MESSAGE_TOO_LARGE into INVALID_COMMIT_OFFSET_SIZE, which
	// the log answers before the append.
	// OffsetMetadataManager.commitOffset refuses it the same way.
	{OffsetMetadataTooLarge, NoEffect, offsetCommits},
	{InvalidCommitOffsetSize, NoEffect, offsetCommits},
	// ReplicaManager.readFromLog: a fetch changes nothing, whatever it answers.
	{OffsetOutOfRange, NoEffect, []Kind{Fetch}},
	{FencedLeaderEpoch, NoEffect, []Kind{Fetch}},
	{UnknownLeaderEpoch, NoEffect, []Kind{Fetch}},
	{ReplicaNotAvailable, NoEffect, []Kind{Fetch}},
	{InconsistentTopicID, NoEffect, []Kind{Fetch}},
	{UnsupportedCompressionType, NoEffect, []Kind{Fetch}},
	{FetchSessionIDNotFound, NoEffect, []Kind{Fetch}},
	{InvalidFetchSessionEpoch, NoEffect, []Kind{Fetch}},

	// (b) Undecided: may follow a write whose outcome is unknown.
	//
	// A client's own time-out, or DelayedProduce.onExpiration: the records
	// are in the leader's log but not yet on enough replicas.
	{RequestTimedOut, Undecided, allRequests},
	// The client lost the connection: a client's own code.
	{NetworkException, Undecided, allRequests},
	// TransactionStateManager.appendTransactionToLog,
	// CoordinatorOperationExceptionHelper.handleOperationException: a
	// failed or unconfirmed append (see above). DelayedProduce.tryComplete
	// answers NOT_LEADER_OR_FOLLOWER to a produce already in the log when
	// the leader moved while it waited for the replicas.
	{NotCoordinator, Undecided, coordinators},
	{CoordinatorNotAvailable, Undecided, coordinators},
	{CoordinatorLoadInProgress, Undecided, coordinators},
	{NotLeaderOrFollower, Undecided, []Kind{Produce, Fetch}},
	// Partition.checkEnoughReplicasReachOffset: the ISR shrank after the
	// records were appended.
	{NotEnoughReplicasAfterAppend, Undecided, []Kind{Produce}},
	// ReplicaManager.appendToLocalLog: the log directory failed, perhaps
	// during the write.
	{KafkaStorageError, Undecided, []Kind{Produce, Fetch}},
	// Any unexpected exception, anywhere, including after an append
	// (appendTransactionToLog turns MESSAGE_TOO_LARGE into it).
	{UnknownServerError, Undecided, allRequests},
	// GroupMetadataManager.classicGroupHeartbeatToClassicGroup renews the
	// session, then answers it; convertToConsumerGroup answers it to a
	// member already joined. A SyncGroup gets it while the group prepares
	// a rebalance (classicGroupSyncToClassicGroup), and a parked one when
	// a rebalance is prepared before the leader's SyncGroup came
	// (prepareRebalance, resetAndPropagateAssignmentWithError). A plain
	// OffsetCommit gets it while the group completes a rebalance
	// (ClassicGroup.validateOffsetCommit, 4.x; GroupCoordinator
	// .doCommitOffsets, CompletingRebalance, 3.9), and Kafka writes
	// nothing then. Undecided, as for every request: the model says where
	// it is due (groups.go, offsets.go).
	{RebalanceInProgress, Undecided, []Kind{JoinGroup, SyncGroup, Heartbeat, OffsetCommit}},

	// (c) KIP-848's ConsumerGroupHeartbeat (ConsumerGroupHeartbeatResponse.json,
	// GroupMetadataManager.consumerGroupHeartbeat).
	//
	// A member the group does not have, an instance id another member
	// holds, and (throwIfConsumerGroupMemberEpochIsInvalid) a member
	// epoch ahead of or behind the coordinator's: the member gives up
	// its partitions and joins again.
	{UnknownMemberID, FencedConsumer, consumerGroups},
	{FencedInstanceID, FencedConsumer, consumerGroups},
	{FencedMemberEpoch, FencedConsumer, consumerGroups},
	// Refused before the group changes: authorization, validation
	// (throwIfConsumerGroupHeartbeatRequestIsInvalid: INVALID_REQUEST, an
	// assignor the broker lacks, and from v1 a regex that does not
	// compile), a group that does not exist and is not joined (or is not
	// a consumer group), a full group (throwIfConsumerGroupIsFull), and
	// an instance id whose member has not left with epoch -2
	// (throwIfInstanceIdIsUnreleased).
	{GroupAuthorizationFailed, NoEffect, consumerGroups},
	{InvalidRequest, NoEffect, consumerGroups},
	{UnsupportedVersion, NoEffect, consumerGroups},
	{UnsupportedAssignor, NoEffect, consumerGroups},
	{InvalidSubscriptionRegex, NoEffect, consumerGroups},
	{GroupIDNotFound, NoEffect, consumerGroups},
	{GroupMaxSizeReached, NoEffect, consumerGroups},
	{UnreleasedInstanceID, NoEffect, consumerGroups},
	// A failed or unconfirmed append, as from every coordinator above,
	// and the client's own codes.
	{RequestTimedOut, Undecided, consumerGroups},
	{NetworkException, Undecided, consumerGroups},
	{NotCoordinator, Undecided, consumerGroups},
	{CoordinatorNotAvailable, Undecided, consumerGroups},
	{CoordinatorLoadInProgress, Undecided, consumerGroups},
	{UnknownServerError, Undecided, consumerGroups},

	// (d) KIP-848's plain OffsetCommit to a consumer group
	// (consumercommit.go): a member epoch that is not the member's
	// (ConsumerGroup.validateOffsetCommit, validateMemberEpoch, 3.9 to
	// 4.x). The member retries once a heartbeat has told it its epoch.
	// Nothing is written. A TxnOffsetCommit gets it from v6 (KIP-1319);
	// below v6 OffsetMetadataManager.validateTransactionalOffsetCommit
	// turns it into ILLEGAL_GENERATION (versionRules).
	// An OffsetFetch v9+ of a consumer group at another member epoch
	// (ConsumerGroup.validateOffsetFetch): nothing is read.
	{StaleMemberEpoch, FencedConsumer, []Kind{OffsetCommit, OffsetFetch, TxnOffsetCommit}},

	// (e) KIP-107's DeleteRecords (DeleteRecordsResponse.json,
	// KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecords,
	// Partition.deleteRecordsOnLeader; deleterecords.go). Refused before
	// the log start offset moves: authorization and the metadata cache
	// (KafkaApis), a compacted topic (POLICY_VIOLATION), and an offset
	// above the high watermark (OFFSET_OUT_OF_RANGE). The leader moves its
	// log start offset before DelayedDeleteRecords waits for the
	// followers, so a leader that moved meanwhile
	// (NOT_LEADER_OR_FOLLOWER), a failed log directory and the
	// purgatory's time-out (REQUEST_TIMED_OUT, in allRequests) may follow
	// the deletion.
	{TopicAuthorizationFailed, NoEffect, []Kind{DeleteRecords}},
	{UnknownTopicOrPartition, NoEffect, []Kind{DeleteRecords}},
	{PolicyViolation, NoEffect, []Kind{DeleteRecords}},
	{OffsetOutOfRange, NoEffect, []Kind{DeleteRecords}},
	{NotLeaderOrFollower, Undecided, []Kind{DeleteRecords}},
	{KafkaStorageError, Undecided, []Kind{DeleteRecords}},

	// (f) An admin's IncrementalAlterConfigs of a broker config
	// (IncrementalAlterConfigsResponse.json; 3.9's ZkAdminManager and
	// ConfigAdminManager, the KRaft controller's
	// ConfigurationControlManager): refused before anything changes, for
	// authorization (ALTER_CONFIGS on the cluster), a value the config
	// does not take, and an alter.config.policy.class.name that says no.
	// The broker applies a change after it is answered (alterconfig.go),
	// so every answer is placed anywhere after its call.
	{ClusterAuthorizationFailed, NoEffect, []Kind{AlterConfig}},
	{InvalidConfig, NoEffect, []Kind{AlterConfig}},
	{PolicyViolation, NoEffect, []Kind{AlterConfig}},

	// (g) An admin's CreateTopics, CreatePartitions and DeleteTopics of
	// one topic (CreateTopicsResponse.json, CreatePartitionsResponse.json,
	// DeleteTopicsResponse.json; the KRaft controller's
	// ReplicationControlManager.createTopics, createPartitions,
	// deleteTopics): refused before the controller writes a record. The
	// model does not know the topics a cluster held before the history,
	// so each refusal is taken anywhere (topics.go). A controller that
	// timed out may have written the change (REQUEST_TIMED_OUT, above).
	{TopicAuthorizationFailed, NoEffect, topicAdmin},
	{PolicyViolation, NoEffect, topicAdmin},
	{ThrottlingQuotaExceeded, NoEffect, topicAdmin},
	{InvalidConfig, NoEffect, []Kind{CreateTopics}},
	{TopicAlreadyExists, NoEffect, []Kind{CreateTopics}},
	{InvalidReplicationFactor, NoEffect, []Kind{CreateTopics}},
	{InvalidTopicException, NoEffect, []Kind{CreateTopics, DeleteTopics}},
	{InvalidPartitions, NoEffect, []Kind{CreateTopics, CreatePartitions}},
	{UnknownTopicOrPartition, NoEffect, []Kind{CreatePartitions, DeleteTopics}},
	{TopicDeletionDisabled, NoEffect, []Kind{DeleteTopics}},
}

// rowsOf is each code's rows of the table.
var rowsOf = index(table)

func index(rows []codeInfo) map[Code][]codeInfo {
	out := map[Code][]codeInfo{}
	for _, row := range rows {
		out[row.code] = append(out[row.code], row)
	}
	return out
}

// Codes lists the error codes a history may carry, in the table's order.
var Codes = codesOf(table)

func codesOf(rows []codeInfo) []Code {
	var out []Code
	for _, row := range rows {
		if !slices.Contains(out, row.code) {
			out = append(out, row.code)
		}
	}
	return out
}

// ClassOf is the class of the error code c answered to a request of kind
// k ("" is success). For a request that Kafka never answers with c, it is
// the class of c's first row.
func ClassOf(k Kind, c Code) Class {
	if c == "" {
		return Success
	}
	rows, ok := rowsOf[c]
	if !ok {
		return UnknownErrorCode
	}
	for _, row := range rows {
		if slices.Contains(row.kinds, k) {
			return row.class
		}
	}
	return rows[0].class
}

// undecidedCode reports whether c may follow an effect. It does not
// depend on the request: no code is undecided for one request and not
// for another (TestUndecidedForEveryRequest).
func undecidedCode(c Code) bool {
	rows := rowsOf[c]
	return len(rows) > 0 && rows[0].class == Undecided
}

// KnownCode reports whether c is a code the history format knows.
func KnownCode(c Code) bool { _, ok := rowsOf[c]; return ok }

// Answers reports whether Kafka (or the client, for a client's own
// codes) may answer a request of kind k with the known code c.
func Answers(k Kind, c Code) bool {
	for _, row := range rowsOf[c] {
		if slices.Contains(row.kinds, k) {
			return true
		}
	}
	return false
}

// CodesFor lists the codes a request of kind k may be answered with, in
// the order of Codes.
func CodesFor(k Kind) []Code {
	var out []Code
	for _, c := range Codes {
		if Answers(k, c) {
			out = append(out, c)
		}
	}
	return out
}

// APIName is Kafka's name of the request a kind sends ("Produce"), or
// the kind itself for a fault.
func (k Kind) APIName() string {
	if name, ok := apiNames[k]; ok {
		return name
	}
	return string(k)
}

var apiNames = map[Kind]string{
	InitProducerID: "InitProducerId", AddPartitions: "AddPartitionsToTxn", AddOffsets: "AddOffsetsToTxn",
	Produce: "Produce", TxnOffsetCommit: "TxnOffsetCommit", EndTxn: "EndTxn", JoinGroup: "JoinGroup", SyncGroup: "SyncGroup",
	Heartbeat: "Heartbeat", LeaveGroup: "LeaveGroup", OffsetFetch: "OffsetFetch", Fetch: "Fetch",
	OffsetCommit:           "OffsetCommit",
	ConsumerGroupHeartbeat: "ConsumerGroupHeartbeat",
	DeleteRecords:          "DeleteRecords",
	AlterConfig:            "IncrementalAlterConfigs",
	CreateTopics:           "CreateTopics",
	CreatePartitions:       "CreatePartitions",
	DeleteTopics:           "DeleteTopics",
}

// mayBeginImplicitly reports whether a request of kind k adds to its
// transaction by itself under transactions v2 (KIP-890), before the
// checks that may refuse it.
func mayBeginImplicitly(k Kind) bool { return k == Produce || k == TxnOffsetCommit }

// PartlyEffective reports whether r refused a request of kind k with no
// effect but the implicit add (KIP-890) that may have come before: such
// an answer is placed, like an undecided one, anywhere after its call.
func PartlyEffective(k Kind, r Result) bool {
	return r.Answered && ClassOf(k, r.Err) == NoEffect && mayBeginImplicitly(k)
}

// Version is the API version a request was sent at: the api_version of
// its request header, the version the client and the broker agreed on.
// The zero Version is unknown; a history that does not say keeps every
// version's answer legal.
type Version struct {
	number int16
	known  bool
}

// AtVersion is the known version n.
func AtVersion(n int16) Version { return Version{number: n, known: true} }

// Number is the version and whether it is known.
func (v Version) Number() (int16, bool) { return v.number, v.known }

func (v Version) String() string {
	if !v.known {
		return "unknown version"
	}
	return fmt.Sprintf("v%d", v.number)
}

// CheckVersion says why v cannot be the version of a request of kind k:
// a fault has none, and a request header's version is never negative. A
// version above the newest that fencecheck knows is a newer Kafka's, and
// gets the answers of the newest versions it knows.
func CheckVersion(k Kind, v Version) error {
	n, known := v.Number()
	switch {
	case !known:
		return nil
	case !k.IsRequest():
		return fmt.Errorf("a %s is a fault, not a request, and has no API version", k)
	case n < 0:
		return fmt.Errorf("%s has no version %d: a request header's version is never negative", k.APIName(), n)
	}
	return nil
}

// versionRule is a code that Kafka sends to a request only from one
// version on, or at none: older clients do not know it, so KafkaApis (or
// the helper it calls) sends them another code for the same refusal, or
// never meets the case at those versions.
type versionRule struct {
	kind Kind
	code Code
	// since is the first version that gets code; noVersion when no
	// version does.
	since int16
	// instead is what the versions below since get for the same refusal;
	// "" when they never meet it.
	instead Code
	// modelRules are the model's rules whose refusal Kafka sends as code
	// from since on and as instead below it. nil: every refusal the model
	// makes with code or instead.
	modelRules []string
	// source is where Kafka decides it.
	source string
}

// versionRules are Kafka's version-dependent codes for the requests the
// format knows. Sources: apache/kafka trunk of October 2024 (3.9/4.0)
// and 4.x, with the request schemas' own notes (clients/src/main/
// resources/common/message/*Request.json: "Version N adds support for
// new error code ...").
var versionRules = []versionRule{
	// KIP-588: PRODUCER_FENCED is new; older clients get the
	// INVALID_PRODUCER_EPOCH they handle the same way ("For older
	// clients, they could not understand the new PRODUCER_FENCED error
	// code").
	{kind: InitProducerID, code: ProducerFenced, since: 4, instead: InvalidProducerEpoch,
		source: "KafkaApis.handleInitProducerIdRequest: version < 4"},
	{kind: AddPartitions, code: ProducerFenced, since: 2, instead: InvalidProducerEpoch,
		source: "KafkaApis.handleAddPartitionsToTxnRequest: version < 2"},
	{kind: AddOffsets, code: ProducerFenced, since: 2, instead: InvalidProducerEpoch,
		source: "KafkaApis.handleAddOffsetsToTxnRequest: version < 2"},
	{kind: EndTxn, code: ProducerFenced, since: 2, instead: InvalidProducerEpoch,
		source: "KafkaApis.handleEndTxnRequest: version < 2"},
	// A Produce never gets PRODUCER_FENCED. The leader's
	// ProducerAppendInfo.checkProducerEpoch throws
	// InvalidProducerEpochException, AddPartitionsToTxnManager turns the
	// verification's PRODUCER_FENCED into INVALID_PRODUCER_EPOCH (3.6 to
	// 4.x, the TV2 implicit add included), and KafkaApis.handleProduceRequest
	// passes both on (KafkaApisTest#
	// shouldReplaceProducerFencedWithInvalidProducerEpochInProduceResponse,
	// every Produce version). A TxnOffsetCommit's verification is
	// converted the same way; KafkaApis.handleTxnOffsetCommitRequest has
	// no KIP-588 rule.
	{kind: Produce, code: ProducerFenced, since: noVersion, instead: InvalidProducerEpoch,
		source: "AddPartitionsToTxnManager: \"Producers expect to handle INVALID_PRODUCER_EPOCH\"; ProducerAppendInfo.checkProducerEpoch"},
	// Nor does it get a coordinator's error from its verification:
	// ReplicaManager's verification callback (3.9
	// handleProduceAppend, 4.x appendRecords) turns them into
	// NOT_ENOUGH_REPLICAS, which older clients retry without a metadata
	// refresh (ReplicaManagerTest#testMaybeVerificationErrorConversions
	// in 3.7 and 3.8, #testVerificationErrorConversions from 3.9; 3.8+
	// adds NETWORK_EXCEPTION, a client's own code here). Load refuses a
	// Produce answered with these codes (Answers), so only a transcript
	// that judges such an answer meets these rules.
	{kind: Produce, code: NotCoordinator, since: noVersion, instead: NotEnoughReplicas,
		source: verificationConversion},
	{kind: Produce, code: CoordinatorNotAvailable, since: noVersion, instead: NotEnoughReplicas,
		source: verificationConversion},
	{kind: Produce, code: CoordinatorLoadInProgress, since: noVersion, instead: NotEnoughReplicas,
		source: verificationConversion},

	// KIP-890: a partition (or the group's offsets partition) that the
	// verification finds outside the transaction is TRANSACTION_ABORTABLE
	// to the clients that know it and INVALID_TXN_STATE to older ones.
	{kind: Produce, code: TransactionAbortable, since: 11, instead: InvalidTxnState,
		modelRules: []string{"partition-not-in-txn"},
		source: "AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation (DEFAULT_ERROR up to v10; " +
			"KafkaApis.handleProduceRequest: apiVersion > 10 in 3.8 and 3.9) and the verification callback: " +
			"TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE for DEFAULT_ERROR"},
	{kind: TxnOffsetCommit, code: TransactionAbortable, since: 4, instead: InvalidTxnState,
		modelRules: []string{"offsets-need-add"},
		source: "AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation (DEFAULT_ERROR up to v3; " +
			"CoordinatorPartitionWriter.maybeStartTransactionVerification and GroupCoordinator.handleTxnCommitOffsets: apiVersion >= 4 in 3.8 and 3.9)"},
	// The transaction coordinator answers TRANSACTION_ABORTABLE only to a
	// verify-only AddPartitionsToTxn (TransactionCoordinator.
	// handleVerifyPartitionsInTransaction), which exists from v4, a
	// broker's version; a client's (v0 to v3) never meets it. The schema
	// says v5 "adds support" for it; the coordinator answers v4 the same.
	{kind: AddPartitions, code: TransactionAbortable, since: 4,
		source: "TransactionCoordinator.handleVerifyPartitionsInTransaction (verify-only, v4 and later)"},
	// The schemas promise TRANSACTION_ABORTABLE from these versions on
	// only; no older client is sent it.
	{kind: InitProducerID, code: TransactionAbortable, since: 5,
		source: "InitProducerIdRequest.json: \"Version 5 adds support for new error code TRANSACTION_ABORTABLE\""},
	{kind: AddOffsets, code: TransactionAbortable, since: 4,
		source: "AddOffsetsToTxnRequest.json: \"Version 4 adds support for new error code TRANSACTION_ABORTABLE\""},
	{kind: EndTxn, code: TransactionAbortable, since: 4,
		source: "EndTxnRequest.json: \"Version 4 adds support for new error code TRANSACTION_ABORTABLE\""},

	// KIP-848: a regex subscription (SubscribedTopicRegex) is v1 and
	// later only.
	{kind: ConsumerGroupHeartbeat, code: InvalidSubscriptionRegex, since: 1,
		source: "ConsumerGroupHeartbeatResponse.json: \"INVALID_SUBSCRIPTION_REGEX (version 1+)\""},

	// KIP-848: a consumer group member's plain commit below v9 is
	// UNSUPPORTED_VERSION before its epoch is looked at, so only v9 and
	// later meet STALE_MEMBER_EPOCH.
	{kind: OffsetCommit, code: StaleMemberEpoch, since: 9,
		source: "ConsumerGroup.validateOffsetCommit: \"OffsetCommit version 9 or above must be used by members using the modern group protocol\"; " +
			"OffsetCommitResponse.json: \"STALE_MEMBER_EPOCH (version 9+)\""},

	// KIP-848: an OffsetFetch names its member and epoch from v9 on.
	{kind: OffsetFetch, code: StaleMemberEpoch, since: 9,
		source: "OffsetFetchResponse.json: \"Version 9 ... can return STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID errors\"; " +
			"\"STALE_MEMBER_EPOCH (version 9+)\""},
	// A classic member of a consumer group at another generation, which
	// only a v9+ fetch names (ConsumerGroup.validateOffsetFetch).
	{kind: OffsetFetch, code: IllegalGeneration, since: 9,
		source: "ConsumerGroup.validateOffsetFetch: member id and epoch, which OffsetFetch carries from v9 (KIP-848)"},

	// KIP-1319 (Kafka trunk of May 2026, KAFKA-20444): a TxnOffsetCommit
	// v6 at a consumer group member epoch that is not the member's gets
	// STALE_MEMBER_EPOCH, as a plain commit does. Older versions keep
	// the conversion to ILLEGAL_GENERATION. A classic member's stale
	// generation is ILLEGAL_GENERATION at every version, under a rule of
	// its own (consumer-commit-classic-generation).
	{kind: TxnOffsetCommit, code: StaleMemberEpoch, since: txnStaleMemberEpochSince, instead: IllegalGeneration,
		modelRules: []string{"consumer-commit-stale-epoch"},
		source: "TxnOffsetCommitRequest.supportsStaleMemberEpochError (version >= 6) and " +
			"OffsetMetadataManager.validateTransactionalOffsetCommit (KIP-1319, apache/kafka#22214)"},

	// KAFKA-7296: clients before 2.3 (TxnOffsetCommit below v2) could
	// crash on COORDINATOR_LOAD_IN_PROGRESS.
	{kind: TxnOffsetCommit, code: CoordinatorLoadInProgress, since: 2, instead: CoordinatorNotAvailable,
		source: "KafkaApis.handleTxnOffsetCommitRequest: version < 2"},
}

// noVersion is the since of a code that no version of the request gets.
const noVersion = math.MaxInt16

// verificationConversion is where Kafka converts a verification's
// coordinator errors for a Produce.
const verificationConversion = "ReplicaManager: \"Unable to verify the partition has been added to the transaction\""

// answersAt says why Kafka cannot answer a request of kind k at version
// v with the code c, when a rule of versionRules rules it out; nil
// otherwise. At an unknown version only a code that no version gets is
// ruled out. Answers is the test for every version.
func answersAt(k Kind, c Code, v Version) error {
	for _, r := range versionRules {
		if r.kind == k && r.code == c && r.excludes(v) {
			if r.since == noVersion {
				return fmt.Errorf("Kafka does not answer %s with %s at any version: %s", k.APIName(), c, r.below())
			}
			return fmt.Errorf("Kafka does not answer %s %s with %s: %s", k.APIName(), v, c, r.below())
		}
	}
	return nil
}

// excludes reports whether a request at version v cannot get r.code.
func (r versionRule) excludes(v Version) bool {
	n, known := v.Number()
	return r.since == noVersion || known && n < r.since
}

// below says what the versions under r.since get.
func (r versionRule) below() string {
	if r.since == noVersion {
		return fmt.Sprintf("every version gets %s instead (%s)", r.instead, r.source)
	}
	if r.instead == "" {
		return fmt.Sprintf("only v%d and later get it, and older versions never meet the case (%s)", r.since, r.source)
	}
	return fmt.Sprintf("versions below v%d get %s instead (%s)", r.since, r.instead, r.source)
}

// applies reports whether r decides the code of a refusal by the model's
// rule named rule with the code refused.
func (r versionRule) applies(k Kind, rule string, refused Code) bool {
	return r.kind == k && r.instead != "" && (refused == r.code || refused == r.instead) &&
		(r.modelRules == nil || slices.Contains(r.modelRules, rule))
}

// versionRuleName names the error-codes rule of a code that is another
// version's.
const versionRuleName = "api-version"

// wrongForVersion is the error-codes finding on a refusal of the right
// class whose code is the one another version gets: the model's rule
// refused with the code refused, and the broker answered got to op,
// which was sent at a known version. nil when the version is unknown or
// the code is right for it.
func wrongForVersion(op Op, rule string, refused, got Code) *Disallowed {
	n, known := op.APIVersion.Number()
	if !known {
		return nil
	}
	for _, r := range versionRules {
		if !r.applies(op.Kind, rule, refused) {
			continue
		}
		want, other := r.code, r.instead
		if r.excludes(op.APIVersion) {
			want, other = r.instead, r.code
		}
		if got != other {
			continue
		}
		gets := r.below()
		if n >= r.since {
			gets = fmt.Sprintf("v%d and later get it, only versions below v%d get %s (%s)", r.since, r.since, r.instead, r.source)
		}
		return &Disallowed{Rule: versionRuleName, Want: ClassOf(op.Kind, want), Got: ClassOf(op.Kind, got), CodeOnly: true,
			Reason: fmt.Sprintf("%s %s gets %s: %s", op.Kind.APIName(), op.APIVersion, want, gets)}
	}
	return nil
}

// codeAtVersion is the error-codes finding on an answer whose code
// Kafka never sends at op's version (answersAt), or nil. A history
// recorded from another broker may well hold one: it is judged, as any
// other wrong code, and never refused.
func codeAtVersion(op Op, got Code) error {
	err := answersAt(op.Kind, got, op.APIVersion)
	if err == nil {
		return nil
	}
	class := ClassOf(op.Kind, got)
	return &Disallowed{Rule: versionRuleName, Want: class, Got: class, CodeOnly: true, Reason: err.Error()}
}

// versionNoteKey keys the room a recorder leaves in a request's context
// for the broker to note the API version it sent the request at.
type versionNoteKey struct{}

// WithVersionNote is ctx with room for a Broker to note the API version
// it sends a request at (NoteVersion); the Version it returns reads what
// was noted once the request is answered, and is unknown if nothing was.
func WithVersionNote(ctx context.Context) (context.Context, *Version) {
	v := new(Version)
	return context.WithValue(ctx, versionNoteKey{}, v), v
}

// NoteVersion notes in ctx the API version n a Broker sent a request at,
// for the recorder that left room for it (WithVersionNote). A Broker
// that speaks no wire protocol, such as the reference broker, notes none.
func NoteVersion(ctx context.Context, n int16) {
	if v, ok := ctx.Value(versionNoteKey{}).(*Version); ok {
		*v = AtVersion(n)
	}
}
