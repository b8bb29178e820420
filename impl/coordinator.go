package impl

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// The transaction coordinator, one shard of transactional.ids per lock.

// txnShard is one shard: its transactions, and the log they are rebuilt
// from (its partition of __transaction_state).
type txnShard struct {
	mu   sync.Mutex
	txns map[string]txnMeta
	log  segmented[txnRecord]
	// clock is the broker's, for each write's timestamp (expiry.go).
	clock *atomic.Int64
}

// txnRecord is one entry of the shard's log: the whole state of one
// transactional.id after a change, as Kafka writes TransactionMetadata. The
// last record of an id is its state. Slices in a txnMeta are never written
// in place, so a record may share them.
type txnRecord struct {
	id   string
	meta txnMeta
	// removed: a tombstone, the id expired (expiry.go).
	removed bool
}

// txnMeta is the coordinator's record of one transactional.id.
type txnMeta struct {
	producerID int64
	epoch      int16
	// prevProducerID and prevEpoch are what the producer held before it
	// bumped its own epoch (KIP-360), so that a retry of that bump is
	// recognised; NoProducerID and NoEpoch when the last bump was not its own.
	prevProducerID int64
	prevEpoch      int16
	phase          model.Phase
	partitions     []model.Partition // sorted
	groups         []string          // sorted
	startedAt      int64
	timeoutMs      int64
	// endedEpoch is the epoch whose EndTxn completed the last transaction,
	// so that a retried EndTxn is answered again (KIP-98; KIP-890 bumps).
	endedEpoch int16
	// flight is the ended transaction's markers not written yet
	// (Config.AsyncMarkers; markers.go).
	flight inFlight
	// updatedAt is when the id's metadata was last written
	// (txnLastUpdateTimestamp; expiry.go).
	updatedAt int64
}

// epochExhausted is the last epoch a producer id may be bumped to; then the
// coordinator rotates the producer id (KIP-360).
const epochExhausted int16 = 32766

func (s *txnShard) reset(segmentSize int) {
	s.txns = map[string]txnMeta{}
	s.log = newSegmented[txnRecord](segmentSize)
}

// write logs the new state of id and applies it.
func (s *txnShard) write(id string, t txnMeta) {
	// Each write is a transition, and sets txnLastUpdateTimestamp.
	t.updatedAt = s.clock.Load()
	s.put(id, t)
}

// put logs and applies t as it is, its updatedAt kept (expiry.go).
func (s *txnShard) put(id string, t txnMeta) {
	s.log.Append(txnRecord{id: id, meta: t})
	s.txns[id] = t
}

// recover rebuilds the shard's table from its log, as a coordinator loads
// __transaction_state when it becomes the shard's leader.
func (s *txnShard) recover() {
	s.txns = map[string]txnMeta{}
	for _, rec := range s.log.All {
		s.txns[rec.id] = rec.meta
		if rec.removed {
			delete(s.txns, rec.id)
		}
	}
}

// owner checks that the request's (producer id, epoch) is the current owner
// of its transactional.id; every request carrying them is refused otherwise
// (KIP-98 fencing: a lower epoch is a zombie, seed 000).
func (s *txnShard) owner(r model.Request) (txnMeta, model.Code) {
	t, known := s.txns[r.TransactionalID]
	if !known || t.producerID != r.ProducerID {
		return t, model.InvalidProducerIDMapping
	}
	if r.Epoch != t.epoch {
		return t, model.ProducerFenced
	}
	return t, ""
}

func granted(producerID int64, epoch int16) model.Result {
	resp := model.NewResponse()
	resp.ProducerID, resp.Epoch = producerID, epoch
	return model.OK(resp)
}

func done() model.Result { return model.OK(model.NewResponse()) }

func (b *Broker) initProducerID(r model.Request) model.Result {
	if r.EmptyTransactionalID {
		return model.Fail(model.InvalidRequest) // the model's empty-txn-id
	}
	if r.Enable2PC || r.KeepPreparedTxn {
		// This broker takes no part in a two-phase commit (KIP-939), as
		// a Kafka broker with transaction.two.phase.commit.enable off,
		// its default: the model's 2pc-disabled, which a broker whose
		// setting is not known may answer too.
		return model.Fail(model.TransactionalIDAuthorizationFailed)
	}
	if r.TransactionalID == "" {
		// Seed 001, KIP-98: an idempotent-only producer always gets a fresh
		// producer id at epoch 0, with no link to any earlier session.
		return granted(b.freshProducerID(), 0)
	}
	if b.maxTxnTimeoutMs > 0 && r.TimeoutMs > b.maxTxnTimeoutMs {
		// Refused before the id is looked at (the model's txn-timeout).
		return model.Fail(model.InvalidTransactionTimeout)
	}
	sh := b.lockTxnShard(r.TransactionalID)
	defer sh.mu.Unlock()
	b.landOwn(sh, r.TransactionalID)
	t, known := sh.txns[r.TransactionalID]
	if !known {
		return b.initFirst(sh, r)
	}
	ownBump := r.ProducerID != model.NoProducerID
	if ownBump {
		if r.ProducerID == t.prevProducerID && r.Epoch == t.prevEpoch {
			// KIP-360: a retry of the producer's own bump gets the same
			// answer, as does a bump carrying the epoch a v2 EndTxn or
			// the coordinator's own abort moved on from (Kafka 4).
			return granted(t.producerID, t.epoch)
		}
		if r.ProducerID != t.producerID || r.Epoch != t.epoch {
			// KIP-360: only the current owner may bump its epoch.
			return model.Fail(model.ProducerFenced)
		}
	}
	next := b.fence(r.TransactionalID, t)
	next.prevProducerID, next.prevEpoch = model.NoProducerID, model.NoEpoch
	if ownBump {
		next.prevProducerID, next.prevEpoch = t.producerID, t.epoch
	}
	next.timeoutMs = txnTimeout(r)
	sh.write(r.TransactionalID, next)
	return granted(next.producerID, next.epoch)
}

