package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/fencecheck/fencecheck/model"
)

// TestFencedProducerAtOldVersions: a client that speaks the transaction
// requests of Kafka 2.6 (AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
// v1, as librdkafka 2.0 does) is fenced by another producer's
// InitProducerId for its transactional id. Kafka answers its next
// requests INVALID_PRODUCER_EPOCH, because PRODUCER_FENCED is new in v2
// of each (KIP-588). kfake answers PRODUCER_FENCED at every version
// (FINDINGS.md, 28): error-codes breaks on each, and nothing else does.
func TestFencedProducerAtOldVersions(t *testing.T) {
	s := newScenario(t, protocols[0].kafkaVersion) // the zombie speaks transactions v1
	defer s.target.Close()
	tap := recorder.New("zombie", recorder.Config{Observer: s.rec, Cluster: clusterOf{s.target}, Logf: t.Logf})
	defer tap.Close()
	cl, err := kgo.NewClient(append(s.target.clientOpts(), kgo.MaxVersions(kversion.V2_6_0()), kgo.Dialer(tap.Dial(s.target.dial)))...)
	require.NoError(t, err)
	defer cl.Close()
	txnID := s.target.names.txnID("ctp-zombie")

	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = &txnID, 60000
	initResp, err := initReq.RequestWith(s.ctx, cl)
	require.NoError(t, err)
	require.Zero(t, initResp.ErrorCode)
	add := func() int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, initResp.ProducerID, initResp.ProducerEpoch
		topic := kmsg.NewAddPartitionsToTxnRequestTopic()
		topic.Topic, topic.Partitions = s.target.names.topic("fares"), []int32{0}
		req.Topics = append(req.Topics, topic)
		resp, err := req.RequestWith(s.ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Zero(t, add())

	s.ok("owner", model.InitProducerID, initRequest("ctp-zombie"))

	offsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	offsets.TransactionalID, offsets.ProducerID, offsets.ProducerEpoch = txnID, initResp.ProducerID, initResp.ProducerEpoch
	offsets.Group = s.target.names.group("fare-workers")
	offsetsResp, err := offsets.RequestWith(s.ctx, cl)
	require.NoError(t, err)
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = txnID, initResp.ProducerID, initResp.ProducerEpoch
	endResp, err := end.RequestWith(s.ctx, cl)
	require.NoError(t, err)
	addCode := add()
	t.Logf("kfake answers the fenced AddOffsetsToTxn v%d %d, EndTxn v%d %d, AddPartitionsToTxn %d",
		offsets.Version, offsetsResp.ErrorCode, end.Version, endResp.ErrorCode, addCode)

	// s.check holds the history to breaking error-codes alone, and saves
	// it as the finding's history (histories/kfake) when it has none.
	s.check("fenced-at-old-versions")
}
