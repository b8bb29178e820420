package model

// alter_config: an admin changes a dynamic broker config while the
// broker runs (IncrementalAlterConfigs, KIP-339). The model reads one
// such config, transaction.partition.verification.enable (KIP-890):
// DynamicProducerStateManagerConfig makes it reconfigurable, and
// ReplicaManager and UnifiedLog read it afresh for each produce
// (3.9.0 and trunk). So a change decides the produces that reach the
// leader after it. A produce whose verification was asked for before the
// change is answered as the verification says
// (ReplicaManagerTest#testTransactionVerificationDynamicDisablement: the
// coordinator's INVALID_TXN_STATE). A batch of a producer the leader began
// to verify is written unverified once verification is off, and it clears
// the leader's verification entry
// (UnifiedLogTest#testDisabledVerificationClearsVerificationGuard). A batch
// that reaches the log once verification is on, with no verification, is
// INVALID_TXN_STATE (UnifiedLogTest#testEnablingVerificationWhenRequestIsAtLogLayer).
//
// Kafka applies the change when the broker reads it back: in KRaft the
// controller answers once the config record is committed, and each
// broker applies it as it replays the record, which may be after the
// answer. So the checker places an alter_config anywhere after its call,
// answered or not (AppliesAfterAnswer), and with it the change; the
// model's step is that moment.

func (st *step) alterConfig(r Request) outcome {
	st.s.opts.NoPartitionVerification = !r.PartitionVerification
	return ok(NewResponse())
}

// AppliesAfterAnswer reports whether a request of kind k may take effect
// after its answer came back, at any moment after its call: a dynamic
// config change, which each broker applies as it learns of it.
func AppliesAfterAnswer(k Kind) bool { return k == AlterConfig }

// openUnverified reports whether r's producer has a transaction open at
// r's partition, at r's epoch, that the coordinator knows nothing of: no
// ongoing transaction of the producer holds the partition, and no marker
// of it is on its way there. A batch written while verification was off
// leaves one, and so does a request that names another transactional id
// than the one whose transaction it is: the log knows producer ids only.
// With verification on again, the leader asks the
// coordinator nothing for it, because UnifiedLog.
// maybeStartTransactionVerification gives the sentinel guard to a producer
// with a transaction open (3.9.0: hasOngoingTransaction(producerId);
// trunk adds the epoch), and ReplicaManager writes such a batch as
// verified (ReplicaManagerTest#testDisabledTransactionVerification: after
// verification is turned on, the next batch is written with no
// verification, and the transaction stays open).
func (st *step) openUnverified(r Request, pe producerEntry) bool {
	if pe.txnFirst == NoOffset || pe.epoch != r.Epoch {
		return false
	}
	t, ok := st.s.txns[r.TransactionalID]
	switch {
	case !ok:
		return true
	case t.pid == r.ProducerID && t.phase == Ongoing && containsPartition(t.partitions, r.Partition):
		return false
	case t.markersInFlight() && t.markerPID == r.ProducerID && containsPartition(t.unwritten, r.Partition):
		return false
	}
	return true
}
