package impl

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// Expiry (model/expiry.go). The coordinator forgets a transactional id
// idle for transactional.id.expiration.ms, and a partition leader a
// producer idle for producer.id.expiration.ms. The model's own answer,
// which this broker gives, forgets each on the first tick past its
// interval and one sweep interval more (model.Expiry.TransactionalIDDue
// and ProducerIDDue with sure).
//
// A forgotten id is a tombstone in its shard's log, as Kafka writes one to
// __transaction_state (TransactionStateManager.removeExpiredTransactionalIds),
// so that a restart does not bring it back. A forgotten producer is not
// written anywhere: a restart replays the log, and drops a producer's
// state again before a write that comes past its expiry, and at the end
// (replayExpiry).

// expireIdle forgets what has certainly expired at the broker's clock.
// Tick calls it holding every shard and every partition.
func (b *Broker) expireIdle(parts []*partition) {
	now := b.now.Load()
	for i := range b.txns {
		sh := &b.txns[i]
		for _, id := range slices.Sorted(maps.Keys(sh.txns)) {
			t := sh.txns[id]
			t.updatedAt = max(t.updatedAt, b.landedAt(id))
			if t.idle(b.expiry, now) && !b.markersOwed(id, t) {
				sh.remove(id)
			}
		}
	}
	for _, p := range parts {
		p.expireProducers(now)
	}
}

// idle reports whether t's transactional id has certainly expired at now:
// Empty, CompleteCommit or CompleteAbort (TransactionState.
// isExpirationAllowed), and not written for transactional.id.expiration.ms
// and a sweep interval more.
func (t txnMeta) idle(e model.Expiry, now int64) bool {
	expirable := t.phase == model.Empty || t.phase == model.CompleteCommit || t.phase == model.CompleteAbort
	return expirable && e.TransactionalIDDue(t.updatedAt, now, true)
}

// markersOwed reports whether id's ended transaction still has a marker to
// write, as the model counts them: one queued at a partition, or one
// queued at a group that holds the transaction's offsets (a group marker
// with none settles nothing, and the model keeps none in flight). Kafka
// keeps the id in PrepareCommit or PrepareAbort until they are written,
// which does not expire. The caller holds the shards of t's groups in
// flight and its partitions in flight.
func (b *Broker) markersOwed(id string, t txnMeta) bool {
	for _, name := range t.flight.partitions {
		if p := b.parts.lookup(name); p != nil && slices.ContainsFunc(p.queued, ofTxn(id)) {
			return true
		}
	}
	for _, name := range t.flight.groups {
		gs := b.groupShard(name)
		for _, m := range gs.queued[name] {
			if _, held := gs.lookup(name).pending[m.producerID]; held && m.txnID == id {
				return true
			}
		}
	}
	return false
}

// remove forgets id, writing its tombstone.
func (s *txnShard) remove(id string) {
	s.log.Append(txnRecord{id: id, removed: true})
	delete(s.txns, id)
}

// expireProducers drops the state of every producer that has certainly
// expired at now: no transaction open here, and no write here for
// producer.id.expiration.ms and a check interval more
// (ProducerStateManager.removeExpiredProducers).
func (p *partition) expireProducers(now int64) {
	for id, pe := range p.producers {
		if pe.idle(p.expiry, now) {
			delete(p.producers, id)
		}
	}
}

func (pe *producerState) idle(e model.Expiry, now int64) bool {
	return pe.txnFirst == model.NoOffset && e.ProducerIDDue(pe.lastTimestamp, now, true)
}

// replayExpiry drops, while the log is replayed, the state of b's producer
// if it had expired by the time b was written: the tick that moved the
// clock to b's timestamp dropped it then.
func (p *partition) replayExpiry(b batch) {
	if pe, known := p.producers[b.producerID]; known && pe.idle(p.expiry, b.timestamp) {
		delete(p.producers, b.producerID)
	}
}

// stamp records b as its producer's last write here
// (ProducerStateEntry.addBatch, ProducerAppendInfo.appendEndTxnMarker).
func (p *partition) stamp(b batch) {
	if pe, ok := p.producers[b.producerID]; ok {
		pe.lastTimestamp = b.timestamp
	}
}

// now is the partition's clock: the broker's, or none for a partition
// never written to.
func (p *partition) now() int64 {
	if p.clock == nil {
		return 0
	}
	return p.clock.Load()
}

// setClock gives p the broker's clock and expiry.
func (p *partition) setClock(clock *atomic.Int64, e model.Expiry) *partition {
	p.clock, p.expiry = clock, e
	return p
}

