package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// TestRestoreWaitsForAnOpenTransaction drives the shape the adversary met
// at 20,000 interleavings, step by step: the adversary opens a transaction
// on the fare writer's partition and never ends it; the writer then
// commits trip-101 above the adversary's first record, and crashes. Its
// successor's restore read stops at the last stable offset, below the
// high watermark, with trip-101 hidden above it. The successor must not
// take that read for complete (it would write trip-101 again): it waits,
// sending nothing, through the quiet phase's first settle, until the
// quiet phase's tick aborts the adversary's transaction on its timeout;
// then it reads trip-101 and writes only trip-102.
func TestRestoreWaitsForAnOpenTransaction(t *testing.T) {
	onModelAndImpl(t, restoreAfterForeignTxn)
}

// onModelAndImpl runs test on the model and on impl, under each protocol.
func onModelAndImpl(t *testing.T, test func(t *testing.T, target model.Target, v int)) {
	targets := map[string]func(v int) model.Target{
		"model": func(v int) model.Target { return model.NewBroker(model.Options{TxnVersion: v}) },
		"impl":  func(v int) model.Target { return impl.New(impl.Config{TxnVersion: v}) },
	}
	for _, name := range []string{"model", "impl"} {
		for _, v := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/v%d", name, v), func(t *testing.T) { test(t, targets[name](v), v) })
		}
	}
}

func restoreAfterForeignTxn(t *testing.T, target model.Target, v int) {
	sc, err := ScenarioNamed(adversaryScenario)
	require.NoError(t, err)
	r := &run{sc: sc, target: target, v2: v >= 2, cov: NewCoverage()}
	r.h.TransactionsVersion, r.h.Trips = v, []string{}
	r.addWriters(1, 2, 1)
	a := r.procs[0]
	w := a.c.(*fareWriter)
	move := func(p *proc) {
		t.Helper()
		require.True(t, r.send(p), "%s has nothing to send", p.name)
		r.deliver(p, false)
	}

	// The writer starts on an empty partition: its restore is complete.
	move(a) // InitProducerId
	move(a) // the restore read: nothing, nothing hidden
	require.Equal(t, writerBegin, w.phase)

	// The adversary opens a transaction on the writer's partition.
	adv := r.spawnAdversary()
	bad := adv.c.(*adversary)
	init := model.NewRequest()
	init.TransactionalID, init.TimeoutMs = "adversary-0", maxAdversaryTimeoutMs
	bad.queue = append(bad.queue, model.Op{Kind: model.InitProducerID, Req: init})
	move(adv)
	require.Len(t, bad.granted, 1)
	req := requestOf(bad.granted[0])
	if v < 2 {
		req.Partitions = []model.Partition{w.shard.out}
		bad.queue = append(bad.queue, model.Op{Kind: model.AddPartitions, Req: req})
		move(adv)
		req = requestOf(bad.granted[0])
	}
	req.Partition, req.Sequence = w.shard.out, 0
	req.Records = []model.Record{{Key: "junk-open", Value: "not a fare"}}
	bad.queue = append(bad.queue, model.Op{Kind: model.Produce, Req: req})
	move(adv)
	require.True(t, bad.inTxn())

	// The writer commits trip-101 above the adversary's record, and crashes.
	for !w.committed["trip-101"] {
		move(a)
	}
	r.crash(a, false)
	b := r.slots[0].current
	require.NotSame(t, a, b)
	move(b) // InitProducerId
	move(b) // the restore read stops at the adversary's open transaction
	fetch := r.h.Ops[len(r.h.Ops)-1]
	require.Equal(t, model.Fetch, fetch.Kind)
	require.Less(t, fetch.Result.Resp.LastStableOffset, fetch.Result.Resp.HighWatermark)
	waited := !hasNext(b)

	r.quiesce()

	report := checker.Check(r.h, checker.Options{})
	require.True(t, report.Held(), "%v", report.Violated())
	var reads, writes int
	for _, op := range r.h.Ops {
		switch {
		case op.Proc == b.name && op.Kind == model.Fetch:
			reads++
		case op.Kind == model.Produce && len(op.Req.Records) > 0 && op.Req.Records[0].Key == "trip-101":
			writes++
		}
	}
	require.Equal(t, 1, writes, "trip-101 was written again")
	require.True(t, waited, "a writer whose restore read stopped below the high watermark went on without waiting")
	// One read before the tick, and two after it (trip-101, then nothing
	// but the markers before the last stable offset): the writer waited
	// rather than read the hidden partition again and again.
	require.Equal(t, 3, reads, "the restarted writer's restore reads")
}
