package impl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A request naming the empty group id is answered as the model answers
// it: INVALID_GROUP_ID to a join, a leave and a transactional commit, and
// a group like any other to a plain commit and a fetch of its offsets
// (model: invalid-group-id).
func TestEmptyGroupIDLikeTheModel(t *testing.T) {
	ref, b := model.NewBroker(model.Options{TxnVersion: 1}), New(Config{TxnVersion: 1})
	send := func(kind model.Kind, r model.Request) model.Result {
		r.EmptyGroup = true
		want, err := model.Send(context.Background(), ref, model.Op{Kind: kind, Req: r})
		require.NoError(t, err)
		got, err := model.Send(context.Background(), b, model.Op{Kind: kind, Req: r})
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", kind)
		return got
	}
	init := model.NewRequest()
	init.TransactionalID = "t"
	for _, broker := range []model.Broker{ref, b} {
		_, err := model.Send(context.Background(), broker, model.Op{Kind: model.InitProducerID, Req: init})
		require.NoError(t, err)
	}
	join := model.NewRequest()
	join.Partitions = []model.Partition{"in-0"}
	require.Equal(t, model.InvalidGroupID, send(model.JoinGroup, join).Err)
	leave := model.NewRequest()
	leave.MemberID = "m"
	require.Equal(t, model.InvalidGroupID, send(model.LeaveGroup, leave).Err)
	commit := model.NewRequest()
	commit.TransactionalID, commit.ProducerID, commit.Epoch = "t", 1, 0
	commit.Offsets = map[model.Partition]int64{"in-0": 3}
	require.Equal(t, model.InvalidGroupID, send(model.TxnOffsetCommit, commit).Err)
	plain := model.NewRequest()
	plain.Offsets = map[model.Partition]int64{"in-0": 5}
	require.True(t, send(model.OffsetCommit, plain).Succeeded())
	fetch := model.NewRequest()
	fetch.Partition = "in-0"
	require.Equal(t, int64(5), send(model.OffsetFetch, fetch).Resp.Offset)
}

// A join naming the empty protocol type is INCONSISTENT_GROUP_PROTOCOL,
// as the model answers it (model: protocol-unsupported).
func TestEmptyProtocolTypeLikeTheModel(t *testing.T) {
	ref, b := model.NewBroker(model.Options{TxnVersion: 1}), New(Config{TxnVersion: 1})
	join := model.NewRequest()
	join.Group, join.Partitions, join.EmptyProtocolType = "g", []model.Partition{"in-0"}, true
	join.Protocols = []model.Protocol{{Name: "range"}}
	op := model.Op{Kind: model.JoinGroup, Req: join}
	want, err := model.Send(context.Background(), ref, op)
	require.NoError(t, err)
	got, err := model.Send(context.Background(), b, op)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, model.InconsistentGroupProtocol, got.Err)
}
