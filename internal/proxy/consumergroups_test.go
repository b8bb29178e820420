package proxy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// startConsumerCluster is a cluster whose KIP-848 groups heartbeat
// often, so that a test sees its members reconcile in well under a
// second.
func startConsumerCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "trips"),
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "50"}))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	return cluster
}

// consumer848 is a franz-go member of group on KIP-848's protocol
// (kgo.ServerSideBalancer: ConsumerGroupHeartbeat, the range assignor),
// which commits by hand. assigned notes each member that was given a
// partition.
func consumer848(t *testing.T, addr, name, group string, assigned *sync.Map) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(name), kgo.ConsumeTopics("trips"),
		kgo.ConsumerGroup(group), kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
			if len(got["trips"]) > 0 {
				assigned.Store(name, true)
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			_ = cl.CommitUncommittedOffsets(ctx) // what it read of the partitions it gives up
		}))
	require.NoError(t, err)
	return c
}

// produceTrips writes records from..to-1 over trips' three partitions.
func produceTrips(t *testing.T, addr string, from, to int) {
	t.Helper()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("trip-writer"), kgo.DefaultProduceTopic("trips"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	for i := from; i < to; i++ {
		rec := &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Partition: int32(i % 3)}
		require.NoError(t, producer.ProduceSync(context.Background(), rec).FirstErr())
	}
}

// consumerHeartbeats is the history's consumer_group_heartbeat ops.
func consumerHeartbeats(h histories.History) []histories.Op {
	var out []histories.Op
	for _, op := range h.Ops {
		if op.Kind == model.ConsumerGroupHeartbeat {
			out = append(out, op)
		}
	}
	return out
}

