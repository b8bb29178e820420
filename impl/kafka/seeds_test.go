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
		require.Equal(t, model.FencedProducer, model.ClassOf(commit.Err), "%+v", commit)

		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9001"}, keysOf(read.Records))
		require.Equal(t, int64(2), read.Records[0].Offset)
		require.Equal(t, int64(4), read.HighWatermark)
		require.Equal(t, int64(4), read.LastStableOffset)

		r := s.check("seed-000-zombie-fenced")
		for _, v := range r.Verdicts {
			t.Logf("%s", v)
		}
	})
}
