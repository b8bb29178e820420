package impl

import "github.com/fencecheck/fencecheck/model"

// The partition leaders: produce and fetch.

func (b *Broker) produce(r model.Request) model.Result {
	if r.TransactionalID != "" {
		return b.produceTxn(r)
	}
	p := b.parts.open(r.Partition)
	p.mu.Lock()
	defer p.mu.Unlock()
	b.writeQueuedBefore(p, r.ProducerID)
	return p.produce(&r, b.bugs, nil, b.now.Load())
}

// produce answers a write; txn is nil for a write outside a transaction.
// now is the broker's clock, for the verification entries.
func (p *partition) produce(r *model.Request, bugs mutantSet, txn *txnWrite, now int64) model.Result {
	pe, known := p.producers[r.ProducerID]
	if known && r.Epoch < pe.epoch && !bugs.has(noEpochCheck) {
		// KIP-98, seed 000: the leader learnt a newer epoch (from a batch
		// or a marker) and refuses the zombie; KIP-588 keeps
		// INVALID_PRODUCER_EPOCH on produce.
		return model.Fail(model.InvalidProducerEpoch)
	}
	switch {
	case txn != nil && txn.openHereOnly(p, pe, known):
		// The leader gives the producer's open transaction here the
		// sentinel guard and asks the coordinator nothing, whatever
		// transactional id the request names (model.openUnverified).
	case txn != nil:
		code := txn.verify()
		// The leader made its entry before it asked the coordinator, so
		// a refusal leaves it (verification.go).
		p.startVerification(r, now)
		if code != "" {
			return model.Fail(code)
		}
		txn.add()
	case known && pe.txnFirst != model.NoOffset:
		// KIP-98: a producer with a transaction open here cannot write
		// outside it.
		return model.Fail(model.InvalidTxnState)
	}
	return p.appendInSequence(r, pe, bugs, txn != nil, txn != nil && txn.b.v2, now)
}

// appendInSequence appends the batch when its sequence is the next one of
// its (producer id, epoch), and answers a retry of a remembered batch with
// the original offset (KIP-98 idempotence). pe is nil for a producer the
// leader does not know; txnV2 says the write is transactional under
// transactions v2.
func (p *partition) appendInSequence(r *model.Request, pe *producerState, bugs mutantSet, txn, txnV2 bool, now int64) model.Result {
	lastSeq := model.BatchOf(*r).LastSeq
	fresh := pe == nil || pe.epoch == model.NoEpoch
	newEpoch := pe == nil || r.Epoch > pe.epoch
	if pe != nil && (!newEpoch || bugs.has(dedupIgnoresEpoch)) {
		if dup, ok := pe.duplicate(r.Sequence, lastSeq); ok {
			// A retry of one of the last 5 batches writes nothing.
			return produced(dup.base)
		}
	}
	switch {
	case p.verificationRefuses(r, now):
		// The verification entry a refused transactional batch left
		// (ProducerAppendInfo.checkSequence, Kafka 3.6+).
		return model.Fail(model.OutOfOrderSequenceNumber)
	case fresh && txnV2 && r.Sequence != 0:
		// A producer with no state here may start at any sequence
		// (ProducerAppendInfo.checkSequence), but not a transactional
		// one under transactions v2 (KAFKA-18202, Kafka 4.1.0+).
		return model.Fail(model.OutOfOrderSequenceNumber)
	case !fresh && newEpoch && r.Sequence != 0:
		// A new epoch of a producer known here starts at sequence 0.
		return model.Fail(model.OutOfOrderSequenceNumber)
	case !newEpoch && r.Sequence != pe.nextSeq():
		return model.Fail(model.OutOfOrderSequenceNumber)
	}
	base := p.end()
	p.appendBatch(batch{count: int32(len(r.Records)), producerID: r.ProducerID, epoch: r.Epoch,
		firstSeq: r.Sequence, lastSeq: lastSeq, txn: txn}, r.Records, bugs)
	return produced(base)
}

func produced(base int64) model.Result {
	resp := model.NewResponse()
	resp.BaseOffset = base
	return model.OK(resp)
}

// emptyPartition answers fetches of partitions nothing was written to.
var emptyPartition = newPartition(segmentSize)

func (b *Broker) fetch(r model.Request) model.Result {
	p := b.parts.lookup(r.Partition)
	if p == nil {
		p = emptyPartition
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return model.OK(p.fetch(r, b.bugs))
}

// fetch returns the records from r.Offset: read_committed only below the
// last stable offset and never those of aborted transactions; control
// records never (KIP-98). The aborted-transaction index names the aborted
// ranges in the fetched range, so the log is read once, from the offset
// index's position.
func (p *partition) fetch(r model.Request, bugs mutantSet) model.Response {
	start, end, stable := max(r.Offset, 0), p.end(), p.stableOffset()
	if bugs.has(lsoIgnoresOpenTxn) {
		stable = end
	}
	limit := end
	var filter *abortFilter
	if r.Isolation == model.ReadCommitted {
		limit = stable
		if !bugs.has(readCommittedIgnoresAborts) {
			filter = newAbortFilter(p.aborted.overlapping(start, limit))
		}
	}
	resp := model.NewResponse()
	resp.HighWatermark, resp.LastStableOffset = end, stable
	if start < limit {
		resp.Records = make([]model.FetchedRecord, 0, limit-start)
	}
	for i, n := p.batchAt(start), p.batches.Len(); i < n; i++ {
		b := p.batches.At(i)
		if b.base >= limit {
			break
		}
		if !keep(b, filter) {
			continue
		}
		for off := max(b.base, start); off < min(b.base+int64(b.count), limit); off++ {
			rec := p.records.At(b.recordsAt + int(off-b.base))
			resp.Records = append(resp.Records, model.FetchedRecord{Offset: off, Key: rec.Key, Value: rec.Value, ProducerID: b.producerID})
		}
	}
	if len(resp.Records) == 0 {
		resp.Records = nil // as the model answers an empty fetch
	}
	return resp
}
