package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// The transaction coordinator: one txnMeta per transactional.id.

// initProducerID hands a producer its (producer id, epoch).
func (st *step) initProducerID(r Request) outcome {
	if out := emptyTxnID(r); out != nil {
		// After the null id, which the branch below takes, and before
		// everything else (TransactionCoordinator.handleInitProducerId,
		// 3.9 to trunk).
		return *out
	}
	if r.TransactionalID == "" {
		// Seed 001, KIP-98: an idempotent-only producer always gets a
		// fresh producer id at epoch 0, with no link to any earlier session.
		return st.grantFresh()
	}
	if out, decided := st.initTwoPhase(r); decided {
		return out
	}
	if max := st.s.opts.TxnMaxTimeoutMs; max > 0 && r.TimeoutMs > max && !r.Enable2PC {
		// Kafka refuses a transaction timeout above the broker's
		// maximum before it looks at the id
		// (TransactionCoordinator.handleInitProducerId,
		// TransactionStateManager.validateTransactionTimeoutMs, 3.9 to
		// 4.x; TransactionStateManagerTest#testValidateTransactionTimeout).
		// A two-phase commit transaction's is not bounded (KIP-939:
		// validateTransactionTimeoutMs takes the enable_2pc flag, trunk).
		return refuse("txn-timeout", InvalidTransactionTimeout, "transaction timeout %d ms is above transaction.max.timeout.ms %d (KIP-98)", r.TimeoutMs, max)
	}
	t, known := st.s.txns[r.TransactionalID]
	if !known {
		// KIP-98; KIP-360: a producer bumping its own epoch for an id the
		// coordinator does not know gets a fresh producer id too, "the
		// case of a producer recovering from an UNKNOWN_PRODUCER_ID error"
		// (TransactionCoordinator.handleInitProducerId, 3.9 to 4.x).
		out := st.grantFresh()
		if out.bad == nil {
			st.s.setTxn(r.TransactionalID, txnMeta{pid: out.resp.ProducerID, epoch: 0, prevPID: NoProducerID,
				prevEpoch: NoEpoch, endedEpoch: NoEpoch, timeoutMs: txnTimeout(r)})
		}
		return out
	}
	t, busy := st.waitForMarkers(r.TransactionalID, t)
	if busy != nil {
		return *busy
	}
	ownBump := r.ProducerID != NoProducerID
	if ownBump && !st.staleBump(t, r) {
		if r.ProducerID == t.prevPID && r.Epoch == t.prevEpoch {
			// KIP-360: a retry of the producer's own bump gets the same
			// answer, as does (Kafka 4) a bump carrying the epoch a v2
			// EndTxn or the coordinator's own abort moved on from.
			if out, rotated := st.rotatedByOwnAbort(r.TransactionalID, t); rotated {
				return out
			}
			out := st.answerGrant(t.pid, t.epoch)
			if t.abortedOnItsOwn {
				out.also = FencedProducer // Kafka 4.0.0 (KAFKA-19367)
			}
			return out
		}
		if r.ProducerID != t.pid || r.Epoch != t.epoch {
			// KIP-360: only the current owner may bump its epoch; a zombie
			// must never win its id back this way.
			return refuse("bump-not-owner", ProducerFenced, "producer %d epoch %d is not the owner of %s (producer %d epoch %d) (KIP-360)", r.ProducerID, r.Epoch, r.TransactionalID, t.pid, t.epoch)
		}
	}
	if t.phase == Ongoing {
		// KIP-98, seed 000: a new owner fences the old one: the epoch is
		// bumped and the open transaction aborted, its ABORT markers
		// carrying the new epoch.
		if st.answered(ConcurrentTransactions) || (st.undecided() && !ownBump) {
			// Kafka does it in two steps: bump and abort, answer
			// CONCURRENT_TRANSACTIONS; the retry bumps again. An init
			// whose answer was lost took that first step (a KIP-360
			// bump whose answer was lost is taken whole, so that its
			// retry is recognised).
			st.s.setTxn(r.TransactionalID, st.abortOnItsOwn(t))
			return outcome{refuse: ConcurrentTransactions, effects: true}
		}
		if st.answered(ProducerFenced) && !ownBump {
			// The fence is prepared in memory (prepareFenceProducerEpoch,
			// a pending PrepareEpochFence), and the abort that writes it
			// reads the metadata again (TransactionCoordinator
			// .handleInitProducerId, then endTransaction, each in its
			// own lock). If the metadata there holds a newer epoch, the
			// abort is PRODUCER_FENCED, nothing is written, and the init
			// answers it (TransactionCoordinatorTest#
			// shouldFailToAbortTransactionOnHandleInitPidWhenProducerEpochIsSmaller,
			// 3.9.0 and trunk). The pending fence answers another request
			// of this coordinator CONCURRENT_TRANSACTIONS, but the
			// __transaction_state partition may move to another broker and
			// back between the two reads, and the reload brings the other
			// coordinator's bumps. So a plain init that found the
			// transaction open may be refused so, with no effect; the
			// inits that bumped meanwhile come after it.
			return outcome{refuse: ProducerFenced}
		}
	}
	pid, epoch, out := st.bump(t)
	if out.bad != nil {
		return out
	}
	if t.phase == Ongoing {
		t = st.complete(t, false, epoch)
	}
	t.prevPID, t.prevEpoch, t.abortedOnItsOwn = NoProducerID, NoEpoch, false
	if ownBump {
		t.prevPID, t.prevEpoch = t.pid, t.epoch
	}
	t.pid, t.epoch, t.phase = pid, epoch, Empty
	if !st.allows(FirstTimeoutKept) {
		// Every InitProducerId sets the timeout of the transactions
		// that follow (TransactionCoordinator.handleInitProducerId:
		// prepareInitProducerIdTransit takes the request's
		// transactionTimeoutMs, 3.9 to 4.x).
		t.timeoutMs = txnTimeout(r)
	}
	st.s.setTxn(r.TransactionalID, t)
	return out
}

