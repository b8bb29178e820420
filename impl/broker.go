// Package impl is the optimised broker: the reference model's rules (model/)
// served by the data structures of a real Kafka broker, safe for many
// goroutines at once.
//
// Each partition is a log of batches with an offset index, a producer-state
// table (epoch, the last five batches, the open transaction's first
// offset), an aborted-transaction index and an incrementally kept last
// stable offset. The transaction and group coordinators are sharded by id;
// each shard keeps its own append-only log of state records, as Kafka keeps
// __transaction_state and __consumer_offsets. Restart drops every table and
// rebuilds it from those logs.
//
// Lock order. Every request takes its locks in one global order and holds
// them all until it answers (strict two-phase locking, which makes every
// request atomic and so the broker linearizable):
//
//	transaction shards (by index) → group shards (by index) → partition registry → partitions (by name)
//
// The coordinators write markers to partitions and commit offsets to groups,
// so they lock downwards; a partition leader never reaches up to a
// coordinator while it holds a partition lock. Tick and Restart take every
// shard.
package impl

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// Config chooses the protocol and the seeded bugs.
type Config struct {
	// TxnVersion is the transaction protocol: 1 (KIP-98) or 2 (KIP-890);
	// 0 is 1.
	TxnVersion int
	// Mutants is the set of seeded bugs to switch on, named as in Mutants
	// (ParseMutants reads them from a list).
	Mutants map[string]bool
	// SegmentSize is how many entries a segment of each log holds: a
	// partition's batches and records, a coordinator shard's state
	// records (Kafka's segment.bytes, transaction.state.log.segment.bytes
	// and offsets.topic.segment.bytes, counted in entries). 0 is 4096. An
	// exploration's logs are a few dozen entries long, so a broker under
	// exploration runs with small segments to roll them.
	SegmentSize int
	// AsyncMarkers answers EndTxn before its markers are written, as
	// Kafka does: they stay in flight until LandMarkers, or until a
	// request of the transaction's id needs them (model.Options.AsyncMarkers).
	AsyncMarkers bool
	// Expiry is how long the broker keeps an idle transactional id and an
	// idle producer's state (model.Options.Expiry; expiry.go).
	Expiry model.Expiry
	// TxnMaxTimeoutMs is transaction.max.timeout.ms; 0 takes any
	// timeout (model.Options.TxnMaxTimeoutMs).
	TxnMaxTimeoutMs int64
	// GroupMaxSize is group.max.size; 0 takes any number of members
	// (model.Options.GroupMaxSize).
	GroupMaxSize int
	// ConsumerGroupMaxSize is group.consumer.max.size; 0 takes any number
	// of members (model.Options.ConsumerGroupMaxSize).
	ConsumerGroupMaxSize int
	// GroupMinSessionTimeoutMs and GroupMaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms; 0
	// takes any session timeout (model.Options.GroupMinSessionTimeoutMs).
	GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs int64
	// ConsumerSessionTimeoutMs is group.consumer.session.timeout.ms, the
	// session of every KIP-848 consumer group member; 0 is Kafka's
	// 45000 (model.Options.ConsumerSessionTimeoutMs).
	ConsumerSessionTimeoutMs int64
	// TopicPartitions is how many partitions every topic has, as the
	// assignor of KIP-848 consumer groups counts them (Kafka's
	// num.partitions for topics created on first use); 0 is 3, so that
	// the members of a group share a topic. Nothing else reads it: a
	// write to any partition creates it.
	TopicPartitions int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes, where
	// OffsetMetadataMaxKnown; otherwise Kafka's 4096
	// (model.Options.OffsetMetadataMaxBytes).
	OffsetMetadataMaxBytes int
	OffsetMetadataMaxKnown bool
}

