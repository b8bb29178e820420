// Package histories is the history format v1 (docs/history-format.md):
// the contract between whatever records requests and responses and the
// checker.
package histories

import "github.com/fencecheck/fencecheck/model"

// Format is the only format string v1 documents carry.
const Format = "fencecheck/history/v1"

// History is one recorded run.
type History struct {
	Name string
	Ops  []Op
	// Trips are the trip keys the workload had to process; nil when the
	// document has no "trips" (progress is then skipped).
	Trips []string
	// OutputTopics are the topics whose committed records count as a trip
	// processed, for progress ("output_topics"); nil counts every topic.
	// A pipeline that reads trips from one topic and writes them to
	// another has processed a trip only when it is in the second.
	OutputTopics []string
	// TransactionsVersion is 1 or 2 (KIP-890), or 0 when the document does
	// not say (a history either version explains passes).
	TransactionsVersion int
	// WallClock: call and return are milliseconds of the clock the
	// broker's timers run on (a recording of a real cluster, "clock":
	// "wall"), so a transaction or session timeout fires at any moment
	// after it is due, with no tick. Without it timers fire at ticks
	// only.
	WallClock bool
	// AsyncMarkers: the broker may answer EndTxn before its markers land
	// ("markers": "async"), as Kafka does, so the checker allows the
	// marker window (model/markers.go). A wall-clock history allows it
	// always. Without either, markers land at once, as in kfake, impl's
	// default and the model's own answers; the search is cheaper then.
	AsyncMarkers bool
	// Expiry is the broker's expiry intervals, from "broker_config"
	// (Kafka's transactional.id.expiration.ms and the others of
	// model.ExpiryConfigs); a zero field, absent from the document, is
	// Kafka's default.
	Expiry model.Expiry
	// TxnMaxTimeoutMs is the broker's transaction.max.timeout.ms, from
	// "broker_config"; 0, absent from the document, when not known.
	TxnMaxTimeoutMs int64
	// GroupMaxSize is the broker's group.max.size, from "broker_config";
	// 0, absent from the document, when not known.
	GroupMaxSize int
	// ConsumerGroupMaxSize is the broker's group.consumer.max.size, from
	// "broker_config"; 0, absent from the document, when not known.
	ConsumerGroupMaxSize int
	// MigrationPolicy is the broker's group.consumer.migration.policy,
	// from "broker_config", in Kafka's lower-case name;
	// model.MigrationPolicyUnknown, absent from the document, when not
	// known.
	MigrationPolicy model.MigrationPolicy
	// GroupMinSessionTimeoutMs and GroupMaxSessionTimeoutMs are the
	// broker's group.min.session.timeout.ms and
	// group.max.session.timeout.ms, from "broker_config"; 0, absent from
	// the document, when not known.
	GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs int64
	// TwoPhaseCommit is the broker's transaction.two.phase.commit.enable
	// (KIP-939), from "broker_config"; model.TwoPhaseCommitUnknown, absent
	// from the document, when not known.
	TwoPhaseCommit model.TwoPhaseCommit
	// NoPartitionVerification: "broker_config" sets
	// transaction.partition.verification.enable to false, so partition
	// leaders write transactional batches without asking the coordinator
	// (model.Options.NoPartitionVerification).
	NoPartitionVerification bool
	// OffsetMetadataMaxBytes is the broker's offset.metadata.max.bytes,
	// from "broker_config", where OffsetMetadataMaxKnown; not known, a
	// commit's metadata may be taken or refused.
	OffsetMetadataMaxBytes int
	OffsetMetadataMaxKnown bool
	// TopicsChangeOutside: the topics may have changed by requests the
	// history does not hold ("topic_changes": "unrecorded"), for example
	// an admin's outside the recorded clients
	// (model.Options.TopicsChangeOutside).
	TopicsChangeOutside bool
	// Topics are the partition counts of topics when the history
	// begins ("topics"), nil when the document does not say; the
	// history's create_topics, create_partitions and delete_topics ops
	// change them.
	Topics map[string]int32
}

// asyncMarkers is the "markers" of a history whose broker answers EndTxn
// before its markers land.
const asyncMarkers = "async"

// unrecordedTopicChanges is the "topic_changes" of a history whose topics
// may have changed by requests it does not hold.
const unrecordedTopicChanges = "unrecorded"

// wallClock is the "clock" of a history whose timers ran on its clock.
const wallClock = "wall"

// Op is one operation: a request with what came back, or a fault.
type Op struct {
	ID   int
	Proc string
	// Client is the client instance whose request this is, when Proc is
	// one of several lanes of it (a client with requests in flight at
	// once, which one process of the format cannot have); "" when Proc
	// is the client itself. See Process.
	Client   string
	Call     int64
	Return   int64 // meaningful only when Returned
	Returned bool
	model.Op
	// Result is the answer; Result.Answered is false when the document has
	// neither resp nor error.
	Result model.Result
}

// Process is the client instance that issued op: its Client, or its
// Proc when it has none.
func (op Op) Process() string {
	if op.Client != "" {
		return op.Client
	}
	return op.Proc
}

// Until is the history as an observer saw it at time t: the operations
// called by then, with the answers that came later not yet in, and no
// trips to judge progress by (a run cut short has not finished its work).
// Every safety check that breaks on Until(t) breaks on the whole history,
// so a counterexample can be cut to the moment its check first breaks.
func (h History) Until(t int64) History {
	cut := h
	cut.Trips = nil
	cut.Ops = nil
	for _, op := range h.Ops {
		if op.Call > t {
			continue
		}
		if op.Returned && op.Return > t {
			op.Returned, op.Return, op.Result = false, 0, model.Result{}
		}
		cut.Ops = append(cut.Ops, op)
	}
	return cut
}
