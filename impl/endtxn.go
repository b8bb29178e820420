package impl

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// Ending transactions: EndTxn, fencing aborts and timeouts all complete a
// transaction the same way, markers first.

func (b *Broker) endTxn(r model.Request) model.Result {
	if r.EmptyTransactionalID {
		return model.Fail(model.InvalidRequest) // the model's empty-txn-id
	}
	sh := b.lockTxnShard(r.TransactionalID)
	defer sh.mu.Unlock()
	b.landOwn(sh, r.TransactionalID)
	if t, known := sh.txns[r.TransactionalID]; known && b.isEndTxnRetry(t, r) {
		// KIP-98: a retried EndTxn of the transaction that just completed
		// the same way succeeds again; under KIP-890 it carries the epoch
		// from before the bump and gets the current one back.
		return b.endTxnAnswer(t)
	}
	if t, known := sh.txns[r.TransactionalID]; known && b.isOtherOutcomeAtRetryEpoch(t, r) {
		// KIP-890: the retry's epoch, the other outcome (Kafka 4.x).
		return model.Fail(model.InvalidTxnState)
	}
	t, refused := sh.owner(r)
	if refused != "" && !b.lateRetry(t, r, refused) && !b.staleAbort(t, r, refused) {
		return model.Fail(refused)
	}
	if t.phase != model.Ongoing && !(b.v2 && !r.Commit) {
		// Under transactions v2 an abort with nothing open succeeds and
		// bumps the epoch (KIP-890, Kafka 4); a commit never does.
		return model.Fail(model.InvalidTxnState)
	}
	producerID, epoch := t.producerID, t.epoch
	if b.v2 {
		// KIP-890: every commit or abort bumps the epoch; the markers
		// carry the new one, so nothing of the old epoch lands after them.
		producerID, epoch = b.bump(t)
	}
	markerEpoch := epoch
	if b.staleAbort(t, r, refused) {
		markerEpoch = r.Epoch
	}
	ended := t.epoch
	t = b.complete(r.TransactionalID, t, r.Commit, markerEpoch)
	t.prevProducerID, t.prevEpoch = model.NoProducerID, model.NoEpoch
	if b.v2 {
		// Kafka 4 keeps the epoch before a v2 bump for a retry's bump.
		t.prevProducerID, t.prevEpoch = t.producerID, ended
	}
	t.producerID, t.epoch, t.endedEpoch = producerID, epoch, ended
	sh.write(r.TransactionalID, t)
	return b.endTxnAnswer(t)
}

func (b *Broker) isOtherOutcomeAtRetryEpoch(t txnMeta, r model.Request) bool {
	wantPhase := model.CompleteCommit
	if r.Commit {
		wantPhase = model.CompleteAbort
	}
	return b.v2 && t.phase == wantPhase && r.Epoch == t.endedEpoch && r.ProducerID == t.producerID
}

func (b *Broker) isEndTxnRetry(t txnMeta, r model.Request) bool {
	wantPhase := model.CompleteAbort
	if r.Commit {
		wantPhase = model.CompleteCommit
	}
	return t.phase == wantPhase && r.Epoch == t.endedEpoch &&
		(r.ProducerID == t.producerID || (b.v2 && r.ProducerID == t.prevProducerID))
}

// endTxnAnswer is EndTxn's success: empty, or under KIP-890 the session the
// producer goes on with.
func (b *Broker) endTxnAnswer(t txnMeta) model.Result {
	if !b.v2 {
		return done()
	}
	return granted(t.producerID, t.epoch)
}

// lateRetry is the late-endtxn-hits-next-txn mutant (KAFKA-17754): a
// fenced EndTxn carrying the previous epoch is taken for a retry without
// looking at which transaction that epoch ended, and ends the ongoing one.
func (b *Broker) lateRetry(t txnMeta, r model.Request, refused model.Code) bool {
	return b.bugs.has(lateEndTxnHitsNextTxn) && b.v2 && refused == model.ProducerFenced && r.Epoch == t.endedEpoch
}

// staleAbort is the marker-matches-pid-only mutant: a fenced EndTxn(abort)
// of an older epoch is matched to the transaction by producer id alone,
// and its markers carry the old session's epoch.
func (b *Broker) staleAbort(t txnMeta, r model.Request, refused model.Code) bool {
	return b.bugs.has(markerMatchesPIDOnly) && refused == model.ProducerFenced && !r.Commit && r.Epoch < t.epoch
}

// complete ends t's transaction: a marker at every partition it registered,
// carrying markerEpoch, and its pending offsets made real by a COMMIT or
// dropped by an ABORT (KIP-98, KIP-447). The markers are written with every
// partition and group involved locked at once: no reader sees half a
// commit. The caller holds t's shard.
func (b *Broker) complete(id string, t txnMeta, commit bool, markerEpoch int16) txnMeta {
	unlockGroups := b.lockGroupShards(t.groups)
	defer unlockGroups()
	parts, unlockParts := b.parts.lockSorted(t.partitions)
	defer unlockParts()
	return b.completeLocked(id, t, parts, commit, markerEpoch)
}

// completeLocked is complete with the groups' shards and the partitions
// (parts, in t.partitions' order) already locked.
func (b *Broker) completeLocked(id string, t txnMeta, parts []*partition, commit bool, markerEpoch int16) txnMeta {
	if b.async {
		t.flight = b.queueMarkers(id, t, parts, markerEpoch, commit)
	} else {
		for _, p := range parts {
			p.writeMarker(t.producerID, markerEpoch, commit, b.bugs)
		}
		for _, name := range t.groups {
			b.groupShard(name).write(txnMarker{group: name, producerID: t.producerID, commit: commit})
		}
	}
	t.partitions, t.groups = nil, nil
	t.phase = model.CompleteAbort
	if commit {
		t.phase = model.CompleteCommit
	}
	return t
}

// expireTxns aborts every Ongoing transaction older than its timeout and
// bumps its epoch, so the producer that let it expire is fenced (KIP-98).
// Tick calls it holding every coordinator shard; transactional ids are
// taken in sorted order, as the model does, so markers land at its offsets.
func (b *Broker) expireTxns() {
	now := b.now.Load()
	expired := map[string]txnMeta{}
	var touched []model.Partition
	for i := range b.txns {
		for id, t := range b.txns[i].txns {
			if t.phase == model.Ongoing && now-t.startedAt > t.timeoutMs { // model: tick
				expired[id] = t
				touched = append(touched, t.partitions...)
			}
		}
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	parts, unlock := b.parts.lockSorted(touched)
	defer unlock()
	for _, id := range slices.Sorted(maps.Keys(expired)) {
		t := expired[id]
		before := t.epoch
		if !b.bugs.has(timeoutAbortKeepsEpoch) {
			t.epoch = model.Bumped(t.epoch)
		}
		t = b.completeLocked(id, t, pick(parts, touched, t.partitions), false, t.epoch)
		// Under v1 the epoch before is forgotten; under v2 Kafka 4.0.1+
		// answers requests shaped as retries at it as retries.
		t.prevProducerID, t.prevEpoch, t.endedEpoch = model.NoProducerID, model.NoEpoch, model.NoEpoch
		if b.v2 {
			t.prevProducerID, t.prevEpoch, t.endedEpoch = t.producerID, before, before
		}
		b.txnShard(id).write(id, t)
	}
}

// pick is the partitions of parts (named by names, sorted) that subset names.
func pick(parts []*partition, names, subset []model.Partition) []*partition {
	picked := make([]*partition, len(subset))
	for i, name := range subset {
		j, _ := slices.BinarySearch(names, name)
		picked[i] = parts[j]
	}
	return picked
}
