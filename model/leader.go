package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Partition leaders: one log and one producer-state table per partition.

func (st *step) produce(r Request) outcome {
	if r.MixedProducers {
		// ReplicaManager.handleProduceAppend (3.9.0 and trunk): "Transactional
		// records contained more than one producer ID", before any
		// partition is looked at or verified; KafkaApis answers every
		// partition of the request with it
		// (ReplicaManagerTest#testExceptionWhenUnverifiedTransactionHasMultipleProducerIds).
		return refuse("mixed-producers", InvalidProducerIDMapping, "the produce request carried transactional batches of more than one producer id and epoch (ReplicaManager.handleProduceAppend)")
	}
	ps := st.s.parts[r.Partition]
	pe, known := ps.producer(r.ProducerID)
	if known && r.Epoch < pe.epoch {
		// KIP-98, seed 000: the leader learnt a newer epoch (from a batch or
		// a marker) and refuses the zombie. KIP-588 keeps
		// INVALID_PRODUCER_EPOCH on produce.
		return refuse("leader-epoch-fence", InvalidProducerEpoch, "epoch %d is older than epoch %d, the newest the leader of %s has seen from producer %d (KIP-98 fencing)", r.Epoch, pe.epoch, r.Partition, r.ProducerID)
	}
	switch {
	case r.TransactionalID != "" && (st.s.opts.NoPartitionVerification || st.openUnverified(r, pe)):
		// The leader writes it without asking the coordinator, and makes
		// no verification entry (verification.go): verification is off,
		// or the producer's transaction at the partition is one a batch
		// wrote while it was off (alterconfig.go).
	case r.TransactionalID != "":
		verified := st.verifyTxnWrite(r)
		// Verification may have landed the last transaction's markers
		// here (waitForMarkers), which moves the producer's state.
		ps = st.s.parts[r.Partition]
		pe, known = ps.producer(r.ProducerID)
		// The leader made its verification entry before it asked the
		// coordinator, and a refusal leaves it (verification.go).
		st.startVerification(r, pe)
		if verified != nil {
			return *verified
		}
		ps = st.s.parts[r.Partition]
	case pe.txnFirst != NoOffset:
		// KIP-98: a producer with a transaction open in this partition
		// cannot write outside it.
		return refuse("write-outside-open-txn", InvalidTxnState, "producer %d has a transaction open in %s since offset %d (KIP-98)", r.ProducerID, r.Partition, pe.txnFirst)
	}
	lastSeq := lastSequence(r)
	if out := st.verificationRefusal(r, pe, lastSeq); out != nil {
		return *out
	}
	switch {
	case pe.epoch == NoEpoch || st.markerOnly(pe, known, r):
		// The partition has no state for this producer: no batch and no
		// marker of it (producer() gives NoEpoch then). Kafka accepts any
		// first sequence here: ProducerAppendInfo.checkSequence throws for
		// a non-zero sequence only if "updatedEntry.producerEpoch() !=
		// RecordBatch.NO_PRODUCER_EPOCH" (3.9.0 to 4.3.1; since KIP-360 in
		// 2.5, before which it was UNKNOWN_PRODUCER_ID). The sequences
		// that follow continue from this batch.
		if r.Sequence != 0 {
			if out := st.freshSequence(r, ps); out != nil {
				return *out
			}
		}
		pe.epoch, pe.batches = r.Epoch, nil
	case r.Epoch > pe.epoch:
		// KIP-98, KIP-360: a new epoch of a producer the partition knows
		// (from a batch or a marker) starts at sequence 0
		// (checkSequence, every version).
		if r.Sequence != 0 {
			return refuse("first-sequence", OutOfOrderSequenceNumber, "producer %d is at epoch %d in %s, so its new epoch %d must start at sequence 0, not %d (KIP-98)", r.ProducerID, pe.epoch, r.Partition, r.Epoch, r.Sequence)
		}
		pe.epoch, pe.batches = r.Epoch, nil
	default:
		if b, dup := pe.duplicate(r.Sequence, lastSeq); dup {
			if b.snapshotted && st.answered(OutOfOrderSequenceNumber) {
				// ProducerStateManagerTest#testRecoverFromSnapshotUnfinishedTransaction:
				// after a clean restart the snapshot holds only the last
				// batch, and checkSequence refuses a retry of an older one.
				return refuse("sequence-gap", OutOfOrderSequenceNumber, "producer %d's batch at sequence %d came before a restart, whose producer snapshot keeps only the last batch (ProducerStateManager.writeSnapshot)", r.ProducerID, r.Sequence)
			}
			// KIP-98: a retry of one of the last 5 batches gets the
			// original offset and writes nothing; a broker that lost the
			// batch's metadata says DUPLICATE_SEQUENCE_NUMBER instead.
			resp := NewResponse()
			resp.BaseOffset = b.baseOffset
			return st.checkOffset(outcome{resp: resp, also: Duplicate})
		}
		if want := nextSeq(pe); r.Sequence != want {
			// An older batch than the last 5 is out of order too, never a
			// duplicate: ProducerAppendInfo.checkSequence throws
			// OutOfOrderSequenceException, and no broker code throws
			// DuplicateSequenceException (3.9.0 to 4.3.1;
			// UnifiedLogTest#testDuplicateAppends).
			return refuse("sequence-gap", OutOfOrderSequenceNumber, "producer %d epoch %d must send sequence %d to %s next, not %d (KIP-98)", r.ProducerID, r.Epoch, want, r.Partition, r.Sequence)
		}
	}
	return st.checkOffset(st.appendBatch(r, pe, lastSeq))
}

