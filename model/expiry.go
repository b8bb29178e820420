package model

import (
	"maps"
	"slices"
)

// Expiry. Kafka forgets two things once they have been idle long enough.
//
// The transaction coordinator removes a transactional id whose state is
// Empty, CompleteCommit or CompleteAbort, with no transition pending, once
// txnLastUpdateTimestamp <= now - transactional.id.expiration.ms
// (TransactionStateManager.shouldExpire and removeExpiredTransactionalIds,
// 3.9.0 to trunk of 2024-10-25). Every transition sets that timestamp
// (TransactionMetadata.prepareTransitionTo's updateTimestamp), so the
// model keeps it as txnMeta.updatedAt, set whenever it writes the id's
// metadata (setTxn). The sweep runs every
// transaction.remove.expired.transaction.cleanup.interval.ms
// (enableTransactionalIdExpiration). Once the id is gone, EndTxn and
// AddPartitionsToTxn of its old producer are INVALID_PRODUCER_ID_MAPPING
// (TransactionCoordinator.endTransaction and
// handleAddPartitionsToTransaction, case None), and InitProducerId hands
// out a fresh producer id at epoch 0 (handleInitProducerId, case None):
// the model's rules for an id it never knew.
// TransactionStateManagerTest#shouldRemoveCompleteCommitExpiredTransactionalIds,
// shouldRemoveCompleteAbortExpiredTransactionalIds and
// shouldRemoveEmptyExpiredTransactionalIds.
//
// A partition leader removes a producer's state once it has no open
// transaction there and currentTimeMs - lastTimestamp >=
// producer.id.expiration.ms (ProducerStateManager.isProducerExpired and
// removeExpiredProducers, 3.9.0 to 4.x). lastTimestamp is the max
// timestamp of the producer's last batch, or the timestamp of its last
// marker (ProducerAppendInfo.appendDataBatch, appendEndTxnMarker); the
// model takes the broker's clock at the write for both
// (producerEntry.lastTimestamp). The check runs every
// producer.id.expiration.check.interval.ms (UnifiedLog's
// PeriodicProducerExpirationCheck). Once the state is gone, the producer
// has no state at the partition: any first sequence is taken (leader.go,
// produce), and a retry of its old batch is written again.
// ProducerStateManagerTest#testPidExpirationTimeout.
//
// A transactional id whose markers are in flight is, in Kafka, in
// PrepareCommit or PrepareAbort, which never expires
// (TransactionStateManagerTest#shouldNotRemovePrepareCommitTransactionalIds
// and shouldNotRemovePrepareAbortTransactionalIds). Its timestamp moves
// when the markers land. The model lands them as late as the answers
// allow, so for expiry it takes the earliest moment they may have
// landed: the end of the transaction, or the last read that showed one
// unwritten (idleSince, shownPending).
//
// Both are timers as the model's others are. On a tick, an expiry past
// its interval and one whole sweep interval more has certainly happened,
// and the model removes it: that is the model's own answer (Apply), the
// latest moment Kafka's sweep can take. Judging, a transactional id is
// never removed for sure: the sweep removes it only once its tombstone
// is written to __transaction_state, and when that write fails the id
// stays, usable, until a later sweep's write succeeds
// (TransactionStateManagerTest#shouldNotRemoveExpiredTransactionalIdsIfLogAppendFails,
// 3.9.0 and trunk; removeExpiredTransactionalIds puts the metadata back
// on any append error). No request shows that write, so an id past its
// interval may be gone or kept (dueExpiries). A producer's state at a
// partition is dropped in memory, with no write, so its expiry stays
// certain. One past its interval but not
// the sweep's may or may not have happened: judging (Check), when an
// answer is wrong with the state kept, it is tried again with the state
// removed (dueExpiries). On a wall clock, where a tick moves nothing, an
// expiry may happen at any moment once its interval has passed, and only
// that second way.