// bumped is the epoch after e when the coordinator bumps it itself (a
// fence, a timeout); it stops at the largest epoch rather than wrap.
func bumped(e int16) int16 { return min(e, math.MaxInt16-1) + 1 }

// Bumped is bumped, for brokers that follow the model's rules.
func Bumped(e int16) int16 { return bumped(e) }

// TxnMaxTimeoutConfig is the broker config that bounds a transaction's
// timeout, under Kafka's name.
const TxnMaxTimeoutConfig = "transaction.max.timeout.ms"

// WrongTimeoutRefusal says why got is an INVALID_TRANSACTION_TIMEOUT that
// Kafka cannot send to op, when it is one: the broker's maximum maxMs
// (transaction.max.timeout.ms) is known and the timeout is within
// 1..maxMs. Kafka sends that code only for a timeout above the maximum
// or not above 0 (TransactionStateManager.validateTransactionTimeoutMs;
// TransactionStateManagerTest#testValidateTransactionTimeout). A timeout
// of 0 is a history's "the default", which a recorder also writes for a
// client that sent 0, so it is taken either way. With maxMs 0 (not
// known) a cluster may be set below the default, but not below 1
// (TransactionStateManagerConfig defines the setting atLeast(1)), so
// only a timeout of 1 ms is certainly within it. The answer depends on
// nothing else, so the checker asks it of refusals it otherwise leaves
// out of its search.
func WrongTimeoutRefusal(maxMs int64, op Op, got Result) error {
	r := op.Req
	bound := max(maxMs, minTxnMaxTimeoutMs)
	if op.Kind != InitProducerID || got.Err != InvalidTransactionTimeout || r.TimeoutMs <= 0 || r.TimeoutMs > bound {
		return nil
	}
	setting := fmt.Sprintf("transaction.max.timeout.ms %d", maxMs)
	if maxMs <= 0 {
		setting = "any transaction.max.timeout.ms, which is at least 1"
	}
	return &Disallowed{Rule: "txn-timeout", Want: Success, Got: ClassOf(op.Kind, got.Err),
		Reason: fmt.Sprintf("answered %s, but transaction timeout %d ms is within %s (KIP-98)", got.Err, r.TimeoutMs, setting)}
}

