package impl

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// Transactional writes: a produce or an offset commit inside a transaction
// needs the coordinator's word as well as the leader's or the group's.

// produceTxn answers a transactional produce with the coordinator's shard
// and then the partition locked (the lock order of broker.go).
func (b *Broker) produceTxn(r model.Request) model.Result {
	sh := b.lockTxnShard(r.TransactionalID)
	defer sh.mu.Unlock()
	// Before the partition is locked: the markers may go to it.
	b.landOwn(sh, r.TransactionalID)
	p := b.parts.open(r.Partition)
	p.mu.Lock()
	defer p.mu.Unlock()
	b.writeQueuedBefore(p, r.ProducerID)
	return p.produce(&r, b.bugs, &txnWrite{b: b, sh: sh, r: r}, b.now.Load())
}

// txnWrite is the transaction coordinator's say in one transactional
// produce, asked with the coordinator's shard locked (KIP-890
// verification).
type txnWrite struct {
	b  *Broker
	sh *txnShard
	r  model.Request
	// begun is the transaction the write starts or joins implicitly
	// (KIP-890), set once verify passes.
	begun    txnMeta
	implicit bool
}

// verify lets the write land when its producer owns the transactional.id and
// the partition is in the ongoing transaction (KIP-890 verification: no
// hanging transactions, KAFKA-14402). Under transactions v2 the write adds
// its partition itself, but only after the fencing check passed: a fenced
// producer starts nothing.
func (w *txnWrite) verify() model.Code {
	t, refused := w.sh.owner(w.r)
	if refused == model.ProducerFenced && w.b.bugs.has(noEpochCheck) {
		refused = ""
	}
	switch {
	case refused == model.ProducerFenced:
		// KIP-588 keeps INVALID_PRODUCER_EPOCH on produce.
		return model.InvalidProducerEpoch
	case refused != "":
		return refused
	case w.b.bugs.has(hangingTxn):
		return ""
	case t.phase == model.Ongoing && slices.Contains(t.partitions, w.r.Partition):
		return ""
	case !w.b.v2:
		return model.InvalidTxnState
	}
	w.begun, w.implicit = w.b.begin(t), true
	w.begun.partitions = addSorted(t.partitions, w.r.Partition)
	return ""
}

// openHereOnly reports whether the producer has a transaction open at p,
// at the request's epoch, that the coordinator does not hold under the
// request's transactional id: the id's ongoing transaction is another
// producer's or lacks p, and no marker of the id's for the producer waits
// in p's queue. The leader then writes the batch with no verification
// (model.openUnverified): UnifiedLog.maybeStartTransactionVerification
// gives such a producer the sentinel guard, and ReplicaManager sends the
// coordinator only the partitions with a guard of their own (3.9.0 to
// 4.x). The log knows producer ids, not transactional ids, so a request
// that names another id with the producer's id and epoch is written too.
func (w *txnWrite) openHereOnly(p *partition, pe *producerState, known bool) bool {
	if !known || pe.txnFirst == model.NoOffset || pe.epoch != w.r.Epoch {
		return false
	}
	if t, ok := w.sh.txns[w.r.TransactionalID]; ok && t.producerID == w.r.ProducerID &&
		t.phase == model.Ongoing && slices.Contains(t.partitions, w.r.Partition) {
		return false
	}
	for _, m := range p.queued {
		if m.txnID == w.r.TransactionalID && m.producerID == w.r.ProducerID {
			return false
		}
	}
	return true
}

// add writes the implicit add once verify passed: the coordinator adds
// the partition before the leader looks at the write
// (ReplicaManager.appendRecords), and a refusal of the leader's does not
// take it back.
func (w *txnWrite) add() {
	if w.implicit {
		w.sh.write(w.r.TransactionalID, w.begun)
	}
}

// txnOffsetCommit stores a consumer's offsets in the producer's transaction,
// pending until the COMMIT marker (KIP-98, KIP-447). Both the producer and
// the consumer must be current: the epoch fences a zombie producer, the
// generation a zombie consumer (seed 002).
func (b *Broker) txnOffsetCommit(r model.Request) model.Result {
	sh := b.lockTxnShard(r.TransactionalID)
	defer sh.mu.Unlock()
	b.landOwn(sh, r.TransactionalID)
	t, fencedProducer := sh.owner(r)
	gs := b.lockGroupShard(r.Group)
	defer gs.mu.Unlock()
	b.writeQueuedGroupBefore(gs, r.Group)
	var fencedConsumer model.Code
	if cg := gs.consumer[r.Group]; cg != nil {
		// KIP-848: the member epoch stands for the generation.
		fencedConsumer = b.consumerCommitRefusal(cg, r)
	} else if !b.bugs.has(offsetsIgnoreGeneration) {
		fencedConsumer = gs.lookup(r.Group).generationRefusal(r, b.bugs)
	}
	switch {
	case fencedProducer != "":
		// Where both fences hold, brokers differ in which they check
		// first; the model answers the producer's.
		return model.Fail(fencedProducer)
	case !b.v2 && !slices.Contains(t.groups, r.Group):
		// KIP-98: AddOffsetsToTxn comes first; Kafka verifies the
		// transaction before it validates the group.
		return model.Fail(model.InvalidTxnState)
	}
	if !slices.Contains(t.groups, r.Group) {
		if !b.v2 {
			// KIP-98: AddOffsetsToTxn comes first.
			return model.Fail(model.InvalidTxnState)
		}
		// KIP-890: the commit adds its group implicitly, before the
		// group coordinator looks at the consumer, whose refusal does
		// not take the add back.
		t = b.begin(t)
		t.groups = addSorted(t.groups, r.Group)
		sh.write(r.TransactionalID, t)
	}
	if fencedConsumer != "" {
		return model.Fail(fencedConsumer)
	}
	// A transactional commit does not renew the member's session (model:
	// txnOffsetCommit).
	gs.write(pendingOffsets{group: r.Group, producerID: t.producerID, offsets: maps.Clone(r.Offsets), metadata: maps.Clone(r.OffsetMetadata)})
	return done()
}