// freshSequence decides a first batch at a sequence above 0 from a producer
// the partition has no state for, where Kafka's releases differ or a fix
// has landed since: a refusal, or nil to accept it. The model's own answer
// is the newest release's; when judging, it takes the broker's answer
// where a version gives it, and a lost answer as accepted (the broader
// state: placed last, it is the same as refused), but for the case below
// that says otherwise.
//
//   - A transactional write under transactions v2: Kafka 4.1.0+ refuses it
//     (KAFKA-18202, apache/kafka#19902: checkSequence throws when
//     "verificationStateEntry.supportsEpochBump() && appendFirstSeq != 0
//     && currentEntry.isEmpty()"); 4.0.x accepts it. A lost answer is
//     taken as the refusal, or, under LateFirstSequenceAccepted, as
//     kfake's acceptance where the log has held a record.
//   - Any other write (idempotent, or transactional under v1): every
//     release accepts it. KAFKA-15591 (apache/kafka#23234, on trunk, in
//     no release as of 4.3.1) refuses it on a partition whose log never
//     held a record, so that answer is accepted there too.
//
// A transactional write refused on the way leaves a VerificationStateEntry
// holding its sequence, which refuses the producer's higher sequences
// before this rule is asked (verification.go).
func (st *step) freshSequence(r Request, ps partState) *outcome {
	var out outcome
	switch {
	case r.TransactionalID != "" && st.s.opts.TxnVersion >= 2:
		if st.got != nil && st.got.Succeeded() {
			return nil // Kafka 4.0.x
		}
		if st.undecided() && ps.end() > 0 && st.allows(LateFirstSequenceAccepted) {
			return nil // kfake: KAFKA-15591 without KAFKA-18202
		}
		// A lost answer is taken as 4.1.0+'s refusal, which keeps the
		// implicit add (keepBegun): taking it as 4.0.x's acceptance, the
		// broader state once, would now leave out the add without the
		// record, and the model follows one of the two. So a 4.0.x
		// broker whose answer to such a batch was lost, and whose log
		// then shows the batch, is called wrong; it takes a lost answer
		// and a first sequence above 0, which no client sends.
		out = refuse("first-sequence", OutOfOrderSequenceNumber, "producer %d has no state at %s, and under transactions v2 its first sequence there must be 0, not %d (KAFKA-18202, Kafka 4.1.0+)", r.ProducerID, r.Partition, r.Sequence)
	case ps.end() == 0 && st.answered(OutOfOrderSequenceNumber):
		out = refuse("first-sequence", OutOfOrderSequenceNumber, "producer %d has no state at %s, whose log never held a record, so its first sequence there must be 0, not %d (KAFKA-15591, unreleased)", r.ProducerID, r.Partition, r.Sequence)
	default:
		return nil
	}
	return &out
}

// verifyTxnWrite asks the coordinator whether a transactional write may
// land: the producer must own its transactional.id, and the partition must
// be in its ongoing transaction (KIP-890 verification: no hanging
// transactions, KAFKA-14402). Under transactions v2 the produce adds its
// partition itself, but only after the fencing check passed: a fenced
// producer starts nothing.
func (st *step) verifyTxnWrite(r Request) *outcome {
	t, refused := st.owner(r)
	if refused != nil {
		if refused.refuse == ProducerFenced {
			refused.refuse = InvalidProducerEpoch
		}
		return refused
	}
	if t.phase == Ongoing && containsPartition(t.partitions, r.Partition) {
		return nil
	}
	if st.s.opts.TxnVersion < 2 {
		out := refuse("partition-not-in-txn", InvalidTxnState, "%s is not in %s's ongoing transaction (KIP-890 verification, KAFKA-14402)", r.Partition, r.TransactionalID)
		return &out
	}
	// KIP-890's implicit add waits for the last transaction's markers:
	// TransactionCoordinator.handleAddPartitionsToTransaction answers
	// CONCURRENT_TRANSACTIONS while PrepareCommit or PrepareAbort is
	// pending (TransactionCoordinatorTest#
	// shouldReturnConcurrentTxnOnAddPartitionsIfEndTxnV2EpochOverflowAndNotComplete).
	t, busy := st.waitForMarkers(r.TransactionalID, t)
	if busy != nil {
		return busy
	}
	t = st.begin(t)
	t.partitions = addSorted(t.partitions, r.Partition)
	st.s.setTxn(r.TransactionalID, t)
	st.markBegun()
	return nil
}