// Expiry is how long Kafka keeps what has been idle, and how often it
// looks. A zero field is Kafka's default.
type Expiry struct {
	// TransactionalIDMs is transactional.id.expiration.ms (7 days).
	TransactionalIDMs int64
	// TransactionalIDCleanupMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 hour).
	TransactionalIDCleanupMs int64
	// ProducerIDMs is producer.id.expiration.ms (1 day).
	ProducerIDMs int64
	// ProducerIDCheckMs is producer.id.expiration.check.interval.ms (10
	// minutes).
	ProducerIDCheckMs int64
	// OffsetsRetentionMinutes is offsets.retention.minutes (7 days), in
	// minutes as Kafka names it (offsetexpiry.go).
	OffsetsRetentionMinutes int64
	// OffsetsRetentionCheckMs is offsets.retention.check.interval.ms (10
	// minutes).
	OffsetsRetentionCheckMs int64
}

// Kafka's defaults for Expiry (TransactionStateManagerConfigs and
// TransactionLogConfigs, 3.9.0).
const (
	DefaultTransactionalIDExpirationMs = 604_800_000
	DefaultTransactionalIDCleanupMs    = 3_600_000
	DefaultProducerIDExpirationMs      = 86_400_000
	DefaultProducerIDCheckMs           = 600_000
	// GroupCoordinatorConfig.OFFSETS_RETENTION_MINUTES_DEFAULT and
	// OFFSETS_RETENTION_CHECK_INTERVAL_MS_DEFAULT (3.9.0, 4.x).
	DefaultOffsetsRetentionMinutes = 10_080
	DefaultOffsetsRetentionCheckMs = 600_000
)

// ExpiryConfig names one field of Expiry as Kafka's broker config does.
type ExpiryConfig struct {
	Name    string
	Default int64
	Field   func(*Expiry) *int64
}

// ExpiryConfigs are Expiry's fields under their Kafka names, in the order
// a history writes them.
var ExpiryConfigs = []ExpiryConfig{
	{"offsets.retention.check.interval.ms", DefaultOffsetsRetentionCheckMs, func(e *Expiry) *int64 { return &e.OffsetsRetentionCheckMs }},
	{"offsets.retention.minutes", DefaultOffsetsRetentionMinutes, func(e *Expiry) *int64 { return &e.OffsetsRetentionMinutes }},
	{"producer.id.expiration.check.interval.ms", DefaultProducerIDCheckMs, func(e *Expiry) *int64 { return &e.ProducerIDCheckMs }},
	{"producer.id.expiration.ms", DefaultProducerIDExpirationMs, func(e *Expiry) *int64 { return &e.ProducerIDMs }},
	{"transaction.remove.expired.transaction.cleanup.interval.ms", DefaultTransactionalIDCleanupMs, func(e *Expiry) *int64 { return &e.TransactionalIDCleanupMs }},
	{"transactional.id.expiration.ms", DefaultTransactionalIDExpirationMs, func(e *Expiry) *int64 { return &e.TransactionalIDMs }},
}

// Resolved is e with every zero field at Kafka's default.
func (e Expiry) Resolved() Expiry {
	for _, c := range ExpiryConfigs {
		if f := c.Field(&e); *f == 0 {
			*f = c.Default
		}
	}
	return e
}

// TransactionalIDDue reports whether a transactional id last updated at
// updatedAt is past transactional.id.expiration.ms at now (at it counts:
// TransactionStateManager.shouldExpire takes txnLastUpdateTimestamp <=
// currentTimeMs - transactionalIdExpirationMs). With sure, it is also
// past one whole sweep interval more, so the sweep has run since. A
// state that allows expiry (Empty, CompleteCommit, CompleteAbort with no
// marker in flight) is the caller's to check.
func (e Expiry) TransactionalIDDue(updatedAt, now int64, sure bool) bool {
	e = e.Resolved()
	if sure {
		return now-updatedAt > e.TransactionalIDMs+e.TransactionalIDCleanupMs
	}
	return now-updatedAt >= e.TransactionalIDMs
}