// landed writes t once its markers have landed. Landing a marker the model
// counts (markersOwed) completes the transaction, a transition; landing
// only group markers with no offsets to settle changes nothing the model
// keeps. A counted marker that another request's write landed before
// (noteLanding) was the transition then.
func (b *Broker) landed(sh *txnShard, id string, t txnMeta, owed bool) {
	if owed {
		sh.write(id, t)
	} else {
		t.updatedAt = max(t.updatedAt, b.landedAt(id))
		sh.put(id, t)
	}
	b.landingsMu.Lock()
	delete(b.landings, id)
	b.landingsMu.Unlock()
}

// noteLanding records that a counted marker of id's transaction landed at
// now, written ahead of another request's write to its partition or
// group: the model writes the id's metadata then, and that is an update
// (the transition to CompleteCommit or CompleteAbort). The id's shard is
// not held there, so the time waits here until landed writes it.
func (b *Broker) noteLanding(id string, now int64) {
	b.landingsMu.Lock()
	defer b.landingsMu.Unlock()
	if b.landings == nil {
		b.landings = map[string]int64{}
	}
	b.landings[id] = now
}

// landedAt is when id's last counted marker landed ahead of its own
// requests, or 0.
func (b *Broker) landedAt(id string) int64 {
	b.landingsMu.Lock()
	defer b.landingsMu.Unlock()
	return b.landings[id]
}

// Offset expiry (model/offsetexpiry.go). The group coordinator deletes a
// committed offset once it has been kept for offsets.retention.minutes.
// The model's own answer, which this broker gives, deletes it on the
// first tick past its retention and one check interval more
// (model.Expiry.OffsetDue with sure), unless a transaction holds a
// pending offset of its partition (4.x). An empty group whose last
// offsets go is deleted with them. Both are a record in the shard's log,
// as Kafka writes tombstones to __consumer_offsets, so that a restart
// does not bring them back.

// offsetsExpired is the cleanup's tombstones for one group: its expired
// offsets, and the group itself when deleteGroup.
type offsetsExpired struct {
	group       string
	partitions  []model.Partition
	deleteGroup bool
}

func (r offsetsExpired) groupName() string { return r.group }

func (r offsetsExpired) applyTo(g *group) {
	for _, p := range r.partitions {
		delete(g.committed, p)
		delete(g.committedAt, p)
		delete(g.committedTime, p)
		setMetadata(g, p, "")
	}
}

// stamped is rec with the broker's clock at its write, for the records
// that carry a time.
func stamped(rec groupRecord, now int64) groupRecord {
	switch r := rec.(type) {
	case membership:
		r.time = now
		return r
	case committedOffsets:
		r.time = now
		return r
	case pendingOffsets:
		r.time = now
		return r
	}
	return rec
}

// expireOffsets deletes the offsets that have certainly expired, group
// by group in sorted order (model: step.expireOffsets). Tick calls it
// holding every group shard.
func (b *Broker) expireOffsets() {
	now := b.now.Load()
	for _, name := range b.groupNames() {
		sh := b.groupShard(name)
		g := sh.lookup(name)
		var expired []model.Partition
		for _, p := range slices.Sorted(maps.Keys(g.committed)) {
			if base, can := sh.offsetFacts(name, g, p).Base(false); can && !g.hasPending(p) && b.expiry.OffsetDue(base, now, true) {
				expired = append(expired, p)
			}
		}
		if len(expired) == 0 {
			continue
		}
		_, consumer := sh.consumer[name]
		deleteGroup := !consumer && len(g.members) == 0 && len(expired) == len(g.committed) && len(g.pending) == 0
		sh.write(offsetsExpired{group: name, partitions: expired, deleteGroup: deleteGroup})
	}
}

// offsetFacts is what offset expiry reads of g's offset of p.
func (s *groupShard) offsetFacts(name string, g *group, p model.Partition) model.OffsetExpiryFacts {
	topic, _ := p.Topic()
	f := model.OffsetExpiryFacts{Commit: g.committedTime[p], EmptySince: g.emptySince, Members: len(g.members),
		Joined: g.generation > 0, ProtocolType: groupProtocolType(g.members), Stable: g.generation == g.answered}
	if cg, ok := s.consumer[name]; ok {
		f.ConsumerGroup = true
		for _, id := range slices.Sorted(maps.Keys(cg.members)) {
			f.Subscribed = f.Subscribed || slices.Contains(cg.members[id].topics, topic)
		}
		return f
	}
	var subscriptions [][]string
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		subscriptions = append(subscriptions, g.members[id].subscription)
	}
	topics, known := model.SubscribedTopics(g.protocol, subscriptions)
	f.SubscriptionKnown, f.Subscribed = known, topics[topic]
	return f
}

// hasPending reports whether a transaction holds a pending offset of p.
func (g *group) hasPending(p model.Partition) bool {
	for _, pending := range g.pending {
		if _, ok := pending[p]; ok {
			return true
		}
	}
	return false
}