// minTxnMaxTimeoutMs is the least transaction.max.timeout.ms a broker
// takes (TransactionStateManagerConfig, atLeast(1), 3.9 to 4.x).
const minTxnMaxTimeoutMs = 1

func txnTimeout(r Request) int64 {
	if r.Enable2PC {
		return twoPCTimeoutMs
	}
	if r.TimeoutMs > 0 {
		return r.TimeoutMs
	}
	return DefaultTxnTimeoutMs
}

// grantFresh hands out a producer id never handed out before, at epoch 0.
// When the answer was lost, the id stays unknown.
func (st *step) grantFresh() outcome {
	pid := st.s.nextPID
	if st.undecided() {
		resp := NewResponse()
		resp.ProducerID, resp.Epoch = unknownPID, 0
		return ok(resp)
	}
	if got := st.observed(); got != nil {
		pid = got.ProducerID
		if pid < 0 || st.s.pids[pid] {
			return bad("fresh-pid-new", "producer id %d was handed out before; a fresh one must be new (KIP-98)", pid)
		}
		if got.Epoch != 0 {
			return bad("fresh-pid-epoch-0", "a fresh producer id starts at epoch 0, not %d (KIP-98)", got.Epoch)
		}
	}
	st.s.addPID(pid)
	resp := NewResponse()
	resp.ProducerID, resp.Epoch = pid, 0
	return ok(resp)
}

// bump decides the next (producer id, epoch) of a known transactional.id:
// the epoch after the current one, or a fresh producer id at epoch 0 once
// the epoch is exhausted (KIP-360). Kafka bumps by exactly one
// (TransactionMetadata.prepareIncrementProducerEpoch, 3.9 to 4.x; under
// transactions v2 also prepareAbortOrCommit), so that a client naming an
// epoch is answered the one after it
// (TransactionMetadataTest#testEpochBumpWithCurrentEpochProvided,
// TransactionCoordinatorTest#testInitProducerIdWithCurrentEpochProvided).
// Its two-step fencing is two such bumps (abortOnItsOwn, then the retry).
func (st *step) bump(t txnMeta) (int64, int16, outcome) {
	exhausted := t.epoch >= epochExhausted
	got := st.observed()
	switch {
	case exhausted:
		out := st.grantFresh()
		return out.resp.ProducerID, 0, out
	case t.pid == unknownPID && got != nil:
		// The id a lost answer handed out shows itself: one never seen.
		if got.ProducerID < 0 || st.s.pids[got.ProducerID] || !t.nextEpoch(got.Epoch) {
			return 0, 0, bad("after-lost-grant", "producer %d epoch %d cannot follow the lost grant of a new producer id at epoch %d (KIP-98)", got.ProducerID, got.Epoch, t.epoch)
		}
		st.s.addPID(got.ProducerID)
		return st.grant(got.ProducerID, got.Epoch)
	case got == nil:
		return st.grant(t.pid, t.epoch+1)
	case got.ProducerID != t.pid:
		return 0, 0, bad("keeps-pid", "producer id %d, but a known transactional.id keeps its producer id %d until its epoch runs out (KIP-360)", got.ProducerID, t.pid)
	case got.Epoch <= t.epoch:
		return 0, 0, bad("epochs-grow", "epoch %d does not fence epoch %d: epochs only grow (KIP-98)", got.Epoch, t.epoch)
	case !t.nextEpoch(got.Epoch):
		return 0, 0, bad("bump-by-one", "epoch %d skips past %d: the coordinator bumps epoch %d by one (KIP-360)", got.Epoch, t.epoch+1, t.epoch)
	}
	return st.grant(got.ProducerID, got.Epoch)
}

// nextEpoch reports whether a bump of t may answer epoch e: the one after
// t's, or under transactions v2 after the coordinator's own abort the one
// after that too, because Kafka 4.0.0 bumped twice there (once to fence,
// once to abort; KAFKA-19367, fixed in 4.0.1).
func (t txnMeta) nextEpoch(e int16) bool {
	return e == t.epoch+1 || (t.abortedOnItsOwn && e == t.epoch+2)
}