// ProducerIDDue reports whether a producer whose last write at a
// partition was at lastTimestamp is past producer.id.expiration.ms at now
// (at it counts: ProducerStateManager.isProducerExpired takes
// currentTimeMs - lastTimestamp >= producerIdExpirationMs). With sure, it
// is also past one whole check interval more. Whether the producer has a
// transaction open there is the caller's to check.
func (e Expiry) ProducerIDDue(lastTimestamp, now int64, sure bool) bool {
	e = e.Resolved()
	if sure {
		return now-lastTimestamp > e.ProducerIDMs+e.ProducerIDCheckMs
	}
	return now-lastTimestamp >= e.ProducerIDMs
}

// idleBy reports whether t's transactional id may be removed at now, or
// with sure, certainly has been.
func (t txnMeta) idleBy(e Expiry, now int64, sure bool) bool {
	expirable := t.phase == Empty || t.phase == CompleteCommit || t.phase == CompleteAbort
	return expirable && e.TransactionalIDDue(t.idleSince(), now, sure)
}

// idleSince is the earliest txnLastUpdateTimestamp t may hold. With its
// markers in flight, Kafka's state is PrepareCommit or PrepareAbort,
// which never expires. Its timestamp moves when the last marker is
// written and the coordinator completes the transaction
// (TransactionMarkerChannelManager, prepareComplete). The markers may
// land at any moment after EndTxn, but not before a read that showed one
// unwritten (pendingShownAt).
func (t txnMeta) idleSince() int64 {
	if t.markersInFlight() {
		return max(t.updatedAt, t.pendingShownAt)
	}
	return t.updatedAt
}

// shownPending is s with the moment noted at which got showed a
// marker unwritten. A fetch's high watermark is its partition's log end,
// so a fetch judged right with every marker in flight left in flight,
// and its high watermark given, read the log before any of them was
// written there. Nothing else counts. For example
// CONCURRENT_TRANSACTIONS is also Kafka's answer while the expiry's own
// tombstone is being written (TransactionMetadata.prepareDead sets a
// pending state), or while another request of the id is being written.
// A marker is written with acks=all, so the coordinator completes the
// transaction only after the high watermark passed it.
func (s State) shownPending(op Op, got Result) State {
	if op.Kind != Fetch || !got.Succeeded() || got.Resp.HighWatermark == NoOffset {
		return s
	}
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		if t := s.txns[id]; slices.Contains(t.unwritten, op.Req.Partition) && t.pendingShownAt < s.now {
			t.pendingShownAt = s.now
			s.keepTxn(id, t)
		}
	}
	return s
}

// idleBy reports whether the producer's state at a partition may be
// removed at now, or with sure, certainly has been.
func (pe producerEntry) idleBy(e Expiry, now int64, sure bool) bool {
	return pe.txnFirst == NoOffset && e.ProducerIDDue(pe.lastTimestamp, now, sure)
}

