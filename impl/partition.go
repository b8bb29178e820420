package impl

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// partition is one partition leader: its log, and the tables a real leader
// derives from the log (producer state, open transactions, aborted
// transactions), which Restart rebuilds by replaying it.
type partition struct {
	mu sync.RWMutex

	// The log: batches in offset order, and the records of the data
	// batches, each batch holding a run of them. A marker is a batch of
	// one offset and no record (Kafka's control batch).
	batches segmented[batch]
	records segmented[model.Record]

	// Derived tables.
	producers map[int64]*producerState
	open      openTxns
	aborted   abortedIndex
	// queued are the markers of ended transactions not written here yet,
	// in the order the transactions ended (Config.AsyncMarkers).
	queued []queuedMarker
	// verifying are the leader's verification entries by producer id,
	// held in memory only (verification.go).
	verifying map[int64]verifyEntry

	// clock and expiry are the broker's: a write's timestamp, and when a
	// producer's state expires (expiry.go).
	clock  *atomic.Int64
	expiry model.Expiry

	// The padding keeps partitions that sit side by side in memory off
	// each other's cache lines, so writers to two partitions share nothing.
	_ [64]byte
}

// batch is one write to the log: a producer's batch or a marker.
type batch struct {
	base       int64 // first offset
	count      int32 // offsets taken: the records, or 1 for a marker
	recordsAt  int   // index of the first record in partition.records
	producerID int64
	epoch      int16
	firstSeq   int32
	lastSeq    int32
	txn        bool // written in a transaction
	control    bool // a COMMIT or ABORT marker
	commit     bool // for a marker: COMMIT
	// timestamp is the broker's clock when the batch was written
	// (Kafka's maxTimestamp of a batch, the timestamp of a marker).
	timestamp int64
}

func newPartition(segmentSize int) *partition {
	return &partition{producers: map[int64]*producerState{}, batches: newSegmented[batch](segmentSize),
		records: newSegmented[model.Record](segmentSize)}
}

// end is the log end offset, also the high watermark (one replica).
func (p *partition) end() int64 {
	if p.batches.Len() == 0 {
		return 0
	}
	last := p.batches.Last()
	return last.base + int64(last.count)
}

// stableOffset is the last stable offset: the first offset of the earliest
// open transaction, or the log end (KIP-98). It is kept incrementally: the
// open transactions form a queue in the order they began.
func (p *partition) stableOffset() int64 { return p.stableUpTo(p.end()) }

// stableUpTo is the last stable offset of the log up to end; replay asks it
// of the log as it stood at each marker.
func (p *partition) stableUpTo(end int64) int64 {
	if first, ok := p.open.earliest(); ok {
		return first
	}
	return end
}

// appendBatch writes b with records to the log and applies it to the
// derived tables; the leader has accepted it.
func (p *partition) appendBatch(b batch, records []model.Record, bugs mutantSet) {
	b.base, b.recordsAt, b.timestamp = p.end(), p.records.Len(), p.now()
	p.records.Append(records...)
	p.batches.Append(b)
	p.apply(b, bugs)
	if b.txn || b.control {
		// UnifiedLog.updateProducers clears the producer's verification
		// entry when a transactional batch or a marker lands.
		delete(p.verifying, b.producerID)
	}
}

// writeMarker appends a COMMIT or ABORT marker for producerID carrying
// epoch (seed 000: the ABORT at offset 41 carries the new epoch 1).
func (p *partition) writeMarker(producerID int64, epoch int16, commit bool, bugs mutantSet) {
	p.appendBatch(batch{count: 1, producerID: producerID, epoch: epoch, control: true, commit: commit}, nil, bugs)
}

// apply updates the derived tables with one batch of the log, appended now
// or replayed by recover: both go through here, so a rebuilt table is the
// table that was lost.
func (p *partition) apply(b batch, bugs mutantSet) {
	p.replayExpiry(b)
	defer p.stamp(b)
	if b.control {
		p.applyMarker(b, bugs)
		return
	}
	pe, known := p.producer(b.producerID)
	if !known || b.epoch > pe.epoch {
		// KIP-98: a new producer, or a new epoch, starts its sequences
		// afresh.
		pe.epoch = b.epoch
		if !bugs.has(dedupIgnoresEpoch) {
			pe.forget()
		}
	}
	pe.remember(batchSeq{firstSeq: b.firstSeq, lastSeq: b.lastSeq, base: b.base})
	if b.txn && pe.txnFirst == model.NoOffset {
		pe.txnFirst = b.base
		p.open.push(b.base, b.producerID)
	}
}

// applyMarker ends the producer's open transaction in this partition. A
// marker moves the producer's epoch here to its own, and sequences belong
// to a (producer id, epoch), so the new owner starts again at 0.
// An ABORT enters the aborted-transaction index.
func (p *partition) applyMarker(b batch, bugs mutantSet) {
	pe, _ := p.producer(b.producerID)
	first := pe.txnFirst
	pe.txnFirst = model.NoOffset
	p.open.dropClosed(p.producers)
	if !b.commit && first != model.NoOffset {
		p.aborted.add(abortedTxn{producerID: b.producerID, first: first, marker: b.base, stable: p.stableUpTo(b.base + 1)})
	}
	if (b.epoch > pe.epoch || pe.epoch == model.NoEpoch) && !bugs.has(leaderIgnoresMarkerEpoch) {
		pe.epoch = b.epoch
		if !bugs.has(dedupIgnoresEpoch) {
			pe.forget()
		}
	}
}

// producer is the producer-state entry of id, created (epoch none, no open
// transaction) when the leader has none yet; known says whether it had.
func (p *partition) producer(id int64) (pe *producerState, known bool) {
	if pe, known = p.producers[id]; known {
		return pe, true
	}
	pe = &producerState{epoch: model.NoEpoch, txnFirst: model.NoOffset}
	p.producers[id] = pe
	return pe, false
}

// recover rebuilds the derived tables from the log, as a restarted leader
// does (Kafka rebuilds producer state from the log). The
// restart-loses-producer-state mutant forgets it all the same; the aborted
// index stays, as Kafka keeps it in a file of its own.
func (p *partition) recover(bugs mutantSet) {
	p.producers = map[int64]*producerState{}
	p.open = openTxns{}
	p.aborted = abortedIndex{}
	// p.verifying stays: a restarted Kafka leader has none (they live in
	// memory only), but the model's own answers treat a restart as
	// nothing and keep them, and judging takes either.
	for _, b := range p.batches.All {
		p.apply(b, bugs)
	}
	p.expireProducers(p.now())
	if bugs.has(restartLosesProducerState) {
		p.producers = map[int64]*producerState{}
		p.open = openTxns{}
	}
}

// batchAt is the index of the first batch holding offset off or later.
func (p *partition) batchAt(off int64) int {
	return sort.Search(p.batches.Len(), func(i int) bool {
		b := p.batches.At(i)
		return b.base+int64(b.count) > off
	})
}