func (st *step) grant(pid int64, epoch int16) (int64, int16, outcome) {
	resp := NewResponse()
	resp.ProducerID, resp.Epoch = pid, epoch
	return pid, epoch, ok(resp)
}

// RetriesGrant reports whether Kafka answers retry, a request of kind
// retryKind, with the session that first, of kind firstKind, moved its
// producer on to: the same producer naming the same epoch. Kafka keeps
// that one previous epoch open (TransactionMetadata.lastProducerEpoch)
// for a retry of the same kind (an EndTxn of the same outcome), and under
// KIP-890 for a KIP-360 bump after an EndTxn, and for an abort or a bump
// after the coordinator's own timeout abort (Kafka 4.0.1+; first is then
// the session the abort moved on from). An EndTxn after a bump that was
// answered as such a retry is one too. The checker uses it to tell a
// retry from a zombie.
func RetriesGrant(retryKind Kind, retry Request, firstKind Kind, first Request) bool {
	same := retry.TransactionalID == first.TransactionalID && retry.ProducerID == first.ProducerID && retry.Epoch == first.Epoch
	switch {
	case !same:
		return false
	case retryKind == firstKind:
		return retryKind != EndTxn || retry.Commit == first.Commit
	case firstKind == EndTxn:
		return retryKind == InitProducerID
	case firstKind == TimeoutAbort:
		return retryKind == InitProducerID || (retryKind == EndTxn && !retry.Commit)
	case firstKind == InitProducerID:
		// A KIP-360 bump and an EndTxn naming one epoch, both answered
		// the next session: only a v2 EndTxn at that epoch, whose answer
		// the history may lack, moves the producer on so that both are
		// answered as retries of it. A bump of its own leaves the EndTxn
		// fenced.
		return retryKind == EndTxn
	}
	return false
}

// rotatedByOwnAbort takes a retry's answer naming a fresh producer id at
// epoch 0 after the coordinator's own abort exhausted the epoch under
// KIP-890. Newer Kafka writes that abort's PrepareAbort with the next
// producer id, and CompleteAbort moves the transactional id to it; the
// retry is answered with it (TransactionCoordinator.abortTimedOutTransactions
// and the fencing InitProducerId; TransactionCoordinatorTest#
// shouldHandleTimeoutAtEpochOverflowBoundaryCorrectlyAndLateClientAbortRequestTV2,
// shouldRotateProducerIdWhenInitPidFencesOngoingTxnAtEpochOverflowBoundaryTV2).
// Older 4.x releases keep the producer id at the exhausted epoch, which
// answerGrant accepts, so both are accepted.
func (st *step) rotatedByOwnAbort(id string, t txnMeta) (outcome, bool) {
	got := st.observed()
	if !t.abortedOnItsOwn || t.epoch < math.MaxInt16 || got == nil || got.ProducerID == t.pid {
		return outcome{}, false
	}
	out := st.grantFresh()
	if out.bad == nil {
		t.pid, t.epoch = out.resp.ProducerID, 0
		st.s.setTxn(id, t)
	}
	return out, true
}

// answerGrant answers a retry with the producer's current (pid, epoch).
func (st *step) answerGrant(pid int64, epoch int16) outcome {
	if got := st.observed(); got != nil && (got.ProducerID != pid || got.Epoch != epoch) {
		return bad("bump-retry-answer", "a retried bump must return producer %d epoch %d, got producer %d epoch %d (KIP-360)", pid, epoch, got.ProducerID, got.Epoch)
	}
	_, _, out := st.grant(pid, epoch)
	return out
}

// stillCompleting reports whether the broker answered CONCURRENT_TRANSACTIONS
// to a transactional.id whose last transaction ended: a real coordinator
// answers so while the markers are being written (KIP-98). Nothing changes.
func (st *step) stillCompleting(t txnMeta) bool {
	return st.answered(ConcurrentTransactions) && (t.phase == CompleteCommit || t.phase == CompleteAbort)
}

