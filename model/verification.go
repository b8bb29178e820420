package model

import "maps"

// The leader's verification state (KIP-890 part 1, Kafka 3.6+).
//
// Before ReplicaManager asks the coordinator whether a transactional
// batch may land, the partition's leader makes a VerificationStateEntry
// for its producer id (ReplicaManager.maybeStartTransactionVerificationForPartitions,
// UnifiedLog.maybeStartTransactionVerification,
// ProducerStateManager.maybeCreateVerificationStateEntry; 4.x:
// ReplicaManager.maybeSendPartitionToTransactionCoordinator). The entry
// keeps the lowest sequence seen at its epoch, and ProducerAppendInfo.
// checkSequence refuses a batch above it: "appendFirstSeq >
// verificationStateEntry.lowestSequence()" is OUT_OF_ORDER_SEQUENCE_NUMBER.
// Only a transactional batch or a marker of the producer that lands in the
// partition clears it (UnifiedLog.updateProducers), so a batch refused on
// the way (under transactions v1, a partition not in the transaction)
// leaves it behind, and the producer's later batches of that epoch above
// its sequence are refused until one of its transactional writes lands
// (ReplicaManagerTest#testTransactionVerificationBlocksOutOfOrderSequence,
// ProducerStateManagerTest#testThrowOutOfOrderSequenceWithVerificationSequenceCheck).

// With transaction.partition.verification.enable=false, ReplicaManager
// skips all of this for every transactional produce
// (maybeStartTransactionVerificationForPartitions, 3.9.0 and trunk: "Skip
// verification if the request is not transactional or transaction
// verification is disabled"), and UnifiedLog requires no verification
// guard (batchMissingRequiredVerification). The leader then writes the
// batch after its own epoch and sequence checks: whether the producer
// owns its transactional id, and whether the partition is in its
// transaction, are not asked, and under transactions v2 nothing adds the
// partition. A batch the coordinator does not know of opens a
// transaction at the partition that no marker closes
// (ReplicaManagerTest#testDisabledTransactionVerification).

// PartitionVerificationConfig is the broker config that turns
// verification off (Options.NoPartitionVerification).
const PartitionVerificationConfig = "transaction.partition.verification.enable"

// verification is one VerificationStateEntry.
type verification struct {
	lowest int32
	epoch  int16
	// at is when the leader made it; ProducerStateManager.
	// removeExpiredProducers drops it once producer.id.expiration.ms has
	// passed (ProducerStateManagerTest#testVerificationStateEntryExpiration).
	// An update keeps it.
	at int64
	// unsure: the broker may not have made it. A produce refused with no
	// effect (NoEffect) may have been refused before the leader looked
	// at it (authorization, the metadata cache) or after it made the
	// entry (NOT_ENOUGH_REPLICAS for a failed verification, the record
	// checks of the append). Judging, an unsure entry refuses only a
	// broker that says so.
	unsure bool
}

const (
	// verificationExpiryMs is producer.id.expiration.ms (1 day), and
	// verificationSweepMs producer.id.expiration.check.interval.ms (10
	// minutes): UnifiedLog removes expired entries on that sweep, so an
	// entry may stay up to a sweep past its expiry. The model's own
	// answers keep it that long; judging, either is taken.
	verificationExpiryMs = 86_400_000
	verificationSweepMs  = 600_000
)

// verificationOf is pid's entry at ps at time now, if the leader may still
// hold it; past its expiry it is unsure.
func (ps partState) verificationOf(pid, now int64) (verification, bool) {
	v, ok := ps.verifying[pid]
	switch {
	case !ok || now-v.at >= verificationExpiryMs+verificationSweepMs:
		return verification{}, false
	case now-v.at >= verificationExpiryMs:
		v.unsure = true
	}
	return v, true
}

func (ps partState) withVerification(pid int64, v verification) partState {
	ps.verifying = maps.Clone(ps.verifying)
	if ps.verifying == nil {
		ps.verifying = map[int64]verification{}
	}
	ps.verifying[pid] = v
	return ps
}

// withoutVerification clears pid's entry: a transactional batch or a
// marker of pid landed (UnifiedLog.updateProducers:
// "if (batch.isTransactional()) clearVerificationStateEntry").
func (ps partState) withoutVerification(pid int64) partState {
	if _, ok := ps.verifying[pid]; !ok {
		return ps
	}
	ps.verifying = maps.Clone(ps.verifying)
	delete(ps.verifying, pid)
	if len(ps.verifying) == 0 {
		ps.verifying = nil
	}
	return ps
}

