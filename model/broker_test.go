package model_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// Send gives a plain commit to a broker that takes one, and refuses it,
// naming the kind, to one that does not: a function that wraps another
// broker, such as a recorder's, never forwards one its broker lacks.
func TestSendOffsetCommit(t *testing.T) {
	req := model.NewRequest()
	req.Group, req.Offsets = "g", map[model.Partition]int64{"in-0": 1}
	op := model.Op{Kind: model.OffsetCommit, Req: req}

	res, err := model.Send(context.Background(), model.NewBroker(model.Options{}), op)
	require.NoError(t, err)
	require.True(t, res.Succeeded(), "%+v", res)

	wrapper := model.BrokerFunc(func(context.Context, model.Kind, model.Request) model.Result {
		t.Fatal("a broker without OffsetCommit was sent one")
		return model.Result{}
	})
	_, err = model.Send(context.Background(), wrapper, op)
	require.EqualError(t, err, `model.BrokerFunc takes no "offset_commit": it is not an OffsetCommitter`)
}

// Send gives a ConsumerGroupHeartbeat to a broker that answers one, and
// refuses it, naming the kind, to one that does not.
func TestSendConsumerGroupHeartbeat(t *testing.T) {
	req := model.NewRequest()
	topics := []string{"in"}
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMs = "g", "m1", model.JoinMemberEpoch, 60_000
	req.SubscribedTopics, req.OwnedPartitions = &topics, &[]model.Partition{}
	op := model.Op{Kind: model.ConsumerGroupHeartbeat, Req: req}

	res, err := model.Send(context.Background(), model.NewBroker(model.Options{}), op)
	require.NoError(t, err)
	require.True(t, res.Succeeded(), "%+v", res)
	require.Equal(t, "m1", res.Resp.MemberID)
	require.Equal(t, int32(1), res.Resp.MemberEpoch, "a join bumps the group epoch, and the member takes it")

	wrapper := model.BrokerFunc(func(context.Context, model.Kind, model.Request) model.Result {
		t.Fatal("a broker without ConsumerGroupHeartbeat was sent one")
		return model.Result{}
	})
	_, err = model.Send(context.Background(), wrapper, op)
	require.EqualError(t, err, `model.BrokerFunc takes no "consumer_group_heartbeat": it is not a ConsumerGroupHeartbeater`)
}
