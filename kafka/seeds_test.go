package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

const fares2 model.Partition = "fares-2"

// Seed 000: a zombie producer is fenced by the epoch a new owner's init
// bumps; its open transaction is aborted, its later produce refused, and a
// read_committed reader sees the trip once.
func TestSeed000ZombieFenced(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		got := s.ok("A", model.InitProducerID, initRequest("fare-writer-7"))
		a := session{"fare-writer-7", got.ProducerID, got.Epoch}
		require.Equal(t, int16(0), a.epoch)
		if s.target.TransactionsVersion() == 1 {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		require.Equal(t, int64(0), s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001")).BaseOffset)

		// A stalls; B starts with the same config and fences it.
		got = s.ok("B", model.InitProducerID, initRequest("fare-writer-7"))
		b := session{"fare-writer-7", got.ProducerID, got.Epoch}
		require.Equal(t, a.pid, b.pid)
		require.Greater(t, b.epoch, a.epoch)
		if s.target.TransactionsVersion() == 1 {
			s.ok("B", model.AddPartitions, b.addPartitions(fares2))
		}
		// Offset 1 is A's ABORT marker.
		require.Equal(t, int64(2), s.ok("B", model.Produce, b.produce(fares2, 0, "trip-9001")).BaseOffset)
		s.ok("B", model.EndTxn, b.endTxn(true))

		// A wakes: its produce and its commit are fenced.
		zombie := s.send("A", model.Produce, a.produce(fares2, 1, "trip-9002"))
		require.False(t, zombie.Succeeded())
		t.Logf("zombie produce: %s", zombie.Err)
		commit := s.send("A", model.EndTxn, a.endTxn(true))
		require.Equal(t, model.FencedProducer, model.ClassOf(model.EndTxn, commit.Err), "%+v", commit)

		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9001"}, keysOf(read.Records))
		require.Equal(t, int64(2), read.Records[0].Offset)
		require.Equal(t, int64(4), read.HighWatermark)
		require.Equal(t, int64(4), read.LastStableOffset)

		s.check("seed-000-zombie-fenced")
	})
}

// Seed 001: an idempotent-only producer's dedup state is its session's. A
// write whose answer was lost, resent after a restart, lands twice: the
// broker is right (linearizable), and exactly-once catches the config.
func TestSeed001IdempotentRestartDuplicates(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		first := s.ok("P", model.InitProducerID, initRequest(""))
		p := session{"", first.ProducerID, first.Epoch}
		require.Equal(t, int16(0), p.epoch)
		require.Equal(t, int64(0), s.ok("P", model.Produce, p.produce(fares2, 0, "trip-9000")).BaseOffset)
		s.lose("P", model.Produce, p.produce(fares2, 1, "trip-9001"))

		// P crashes and restarts: a fresh producer id, no link to the old.
		second := s.ok("P2", model.InitProducerID, initRequest(""))
		p2 := session{"", second.ProducerID, second.Epoch}
		require.NotEqual(t, p.pid, p2.pid)
		require.Equal(t, int16(0), p2.epoch)
		require.Equal(t, int64(2), s.ok("P2", model.Produce, p2.produce(fares2, 0, "trip-9001")).BaseOffset)

		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9000", "trip-9001", "trip-9001"}, keysOf(read.Records))

		s.check("seed-001-idempotent-restart", "exactly-once")
	})
}

// Within one session the broker deduplicates: the resend of a batch whose
// answer was lost gets the original offset and writes nothing.
func TestIdempotentRetryDeduplicated(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		got := s.ok("P", model.InitProducerID, initRequest(""))
		p := session{"", got.ProducerID, got.Epoch}
		s.lose("P", model.Produce, p.produce(fares2, 0, "trip-9001"))
		require.Equal(t, int64(0), s.ok("P", model.Produce, p.produce(fares2, 0, "trip-9001")).BaseOffset)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadUncommitted))
		require.Equal(t, []string{"trip-9001"}, keysOf(read.Records))
		s.check("idempotent-retry-deduplicated")
	})
}

// Seed 002: a zombie consumer is fenced by its group generation (KIP-447):
// after a rebalance its transactional offset commit with the old group
// metadata is refused, and the committed offset is the new owner's.
func TestSeed002StaleGenerationFenced(t *testing.T) {
	const group = "fare-workers"
	trips0, fares0 := model.Partition("trips-0"), model.Partition("fares-0")
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		v1 := s.target.TransactionsVersion() == 1
		j1 := s.ok("W1", model.JoinGroup, joinRequest(group, "", trips0))
		require.Equal(t, []model.Partition{trips0}, j1.Assignment)
		got := s.ok("W1", model.InitProducerID, initRequest("fare-worker-w1"))
		w1 := session{"fare-worker-w1", got.ProducerID, got.Epoch}
		if v1 {
			s.ok("W1", model.AddPartitions, w1.addPartitions(fares0))
		}
		s.ok("W1", model.Produce, w1.produce(fares0, 0, "trip-9001"))

		// W1 stalls in a long pause, its heartbeats too; the group
		// rebalances and trips-0 goes to W2.
		s.target.silence(j1.MemberID)
		j2 := s.ok("W2", model.JoinGroup, joinRequest(group, "", trips0))
		require.Greater(t, j2.GenerationID, j1.GenerationID)
		require.Equal(t, []model.Partition{trips0}, j2.Assignment)
		got = s.ok("W2", model.InitProducerID, initRequest("fare-worker-w2"))
		w2 := session{"fare-worker-w2", got.ProducerID, got.Epoch}
		if v1 {
			s.ok("W2", model.AddPartitions, w2.addPartitions(fares0))
		}
		s.ok("W2", model.Produce, w2.produce(fares0, 0, "trip-9001"))
		s.ok("W2", model.AddOffsets, w2.addOffsets(group))
		s.ok("W2", model.TxnOffsetCommit, w2.commitOffsets(group, j2.MemberID, j2.GenerationID, map[model.Partition]int64{trips0: 1}))
		s.ok("W2", model.EndTxn, w2.endTxn(true))

		// W1 wakes and commits with its stale group metadata.
		s.ok("W1", model.AddOffsets, w1.addOffsets(group))
		stale := s.send("W1", model.TxnOffsetCommit, w1.commitOffsets(group, j1.MemberID, j1.GenerationID, map[model.Partition]int64{trips0: 1}))
		require.Equal(t, model.FencedConsumer, model.ClassOf(model.TxnOffsetCommit, stale.Err), "%+v", stale)
		s.ok("W1", model.EndTxn, w1.endTxn(false))

		require.Equal(t, int64(1), s.ok("reader", model.OffsetFetch, offsetFetchRequest(group, trips0)).Offset)
		read := s.ok("reader", model.Fetch, fetchRequest(fares0, model.ReadCommitted))
		require.Equal(t, []string{"trip-9001"}, keysOf(read.Records))

		s.check("seed-002-fenced-by-generation")
	})
}
