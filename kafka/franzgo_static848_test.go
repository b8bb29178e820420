package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// TestFranzGoStaticConsumerLeaveOmitsInstanceID pins what franz-go
// v1.22.3 sends when a static member (kgo.InstanceID) of a KIP-848
// consumer group (kgo.ServerSideBalancer) leaves. Its join carries the
// instance id. Its leave is a ConsumerGroupHeartbeat at member epoch -2
// with no instance id, because groupConsumer.leave848
// (pkg/kgo/consumer_group_848.go) builds a fresh request and sets only
// the group, the member id and the epoch.
//
// Kafka refuses such a leave with INVALID_REQUEST ("InstanceId can't be
// null."), in 3.9 and in 4.x alike, because
// GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid
// requires an instance id at epoch -2
// (GroupMetadataManagerTest#testConsumerHeartbeatRequestValidation). The
// model gives the same answer to the request captured here. kfake
// accepts it (FINDINGS.md, 32): consumerStaticLeave finds the member by
// its member id, so kgo's LeaveGroupContext returns no error.
func TestFranzGoStaticConsumerLeaveOmitsInstanceID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer c.Close()

	var (
		mu    sync.Mutex
		beats []kmsg.ConsumerGroupHeartbeatRequest
	)
	c.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		beats = append(beats, *req.(*kmsg.ConsumerGroupHeartbeatRequest))
		return nil, nil, false // kfake answers it
	})

	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	defer prod.Close()
	require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr())

	const instance = "fare-worker-A"
	cl, err := kgo.NewClient(seeds, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.InstanceID(instance), kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	fetches := cl.PollFetches(ctx)
	require.NoError(t, fetches.Err())
	require.Equal(t, 1, fetches.NumRecords(), "the member joined and was given the topic")

	// kfake answers the leave without an error, where Kafka refuses it.
	require.NoError(t, cl.LeaveGroupContext(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, beats)
	join := beats[0]
	require.Equal(t, model.JoinMemberEpoch, join.MemberEpoch)
	require.NotNil(t, join.InstanceID, "the join carries the instance id")
	require.Equal(t, instance, *join.InstanceID)
	leave := beats[len(beats)-1]
	require.Equal(t, model.StaticLeaveMemberEpoch, leave.MemberEpoch, "a static member leaves at epoch -2")
	require.Nil(t, leave.InstanceID, "franz-go now sends its static leave with the instance id: finding 32 is fixed upstream; update known.json and FINDINGS.md")

	// The model, Kafka's answer: the captured leave is refused.
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch = leave.Group, leave.MemberID, leave.MemberEpoch
	if leave.InstanceID != nil {
		r.InstanceID = *leave.InstanceID
	}
	require.Equal(t, model.InvalidRequest, staticLeaveAnswer(t, r).Err)
	// The same leave naming its instance, as Java's consumer sends it
	// (ConsumerHeartbeatRequestManager sets the instance id on every
	// heartbeat), is taken.
	r.InstanceID = instance
	require.True(t, staticLeaveAnswer(t, r).Succeeded())
}

// staticLeaveAnswer is the model's answer to leave, sent by a member that
// joined its group as a static member (instance fare-worker-A).
func staticLeaveAnswer(t *testing.T, leave model.Request) model.Result {
	t.Helper()
	s := model.Init(model.Options{TxnVersion: 2})
	join := consumerJoin(leave.Group, leave.MemberID, "t")
	join.InstanceID = "fare-worker-A"
	s, res := model.Apply(s, model.Op{Kind: model.ConsumerGroupHeartbeat, Req: join})
	require.True(t, res.Succeeded(), "the model's join: %+v", res)
	_, res = model.Apply(s, model.Op{Kind: model.ConsumerGroupHeartbeat, Req: leave})
	require.True(t, res.Answered)
	return res
}

// TestKfakeStaticLeaveNeverExpires pins a kfake divergence that a static
// KIP-848 session meets once a worker leaves for good. A static member
// that leaves at epoch -2, naming its instance as Kafka requires, keeps
// its partitions "until it is back within session timeout". Kafka keeps
// its session timer running and removes it when the timer fires, so
// the partitions go to the others
// (GroupMetadataManager.consumerGroupStaticMemberGroupLeave;
// GroupMetadataManagerTest#testSessionTimeoutExpirationStaticMember,
// trunk of October 2024). kfake's consumerStaticLeave stops the timer,
// so the departed member holds its partitions for ever: a second member
// is given none of them, long after the session timeout.
func TestKfakeStaticLeaveNeverExpires(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A session of a second, heartbeats a quarter of it apart: a busy
	// machine (go test ./... runs packages side by side) may delay a
	// heartbeat by more than 100 ms, and the member then expires.
	const session = time.Second
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"),
		kfake.BrokerConfigs(map[string]string{"group.consumer.session.timeout.ms": "1000", "group.consumer.heartbeat.interval.ms": "250"}))
	require.NoError(t, err)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()

	beat := func(member string, epoch int32, instance *string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = "g", member, epoch, instance
		req.RebalanceTimeoutMillis = 5000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = owned
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Zero(t, resp.ErrorCode, "%s at epoch %d: %v", member, epoch, resp.ErrorCode)
		return resp
	}
	owned := func(resp *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		topics := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if resp.Assignment == nil {
			return topics
		}
		for _, a := range resp.Assignment.Topics {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = a.TopicID, a.Partitions
			topics = append(topics, rt)
		}
		return topics
	}
	count := func(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) int {
		n := 0
		for _, tp := range topics {
			n += len(tp.Partitions)
		}
		return n
	}

	// gets is how many partitions member gets once it joins after A left
	// with leaveEpoch, well past A's session timeout.
	gets := func(member string, leaveEpoch int32) int {
		t.Helper()
		instance := "fare-worker-" + member
		a := beat("A-"+member, 0, &instance, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
		a = beat("A-"+member, a.MemberEpoch, nil, owned(a))
		left := beat("A-"+member, leaveEpoch, &instance, nil)
		require.Equal(t, leaveEpoch, left.MemberEpoch)
		time.Sleep(3 * session)
		b := beat(member, 0, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
		mine := owned(b)
		for range 8 {
			time.Sleep(session / 4)
			b = beat(member, b.MemberEpoch, nil, mine)
			if b.Assignment != nil {
				mine = owned(b)
			}
		}
		beat(member, -1, nil, nil)
		return count(mine)
	}
	// The control: A leaves for good (-1), and B gets both partitions.
	require.Equal(t, 2, gets("B", -1))
	// A leaves for a while (-2) and never comes back: C gets none.
	require.Zero(t, gets("C", -2), "kfake now expires a departed static member: update FINDINGS.md")
}
