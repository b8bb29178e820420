// Package model is the reference broker: a pure, sequential specification of
// the parts of a Kafka cluster that fencing depends on (the transaction
// coordinator, the partition leaders and the group coordinator).
//
// Like etcd's raft, it does no I/O and keeps no clock of its own: the driver
// feeds it requests and, for ticks, time. A State is a value; Apply answers a
// request the way the reference broker would, and Check judges whether an
// answer some other broker gave is one the rules allow. Both are built from
// the same rules (coordinator.go, leader.go, groups.go), each carrying
// the source it comes from; model/README.md reads them against Kafka.
package model

import (
	"math"
	"strconv"
	"strings"
)

// Kind names an operation type exactly as the history format spells it.
type Kind string

// Requests.
const (
	InitProducerID  Kind = "init_producer_id"
	AddPartitions   Kind = "add_partitions"
	Produce         Kind = "produce"
	AddOffsets      Kind = "add_offsets"
	TxnOffsetCommit Kind = "txn_offset_commit"
	// OffsetCommit is a consumer's own commit outside a transaction (an
	// at-least-once consumer's, or an admin's): visible at once.
	OffsetCommit Kind = "offset_commit"
	EndTxn       Kind = "end_txn"
	JoinGroup    Kind = "join_group"
	// SyncGroup is the second half of a classic group's round: it hands
	// out the leader's assignment. It follows a join_group whose JoinOnly
	// says so; a join_group without it is the whole round.
	SyncGroup   Kind = "sync_group"
	LeaveGroup  Kind = "leave_group"
	OffsetFetch Kind = "offset_fetch"
	Fetch       Kind = "fetch"
	// Heartbeat is recorded from real clients only (fencecheck's own
	// clients never send one): it keeps a member's session alive.
	Heartbeat Kind = "heartbeat"
	// ConsumerGroupHeartbeat is KIP-848's one request of a consumer group
	// (group.protocol=consumer): it joins, heartbeats, reconciles and
	// leaves (consumergroups.go).
	ConsumerGroupHeartbeat Kind = "consumer_group_heartbeat"
	// DeleteRecords is an admin's DeleteRecords of one partition: it moves
	// the partition's log start offset up (deleterecords.go).
	DeleteRecords Kind = "delete_records"
	// AlterConfig is an admin's change of a dynamic broker config
	// (IncrementalAlterConfigs): today transaction.partition.verification
	// .enable, the one the model reads that Kafka lets change while the
	// broker runs (alterconfig.go).
	AlterConfig Kind = "alter_config"
	// CreateTopics, CreatePartitions and DeleteTopics are an admin's
	// change of one topic's partitions: a topic created with a count,
	// its count raised, or the topic deleted (topics.go).
	CreateTopics     Kind = "create_topics"
	CreatePartitions Kind = "create_partitions"
	DeleteTopics     Kind = "delete_topics"
)

// Faults. Only BrokerRestart and Tick reach the broker; the others describe
// what happened to a client and matter for timelines.
const (
	Stall         Kind = "stall"
	Wake          Kind = "wake"
	Crash         Kind = "crash"
	Restart       Kind = "restart"
	BrokerRestart Kind = "broker_restart"
	Tick          Kind = "tick"
	TimeoutAbort  Kind = "timeout_abort"
)

// Kinds lists every operation type, requests first.
var Kinds = []Kind{
	InitProducerID, AddPartitions, Produce, AddOffsets, TxnOffsetCommit, EndTxn,
	JoinGroup, LeaveGroup, OffsetFetch, Fetch, Heartbeat, OffsetCommit, SyncGroup,
	ConsumerGroupHeartbeat, DeleteRecords, AlterConfig, CreateTopics, CreatePartitions, DeleteTopics,
	Stall, Wake, Crash, Restart, BrokerRestart, Tick, TimeoutAbort,
}

