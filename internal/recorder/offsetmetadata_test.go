package recorder

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// TestRecorderCommitsPerPartition: a commit's metadata is recorded per
// partition, and its answer per partition where the codes differ: one
// partition refused OFFSET_METADATA_TOO_LARGE while the other is taken
// is a success with partition_errors; one code for every partition is
// the operation's error, as before. Both commits are read alike, a
// TxnOffsetCommit v6 naming topics by id.
func TestRecorderCommitsPerPartition(t *testing.T) {
	w := newWire(t)
	long, short := "xxxxx", "ok"
	for _, codes := range [][2]int16{{0, kerr.OffsetMetadataTooLarge.Code}, {kerr.OffsetMetadataTooLarge.Code, kerr.OffsetMetadataTooLarge.Code}} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = "fencecheck-fare-auditors"
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "fencecheck-trips"
		resp := kmsg.NewPtrOffsetCommitResponse()
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = "fencecheck-trips"
		for p, metadata := range []*string{&short, &long} {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = int32(p), 10+int64(p), metadata
			rt.Partitions = append(rt.Partitions, rp)
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = int32(p), codes[p]
			st.Partitions = append(st.Partitions, sp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp.Topics = []kmsg.OffsetCommitResponseTopic{st}
		w.answer(w.send(req, 8), resp, 8)
	}

	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.TransactionalID, txn.Group, txn.ProducerID, txn.ProducerEpoch = "fencecheck-t", "fencecheck-fare-auditors", 7, 0
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.TopicID = tripsID
	tresp := kmsg.NewPtrTxnOffsetCommitResponse()
	rt := kmsg.NewTxnOffsetCommitResponseTopic()
	rt.TopicID = tripsID
	for p, metadata := range []*string{nil, &long} {
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset, tp.Metadata = int32(p), 20+int64(p), metadata
		tt.Partitions = append(tt.Partitions, tp)
		sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
		sp.Partition = int32(p)
		if p == 1 {
			sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
		}
		rt.Partitions = append(rt.Partitions, sp)
	}
	txn.Topics = []kmsg.TxnOffsetCommitRequestTopic{tt}
	tresp.Topics = []kmsg.TxnOffsetCommitResponseTopic{rt}
	w.answer(w.send(txn, 6), tresp, 6)

	ops := w.ops()
	require.Len(t, ops, 3)
	partial, whole, txnPartial := ops[0], ops[1], ops[2]
	require.Equal(t, map[model.Partition]string{"trips-0": "ok", "trips-1": "xxxxx"}, partial.Req.OffsetMetadata)
	require.True(t, partial.Result.Succeeded())
	require.Equal(t, map[model.Partition]model.Code{"trips-1": model.OffsetMetadataTooLarge}, partial.Result.Resp.PartitionErrors)
	require.Equal(t, model.OffsetMetadataTooLarge, whole.Result.Err)
	require.Nil(t, whole.Result.Resp.PartitionErrors)

	require.Equal(t, model.TxnOffsetCommit, txnPartial.Kind)
	require.Equal(t, map[model.Partition]int64{"trips-0": 20, "trips-1": 21}, txnPartial.Req.Offsets)
	require.Equal(t, map[model.Partition]string{"trips-1": "xxxxx"}, txnPartial.Req.OffsetMetadata, "a null metadata is none")
	require.Equal(t, map[model.Partition]model.Code{"trips-1": model.OffsetMetadataTooLarge}, txnPartial.Result.Resp.PartitionErrors)
}

// TestRecorderFetchesMetadata: an OffsetFetch answer's metadata is
// recorded where it is not empty.
func TestRecorderFetchesMetadata(t *testing.T) {
	w := newWire(t)
	corr := w.send(offsetFetchOfTwoPartitions(), 8)

	resp := kmsg.NewPtrOffsetFetchResponse()
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = "fencecheck-fare-workers"
	rt := kmsg.NewOffsetFetchResponseGroupTopic()
	rt.Topic = "fencecheck-trips"
	with, without := kmsg.NewOffsetFetchResponseGroupTopicPartition(), kmsg.NewOffsetFetchResponseGroupTopicPartition()
	metadata, empty := "checkpoint", ""
	with.Partition, with.Offset, with.Metadata = 0, 12, &metadata
	without.Partition, without.Offset, without.Metadata = 1, 13, &empty
	rt.Partitions = []kmsg.OffsetFetchResponseGroupTopicPartition{with, without}
	rg.Topics = []kmsg.OffsetFetchResponseGroupTopic{rt}
	resp.Groups = []kmsg.OffsetFetchResponseGroup{rg}
	w.answer(corr, resp, 8)

	ops := w.ops()
	require.Len(t, ops, 2)
	require.True(t, ops[0].Result.Resp.MetadataSaid)
	require.Equal(t, "checkpoint", ops[0].Result.Resp.Metadata)
	require.False(t, ops[1].Result.Resp.MetadataSaid)
}