// Broker is the optimised broker. It answers every request as the reference
// model would, and is safe for concurrent use.
type Broker struct {
	v2    bool
	async bool
	// queuedMarkers counts the markers in flight (markers.go).
	queuedMarkers atomic.Int64
	bugs          mutantSet
	// segmentSize is Config.SegmentSize, 0 made the default.
	segmentSize int
	// expiry is Config.Expiry (expiry.go).
	expiry model.Expiry
	// maxTxnTimeoutMs is Config.TxnMaxTimeoutMs.
	maxTxnTimeoutMs int64
	// groupMaxSize is Config.GroupMaxSize, consumerGroupMaxSize
	// Config.ConsumerGroupMaxSize.
	groupMaxSize, consumerGroupMaxSize int
	// minSessionMs and maxSessionMs are Config.GroupMinSessionTimeoutMs
	// and Config.GroupMaxSessionTimeoutMs.
	minSessionMs, maxSessionMs int64
	// metadataMax is Config.OffsetMetadataMaxBytes, Kafka's default when
	// not known.
	metadataMax int
	// consumerSessionMs and topicPartitions are Config's, 0 made the
	// defaults (consumergroups.go).
	consumerSessionMs int64
	topicPartitions   int
	// topics are the partition counts an admin's requests set, 0 for a
	// deleted topic; a topic not in it has topicPartitions. They stand
	// for the controller's metadata, which outlives this broker's
	// restarts (topics.go).
	topics   map[string]int
	topicsMu sync.Mutex
	// landings is when each transaction's last counted marker landed, by
	// transactional id, until the id's metadata records it (expiry.go).
	landings   map[string]int64
	landingsMu sync.Mutex

	// now is the broker's clock in ms, moved by Tick. Tick writes it
	// holding every coordinator shard; readers hold at least one.
	now atomic.Int64
	// producerIDs hands out producer ids. It stands for the controller's
	// producer-id allocator (KRaft's ProducerIdsRecord), which lives
	// outside this broker and so survives its restarts.
	producerIDs atomic.Int64
	// nextMember numbers new group members; Restart recounts it from the
	// group logs.
	nextMember atomic.Int64

	txns   [shardCount]txnShard
	groups [shardCount]groupShard
	parts  registry
}

// shardCount is how many shards each coordinator has.
const shardCount = 16

// defaultTopicPartitions is Config.TopicPartitions when it is 0.
const defaultTopicPartitions = 3

var _ model.Target = (*Broker)(nil)

// New is a fresh broker: empty logs, no producers, no groups.
func New(cfg Config) *Broker {
	b := &Broker{v2: cfg.TxnVersion >= 2, async: cfg.AsyncMarkers, bugs: mutantsOf(cfg.Mutants), segmentSize: cmp.Or(cfg.SegmentSize, segmentSize), expiry: cfg.Expiry,
		maxTxnTimeoutMs: cfg.TxnMaxTimeoutMs, groupMaxSize: cfg.GroupMaxSize, consumerGroupMaxSize: cfg.ConsumerGroupMaxSize, consumerSessionMs: cmp.Or(cfg.ConsumerSessionTimeoutMs, model.DefaultConsumerSessionTimeoutMs),
		minSessionMs: cfg.GroupMinSessionTimeoutMs, maxSessionMs: cfg.GroupMaxSessionTimeoutMs,
		topicPartitions: cmp.Or(cfg.TopicPartitions, defaultTopicPartitions)}
	b.metadataMax = model.DefaultOffsetMetadataMaxBytes
	if cfg.OffsetMetadataMaxKnown {
		b.metadataMax = cfg.OffsetMetadataMaxBytes
	}
	// The model's first producer id is 1.
	b.producerIDs.Store(1)
	for i := range b.txns {
		b.txns[i].reset(b.segmentSize)
	}
	for i := range b.groups {
		b.groups[i].reset(b.segmentSize)
		b.groups[i].clock = &b.now
	}
	b.parts.reset(b.segmentSize)
	b.parts.clock, b.parts.expiry = &b.now, b.expiry
	for i := range b.txns {
		b.txns[i].clock = &b.now
	}
	return b
}

// freshProducerID hands out a producer id never handed out before (KIP-98).
func (b *Broker) freshProducerID() int64 { return b.producerIDs.Add(1) - 1 }

// Close releases the broker; it holds nothing but memory.
func (b *Broker) Close() error { return nil }

// ExactClock says that only Tick moves the broker's clock, so that an
// exploration may tick to a timer's deadline to the millisecond.
func (b *Broker) ExactClock() {}