// initFirst gives a transactional.id the coordinator has never seen a fresh
// producer id at epoch 0 (KIP-98).
// A producer bumping its own epoch for an id never seen gets one too
// (KIP-360: it is recovering from UNKNOWN_PRODUCER_ID).
func (b *Broker) initFirst(sh *txnShard, r model.Request) model.Result {
	t := txnMeta{producerID: b.freshProducerID(), prevProducerID: model.NoProducerID, prevEpoch: model.NoEpoch,
		endedEpoch: model.NoEpoch, timeoutMs: txnTimeout(r)}
	sh.write(r.TransactionalID, t)
	return granted(t.producerID, 0)
}

// fence hands a known transactional.id to a new owner: a higher epoch, and
// the open transaction of the old one aborted with ABORT markers carrying
// the new epoch (KIP-98, seed 000).
func (b *Broker) fence(id string, t txnMeta) txnMeta {
	producerID, epoch := b.bump(t)
	if b.bugs.has(reinitKeepsEpoch) && producerID == t.producerID {
		epoch = t.epoch
	}
	if t.phase == model.Ongoing && b.bugs.has(initKeepsTxnOpen) {
		t.producerID, t.epoch = producerID, epoch
		return t
	}
	if t.phase == model.Ongoing {
		t = b.complete(id, t, false, epoch)
	}
	t.producerID, t.epoch, t.phase = producerID, epoch, model.Empty
	return t
}

// bump is the next (producer id, epoch) of a transactional.id: the next
// epoch, or a fresh producer id at epoch 0 once the epoch is exhausted
// (KIP-360).
func (b *Broker) bump(t txnMeta) (int64, int16) {
	if t.epoch >= epochExhausted {
		return b.freshProducerID(), 0
	}
	return t.producerID, t.epoch + 1
}

func txnTimeout(r model.Request) int64 {
	if r.TimeoutMs > 0 {
		return r.TimeoutMs
	}
	return model.DefaultTxnTimeoutMs
}

// begin moves a transaction to Ongoing, remembering when, for its timeout.
func (b *Broker) begin(t txnMeta) txnMeta {
	if t.phase != model.Ongoing {
		t.phase, t.startedAt = model.Ongoing, b.now.Load()
	}
	return t
}

func (b *Broker) addPartitions(r model.Request) model.Result {
	if r.EmptyTransactionalID {
		return model.Fail(model.InvalidRequest) // the model's empty-txn-id
	}
	return b.addToTxn(r, func(t txnMeta) txnMeta {
		for _, p := range r.Partitions {
			t.partitions = addSorted(t.partitions, p)
		}
		return t
	})
}

func (b *Broker) addOffsets(r model.Request) model.Result {
	return b.addToTxn(r, func(t txnMeta) txnMeta {
		t.groups = addSorted(t.groups, r.Group)
		return t
	})
}

// addToTxn begins the owner's transaction if need be and adds to it
// (AddPartitionsToTxn, AddOffsetsToTxn: KIP-98).
func (b *Broker) addToTxn(r model.Request, add func(txnMeta) txnMeta) model.Result {
	sh := b.lockTxnShard(r.TransactionalID)
	defer sh.mu.Unlock()
	b.landOwn(sh, r.TransactionalID)
	t, refused := sh.owner(r)
	if refused != "" {
		return model.Fail(refused)
	}
	sh.write(r.TransactionalID, add(b.begin(t)))
	return done()
}

// addSorted returns set with x added, kept sorted and without duplicates;
// set itself is unchanged, so records may share it.
func addSorted[T ~string](set []T, x T) []T {
	i, found := slices.BinarySearch(set, x)
	if found {
		return set
	}
	return slices.Insert(slices.Clip(set), i, x)
}