// startVerification makes or updates the entry of r, a transactional
// produce the leader's own epoch check let through, where the producer
// has no transaction open at r's epoch (UnifiedLog.
// maybeStartTransactionVerification: "hasOngoingTransaction(producerId,
// epoch)" gives the sentinel guard instead; 3.9 asks it without the epoch,
// which differs only while the last transaction's markers are in flight,
// and they clear the entry when they land). The entry is made before the
// coordinator answers, so it stays whatever the answer. Kafka 4.x refuses
// an epoch below the leader's before it makes one; 3.9 makes one that a
// later epoch's batch resets, so no answer tells them apart.
//
// An entry takes a lower sequence of its epoch, and a higher epoch resets
// it (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch).
func (st *step) startVerification(r Request, pe producerEntry) {
	if pe.txnFirst != NoOffset && pe.epoch == r.Epoch {
		return
	}
	ps := st.s.parts[r.Partition]
	v, ok := ps.verificationOf(r.ProducerID, st.s.now)
	v.unsure = ps.verifying[r.ProducerID].unsure // an expiring entry is not an unsure one
	switch {
	case !ok:
		v = verification{lowest: r.Sequence, epoch: r.Epoch, at: st.s.now}
	case r.Epoch == v.epoch && r.Sequence < v.lowest:
		v.lowest = r.Sequence
	case r.Epoch > v.epoch:
		v.epoch, v.lowest = r.Epoch, r.Sequence
	default:
		return
	}
	st.s.setPart(r.Partition, ps.withVerification(r.ProducerID, v))
	st.verified = &v
}

// verificationRefusal is the refusal of r by its producer's entry at the
// partition, or nil. The duplicate check comes first
// (UnifiedLog.analyzeAndValidateProducerState answers a retry of one of
// the last batches before ProducerAppendInfo.append), and the epoch checks
// were made before; the entry's own epoch is not compared.
func (st *step) verificationRefusal(r Request, pe producerEntry, lastSeq int32) *outcome {
	v, ok := st.s.parts[r.Partition].verificationOf(r.ProducerID, st.s.now)
	if !ok || r.Sequence <= v.lowest {
		return nil
	}
	if _, dup := pe.duplicate(r.Sequence, lastSeq); dup && r.Epoch == pe.epoch {
		return nil
	}
	if v.unsure && st.got != nil && !st.answered(OutOfOrderSequenceNumber) {
		// The broker may hold no entry: it took the batch, or its
		// answer was lost.
		return nil
	}
	out := refuse("verification-sequence", OutOfOrderSequenceNumber, "producer %d's batch at sequence %d is above sequence %d, the lowest at epoch %d that the leader of %s began verifying and has seen no transactional write of the producer land since (ProducerAppendInfo.checkSequence against the VerificationStateEntry, Kafka 3.6+)", r.ProducerID, r.Sequence, v.lowest, v.epoch, r.Partition)
	return &out
}

// keepVerified is out with the entry the produce made or moved kept, when
// a check after it refused the produce: the coordinator's refusal, or the
// leader's own sequence and epoch checks, come after the entry is made.
func (st *step) keepVerified(out outcome) outcome {
	if st.verified != nil && out.refuse != "" {
		out.effects = true
	}
	return out
}

// mayHaveVerified is next with the entry r's step made kept as unsure: the
// broker refused r with no effect, before or after the leader made it.
func (st *step) mayHaveVerified(next State) State {
	if st.verified == nil || st.got == nil || refusedBeforeLeader(st.got.Err) {
		return next
	}
	r := st.op.Req
	ps := next.parts[r.Partition]
	if old, ok := ps.verifying[r.ProducerID]; ok && old.lowest == st.verified.lowest && old.epoch == st.verified.epoch {
		return next
	}
	v := *st.verified
	v.unsure = true
	next.setPart(r.Partition, ps.withVerification(r.ProducerID, v))
	return next
}

// refusedBeforeLeader reports whether a produce refused with code never
// reached its partition's leader: KafkaApis.handleProduceRequest checks the
// version, the acks, authorization and the metadata cache first, and
// ReplicaManager answers a partition it does not lead
// (getPartitionOrException) before it makes an entry.
func refusedBeforeLeader(code Code) bool {
	switch code {
	case TransactionalIDAuthorizationFailed, TopicAuthorizationFailed, ClusterAuthorizationFailed,
		UnsupportedVersion, InvalidRequiredAcks, UnknownTopicOrPartition, UnknownTopicID:
		return true
	}
	return false
}

// restartForgetsVerification makes every entry unsure: they live in
// memory only, and a restarted leader rebuilds its producer state from
// snapshots and the log (ProducerStateManager.truncateAndReload), with
// none. The model's own answers treat a restart as nothing, as they still
// find the duplicates a snapshot drops (restartKeepsLastBatches), and so
// keep the entries; judging, either is taken.
func (st *step) restartForgetsVerification() {
	for p, ps := range st.s.parts {
		if len(ps.verifying) == 0 {
			continue
		}
		ps.verifying = maps.Clone(ps.verifying)
		for pid, v := range ps.verifying {
			v.unsure = true
			ps.verifying[pid] = v
		}
		st.s.setPart(p, ps)
	}
}
