package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// The partition leaders' requests.

const (
	// acksAll: the leader answers once the batch is in every in-sync
	// replica, the setting idempotence and transactions require.
	acksAll        = -1
	produceTimeout = 5000
	fetchMaxWaitMs = 0
	fetchMaxBytes  = 64 << 20
)

// Produce writes one batch with the caller's producer id, epoch and first
// sequence, transactional when the request names a transactional id.
func (t *Target) Produce(ctx context.Context, r model.Request) model.Result {
	tp, err := t.names.split(r.Partition)
	if err != nil {
		return t.undecided(model.Produce, "not sent: %v", err)
	}
	if len(r.Records) == 0 {
		return t.undecided(model.Produce, "not sent: a record batch carries at least one record")
	}
	batch := wire.ProducerBatch{
		ProducerID: r.ProducerID, Epoch: r.Epoch, FirstSequence: r.Sequence,
		Transactional: r.TransactionalID != "", Records: r.Records,
		TimestampMs: time.Now().UnixMilli(),
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acksAll, produceTimeout
	if batch.Transactional {
		id := t.names.txnID(r.TransactionalID)
		req.TransactionID = &id
	}
	req.Topics = []kmsg.ProduceRequestTopic{t.produceTopic(ctx, tp, batch.Encode())}
	resp, undecided := exchange[*kmsg.ProduceResponse](ctx, t, model.Produce, t.toLeader(tp, produceCodes), req)
	if undecided != nil {
		return *undecided
	}
	p, ok := onlyProducePartition(resp)
	if !ok {
		return t.undecided(model.Produce, "the answer names no partition")
	}
	out := model.NewResponse()
	out.BaseOffset = p.BaseOffset
	return t.result(model.Produce, p.ErrorCode, out)
}

// produceTopic names the topic both ways: by name (up to v12) and by id
// (v13 on); the version the client picks decides which is sent.
func (t *Target) produceTopic(ctx context.Context, tp topicPartition, records []byte) kmsg.ProduceRequestTopic {
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.topic
	rt.TopicID = t.routes.topicID(ctx, tp)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = tp.partition, records
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	return rt
}

func onlyProducePartition(resp *kmsg.ProduceResponse) (kmsg.ProduceResponseTopicPartition, bool) {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.ProduceResponseTopicPartition{}, false
	}
	return resp.Topics[0].Partitions[0], true
}

func produceCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.ProduceResponse)
	if !ok {
		return nil
	}
	p, ok := onlyProducePartition(r)
	if !ok {
		return nil
	}
	return []int16{p.ErrorCode}
}

// Fetch reads one partition from an offset at the requested isolation. The
// records of aborted transactions are dropped by the list the broker sends
// with them, control records never returned (see the package
// documentation).
func (t *Target) Fetch(ctx context.Context, r model.Request) model.Result {
	tp, err := t.names.split(r.Partition)
	if err != nil {
		return t.undecided(model.Fetch, "not sent: %v", err)
	}
	from := max(r.Offset, 0)
	req := t.fetchRequest(ctx, tp, from, r.Isolation == model.ReadCommitted)
	resp, undecided := exchange[*kmsg.FetchResponse](ctx, t, model.Fetch, t.toLeader(tp, fetchCodes), req)
	if undecided != nil {
		return *undecided
	}
	p, ok := onlyFetchPartition(resp)
	if !ok {
		return t.undecided(model.Fetch, "the answer names no partition (top-level error %s)", wire.CodeName(resp.ErrorCode))
	}
	if p.ErrorCode != 0 {
		return t.result(model.Fetch, p.ErrorCode, model.NewResponse())
	}
	batches, err := wire.DecodeBatches(p.RecordBatches)
	if err != nil {
		return t.undecided(model.Fetch, "unreadable records of %s: %v", r.Partition, err)
	}
	out := model.NewResponse()
	out.HighWatermark, out.LastStableOffset = p.HighWatermark, p.LastStableOffset
	out.Records = wire.CommittedView(batches, p.AbortedTransactions, r.Isolation == model.ReadCommitted, from)
	return model.OK(out)
}

func (t *Target) fetchRequest(ctx context.Context, tp topicPartition, from int64, readCommitted bool) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, fetchMaxWaitMs, 1, fetchMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1 // no fetch session: every fetch stands alone
	if readCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tp.topic
	rt.TopicID = t.routes.topicID(ctx, tp)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.partition, from, fetchMaxBytes
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

func onlyFetchPartition(resp *kmsg.FetchResponse) (kmsg.FetchResponseTopicPartition, bool) {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, false
	}
	return resp.Topics[0].Partitions[0], true
}

func fetchCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return nil
	}
	codes := []int16{r.ErrorCode}
	if p, ok := onlyFetchPartition(r); ok {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}
