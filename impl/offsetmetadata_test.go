package impl

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// Commits with metadata are answered as the model answers them, per
// partition, with offset.metadata.max.bytes named and with Kafka's
// default; and a fetch answers the metadata committed with the offset,
// transactional or plain (model: offset-metadata-too-large,
// committed-metadata).
func TestOffsetMetadataLikeTheModel(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		known bool
	}{{"named", 3, true}, {"default", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			opts := model.Options{TxnVersion: 1, OffsetMetadataMaxBytes: c.limit, OffsetMetadataMaxKnown: c.known}
			ref := model.NewBroker(opts)
			b := New(Config{TxnVersion: 1, OffsetMetadataMaxBytes: c.limit, OffsetMetadataMaxKnown: c.known})
			long := strings.Repeat("m", model.DefaultOffsetMetadataMaxBytes+1)
			if c.known {
				long = "mmmm"
			}
			send := func(kind model.Kind, r model.Request) model.Result {
				want, err := model.Send(context.Background(), ref, model.Op{Kind: kind, Req: r})
				require.NoError(t, err)
				got, err := model.Send(context.Background(), b, model.Op{Kind: kind, Req: r})
				require.NoError(t, err)
				require.Equal(t, want, got, "%s", kind)
				return got
			}
			fetch := func(p model.Partition) model.Response {
				r := model.NewRequest()
				r.Group, r.Partition = "g", p
				return send(model.OffsetFetch, r).Resp
			}

			plain := model.NewRequest()
			plain.Group = "g"
			plain.Offsets = map[model.Partition]int64{"in-0": 5, "in-1": 6}
			plain.OffsetMetadata = map[model.Partition]string{"in-0": "ab", "in-1": long}
			res := send(model.OffsetCommit, plain)
			require.True(t, res.Succeeded())
			require.Equal(t, map[model.Partition]model.Code{"in-1": model.OffsetMetadataTooLarge}, res.Resp.PartitionErrors)
			require.Equal(t, int64(5), fetch("in-0").Offset)
			require.Equal(t, "ab", fetch("in-0").Metadata)
			require.Equal(t, model.NoOffset, fetch("in-1").Offset)

			plain.Offsets = map[model.Partition]int64{"in-1": 7}
			require.Equal(t, model.OffsetMetadataTooLarge, send(model.OffsetCommit, plain).Err)
			require.Equal(t, model.NoOffset, fetch("in-1").Offset)

			init := model.NewRequest()
			init.TransactionalID = "t"
			require.True(t, send(model.InitProducerID, init).Succeeded())
			txn := model.NewRequest()
			txn.TransactionalID, txn.ProducerID, txn.Epoch, txn.Group = "t", 1, 0, "g"
			require.True(t, send(model.AddOffsets, txn).Succeeded())
			commit := txn
			commit.Offsets = map[model.Partition]int64{"in-0": 8, "in-1": 9}
			commit.OffsetMetadata = map[model.Partition]string{"in-0": long, "in-1": "tx"}
			res = send(model.TxnOffsetCommit, commit)
			require.Equal(t, map[model.Partition]model.Code{"in-0": model.OffsetMetadataTooLarge}, res.Resp.PartitionErrors)
			end := txn
			end.Commit = true
			require.True(t, send(model.EndTxn, end).Succeeded())
			require.Equal(t, int64(5), fetch("in-0").Offset)
			require.Equal(t, "ab", fetch("in-0").Metadata)
			require.Equal(t, int64(9), fetch("in-1").Offset)
			require.Equal(t, "tx", fetch("in-1").Metadata)
		})
	}
}
