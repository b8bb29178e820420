package model

import "math"

// TwoPhaseCommitConfig is the broker config that lets producers take part
// in a two-phase commit (KIP-939), under Kafka's name. It is off by
// default (KIP-939; TransactionStateManagerConfig).
const TwoPhaseCommitConfig = "transaction.two.phase.commit.enable"

// TwoPhaseCommit is what a history says of TwoPhaseCommitConfig. Its zero
// value is "not said", because a recording of a cluster whose config was
// not read must not be judged by a default it may not have.
type TwoPhaseCommit int8

const (
	TwoPhaseCommitUnknown TwoPhaseCommit = iota
	TwoPhaseCommitEnabled
	TwoPhaseCommitDisabled
)

// A transaction kept by a KIP-939 InitProducerId has two identities: the
// producer id and epoch of the transaction itself (txnMeta.pid, epoch),
// which its records and markers carry, and the client's (kept.pid,
// kept.epoch), which the restarted producer was handed and ends the
// transaction with. Kafka stores the second as the metadata's
// nextProducerId and nextProducerEpoch (TransactionMetadata, trunk).
type keptTxn struct {
	pid   int64
	epoch int16
}

// twoPCTimeoutMs is the timeout of a two-phase commit transaction: Kafka
// sets Integer.MAX_VALUE, so that the coordinator never aborts it on its
// own (KIP-939; TransactionMetadata.isDistributedTwoPhaseCommitTxn).
const twoPCTimeoutMs = math.MaxInt32

// initTwoPhase applies the KIP-939 rules that come before the usual ones
// of an InitProducerId for a transactional id. It returns false when the
// usual rules decide.
func (st *step) initTwoPhase(r Request) (outcome, bool) {
	if r.Enable2PC && st.s.opts.TwoPhaseCommit == TwoPhaseCommitDisabled {
		// KIP-939: a broker whose transaction.two.phase.commit.enable is
		// false (Kafka's default) takes no part in a two-phase
		// commit, and refuses the InitProducerId that asks for it. Any
		// refusal with no effect is accepted, so the code is the KIP's.
		return refuse("2pc-disabled", TransactionalIDAuthorizationFailed, "%s is set to false, so an InitProducerId with enable_2pc is refused (KIP-939)", TwoPhaseCommitConfig), true
	}
	if !r.KeepPreparedTxn {
		return outcome{}, false
	}
	if r.ProducerID != NoProducerID {
		// TransactionCoordinatorTest#shouldRejectKeepPreparedTxnWithExpectedEpoch
		// (trunk): keep_prepared_txn is a restarted producer's first
		// call, and a producer id and epoch are a running one's retry.
		return refuse("keep-prepared-with-epoch", InvalidRequest, "keep_prepared_txn with a producer id and epoch is refused (KIP-939)"), true
	}
	t, known := st.s.txns[r.TransactionalID]
	if known {
		var busy *outcome
		if t, busy = st.waitForMarkers(r.TransactionalID, t); busy != nil {
			return *busy, true
		}
	}
	if !known || t.phase != Ongoing {
		// TransactionCoordinatorTest#shouldRejectKeepPreparedTxnWithoutOngoingTransaction
		// (trunk): there is no prepared transaction to keep. The test
		// asserts only that the answer is an error, so the code is ours.
		return refuse("keep-prepared-no-txn", InvalidTxnState, "%s has no transaction open to keep (KIP-939)", r.TransactionalID), true
	}
	return st.keepPrepared(r, t), true
}

