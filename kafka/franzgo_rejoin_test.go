package kafka

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// msgLog keeps the messages a kgo client logs.
type msgLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *msgLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }
func (l *msgLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, msg)
}
func (l *msgLog) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs, msg)
}

// TestFranzGoRejoinAfterUnknownMember pins what franz-go v1.22.3 (classic
// protocol, default balancers, so cooperative-sticky) does when a member's
// session expired without it noticing, and its next JoinGroup is answered
// UNKNOWN_MEMBER_ID. kfake expires A for real: A's heartbeats are answered
// here and never reach the coordinator. B then owns p0, reads it and commits 4,
// and leaves. A's ForceRebalance sends a JoinGroup under its old member id,
// which kfake answers UNKNOWN_MEMBER_ID. kgo's handleJoinResp only clears the
// member id and rejoins: no OnPartitionsLost, and lastAssigned/nowAssigned are
// kept. A claims p0 as owned, is given p0 again, diffAssigned finds nothing
// added, and no OffsetFetch is sent. A goes on from its stale in-memory
// position (2, its buffered records) and commits 3 over B's 4, so the
// group's committed offset moves back.
//
// Java's KafkaConsumer does not do this. On UNKNOWN_MEMBER_ID,
// AbstractCoordinator resets its generation (resetStateOnResponseError), and
// ConsumerCoordinator.onJoinPrepare then treats every owned partition as lost
// (onPartitionsLost) and drops them. The new assignment has p0 as a new
// partition, so its committed offset (4) is fetched again and A resumes at 4.
func TestFranzGoRejoinAfterUnknownMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)

	var oldA atomic.Value // A's member id once it is to be expired
	oldA.Store("")
	var offsetFetches atomic.Int32
	var jmu sync.Mutex
	var joins []string // member ids of JoinGroup requests, in order
	c.ControlKey(int16(kmsg.Heartbeat), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.HeartbeatRequest)
		if old := oldA.Load().(string); old == "" || req.MemberID != old {
			return nil, nil, false
		}
		c.KeepControl()
		return req.ResponseKind(), nil, true // answered OK, never seen by the group
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		offsetFetches.Add(1)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		jmu.Lock()
		joins = append(joins, r.(*kmsg.JoinGroupRequest).MemberID)
		jmu.Unlock()
		return nil, nil, false
	})

	admin, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	defer admin.Close()
	for i := range 6 {
		require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	committed := func() int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "g"
		resp, err := req.RequestWith(ctx, admin)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].Offset
	}
	poll := func(cl *kgo.Client, n int) (offs []int64) {
		for len(offs) < n {
			fs := cl.PollRecords(ctx, n-len(offs))
			require.NoError(t, ctx.Err(), "timed out polling")
			fs.EachRecord(func(r *kgo.Record) { offs = append(offs, r.Offset) })
		}
		return offs
	}

	var mu sync.Mutex
	var assigned, revoked, lost []map[string][]int32
	rec := func(to *[]map[string][]int32) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			*to = append(*to, m)
			mu.Unlock()
		}
	}
	member := func(id string, more ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{seeds, kgo.ClientID(id), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
			kgo.DisableAutoCommit(), kgo.SessionTimeout(500 * time.Millisecond), kgo.RebalanceTimeout(500 * time.Millisecond),
			kgo.HeartbeatInterval(100 * time.Millisecond)}, more...)...)
		require.NoError(t, err)
		return cl
	}
	logA := new(msgLog)
	a := member("A", kgo.WithLogger(logA), kgo.OnPartitionsAssigned(rec(&assigned)),
		kgo.OnPartitionsRevoked(rec(&revoked)), kgo.OnPartitionsLost(rec(&lost)))
	defer a.Close()
	require.Equal(t, []int64{0, 1}, poll(a, 2)) // 2..5 stay buffered in A
	idA, _ := a.GroupMetadata()
	oldA.Store(idA) // from now on A's session runs out

	b := member("B")
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5}, poll(b, 6), "B owns p0 only once the coordinator removed A")
	var commitErr error
	b.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"t": {0: {Epoch: -1, Offset: 4}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				commitErr = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
		})
	require.NoError(t, commitErr)
	b.Close() // leaves g, so that A is given p0 again
	require.EqualValues(t, 4, committed())

	offsetFetches.Store(0)
	a.ForceRebalance()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(assigned) == 2 }, 10*time.Second, 10*time.Millisecond)
	idA2, _ := a.GroupMetadata()
	require.NotEqual(t, idA, idA2)
	require.True(t, logA.has("join returned UnknownMemberID, rejoining without a member id"))
	jmu.Lock()
	require.Contains(t, joins, idA, "A rejoined under its expired member id")
	jmu.Unlock()

	first := poll(a, 1)[0]
	mu.Lock()
	require.Empty(t, lost, "kgo never calls OnPartitionsLost (Java would, with p0)")
	require.Len(t, revoked, 1) // the ForceRebalance's end of session, which revokes nothing
	require.Empty(t, revoked[0])
	require.Equal(t, map[string][]int32{"t": {0}}, assigned[0])
	require.Empty(t, assigned[1], "p0 is not new to A's second session (for Java it is)")
	mu.Unlock()
	require.Zero(t, offsetFetches.Load(), "no OffsetFetch after the rejoin (Java fetches p0's 4)")
	require.EqualValues(t, 2, first, "A resumes at its stale position 2, not at the committed 4")

	require.NoError(t, a.CommitUncommittedOffsets(ctx))
	require.EqualValues(t, 3, committed(), "A's commit moves g's committed offset back from 4 to 3")
}