// Two franz-go consumers share a KIP-848 group through the proxy: the
// first reads everything, the second's join moves partitions over (the
// first revokes them first), both commit and leave. The recording holds
// every ConsumerGroupHeartbeat as a consumer_group_heartbeat: joins at
// member epoch 0, answers with epochs and assignments by name, leaves at
// -1; the members' commits carry their member epochs. Every check holds
// on the heartbeats, and fails once the joins are left out.
func TestConsumerGroupHeartbeatsAreRecorded(t *testing.T) {
	cluster := startConsumerCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	logs := &logs{}
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: logs.logf})
	require.NoError(t, err)
	produceTrips(t, p.Addr(), 0, 6)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var assigned sync.Map
	first := consumer848(t, p.Addr(), "trip-reader-1", "trip-readers", &assigned)
	for read := 0; read < 6; {
		fetches := first.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		read += fetches.NumRecords()
	}
	require.NoError(t, first.CommitUncommittedOffsets(ctx))
	second := consumer848(t, p.Addr(), "trip-reader-2", "trip-readers", &assigned)
	// Both poll until the second holds partitions: the first revoked
	// them, and the group reconciled.
	for !assignedSome(&assigned, "trip-reader-2") {
		require.NoError(t, ctx.Err(), "the second member never got a partition")
		poll, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		first.PollFetches(poll)
		second.PollFetches(poll)
		stop()
	}
	produceTrips(t, p.Addr(), 6, 12)
	for _, c := range []*kgo.Client{first, second} {
		poll, stop := context.WithTimeout(ctx, 500*time.Millisecond)
		c.PollFetches(poll)
		stop()
		require.NoError(t, c.CommitUncommittedOffsets(ctx))
	}
	second.Close()
	first.Close()
	require.NoError(t, p.Close())

	h := rec.History()
	h.WallClock = true
	beats := consumerHeartbeats(h)
	require.NotEmpty(t, beats, "the heartbeats are recorded")
	joins, leaves, assignments := map[string]bool{}, map[string]bool{}, 0
	epochs := map[string]int32{} // member -> highest epoch answered
	for _, op := range beats {
		require.Equal(t, "trip-readers", op.Req.Group)
		require.NotEmpty(t, op.Req.MemberID, "franz-go speaks v1, where the client chooses its member id")
		switch op.Req.MemberEpoch {
		case model.JoinMemberEpoch:
			joins[op.Req.MemberID] = true
			require.NotNil(t, op.Req.SubscribedTopics, "a join says what it subscribes to")
			require.Equal(t, []string{"trips"}, *op.Req.SubscribedTopics)
			require.NotNil(t, op.Req.OwnedPartitions, "a join owns nothing, and says so")
			require.Empty(t, *op.Req.OwnedPartitions)
			require.Equal(t, "range", op.Req.ServerAssignor)
		case model.LeaveMemberEpoch:
			leaves[op.Req.MemberID] = true
		}
		if op.Result.Succeeded() && op.Result.Resp.MemberEpoch > 0 {
			epochs[op.Req.MemberID] = max(epochs[op.Req.MemberID], op.Result.Resp.MemberEpoch)
			if a := op.Result.Resp.MemberAssignment; a != nil && len(*a) > 0 {
				assignments++
				for _, p := range *a {
					require.Regexp(t, `^trips-[0-2]$`, string(p), "an assignment's topic ids are named")
				}
			}
		}
	}
	require.Len(t, joins, 2, "each member's join: %v", joins)
	require.Len(t, leaves, 2, "each member's leave: %v", leaves)
	require.Len(t, epochs, 2, "each member is answered a member epoch: %v", epochs)
	require.GreaterOrEqual(t, assignments, 2, "the answers carry assignments")
	commits := 0
	for _, op := range h.Ops {
		if op.Kind == model.OffsetCommit && op.Result.Succeeded() {
			commits++
			require.Contains(t, epochs, op.Req.MemberID, "a commit is a member's")
			require.Positive(t, op.Req.GenerationID, "a member's commit carries its member epoch")
		}
	}
	require.Positive(t, commits, "the members' commits are recorded")
	require.NotContains(t, logs.all(), "undecided", "every answer reads")

	// The whole recording checks: heartbeats, and commits judged by
	// member epoch.
	report := checker.Check(h, checker.Options{})
	require.True(t, report.Held(), "%v", report.Verdicts)

	// The check reads the heartbeats: without the members' joins, their
	// later heartbeats are those of members the group never had.
	noJoins := without(h, func(op histories.Op) bool {
		return op.Kind == model.ConsumerGroupHeartbeat && op.Req.MemberEpoch == model.JoinMemberEpoch
	})
	v := checker.Check(noJoins, checker.Options{}).Verdict(checker.Linearizable)
	require.False(t, v.Held(), "%v", v)
}

// without is h without the ops drop picks.
func without(h histories.History, drop func(histories.Op) bool) histories.History {
	out := h
	out.Ops = nil
	for _, op := range h.Ops {
		if !drop(op) {
			out.Ops = append(out.Ops, op)
		}
	}
	return out
}

func assignedSome(assigned *sync.Map, name string) bool {
	_, ok := assigned.Load(name)
	return ok
}

