package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A producer fenced by a new owner's init is refused on its next produce,
// to a partition outside the new owner's transaction, with a fenced-producer
// error (KIP-98; under v1 kfake diverges, see FINDINGS.md).
func TestZombieProduceRefused(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		s.ok("B", model.InitProducerID, initRequest("fare-writer-7"))
		zombie := s.send("A", model.Produce, a.produce(fares2, 1, "trip-9002"))
		require.False(t, zombie.Succeeded())
		s.check("zombie-produce-invalid-txn-state")
	})
}

// Under transactions v2 a produce adds its partition to the transaction,
// but only after its epoch passed the fencing check: a fenced producer
// starts nothing, so the owner's next commit has nothing to commit
// (INVALID_TXN_STATE) and writes no marker. kfake diverges: FINDINGS.md.
func TestFencedProduceStartsNothing(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		if s.target.TransactionsVersion() < 2 {
			t.Skip("implicit partition adds are transactions v2")
		}
		a := s.begin("A", "fare-writer-7")
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		a.epoch = s.ok("A", model.EndTxn, a.endTxn(true)).Epoch
		got := s.ok("B", model.InitProducerID, initRequest("fare-writer-7"))
		b := session{"fare-writer-7", got.ProducerID, got.Epoch}
		zombie := s.send("A", model.Produce, a.produce(fares2, 0, "trip-9002"))
		require.Equal(t, model.FencedProducer, model.ClassOf(model.Produce, zombie.Err), "%+v", zombie)
		commit := s.send("B", model.EndTxn, b.endTxn(true))
		t.Logf("owner's commit with nothing of its own open: %+v", commit)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		t.Logf("high watermark %d (2 when the zombie started nothing)", read.HighWatermark)
		s.check("fenced-produce-starts-nothing")
	})
}

// An abort with no transaction open: Kafka 3.x refuses it
// (INVALID_TXN_STATE); Kafka 4 under transactions v2 accepts it and bumps
// the epoch, as the model does (FINDINGS.md, findings 2 and 3).
func TestEmptyAbort(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7")
		s.send("A", model.EndTxn, a.endTxn(false))
		s.check("empty-abort-accepted")
	})
}

// KIP-360: a producer may bump its own epoch only while it is the current
// (or, for a retry, the previous) one. A zombie two epochs behind must be
// fenced, never handed the id back.
func TestZombieCannotBumpStaleEpoch(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7")
		s.ok("B", model.InitProducerID, initRequest("fare-writer-7"))
		s.ok("C", model.InitProducerID, initRequest("fare-writer-7"))
		bump := initRequest("fare-writer-7")
		bump.ProducerID, bump.Epoch = a.pid, a.epoch
		res := s.send("A", model.InitProducerID, bump)
		t.Logf("zombie's bump of epoch %d: %+v", a.epoch, res)
		if res.Succeeded() {
			// The zombie owns the id again: its writes go through.
			a.epoch = res.Resp.Epoch
			if s.target.TransactionsVersion() == 1 {
				s.ok("A", model.AddPartitions, a.addPartitions(fares2))
			}
			s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9002"))
		}
		s.check("zombie-wins-id-back")
	})
}

// A producer fenced by a new owner's init, its transaction open, aborts.
// Kafka fences in two steps: the init bumps the epoch, aborts and answers
// CONCURRENT_TRANSACTIONS; its retry bumps again, so the new owner holds
// an epoch two above the fenced producer's, and the fenced producer's
// abort (a retry's epoch, one behind the first bump) can never be handed
// the new owner's session. The model accepts the one-step answer too, and
// then the fenced producer's commit and abort must be PRODUCER_FENCED.
func TestFencedAbortAfterInit(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		owner := s.ok("B", model.InitProducerID, initRequest("fare-writer-7"))
		commit := s.send("A", model.EndTxn, a.endTxn(true))
		require.False(t, commit.Succeeded(), "%+v", commit)
		abort := s.send("A", model.EndTxn, a.endTxn(false))
		t.Logf("new owner at epoch %d; the fenced producer's abort: %+v", owner.Epoch, abort)
		s.check("fenced-abort-after-init")
	})
}

// TestProduceOutsideTransactionCode: under transactions v1, a
// transactional produce to a partition its transaction never added.
// Kafka 3.8 and later answer Produce v11 and above TRANSACTION_ABORTABLE
// (KIP-890; AddPartitionsToTxnManager.
// produceRequestVersionToTransactionSupportedOperation), and older
// versions INVALID_TXN_STATE. kfake answers INVALID_TXN_STATE at every
// version (FINDINGS.md, 30).
func TestProduceOutsideTransactionCode(t *testing.T) {
	s := newScenario(t, "3.9")
	require.Equal(t, 1, s.target.TransactionsVersion())
	w := s.begin("A", "fare-worker-A") // adds no partition
	res := s.send("A", model.Produce, w.produce("fares-0", 0, "trip-1"))
	require.Equal(t, model.InvalidTxnState, res.Err, "%+v", res)
	s.check("produce-outside-txn-code")
}
