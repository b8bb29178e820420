package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A broker restart keeps the log and the producer state rebuilt from it:
// the idempotent producer goes on with its next sequence, and the resend
// of its last batch is still recognised as a duplicate.
func TestBrokerRestartKeepsLogAndProducerState(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		got := s.ok("P", model.InitProducerID, initRequest(""))
		p := session{"", got.ProducerID, got.Epoch}
		require.Equal(t, int64(0), s.ok("P", model.Produce, p.produce(fares2, 0, "trip-9001")).BaseOffset)

		s.rec.Fault("broker", model.BrokerRestart, model.NewRequest())
		s.target.Restart()

		require.Equal(t, int64(1), s.ok("P", model.Produce, p.produce(fares2, 1, "trip-9002")).BaseOffset)
		require.Equal(t, int64(1), s.ok("P", model.Produce, p.produce(fares2, 1, "trip-9002")).BaseOffset)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9001", "trip-9002"}, keysOf(read.Records))
		s.check("broker-restart")
	})
}

// A transaction older than its timeout is aborted by the coordinator,
// which bumps the epoch: the producer that let it expire is fenced, and a
// committed read sees nothing of it. Time passes for real (Tick sleeps the
// scaled duration).
func TestTransactionTimeoutFences(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		req := initRequest("fare-writer-7")
		req.TimeoutMs = 10_000 // 100 ms of real time at the default scale
		got := s.ok("A", model.InitProducerID, req)
		a := session{"fare-writer-7", got.ProducerID, got.Epoch}
		if s.target.TransactionsVersion() == 1 {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))

		s.rec.Fault("clock", model.Tick, model.Request{Ms: 30_000})
		s.target.Tick(30_000)

		commit := s.send("A", model.EndTxn, a.endTxn(true))
		require.False(t, commit.Succeeded(), "%+v", commit)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Empty(t, read.Records)
		require.Equal(t, int64(2), read.HighWatermark) // the record and the ABORT marker
		s.check("transaction-timeout")
	})
}

// read_committed stops at the first offset of an open transaction and never
// returns an aborted one; read_uncommitted sees everything but markers.
func TestReadIsolation(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		ended := s.ok("A", model.EndTxn, a.endTxn(false)) // ABORT at 1
		if s.target.TransactionsVersion() == 2 {
			a.epoch = ended.Epoch
		} else {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		seq := int32(1)
		if s.target.TransactionsVersion() == 2 {
			seq = 0 // a new epoch starts its sequences again
		}
		s.ok("A", model.Produce, a.produce(fares2, seq, "trip-9002")) // 2, open

		committed := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Empty(t, committed.Records)
		require.Equal(t, int64(2), committed.LastStableOffset)
		uncommitted := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadUncommitted))
		require.Equal(t, []string{"trip-9001", "trip-9002"}, keysOf(uncommitted.Records))

		s.ok("A", model.EndTxn, a.endTxn(true)) // COMMIT at 3
		committed = s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9002"}, keysOf(committed.Records))
		require.Equal(t, int64(4), committed.HighWatermark)
		s.check("read-isolation")
	})
}

// A broker restart keeps an open transaction: the coordinator logged its
// partitions to __transaction_state (KIP-98), so the producer writes on
// into it after the restart. Under transactions v1 kfake forgets them
// (FINDINGS.md, 13).
func TestRestartKeepsOpenTransaction(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.rec.Fault("broker", model.BrokerRestart, model.Request{})
		s.target.Restart()
		s.send("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		s.send("A", model.EndTxn, a.endTxn(true))
		s.check("restart-keeps-open-txn")
	})
}