func containsPartition(set []Partition, p Partition) bool {
	for _, q := range set {
		if q == p {
			return true
		}
	}
	return false
}

// Batch is what a partition leader tells a batch by: a retry with the
// same key is answered as a duplicate, with the offset of the records
// first sent under it, whatever records it carries (KIP-98:
// ProducerStateManager keeps the first and last sequence of each of a
// producer's last 5 batches, per epoch). The checker uses it to know which
// produce repeats an earlier one.
type Batch struct {
	Partition         Partition
	ProducerID        int64
	Epoch             int16
	FirstSeq, LastSeq int32
}

// BatchOf is the batch a produce request sends.
func BatchOf(r Request) Batch {
	return Batch{r.Partition, r.ProducerID, r.Epoch, r.Sequence, lastSequence(r)}
}

// lastSequence is the sequence of a produce request's last record.
// Sequences wrap past Integer.MAX_VALUE to 0
// (DefaultRecordBatch.incrementSequence; ProducerStateManagerTest#
// testProducerSequenceWithWrapAroundBatchRecord).
func lastSequence(r Request) int32 {
	return IncrementSequence(r.Sequence, int32(max(len(r.Records), 1))-1)
}

// IncrementSequence is seq moved on by n, wrapping past math.MaxInt32 to 0
// as Kafka's DefaultRecordBatch.incrementSequence does.
func IncrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