// owner checks that (pid, epoch) is the current owner of a transactional.id:
// every request carrying them is refused otherwise (KIP-98 fencing).
func (st *step) owner(r Request) (txnMeta, *outcome) {
	t, known := st.s.txns[r.TransactionalID]
	if !known || t.pid != r.ProducerID {
		out := refuse("pid-mapping", InvalidProducerIDMapping, "producer %d does not belong to %s (KIP-98)", r.ProducerID, r.TransactionalID)
		return t, &out
	}
	if r.Epoch != t.epoch {
		// Lower: a zombie (seed 000). Higher: an epoch never handed out.
		out := refuse("epoch-fence", ProducerFenced, "epoch %d is not %s's current epoch %d (KIP-98 fencing)", r.Epoch, r.TransactionalID, t.epoch)
		return t, &out
	}
	return t, nil
}

// begin moves a transaction to Ongoing, remembering when, for its timeout.
func (st *step) begin(t txnMeta) txnMeta {
	if t.markersInFlight() {
		// A transaction begins only once the last one's markers are
		// written (a broker deviation may begin one sooner).
		t = st.land(t, t.unwritten, t.unsettled)
	}
	if t.phase != Ongoing {
		t.phase, t.startedAt = Ongoing, st.s.now
	}
	return t
}

// emptyTxnID refuses an init_producer_id, add_partitions or end_txn
// whose transactional.id is the empty string before anything is looked at
// (TransactionCoordinator.handleInitProducerId "transactionalId.isEmpty",
// handleAddPartitionsToTransaction, handleEndTransaction:
// "transactionalId == null || transactionalId.isEmpty", 3.9 to trunk;
// tests: TransactionCoordinatorTest#shouldReturnInvalidRequestWhenTransactionalIdIsEmpty,
// TransactionCoordinatorTest#shouldRespondWithInvalidRequestAddPartitionsToTransactionWhenTransactionalIdIsEmpty,
// #shouldRespondWithInvalidRequestOnEndTxnWhenTransactionalIdIsEmpty).
func emptyTxnID(r Request) *outcome {
	if !r.EmptyTransactionalID {
		return nil
	}
	out := refuse("empty-txn-id", InvalidRequest, "the transactional.id is empty, which Kafka refuses before it looks at anything else (TransactionCoordinator)")
	return &out
}

func (st *step) addPartitions(r Request) outcome {
	if out := emptyTxnID(r); out != nil {
		return *out
	}
	return st.register(r, func(t txnMeta) txnMeta {
		for _, p := range r.Partitions {
			t.partitions = addSorted(t.partitions, p)
		}
		return t
	})
}

func (st *step) addOffsets(r Request) outcome {
	return st.register(r, func(t txnMeta) txnMeta {
		t.groups = addSorted(t.groups, r.Group)
		return t
	})
}

// register adds partitions or a group to the owner's transaction, which
// begins if none is open (KIP-98).
func (st *step) register(r Request, add func(txnMeta) txnMeta) outcome {
	if out := st.addToKept(r); out != nil {
		return *out
	}
	t, refused := st.owner(r)
	if refused != nil {
		return *refused
	}
	t, busy := st.waitForMarkers(r.TransactionalID, t)
	if busy != nil {
		return *busy
	}
	st.s.setTxn(r.TransactionalID, add(st.begin(t)))
	return ok(NewResponse())
}

