package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Two consumers share a group through the proxy, so that the second one's
// join rebalances the first. The recording holds each round in two parts
// (join_group with join_only, then sync_group) and the heartbeats with
// their answers, and the reference model explains it: linearizable holds.
func TestRebalanceRecordedInTwoPartsIsLinearizable(t *testing.T) {
	cluster := startCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	ctx := context.Background()

	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"), kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	for i := range 6 {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Partition: int32(i % 3)}).FirstErr())
	}
	producer.Close()

	var assigned sync.Map // client id -> its last assignment's size
	consumer := func(name string) *kgo.Client {
		c, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID(name), kgo.ConsumeTopics("trips"),
			kgo.ConsumerGroup("fare-readers"), kgo.HeartbeatInterval(50*time.Millisecond),
			kgo.Balancers(kgo.RoundRobinBalancer()), kgo.DisableAutoCommit(), // a plain OffsetCommit is not in the format
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
				assigned.Store(name, len(got["trips"]))
			}))
		require.NoError(t, err)
		return c
	}
	holdsShare := func(name string) bool {
		n, ok := assigned.Load(name)
		return ok && n.(int) > 0 && n.(int) < 3
	}
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	first := consumer("fare-reader-1")
	for read := 0; read < 6; {
		fetches := first.PollFetches(deadline)
		require.NoError(t, deadline.Err())
		read += fetches.NumRecords()
	}
	second := consumer("fare-reader-2")
	// Both poll until each holds a share, fewer than all three: the
	// second's join rebalanced the first.
	for !holdsShare("fare-reader-1") || !holdsShare("fare-reader-2") {
		require.NoError(t, deadline.Err())
		poll, stop := context.WithTimeout(deadline, 100*time.Millisecond)
		first.PollFetches(poll)
		second.PollFetches(poll)
		stop()
	}
	second.Close()
	first.Close()
	require.NoError(t, p.Close())

	h := rec.History()
	kinds := map[model.Kind]int{}
	for _, op := range h.Ops {
		kinds[op.Kind]++
		if op.Kind == model.JoinGroup {
			require.True(t, op.Req.JoinOnly)
		}
	}
	require.GreaterOrEqual(t, kinds[model.SyncGroup], 3, "a sync of each member's rounds")
	v := checker.Check(h, checker.Options{}).Verdict(checker.Linearizable)
	require.True(t, v.Held(), "%v", v)
}