func (pe producerEntry) duplicate(first, last int32) (batch, bool) {
	for _, b := range pe.batches {
		if b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return batch{}, false
}

// nextSeq is the sequence the producer must send next.
func nextSeq(pe producerEntry) int32 {
	if len(pe.batches) == 0 {
		return 0
	}
	return IncrementSequence(pe.batches[len(pe.batches)-1].lastSeq, 1)
}

func (st *step) appendBatch(r Request, pe producerEntry, lastSeq int32) outcome {
	ps := st.s.parts[r.Partition]
	base := ps.end()
	for _, rec := range r.Records {
		ps.log = ps.log.Append(entry{key: rec.Key, value: rec.Value, pid: r.ProducerID, epoch: r.Epoch}, st.s.opts.Reads.keepFrom(r.Partition))
	}
	pe.batches = append(pe.batches[:len(pe.batches):len(pe.batches)], batch{firstSeq: r.Sequence, lastSeq: lastSeq, baseOffset: base})
	if len(pe.batches) > dedupWindow {
		pe.batches = pe.batches[len(pe.batches)-dedupWindow:]
	}
	if r.TransactionalID != "" && pe.txnFirst == NoOffset {
		pe.txnFirst = base
	}
	pe.lastTimestamp = st.s.now // ProducerStateEntry.addBatch (expiry.go)
	ps = ps.withProducer(r.ProducerID, pe)
	if r.TransactionalID != "" {
		ps = ps.withoutVerification(r.ProducerID)
	}
	st.s.setPart(r.Partition, ps)
	resp := NewResponse()
	resp.BaseOffset = base
	return ok(resp)
}

// checkOffset holds the broker to the offset the log gives: each partition
// is one log, so its answers fix the order of its writes.
func (st *step) checkOffset(out outcome) outcome {
	if got := st.observed(); got != nil && got.BaseOffset != out.resp.BaseOffset {
		return bad("log-offset", "base offset %d, but the log of %s puts this batch at %d", got.BaseOffset, st.op.Req.Partition, out.resp.BaseOffset)
	}
	return out
}

// writeMarker appends a COMMIT or ABORT marker for pid: it takes one offset,
// and moves the producer's epoch at this partition to the marker's (seed
// 000: the ABORT at offset 41 carries epoch 1). Sequences belong to a
// (producer id, epoch): a marker that moves the epoch clears them.
func (st *step) writeMarker(p Partition, pid int64, epoch int16, commit bool) {
	ps := st.s.parts[p]
	pe, _ := ps.producer(pid)
	at := ps.end()
	keepFrom := ps.log.keepsFrom(st.s.opts.Reads.keepFrom(p))
	ps.log = ps.log.Append(entry{pid: pid, epoch: epoch, control: true, commit: commit}, keepFrom)
	// A range ending at or below the lowest offset a fetch reads holds no
	// record one reads (reads.go).
	if !commit && pe.txnFirst != NoOffset && at > keepFrom {
		ps.aborted = ps.aborted.Append(abortedTxn{pid: pid, first: pe.txnFirst, marker: at})
	}
	if epoch > pe.epoch || pe.epoch == NoEpoch {
		// Epochs never go back: a marker of an older epoch moves nothing.
		pe.epoch, pe.batches = epoch, nil
	}
	pe.txnFirst = NoOffset
	pe.lastTimestamp = st.s.now // ProducerAppendInfo.appendEndTxnMarker (expiry.go)
	st.s.setPart(p, ps.withProducer(pid, pe).withoutVerification(pid))
}

// fetch returns records from an offset: read_committed only below the last
// stable offset and never those of aborted transactions; control records
// never (KIP-98). A broker may return fewer records than there are (fetch
// size limits), so any prefix of them is a legal answer.
func (st *step) fetch(r Request) outcome {
	ps := st.s.parts[r.Partition]
	if ps.start > 0 && r.Offset < ps.start {
		// Deleted records are gone (deleterecords.go).
		return refuse("fetch-below-log-start", OffsetOutOfRange, "fetch of %s from offset %d, below its log start offset %d, which a DeleteRecords moved (UnifiedLog.read)", r.Partition, r.Offset, ps.start)
	}
	if max(r.Offset, 0) < ps.log.counted {
		// Options.Reads or ReadsFrom said no fetch reads these offsets
		// (reads.go).
		return bad("fetch-below-reads", "fetch of %s from offset %d, but the model keeps the records of %s only from offset %d on, the lowest offset it was told a fetch reads there (Options.Reads, ReadsFrom)", r.Partition, r.Offset, r.Partition, ps.log.counted)
	}
	limit := ps.end()
	if r.Isolation == ReadCommitted {
		limit = ps.lastStable()
	}
	resp := NewResponse()
	resp.HighWatermark, resp.LastStableOffset = ps.end(), ps.lastStable()
	got := st.observed()
	for off := max(r.Offset, 0); off < limit; off++ {
		if got != nil && len(resp.Records) == len(got.Records) {
			// The broker returned a prefix. Whatever follows it is not
			// read: a reader that finds only aborted records past its
			// offset asks again and again, and the log grows.
			break
		}
		if off%4096 == 0 && st.ctx.Err() != nil {
			return bad("gave-up", "gave up: %v", st.ctx.Err())
		}
		e := ps.log.At(int(off))
		if e.control || (r.Isolation == ReadCommitted && ps.isAborted(e.pid, off)) {
			continue
		}
		rec := FetchedRecord{Offset: off, Key: e.key, Value: e.value, ProducerID: e.pid}
		if got != nil {
			if i := len(resp.Records); got.Records[i] != rec {
				return bad("fetched-record", "fetch of %s returned %s, but the record there is %s", r.Partition, describeRecord(got.Records[i]), describeRecord(rec))
			}
		}
		resp.Records = append(resp.Records, rec)
	}
	if got == nil {
		return ok(resp)
	}
	if len(got.Records) > len(resp.Records) {
		return bad("fetch-visibility", "fetch of %s returned %s, which a %s read must not see (last stable offset %d, high watermark %d)", r.Partition, describeRecord(got.Records[len(resp.Records)]), r.Isolation, resp.LastStableOffset, resp.HighWatermark)
	}
	if got.HighWatermark != NoOffset && got.HighWatermark != resp.HighWatermark {
		return bad("high-watermark", "high watermark %d, but the log of %s ends at %d", got.HighWatermark, r.Partition, resp.HighWatermark)
	}
	if got.LastStableOffset != NoOffset && got.LastStableOffset != resp.LastStableOffset {
		return bad("last-stable-offset", "last stable offset %d, but it is %d in %s (KIP-98)", got.LastStableOffset, resp.LastStableOffset, r.Partition)
	}
	return ok(*got)
}

func describeRecord(r FetchedRecord) string {
	return fmt.Sprintf("%s@%d (producer %d)", r.Key, r.Offset, r.ProducerID)
}

// restartKeepsLastBatches marks every batch but each producer's last as
// one a restart may have forgotten (batch.snapshotted).
func (st *step) restartKeepsLastBatches() {
	for _, p := range slices.Sorted(maps.Keys(st.s.parts)) {
		ps := st.s.parts[p]
		for _, pid := range slices.Sorted(maps.Keys(ps.producers)) {
			pe := ps.producers[pid]
			if len(pe.batches) < 2 {
				continue
			}
			pe.batches = slices.Clone(pe.batches)
			for i := range pe.batches[:len(pe.batches)-1] {
				pe.batches[i].snapshotted = true
			}
			ps = ps.withProducer(pid, pe)
		}
		st.s.setPart(p, ps)
	}
}