func (st *step) endTxn(r Request) outcome {
	if out := emptyTxnID(r); out != nil {
		return *out
	}
	t, known := st.s.txns[r.TransactionalID]
	if known && (st.isEndTxnRetry(t, r) || st.isOtherOutcomeAtRetryEpoch(t, r)) {
		// Kafka answers EndTxn once PrepareCommit or PrepareAbort is
		// logged; until the markers are written, a retry of it (and,
		// under KIP-890, an EndTxn at the epoch before the bump) is
		// CONCURRENT_TRANSACTIONS (TransactionCoordinator.endTransaction,
		// the PrepareCommit and PrepareAbort cases, 3.9.0 to 4.x;
		// TransactionCoordinatorTest#shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit).
		var busy *outcome
		if t, busy = st.waitForMarkers(r.TransactionalID, t); busy != nil {
			return *busy
		}
	}
	if known && st.isEndTxnRetry(t, r) {
		// KIP-98: a retried EndTxn of the transaction that just completed
		// the same way succeeds again; under KIP-890 it carries the epoch
		// from before the bump and gets the current one back.
		if out, rotated := st.rotatedByOwnAbort(r.TransactionalID, t); rotated {
			return out
		}
		out := st.answerEndTxn(t)
		if t.abortedOnItsOwn {
			// Kafka 4.0.0 bumped twice on its own abort (KAFKA-19367),
			// so the epoch before was no retry's: PRODUCER_FENCED.
			out.also = FencedProducer
		}
		return out
	}
	if known && st.isOtherOutcomeAtRetryEpoch(t, r) {
		// KIP-890, Kafka 4.x TransactionCoordinator.endTransaction: the
		// epoch is the retry's, the outcome is not the one that ended
		// the transaction: INVALID_TXN_STATE. For a commit after an
		// abort, KAFKA-20785 (not in a release as of 4.3.1) answers
		// PRODUCER_FENCED, and so does Kafka 4.0.0 after its own abort
		// (which bumped twice): either is accepted. Nothing takes effect.
		out := refuse("retry-other-outcome", InvalidTxnState, "epoch %d ended %s's last transaction (%s), which this EndTxn does not repeat (KIP-890)", r.Epoch, r.TransactionalID, t.phase)
		if r.Commit {
			out.also = FencedProducer
		}
		return out
	}
	if out, deviant := st.endTxnAtEpochBefore(t, r); known && deviant {
		return out
	}
	if out, kept := st.endKept(r, t); known && kept {
		return out
	}
	t, refused := st.owner(r)
	if refused != nil {
		return *refused
	}
	t, busy := st.waitForMarkers(r.TransactionalID, t)
	if busy != nil {
		return *busy
	}
	if t.phase != Ongoing && !st.emptyAbort(r) {
		if st.emptyEndAccepted(t, r) {
			return ok(NewResponse())
		}
		return refuse("nothing-to-end", InvalidTxnState, "%s has no transaction open (%s) to end (KIP-98)", r.TransactionalID, t.phase)
	}
	epoch, pid := t.epoch, t.pid
	out := ok(NewResponse())
	v2 := st.endTxnV2()
	if v2 {
		// KIP-890: every commit or abort bumps the epoch; the markers carry
		// the new one, so nothing of the old epoch can land after them.
		pid, epoch, out = st.bump(t)
		if out.bad != nil {
			return out
		}
	}
	ended := t.epoch
	t = st.complete(t, r.Commit, epoch)
	t.prevPID, t.prevEpoch, t.abortedOnItsOwn = NoProducerID, NoEpoch, false
	if v2 {
		// Kafka 4 keeps the epoch before a v2 bump (lastProducerEpoch):
		// the producer's KIP-360 bump carrying it is answered as a retry.
		t.prevPID, t.prevEpoch = t.pid, ended
	}
	t.pid, t.epoch, t.endedEpoch = pid, epoch, ended
	st.s.setTxn(r.TransactionalID, t)
	if !v2 {
		out.resp = NewResponse()
	}
	return out
}

// endTxnV2 reports whether the EndTxn being judged ends its transaction
// under transactions v2. The cluster must speak v2, and so must the
// client. Kafka takes the client's protocol from the request's version.
// EndTxn v5 and later is a v2 client; an older one is a v1 client even
// on a v2 cluster (KafkaApis.handleEndTxnRequest, clientTransactionVersion,
// 4.0 to 4.x). So an older EndTxn bumps no epoch
// (TransactionMetadata.prepareAbortOrCommit), and its answer has no
// producer id and epoch. A request of no known version is taken as the
// cluster's.
func (st *step) endTxnV2() bool {
	if st.s.opts.TxnVersion < 2 {
		return false
	}
	n, known := st.op.APIVersion.Number()
	return !known || n >= endTxnV2Since
}