// A member stalled while it revokes a partition is fenced at its
// rebalance timeout: the first member, told to give up a partition to the
// second, is stalled through the fault API as it starts revoking, and
// woken after its rebalance timeout. Its held heartbeat is then answered
// UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH, and the member joins again.
// Every check holds. The model explains the fence by the rebalance
// timeout the member's heartbeats sent: with a longer one written in its
// place, the member is not fenced in time, and the answers that show it
// fenced are wrong.
func TestAMemberStalledWhileRevokingIsFenced(t *testing.T) {
	const rebalance = 500 * time.Millisecond
	cluster := startConsumerCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	produceTrips(t, p.Addr(), 0, 6)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stalled := make(chan struct{})
	var once sync.Once
	first, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("trip-reader-1"), kgo.ConsumeTopics("trips"),
		kgo.ConsumerGroup("trip-readers"), kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(), kgo.RebalanceTimeout(rebalance),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
			once.Do(func() {
				if err := p.Fault("trip-reader-1", "stall", 0); err != nil {
					t.Errorf("stall: %v", err)
				}
				close(stalled)
			})
		}))
	require.NoError(t, err)
	defer first.Close()
	for read := 0; read < 6; {
		fetches := first.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		read += fetches.NumRecords()
	}
	var assigned sync.Map
	second := consumer848(t, p.Addr(), "trip-reader-2", "trip-readers", &assigned)
	defer second.Close()
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		for ctx.Err() == nil && !assignedSome(&assigned, "trip-reader-2") {
			poll, stop := context.WithTimeout(ctx, 50*time.Millisecond)
			second.PollFetches(poll)
			stop()
		}
	}()
	// The first member's revocation runs in its poll.
	for told := false; !told; {
		require.NoError(t, ctx.Err(), "the first member was never told to revoke")
		poll, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		first.PollFetches(poll)
		stop()
		select {
		case <-stalled:
			told = true
		default:
		}
	}
	time.Sleep(4 * rebalance)
	require.NoError(t, p.Fault("trip-reader-1", "wake", 0))
	<-polling
	require.NoError(t, ctx.Err(), "the second member never got a partition")
	// The first member hears it was fenced, and joins again.
	fenced := func() (string, bool) {
		var memberID string
		for _, op := range consumerHeartbeats(rec.History()) {
			if op.Proc != "trip-reader-1" && op.Client != "trip-reader-1" {
				continue
			}
			if memberID == "" {
				memberID = op.Req.MemberID
			}
			if op.Req.MemberID == memberID && (op.Result.Err == model.UnknownMemberID || op.Result.Err == model.FencedMemberEpoch) {
				return memberID, true
			}
		}
		return memberID, false
	}
	for {
		if _, ok := fenced(); ok {
			break
		}
		require.NoError(t, ctx.Err(), "the first member's fence is never recorded")
		poll, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		first.PollFetches(poll)
		stop()
	}
	second.Close()
	first.Close()
	require.NoError(t, p.Close())

	h := rec.History()
	h.WallClock = true
	stalls := 0
	for _, op := range h.Ops {
		if op.Proc == "trip-reader-1" && (op.Kind == model.Stall || op.Kind == model.Wake) {
			stalls++
		}
	}
	require.Equal(t, 2, stalls, "the stall and the wake are recorded")
	memberID, _ := fenced()

	report := checker.Check(h, checker.Options{})
	require.True(t, report.Held(), "%v", report.Verdicts)

	// The member with a rebalance timeout of a minute: its revocation
	// has not run out when the answers show it fenced.
	longer := h
	longer.Ops = slices.Clone(h.Ops)
	for i, op := range longer.Ops {
		if op.Kind == model.ConsumerGroupHeartbeat && op.Req.MemberID == memberID && op.Req.RebalanceTimeoutMs > 0 {
			longer.Ops[i].Req.RebalanceTimeoutMs = 60_000
		}
	}
	v := checker.Check(longer, checker.Options{}).Verdict(checker.Linearizable)
	require.False(t, v.Held(), "%v", v)
}

// A topic id that no Metadata answer the proxy forwarded named is asked
// of the cluster, so that a KIP-848 assignment that comes back before
// the client's own Metadata answer is still named; an id the cluster
// does not know stays unnamed.
func TestATopicIDIsAskedOfTheCluster(t *testing.T) {
	cluster := startConsumerCluster(t)
	p, _ := startProxy(t, cluster.ListenAddrs())
	direct, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	require.NoError(t, err)
	defer direct.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, direct)
	require.NoError(t, err)
	var id [16]byte
	for _, topic := range meta.Topics {
		if topic.Topic != nil && *topic.Topic == "trips" {
			id = topic.TopicID
		}
	}
	require.NotZero(t, id, "the cluster names trips' id")

	_, known := p.topics.named(id)
	require.False(t, known, "no answer through the proxy named it")
	name, ok := p.cfg.Cluster.TopicByID(ctx, id)
	require.True(t, ok)
	require.Equal(t, "trips", name)
	require.Equal(t, int32(3), p.cfg.Cluster.Partitions("trips"))
	_, ok = p.cfg.Cluster.TopicByID(ctx, [16]byte{7})
	require.False(t, ok)
}