// IsRequest reports whether k is a request to the broker (not a fault).
func (k Kind) IsRequest() bool {
	switch k {
	case InitProducerID, AddPartitions, Produce, AddOffsets, TxnOffsetCommit, EndTxn,
		JoinGroup, LeaveGroup, OffsetFetch, Fetch, Heartbeat, OffsetCommit, SyncGroup,
		ConsumerGroupHeartbeat, DeleteRecords, AlterConfig, CreateTopics, CreatePartitions, DeleteTopics:
		return true
	}
	return false
}

// IsFault reports whether k is a fault operation.
func (k Kind) IsFault() bool {
	switch k {
	case Stall, Wake, Crash, Restart, BrokerRestart, Tick, TimeoutAbort:
		return true
	}
	return false
}

// Partition is a topic partition written "topic-N".
type Partition string

// Topic is the partition's topic, and ok is false when p is not "topic-N".
func (p Partition) Topic() (topic string, ok bool) {
	i := strings.LastIndexByte(string(p), '-')
	if i <= 0 || i == len(p)-1 {
		return "", false
	}
	if _, err := strconv.ParseUint(string(p[i+1:]), 10, 31); err != nil {
		return "", false
	}
	return string(p[:i]), true
}

// Isolation is a fetch's isolation level.
type Isolation string

const (
	ReadCommitted   Isolation = "read_committed"
	ReadUncommitted Isolation = "read_uncommitted"
)

// Kafka's sentinels for "none".
const (
	NoProducerID int64 = -1
	NoEpoch      int16 = -1
	NoOffset     int64 = -1
	// NoGeneration is the generation the groupId-string overload of
	// sendOffsetsToTransaction sends: the broker checks nothing (seed 002).
	NoGeneration int32 = -1
)

// KIP-848's member epochs with a meaning of their own
// (ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH and
// LEAVE_GROUP_STATIC_MEMBER_EPOCH).
const (
	JoinMemberEpoch        int32 = 0
	LeaveMemberEpoch       int32 = -1
	StaticLeaveMemberEpoch int32 = -2
)

// Record is a record as a producer sends it. Keys are trip ids.
type Record struct {
	Key   string
	Value string
}

// FetchedRecord is a record as a fetch returns it.
type FetchedRecord struct {
	Offset     int64
	Key        string
	Value      string
	ProducerID int64
}