// endTxnV2Since is the first EndTxn version of a transactions-v2 client
// (KIP-890; KafkaApis.handleEndTxnRequest: version > 4 is TV_2).
const endTxnV2Since = 5

// emptyAbort reports whether r is an abort that Kafka 4 accepts with no
// transaction open: a transactions-v2 client cannot know whether a produce
// whose answer it lost began a transaction (produce adds its partition
// itself), so it aborts anyway; the coordinator writes no marker and bumps
// the epoch, as for every v2 abort (KIP-890; Kafka 4.0+
// TransactionCoordinator.endTransaction, states Empty, CompleteCommit and
// CompleteAbort with TransactionResult.ABORT: PrepareAbort with no
// partitions). Under transactions v1 it stays INVALID_TXN_STATE, and so
// it does for a v1 client on a v2 cluster: its EndTxn goes the v1 way
// (endTxnV2; 4.3.1 TransactionCoordinator.endTransaction hands a client
// that does not support the epoch bump to endTransactionWithTV1).
func (st *step) emptyAbort(r Request) bool {
	return st.endTxnV2() && !r.Commit
}

// isOtherOutcomeAtRetryEpoch reports whether r, under transactions v2,
// carries the epoch that ended the last transaction but asks for the other
// outcome.
func (st *step) isOtherOutcomeAtRetryEpoch(t txnMeta, r Request) bool {
	wantPhase := CompleteCommit
	if r.Commit {
		wantPhase = CompleteAbort
	}
	return st.endTxnV2() && t.phase == wantPhase && r.Epoch == t.endedEpoch && r.ProducerID == t.pid
}

func (st *step) isEndTxnRetry(t txnMeta, r Request) bool {
	wantPhase := CompleteAbort
	if r.Commit {
		wantPhase = CompleteCommit
	}
	// The producer id must be the one that ended it: the current one, or
	// under KIP-890 the one a bump past an exhausted epoch moved on from
	// (Kafka's retryOnOverflow); any other is INVALID_PRODUCER_ID_MAPPING.
	return t.phase == wantPhase && r.Epoch == t.endedEpoch &&
		(r.ProducerID == t.pid || (st.endTxnV2() && r.ProducerID == t.prevPID))
}

func (st *step) answerEndTxn(t txnMeta) outcome {
	if !st.endTxnV2() {
		return ok(NewResponse())
	}
	return st.answerGrant(t.pid, t.epoch)
}

// complete ends t's transaction: a marker at every partition it registered,
// carrying markerEpoch, and its pending offsets made real by a COMMIT or
// dropped by an ABORT (KIP-98, KIP-447).
func (st *step) complete(t txnMeta, commit bool, markerEpoch int16) txnMeta {
	if t.markersInFlight() {
		t = st.land(t, t.unwritten, t.unsettled)
	}
	t.unwritten, t.unsettled = t.partitions, t.groups
	t.markerPID, t.markerEpoch = t.pid, markerEpoch
	t.kept = nil
	t.completedAt = st.s.lastCompletion() + 1
	t.partitions, t.groups = nil, nil
	t.phase = CompleteAbort
	if commit {
		t.phase = CompleteCommit
	}
	if len(t.unsettled) == 0 {
		t.unsettled, t.pending = nil, nil
	}
	if !st.lazyMarkers() {
		t = st.land(t, t.unwritten, t.unsettled)
	}
	return t
}

// abortOnItsOwn is the coordinator aborting t's open transaction itself
// (a timeout, or the first step of a fencing init): the epoch is bumped and
// the ABORT markers carry it (KIP-98, prepareFenceProducerEpoch). Under
// transactions v1 the epoch before is forgotten: every request carrying it
// is PRODUCER_FENCED. Under v2 Kafka 4.0.1+ keeps it as lastProducerEpoch,
// so requests shaped as retries at it are answered as retries: an abort
// or a KIP-360 bump gets the new epoch back (Kafka 4.0.0 answered them
// PRODUCER_FENCED: both are accepted, see abortedOnItsOwn).
func (st *step) abortOnItsOwn(t txnMeta) txnMeta {
	before := t.epoch
	t.epoch = bumped(t.epoch)
	t = st.complete(t, false, t.epoch)
	t.prevPID, t.prevEpoch, t.endedEpoch, t.abortedOnItsOwn = NoProducerID, NoEpoch, NoEpoch, false
	if st.s.opts.TxnVersion >= 2 {
		t.prevPID, t.prevEpoch, t.endedEpoch, t.abortedOnItsOwn = t.pid, before, before, true
	}
	return t
}