// keepPrepared hands a restarted producer the next client identity of
// t's open transaction and leaves the transaction as it is: the client
// epoch after the last one handed out, or a fresh producer id at epoch 0
// once that epoch is exhausted. The answer names the transaction's own
// identity too (TransactionCoordinatorTest#shouldIncrementClientEpochOnMultipleInitPidWithKeepPreparedTxn,
// shouldRotateProducerIdWhenClientEpochExhausted,
// shouldHandleMultipleProducerIdRotationsForOngoingTxn, trunk).
func (st *step) keepPrepared(r Request, t txnMeta) outcome {
	client := keptTxn{t.pid, t.epoch}
	if t.kept != nil {
		client = *t.kept
	}
	var out outcome
	if client.epoch >= epochExhausted {
		out = st.grantFresh()
	} else {
		_, _, out = st.grant(client.pid, client.epoch+1)
		if got := st.observed(); got != nil && (got.ProducerID != client.pid || got.Epoch != client.epoch+1) {
			return bad("keep-prepared-client-epoch", "keeping %s's transaction hands out producer %d epoch %d, the client epoch after the last, not producer %d epoch %d (KIP-939)", r.TransactionalID, client.pid, client.epoch+1, got.ProducerID, got.Epoch)
		}
	}
	if out.bad != nil {
		return out
	}
	if got := st.observed(); got != nil && got.OngoingTxnProducerID != NoProducerID &&
		(got.OngoingTxnProducerID != t.pid || got.OngoingTxnEpoch != t.epoch) {
		return bad("keep-prepared-ongoing", "the kept transaction of %s is producer %d epoch %d, not producer %d epoch %d (KIP-939)", r.TransactionalID, t.pid, t.epoch, got.OngoingTxnProducerID, got.OngoingTxnEpoch)
	}
	out.resp.OngoingTxnProducerID, out.resp.OngoingTxnEpoch = t.pid, t.epoch
	t.kept = &keptTxn{out.resp.ProducerID, out.resp.Epoch}
	t.timeoutMs = twoPCTimeoutMs
	st.s.setTxn(r.TransactionalID, t)
	return out
}

// addToKept refuses to add to a kept transaction with its client
// identity: the restarted producer may only end it
// (TransactionCoordinatorTest#shouldRejectAddPartitionsAfterInitProducerIdWithKeepPreparedTxn,
// shouldValidateEpochsCorrectlyWithDualIdentity, trunk). The transaction's
// own identity may still add, as the producer that prepared it did.
func (st *step) addToKept(r Request) *outcome {
	t, known := st.s.txns[r.TransactionalID]
	if !known || t.kept == nil || r.ProducerID != t.kept.pid || r.Epoch != t.kept.epoch {
		return nil
	}
	out := refuse("keep-prepared-no-add", InvalidTxnState, "producer %d epoch %d kept %s's prepared transaction, which it may only end (KIP-939)", r.ProducerID, r.Epoch, r.TransactionalID)
	return &out
}

// endKept ends a kept transaction with its client identity: the markers
// carry the transaction's producer id at its epoch bumped once, and the
// producer goes on with the client epoch bumped once, or a fresh producer
// id at epoch 0 once that is exhausted. The transaction's own identity
// is fenced (TransactionCoordinatorTest#shouldCompletePreparedTransactionWithOngoingTxnEpoch,
// shouldValidateEpochsCorrectlyWithDualIdentity,
// shouldCompleteTransactionWithExhaustedEpochs,
// shouldHandleProducerIdRotationPersistence, trunk). The tests are of
// transactions v2; under v1 the model ends it the same way, unread in
// Kafka.
func (st *step) endKept(r Request, t txnMeta) (outcome, bool) {
	if t.kept == nil || t.phase != Ongoing {
		return outcome{}, false
	}
	if r.ProducerID != t.kept.pid || r.Epoch != t.kept.epoch {
		if r.ProducerID == t.kept.pid || r.ProducerID == t.pid {
			return refuse("keep-prepared-end-epoch", ProducerFenced, "%s's kept transaction ends with producer %d epoch %d, not producer %d epoch %d (KIP-939)", r.TransactionalID, t.kept.pid, t.kept.epoch, r.ProducerID, r.Epoch), true
		}
		return refuse("pid-mapping", InvalidProducerIDMapping, "producer %d does not belong to %s (KIP-98)", r.ProducerID, r.TransactionalID), true
	}
	client := *t.kept
	var out outcome
	if client.epoch >= epochExhausted {
		out = st.grantFresh()
	} else {
		_, _, out = st.grant(client.pid, client.epoch+1)
		if got := st.observed(); got != nil && got.ProducerID != NoProducerID && (got.ProducerID != client.pid || got.Epoch != client.epoch+1) {
			return bad("keep-prepared-end-next", "ending %s's kept transaction moves the producer on to producer %d epoch %d, not producer %d epoch %d (KIP-939)", r.TransactionalID, client.pid, client.epoch+1, got.ProducerID, got.Epoch), true
		}
	}
	if out.bad != nil {
		return out, true
	}
	t = st.complete(t, r.Commit, bumped(t.epoch))
	t.kept = nil
	t.prevPID, t.prevEpoch, t.abortedOnItsOwn = client.pid, client.epoch, false
	t.pid, t.epoch, t.endedEpoch = out.resp.ProducerID, out.resp.Epoch, client.epoch
	st.s.setTxn(r.TransactionalID, t)
	if st.s.opts.TxnVersion < 2 {
		out.resp = NewResponse()
	}
	return out, true
}
