package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// TestAdversaryReadsPastTheStableOffset drives the adversary's read from
// past a record of its open transaction: a read_committed fetch from
// above the last stable offset and not past the log's end, which Kafka
// answers with no record (a fetch from there once made a mutant of impl
// panic unseen: no client of the workload read there).
func TestAdversaryReadsPastTheStableOffset(t *testing.T) {
	onModelAndImpl(t, readPastOpenTxn)
}

func readPastOpenTxn(t *testing.T, target model.Target, v int) {
	sc, err := ScenarioNamed(adversaryScenario)
	require.NoError(t, err)
	r := &run{sc: sc, target: target, v2: v >= 2, cov: NewCoverage()}
	r.h.TransactionsVersion, r.h.Trips = v, []string{}
	adv := r.spawnAdversary()
	bad := adv.c.(*adversary)
	move := func(op model.Op) model.Result {
		t.Helper()
		bad.queue = append(bad.queue, op)
		require.True(t, r.send(adv))
		r.deliver(adv, false)
		return r.h.Ops[len(r.h.Ops)-1].Result
	}

	init := model.NewRequest()
	init.TransactionalID, init.TimeoutMs = "adversary-0", maxAdversaryTimeoutMs
	move(model.Op{Kind: model.InitProducerID, Req: init})
	require.Len(t, bad.granted, 1)
	part := model.Partition(writerTopic + "-0")
	if v < 2 {
		add := requestOf(bad.granted[0])
		add.Partitions = []model.Partition{part}
		move(model.Op{Kind: model.AddPartitions, Req: add})
	}
	for seq := range int32(2) {
		w := requestOf(bad.granted[0])
		w.Partition, w.Sequence = part, seq
		w.Records = []model.Record{{Key: fmt.Sprintf("junk-open-%d", seq), Value: "not a fare"}}
		move(model.Op{Kind: model.Produce, Req: w})
	}
	require.Equal(t, int64(2), bad.past[part])

	got := move(bad.readPast(part))
	require.True(t, got.Succeeded(), "%v", got)
	require.Empty(t, got.Resp.Records)
	require.Equal(t, int64(2), got.Resp.HighWatermark)
	require.Equal(t, int64(0), got.Resp.LastStableOffset, "the open transaction holds the last stable offset at its first record")

	report := checker.Check(r.h, checker.Options{})
	require.True(t, report.Held(), "%v", report.Violated())
}