// Tick moves the broker's clock by ms: transactions and group members whose
// timeouts passed are expired, in the model's order (transactional ids, then
// groups and members, each sorted), so that markers land at the model's
// offsets.
func (b *Broker) Tick(ms int64) {
	unlockTxns := b.lockAllTxnShards()
	defer unlockTxns()
	unlockGroups := b.lockAllGroupShards()
	defer unlockGroups()
	// Every reader of the clock holds a shard or a partition (a write
	// outside a transaction holds only its partition), so the clock moves
	// only once Tick holds them all: no request sees the new time before
	// the timeouts and expiries it brings have fired. What has expired is
	// forgotten before the timeouts' markers are written, as the model
	// does it after: the markers make their producers current either way.
	unlockParts := b.parts.lockAll()
	// The markers in flight land before the clock moves on, as the
	// model's own answers have them (model/markers.go, landOwnAnswer).
	// That is one timing Kafka may take; the checker does not count on
	// it, since a leader that is down holds its markers longer.
	b.landAllLocked()
	b.now.Add(ms)
	b.expireIdle(b.parts.all())
	unlockParts()
	b.expireTxns()
	b.expireMembers()
	b.expireConsumerMembers()
	b.expireOffsets()
}

// Restart stops the broker and starts it again on its logs: every table is
// dropped and rebuilt by replaying the logs (nothing acknowledged is lost:
// Kafka's log recovery and coordinator loading).
func (b *Broker) Restart() {
	defer b.lockEverything()()
	// A coordinator that loads a transaction in PrepareCommit or
	// PrepareAbort sends its markers again: they land here.
	b.landAllLocked()
	for i := range b.txns {
		b.txns[i].recover()
	}
	var highest int64 = -1
	for i := range b.groups {
		highest = max(highest, b.groups[i].recover(b.now.Load()))
	}
	b.nextMember.Store(highest + 1)
	for _, p := range b.parts.all() {
		p.recover(b.bugs)
	}
}

// lockEverything locks every coordinator shard and every partition, in
// the broker's lock order: the whole broker stops.
func (b *Broker) lockEverything() (unlock func()) {
	unlockTxns := b.lockAllTxnShards()
	unlockGroups := b.lockAllGroupShards()
	unlockParts := b.parts.lockAll()
	return func() {
		unlockParts()
		unlockGroups()
		unlockTxns()
	}
}

func (b *Broker) lockAllTxnShards() (unlock func()) {
	locks := make([]sync.Locker, len(b.txns))
	for i := range b.txns {
		locks[i] = &b.txns[i].mu
	}
	return lockInOrder(locks)
}

func (b *Broker) lockAllGroupShards() (unlock func()) {
	locks := make([]sync.Locker, len(b.groups))
	for i := range b.groups {
		locks[i] = &b.groups[i].mu
	}
	return lockInOrder(locks)
}

// lockInOrder locks each of locks in turn, which the caller has put in the
// lock order of this file.
func lockInOrder(locks []sync.Locker) (unlock func()) {
	for _, l := range locks {
		l.Lock()
	}
	return func() {
		for _, l := range locks {
			l.Unlock()
		}
	}
}

// The requests. Each serves one kind of model.Request; ctx is not consulted,
// as every request is answered at once from memory.

func (b *Broker) InitProducerID(_ context.Context, r model.Request) model.Result {
	return b.initProducerID(r)
}
func (b *Broker) AddPartitions(_ context.Context, r model.Request) model.Result {
	return b.addPartitions(r)
}
func (b *Broker) Produce(_ context.Context, r model.Request) model.Result { return b.produce(r) }
func (b *Broker) AddOffsets(_ context.Context, r model.Request) model.Result {
	return b.addOffsets(r)
}
func (b *Broker) TxnOffsetCommit(_ context.Context, r model.Request) model.Result {
	if r.EmptyGroup {
		return model.Fail(model.InvalidGroupID) // model: invalid-group-id
	}
	return b.perPartition(r, b.txnOffsetCommit)
}
func (b *Broker) EndTxn(_ context.Context, r model.Request) model.Result { return b.endTxn(r) }
func (b *Broker) JoinGroup(_ context.Context, r model.Request) model.Result {
	if r.EmptyGroup {
		return model.Fail(model.InvalidGroupID) // model: invalid-group-id
	}
	return b.joinGroup(r)
}
func (b *Broker) LeaveGroup(_ context.Context, r model.Request) model.Result {
	if r.EmptyGroup {
		return model.Fail(model.InvalidGroupID) // model: invalid-group-id
	}
	return b.leaveGroup(r)
}
func (b *Broker) OffsetFetch(_ context.Context, r model.Request) model.Result {
	return b.offsetFetch(r)
}
func (b *Broker) Fetch(_ context.Context, r model.Request) model.Result { return b.fetch(r) }
func (b *Broker) OffsetCommit(_ context.Context, r model.Request) model.Result {
	return b.perPartition(r, b.offsetCommit)
}
