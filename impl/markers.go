package impl

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// The marker window (model/markers.go). With Config.AsyncMarkers an ended
// transaction's markers stay in flight: EndTxn is answered first, as
// Kafka answers it once PrepareCommit or PrepareAbort is logged. Each
// waits in its partition's queue, or its group's, in the order the
// transactions ended. They land as the model's own answers have them land:
// a partition's queue before the next write to it, a group's before the
// next offset commit to it, a transaction's own before the next request
// of its transactional id, and every one at LandMarkers and at a restart.

// inFlight is which partitions and groups hold an ended transaction's
// markers still to be written.
type inFlight struct {
	partitions []model.Partition
	groups     []string
}

func (f inFlight) pending() bool { return len(f.partitions)+len(f.groups) > 0 }

// queuedMarker is a marker waiting in a partition's or a group's queue.
type queuedMarker struct {
	txnID      string
	producerID int64
	epoch      int16
	commit     bool
}

// queueMarkers puts t's markers in the queues of parts (t.partitions,
// locked) and of its groups, whose shards the caller holds.
func (b *Broker) queueMarkers(id string, t txnMeta, parts []*partition, epoch int16, commit bool) inFlight {
	m := queuedMarker{txnID: id, producerID: t.producerID, epoch: epoch, commit: commit}
	for _, p := range parts {
		p.queued = append(p.queued, m)
	}
	for _, name := range t.groups {
		gs := b.groupShard(name)
		gs.queued[name] = append(gs.queued[name], m)
	}
	b.queuedMarkers.Add(int64(len(parts) + len(t.groups)))
	return inFlight{partitions: t.partitions, groups: t.groups}
}

// writeQueued writes p's queued markers of the transactions keep selects,
// in queue order; p is locked.
func (b *Broker) writeQueued(p *partition, keep func(queuedMarker) bool) {
	p.queued = slices.DeleteFunc(p.queued, func(m queuedMarker) bool {
		if keep(m) {
			b.noteLanding(m.txnID, p.now())
			p.writeMarker(m.producerID, m.epoch, m.commit, b.bugs)
			b.queuedMarkers.Add(-1)
			return true
		}
		return false
	})
}

// writeQueuedGroup writes group name's queued markers of the transactions
// keep selects, in queue order; its shard is locked.
func (b *Broker) writeQueuedGroup(gs *groupShard, name string, keep func(queuedMarker) bool) {
	gs.queued[name] = slices.DeleteFunc(gs.queued[name], func(m queuedMarker) bool {
		if keep(m) {
			if _, held := gs.lookup(name).pending[m.producerID]; held {
				b.noteLanding(m.txnID, b.now.Load())
			}
			gs.write(txnMarker{group: name, producerID: m.producerID, commit: m.commit})
			b.queuedMarkers.Add(-1)
			return true
		}
		return false
	})
	if len(gs.queued[name]) == 0 {
		delete(gs.queued, name)
	}
}

// writeQueuedBefore writes p's queued markers before a write of
// producerID's to p, which the caller has locked: the model's own answers
// put every record after them.
func (b *Broker) writeQueuedBefore(p *partition, producerID int64) {
	if b.bugs.has(nextTxnBeforeMarkers) {
		b.writeQueued(p, func(m queuedMarker) bool { return m.producerID != producerID })
		return
	}
	b.writeQueued(p, all)
}

// writeQueuedGroupBefore writes group name's queued markers before an
// offset commit to it; its shard is locked.
func (b *Broker) writeQueuedGroupBefore(gs *groupShard, name string) {
	b.writeQueuedGroup(gs, name, all)
}

func all(queuedMarker) bool { return true }

func ofTxn(id string) func(queuedMarker) bool {
	return func(m queuedMarker) bool { return m.txnID == id }
}

// landOwn writes the markers in flight of id, whose shard the caller
// holds (and no group shard or partition), before a request of id is
// answered.
func (b *Broker) landOwn(sh *txnShard, id string) {
	t, known := sh.txns[id]
	if !known || !t.flight.pending() || b.bugs.has(nextTxnBeforeMarkers) {
		return
	}
	unlockGroups := b.lockGroupShards(t.flight.groups)
	parts, unlockParts := b.parts.lockSorted(t.flight.partitions)
	owed := b.markersOwed(id, t)
	for _, p := range parts {
		b.writeQueued(p, ofTxn(id))
	}
	for _, name := range t.flight.groups {
		b.writeQueuedGroup(b.groupShard(name), name, ofTxn(id))
	}
	unlockParts()
	unlockGroups()
	t.flight = inFlight{}
	b.landed(sh, id, t, owed)
}

// LandMarkers writes every marker in flight.
func (b *Broker) LandMarkers() {
	defer b.lockEverything()()
	b.landAllLocked()
}

// landAllLocked is LandMarkers with every shard and partition locked.
func (b *Broker) landAllLocked() {
	owed := map[string]bool{}
	for i := range b.txns {
		for id, t := range b.txns[i].txns {
			owed[id] = t.flight.pending() && b.markersOwed(id, t)
		}
	}
	for _, p := range b.parts.all() {
		b.writeQueued(p, all)
	}
	for i := range b.groups {
		gs := &b.groups[i]
		for _, name := range slices.Sorted(maps.Keys(gs.queued)) {
			b.writeQueuedGroup(gs, name, all)
		}
	}
	for i := range b.txns {
		sh := &b.txns[i]
		for _, id := range slices.Sorted(maps.Keys(sh.txns)) {
			if t := sh.txns[id]; t.flight.pending() {
				t.flight = inFlight{}
				b.landed(sh, id, t, owed[id])
			}
		}
	}
}

// MarkersInFlight reports whether an ended transaction's markers are
// still to be written.
func (b *Broker) MarkersInFlight() bool { return b.queuedMarkers.Load() > 0 }

// AsyncMarkers reports whether the broker answers EndTxn before its
// markers land (Config.AsyncMarkers), so that its histories are judged
// with the marker window.
func (b *Broker) AsyncMarkers() bool { return b.async }

var _ model.MarkerWriter = (*Broker)(nil)