// expireIdle removes, on a tick, what has certainly expired: transactional
// ids first, then producer state, each in sorted order, then groups'
// offsets (offsetexpiry.go).
func (st *step) expireIdle() {
	defer st.expireOffsets()
	e, now := st.s.opts.Expiry, st.s.now
	r := e.Resolved()
	for _, id := range slices.Sorted(maps.Keys(st.s.txns)) {
		t := st.s.txns[id]
		if !st.judging && !t.markersInFlight() && t.idleBy(e, now, true) && st.swept(t.updatedAt+r.TransactionalIDMs, r.TransactionalIDCleanupMs) {
			st.s.deleteTxn(id)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(st.s.parts)) {
		ps := st.s.parts[p]
		for _, pid := range slices.Sorted(maps.Keys(ps.producers)) {
			pe := ps.producers[pid]
			if pe.idleBy(e, now, true) && st.swept(pe.lastTimestamp+r.ProducerIDMs, r.ProducerIDCheckMs) {
				st.s.setPart(p, st.s.parts[p].withoutProducer(pid))
			}
		}
	}
}

// swept reports whether a sweep every intervalMs has certainly run since
// dueAt, counting a restart. Kafka starts each sweep one interval after
// it starts up (TransactionStateManager.enableTransactionalIdExpiration,
// UnifiedLog's PeriodicProducerExpirationCheck, scheduled with that
// initial delay), so after a restart none runs for one interval. A
// producer may still be dropped at the restart: loading a snapshot skips
// the expired ones (ProducerStateManager.loadFromSnapshot), which the
// retry of dueExpiries allows. The model's own answers keep the schedule
// the restart broke, as impl/ does; judging, the sweep counts from the
// restart.
func (st *step) swept(dueAt, intervalMs int64) bool {
	if !st.judging {
		return true
	}
	return st.s.now-max(dueAt, st.s.restartedAt) > intervalMs
}

// dueExpiries is s with each expiry that may have happened by the time op
// took effect and that its answer depends on: its transactional id's, and
// for a produce its producer's state at its partition; one at a time, then
// both. A transactional id whose markers are in flight has them landed
// first. It counts from the earliest moment they may have landed: the
// end of its transaction, or the last read that showed one unwritten
// (idleSince).
func (s State) dueExpiries(op Op) []State {
	r := op.Req
	e, at := s.opts.Expiry, s.now
	if s.opts.WallClock {
		at = max(at, op.Span.To)
	}
	var out []State
	t, known := s.txns[r.TransactionalID]
	idDue := known && r.TransactionalID != "" && t.idleBy(e, at, false)
	pe, hasState := s.parts[r.Partition].producers[r.ProducerID]
	pidDue := op.Kind == Produce && hasState && pe.idleBy(e, at, false)
	forgetID := func(s State) State {
		if t.markersInFlight() {
			s = s.landedInOrder(op, []string{r.TransactionalID})
		}
		s.deleteTxn(r.TransactionalID)
		return s
	}
	forgetProducer := func(s State) State {
		s.setPart(r.Partition, s.parts[r.Partition].withoutProducer(r.ProducerID))
		return s
	}
	if idDue {
		out = append(out, forgetID(s))
	}
	if pidDue {
		out = append(out, forgetProducer(s))
	}
	if idDue && pidDue {
		out = append(out, forgetProducer(forgetID(s)))
	}
	return out
}

// mayHaveFired is s with each timer that may have fired by the time op
// took effect, when op's answer is wrong with none: on a wall clock any
// due timer (dueTimers), and on any clock a due expiry (dueExpiries).
func (s State) mayHaveFired(op Op) []State {
	var out []State
	if s.opts.WallClock {
		out = append(s.dueTimers(op), s.dueConsumerTimers(op)...) // consumerreconcile.go
	}
	out = append(out, s.dueExpiries(op)...)
	return append(out, s.dueOffsetExpiries(op)...) // offsetexpiry.go
}

// keepTxn writes t as the coordinator already holds it: a fact a read
// showed about it, not a transition, so txnLastUpdateTimestamp stays.
func (s *State) keepTxn(id string, t txnMeta) {
	s.txns = maps.Clone(s.txns)
	s.txns[id] = t
}

// deleteTxn removes a transactional id: the coordinator knows it no more.
// The producer ids it held stay handed out.
func (s *State) deleteTxn(id string) {
	s.txns = maps.Clone(s.txns)
	delete(s.txns, id)
	if len(s.txns) == 0 {
		s.txns = nil
	}
}

// withoutProducer is ps with no state for pid.
func (ps partState) withoutProducer(pid int64) partState {
	ps.producers = maps.Clone(ps.producers)
	delete(ps.producers, pid)
	if len(ps.producers) == 0 {
		ps.producers = nil
	}
	return ps
}