// Request is every request type's fields in one flat struct, as in the
// history format; a request uses the fields of its type. Absent numbers hold
// Kafka's sentinels (NoProducerID, NoEpoch, NoGeneration, 0 for timeouts).
type Request struct {
	// The fields of a request are ordered so that the small ones share
	// words: a long history holds a Request for every operation.
	TransactionalID string // "": none (an idempotent-only producer)
	TimeoutMs       int64  // init_producer_id: transaction.timeout.ms; 0: the default
	ProducerID      int64
	Epoch           int16
	// Enable2PC and KeepPreparedTxn are init_producer_id's KIP-939 flags
	// (InitProducerId v6+): the producer takes part in a two-phase
	// commit, and it keeps the transaction a crashed session prepared
	// rather than aborting it.
	Enable2PC       bool
	KeepPreparedTxn bool
	Sequence        int32
	// EmptyTransactionalID: an init_producer_id, add_partitions or
	// end_txn whose transactional.id is the empty string, which Kafka
	// refuses (TransactionalID is "" then too). An init_producer_id with
	// TransactionalID "" and not this is a null id's: idempotent only.
	EmptyTransactionalID bool
	Commit               bool
	// JoinOnly: this join_group is the JoinGroup only, and its SyncGroup
	// follows as a sync_group op; false: the whole round.
	JoinOnly      bool
	RequireStable bool
	// AllPartitions: an offset_fetch of every partition the group has an
	// offset for (OffsetFetch with topics null, as an admin's
	// listConsumerGroupOffsets sends it); Partition is "" then.
	AllPartitions bool
	// EmptyGroup: a group request whose group id is the empty string, as
	// a client sent it (Group is "" then too). Kafka refuses it with
	// INVALID_GROUP_ID to a JoinGroup, SyncGroup, Heartbeat, LeaveGroup
	// and TxnOffsetCommit, and takes it as any group id in an
	// OffsetCommit, OffsetFetch and AddOffsetsToTxn (groupid.go).
	EmptyGroup   bool
	GenerationID int32
	Partitions   []Partition // add_partitions; join_group: the partitions to spread
	Partition    Partition   // produce, offset_fetch, fetch
	Records      []Record
	Group        string
	MemberID     string
	// InstanceID is the member's group.instance.id (KIP-345): a static
	// member's name that outlives its member ids; "" for a dynamic
	// member. join_group, sync_group, heartbeat, leave_group,
	// offset_commit, txn_offset_commit and consumer_group_heartbeat carry
	// it.
	InstanceID string
	Offsets    map[Partition]int64 // txn_offset_commit, offset_commit: partition -> next offset
	// OffsetMetadata is a commit's metadata string per partition, where
	// the request sent one; a partition it leaves out sent none, which
	// Kafka keeps as "" (offsetmetadata.go).
	OffsetMetadata   map[Partition]string
	SessionTimeoutMs int64 // join_group; 0: the default
	// RebalanceTimeoutMs: join_group's, 0 when not said; a
	// consumer_group_heartbeat's, 0 when not sent (Kafka's -1: unchanged).
	RebalanceTimeoutMs int64
	// ProtocolType is join_group's, and sync_group's from SyncGroup v5
	// on; "" when not said.
	ProtocolType string
	// EmptyProtocolType: a join_group whose protocol type is the empty
	// string, as the client sent it (ProtocolType is "" then too), which
	// Kafka refuses with INCONSISTENT_GROUP_PROTOCOL (rounds.go,
	// protocolRefusal).
	EmptyProtocolType bool
	Protocols         []Protocol // join_group: the protocols, in the member's order
	// Protocol is the protocol name a SyncGroup v5+ sends, the one the
	// member's JoinGroup answer named; "" when not said.
	Protocol string
	// Assignments is a sync_group's {member: partitions}: the leader's
	// assignment of the generation. Kafka ignores a follower's.
	Assignments map[string][]Partition
	Offset      int64 // fetch: where to start; delete_records: the offset to delete before, -1 the high watermark
	Isolation   Isolation
	Ms          int64 // tick: how far the clock moves
	// MixedProducers: a produce whose request carried transactional
	// batches of more than one producer id and epoch, which Kafka
	// refuses whole (leader.go).
	MixedProducers bool
	// PartitionVerification is an alter_config's new
	// transaction.partition.verification.enable.
	PartitionVerification bool
	// consumer_group_heartbeat (KIP-848). A nil list is Kafka's null:
	// unchanged since the member's last heartbeat.
	MemberEpoch      int32 // 0 joins, -1 leaves, -2 leaves for a static member's return
	SubscribedTopics *[]string
	SubscribedRegex  string
	ServerAssignor   string
	OwnedPartitions  *[]Partition
	// Topic is the topic of a create_topics, create_partitions or
	// delete_topics, and PartitionCount its partition count after a
	// create_topics or create_partitions (topics.go).
	Topic          string
	PartitionCount int32
}

// Protocol is one protocol a member joins with: its name and, for a
// consumer protocol, the topics its subscription names.
type Protocol struct {
	Name   string
	Topics []string
}

// NewRequest is a Request with every optional number at its sentinel.
func NewRequest() Request {
	return Request{ProducerID: NoProducerID, Epoch: NoEpoch, GenerationID: NoGeneration, Offset: NoOffset}
}