// tick moves the broker's clock; transactions and group members whose
// timeouts passed are expired, and then what has certainly been idle too
// long is forgotten (expiry.go). On a wall clock the ops' own times are the
// clock, and a tick moves nothing.
func (st *step) tick(ms int64) {
	if st.s.opts.WallClock {
		return
	}
	// The coordinator retries markers until the partition leaders take
	// them, and a leader that is down holds them for as long as it is
	// down (TransactionMarkerChannelManager). So a tick lands none of its
	// own: judging, they stay in flight past it, as
	// TransactionStateManagerTest#shouldOnlyConsiderTransactionsInTheOngoingStateToAbort
	// holds them across a 2000 ms sweep (markers.go).
	st.landOwnAnswer()
	st.s.now += ms
	for _, id := range slices.Sorted(maps.Keys(st.s.txns)) {
		if t := st.s.txns[id]; t.expiredBy(st.s.now) {
			// KIP-98: the coordinator aborts an expired transaction and
			// bumps the epoch, so the producer that let it expire is fenced.
			st.s.setTxn(id, st.abortOnItsOwn(t))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.s.groups)) {
		st.expireMembers(name, st.s.now, nil)
	}
	st.expireConsumerMembers()
	st.expireIdle()
}

// expiredBy reports whether t's transaction is past its timeout at now,
// not at it: TransactionStateManager.timedOutTransactions takes those with
// txnStartTimestamp + txnTimeoutMs < now (3.9.0 to 4.3.1).
func (t txnMeta) expiredBy(now int64) bool {
	return t.phase == Ongoing && now-t.startedAt > t.timeoutMs
}

// dueTimers is s with each timer that may have fired by the time op took
// effect (due by its return) and that its answer may depend on: one at a
// time, then all together. They are the transaction of op's
// transactional id, the transactions open on its partition (a fetch's
// last stable offset) or holding offsets of its group (an offset fetch's
// stability), and the sessions of its group's members. Firing only what
// the answer needs keeps a timer that has not yet fired from being
// taken to have.
func (s State) dueTimers(op Op) []State {
	r := op.Req
	var txns, members []string
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		t := s.txns[id]
		touches := id == r.TransactionalID ||
			(op.Kind == Fetch && slices.Contains(t.partitions, r.Partition)) ||
			(op.Kind == OffsetFetch && t.pending[r.Group] != nil)
		if touches && t.expiredBy(op.Span.To) {
			txns = append(txns, id)
		}
	}
	if g, ok := s.groups[r.Group]; ok && r.Group != "" {
		for _, id := range slices.Sorted(maps.Keys(g.members)) {
			if g.members[id].expiredBy(op.Span.To) {
				members = append(members, id)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(g.pending)) {
			if p := g.pending[id]; op.Span.To-p.since >= p.sessionMs {
				members = append(members, id)
			}
		}
	}
	fire := func(txns []string, member *string, allMembers bool) State {
		st := newStep(s, op, nil)
		st.judging = true
		for _, id := range txns {
			st.s.setTxn(id, st.abortOnItsOwn(st.s.txns[id]))
		}
		if member != nil || allMembers {
			st.expireMembers(r.Group, op.Span.To, member) // one rebalance for all of them
		}
		return st.s
	}
	var out []State
	for _, id := range txns {
		out = append(out, fire([]string{id}, nil, false))
	}
	for _, id := range members {
		out = append(out, fire(nil, &id, false))
	}
	if len(txns)+len(members) > 1 {
		out = append(out, fire(txns, nil, len(members) > 0))
	}
	return out
}
