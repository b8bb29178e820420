package impl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A topic's deletion tombstones every group's offsets of it, committed
// and pending, and a restart replays the tombstones; CreatePartitions
// refuses a count that does not grow the topic. Each answer is one the
// model takes.
func TestTopicDeletionDropsOffsets(t *testing.T) {
	ctx := context.Background()
	b := New(Config{TxnVersion: 2})
	state := model.Init(model.Options{TxnVersion: 2})
	send := func(kind model.Kind, r model.Request) model.Result {
		var res model.Result
		switch kind {
		case model.CreateTopics, model.CreatePartitions, model.DeleteTopics:
			res = b.TopicAdmin(kind, r)
		default:
			var err error
			res, err = model.Send(ctx, b, model.Op{Kind: kind, Req: r})
			require.NoError(t, err)
		}
		next, err := model.Check(state, model.Op{Kind: kind, Req: r}, res)
		require.NoError(t, err, "%s %+v answered %+v", kind, r, res)
		state = next
		return res
	}
	commit := model.NewRequest()
	commit.Group, commit.Offsets = "g", map[model.Partition]int64{"foo-0": 5, "bar-0": 9}
	require.True(t, send(model.OffsetCommit, commit).Succeeded())

	init := model.NewRequest()
	init.TransactionalID = "t"
	pid := send(model.InitProducerID, init).Resp
	txnCommit := model.NewRequest()
	txnCommit.TransactionalID, txnCommit.ProducerID, txnCommit.Epoch = "t", pid.ProducerID, pid.Epoch
	txnCommit.Group, txnCommit.Offsets = "g", map[model.Partition]int64{"foo-1": 3}
	require.True(t, send(model.TxnOffsetCommit, txnCommit).Succeeded())

	grow := model.NewRequest()
	grow.Topic, grow.PartitionCount = "foo", 2
	require.Equal(t, model.InvalidPartitions, send(model.CreatePartitions, grow).Err, "foo has Config.TopicPartitions, 3")
	del := model.NewRequest()
	del.Topic = "foo"
	require.True(t, send(model.DeleteTopics, del).Succeeded())
	require.Equal(t, model.UnknownTopicOrPartition, send(model.DeleteTopics, del).Err)

	end := model.NewRequest()
	end.TransactionalID, end.ProducerID, end.Epoch, end.Commit = "t", pid.ProducerID, pid.Epoch, true
	require.True(t, send(model.EndTxn, end).Succeeded())

	fetch := func(p model.Partition) int64 {
		r := model.NewRequest()
		r.Group, r.Partition = "g", p
		res := send(model.OffsetFetch, r)
		require.True(t, res.Succeeded())
		return res.Resp.Offset
	}
	for range 2 {
		require.Equal(t, model.NoOffset, fetch("foo-0"), "the committed offset is tombstoned")
		require.Equal(t, model.NoOffset, fetch("foo-1"), "the pending offset is tombstoned, so the commit lands nothing")
		require.Equal(t, int64(9), fetch("bar-0"), "another topic's offset stays")
		b.Restart()
		state, _ = model.Check(state, model.Op{Kind: model.BrokerRestart}, model.Result{})
	}
}