// Response is every response type's fields in one flat struct.
type Response struct {
	// Ordered so that the small fields share words, as in Request.
	ProducerID int64 // init_producer_id; end_txn under transactions v2
	Epoch      int16
	// OngoingTxnProducerID and OngoingTxnEpoch are init_producer_id's
	// KIP-939 answer (v6+): the producer id and epoch of the transaction
	// a keep_prepared_txn init kept; NoProducerID and NoEpoch when the
	// answer names none.
	OngoingTxnEpoch      int16
	GenerationID         int32
	OngoingTxnProducerID int64
	BaseOffset           int64 // produce
	MemberID             string
	Assignment           []Partition
	Leader               string // join_group: the group's leader, "" when not said
	// Protocol is the protocol the group chose (JoinGroupResponse
	// .ProtocolName), and ProtocolType its type (v7+); "" when not said.
	Protocol     string
	ProtocolType string
	Offset       int64 // offset_fetch: NoOffset when the group has none
	// Metadata is offset_fetch's metadata of the committed offset, and
	// MetadataSaid whether the answer gave it: "" with MetadataSaid
	// false is an answer that did not say (offsetmetadata.go).
	Metadata     string
	MetadataSaid bool
	// PartitionErrors are a commit's partitions that the broker refused
	// while it took the others, with each one's code; nil when every
	// partition got the result's Err (offsetmetadata.go).
	PartitionErrors  map[Partition]Code
	Records          []FetchedRecord
	HighWatermark    int64
	LastStableOffset int64
	// LowWatermark is delete_records' answer: the partition's log start
	// offset after the deletion; NoOffset when not said.
	LowWatermark    int64
	TransactionalID string // timeout_abort
	// consumer_group_heartbeat (KIP-848): the member's epoch (0: the
	// answer did not say; Kafka answers a member that stays at least
	// epoch 1), and its assignment, nil when the answer left it out
	// (unchanged).
	MemberEpoch         int32
	HeartbeatIntervalMs int64
	MemberAssignment    *[]Partition
	// FetchedOffsets is an offset_fetch of all partitions' answer: each
	// partition it listed with its committed offset. Unstable are the
	// partitions it listed with UNSTABLE_OFFSET_COMMIT (require_stable).
	FetchedOffsets map[Partition]int64
	Unstable       []Partition
}

// NewResponse is a Response with every optional number at its sentinel.
func NewResponse() Response {
	return Response{ProducerID: NoProducerID, Epoch: NoEpoch, OngoingTxnProducerID: NoProducerID,
		OngoingTxnEpoch: NoEpoch, BaseOffset: NoOffset,
		GenerationID: NoGeneration, Offset: NoOffset, HighWatermark: NoOffset, LastStableOffset: NoOffset,
		LowWatermark: NoOffset}
}

// Op is a request (or fault) addressed to the broker.
type Op struct {
	Kind Kind
	Req  Request
	// Span is read on a wall clock only (Options.WallClock).
	Span Span
	// APIVersion is the version the request was sent at, when the
	// history says: it decides which of a pair of codes is right
	// (versionRules).
	APIVersion Version
}

// Span is when an op took effect, on a wall clock: at some moment from
// its call (From) to its answer (To), in ms of the broker's clock. To is
// Unanswered for an op never answered.
type Span struct{ From, To int64 }

// Unanswered is the end of the span of an op never answered.
const Unanswered int64 = math.MaxInt64

// Result is what came back. An unanswered Result (crash, lost response) and
// one whose error is REQUEST_TIMED_OUT are undecided: the request may or may
// not have taken effect.
type Result struct {
	Answered bool
	Err      Code // "" on success
	Resp     Response
}

// OK is a successful answer.
func OK(resp Response) Result { return Result{Answered: true, Resp: resp} }

// Fail is a refusal.
func Fail(code Code) Result { return Result{Answered: true, Err: code, Resp: NewResponse()} }

// NoAnswer is the result of a request whose response never arrived.
func NoAnswer() Result { return Result{Resp: NewResponse()} }

// Undecided reports whether the request may or may not have taken effect.
func (r Result) Undecided() bool { return !r.Answered || undecidedCode(r.Err) }

// Succeeded reports whether the broker answered with success.
func (r Result) Succeeded() bool { return r.Answered && r.Err == "" }
