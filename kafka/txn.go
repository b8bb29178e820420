package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// The transaction coordinator's requests (KIP-98, KIP-360, KIP-890).

// InitProducerID asks for a producer id and epoch: with a transactional id
// from its coordinator, without one from any broker; with the caller's own
// producer id and epoch it asks to bump them (KIP-360).
func (t *Target) InitProducerID(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.ProducerID, req.ProducerEpoch = r.ProducerID, r.Epoch
	req.TransactionTimeoutMillis = t.scaledMs(txnTimeoutMs(r))
	codes := topCode(func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	rt := t.toAnyBroker(codes)
	if r.TransactionalID != "" {
		id := t.names.txnID(r.TransactionalID)
		req.TransactionalID = &id
		rt = t.toCoordinator(txnCoordinator, id, codes)
		t.clock.txnTimeout(id, txnTimeoutMs(r))
	}
	resp, undecided := exchange[*kmsg.InitProducerIDResponse](ctx, t, model.InitProducerID, rt, req)
	if undecided != nil {
		return *undecided
	}
	out := model.NewResponse()
	out.ProducerID, out.Epoch = resp.ProducerID, resp.ProducerEpoch
	return t.result(model.InitProducerID, resp.ErrorCode, out)
}

// txnTimeoutMs is the request's transaction timeout, Kafka's client default
// when it names none.
func txnTimeoutMs(r model.Request) int64 {
	if r.TimeoutMs > 0 {
		return r.TimeoutMs
	}
	return model.DefaultTxnTimeoutMs
}

// AddPartitions registers partitions in the producer's transaction, in the
// clients' form of AddPartitionsToTxn (v3 at most).
func (t *Target) AddPartitions(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	id := t.names.txnID(r.TransactionalID)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, r.ProducerID, r.Epoch
	byTopic := map[string][]int32{}
	for _, p := range r.Partitions {
		tp, err := t.names.split(p)
		if err != nil {
			return t.undecided(model.AddPartitions, "not sent: %v", err)
		}
		byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, byTopic[topic]
		req.Topics = append(req.Topics, rt)
	}
	resp, undecided := exchange[*kmsg.AddPartitionsToTxnResponse](ctx, t, model.AddPartitions,
		t.toCoordinator(txnCoordinator, id, wire.AddPartitionsCodes), req)
	if undecided != nil {
		return *undecided
	}
	return t.result(model.AddPartitions, wire.FirstError(wire.AddPartitionsCodes(resp)), model.NewResponse())
}

// AddOffsets registers a group's offsets in the producer's transaction.
func (t *Target) AddOffsets(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	id := t.names.txnID(r.TransactionalID)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, r.ProducerID, r.Epoch
	req.Group = t.names.group(r.Group)
	resp, undecided := exchange[*kmsg.AddOffsetsToTxnResponse](ctx, t, model.AddOffsets,
		t.toCoordinator(txnCoordinator, id, topCode(func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })), req)
	if undecided != nil {
		return *undecided
	}
	return t.result(model.AddOffsets, resp.ErrorCode, model.NewResponse())
}

// TxnOffsetCommit stores a consumer's offsets in the transaction, sent to
// the group's coordinator with the consumer's group metadata (KIP-447).
func (t *Target) TxnOffsetCommit(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID = t.names.txnID(r.TransactionalID)
	req.Group = t.names.group(r.Group)
	req.ProducerID, req.ProducerEpoch = r.ProducerID, r.Epoch
	req.Generation, req.MemberID = r.GenerationID, r.MemberID
	req.InstanceID = instanceOf(r) // v3 on
	topics, err := t.commitTopics(ctx, r.Offsets)
	if err != nil {
		return t.undecided(model.TxnOffsetCommit, "not sent: %v", err)
	}
	req.Topics = topics
	resp, undecided := exchange[*kmsg.TxnOffsetCommitResponse](ctx, t, model.TxnOffsetCommit,
		t.toCoordinator(groupCoordinator, req.Group, wire.TxnOffsetCommitCodes), req)
	if undecided != nil {
		return *undecided
	}
	res := t.result(model.TxnOffsetCommit, wire.FirstError(wire.TxnOffsetCommitCodes(resp)), model.NewResponse())
	if res.Succeeded() {
		t.noteMember(r.MemberID, nil, 0) // its client is alive: its heartbeats go on
	}
	return res
}

// commitTopics names each topic both ways: by name (up to v5) and by id
// (v6 on); the version the client picks decides which is sent.
func (t *Target) commitTopics(ctx context.Context, offsets map[model.Partition]int64) ([]kmsg.TxnOffsetCommitRequestTopic, error) {
	byTopic := map[string][]kmsg.TxnOffsetCommitRequestTopicPartition{}
	ids := map[string][16]byte{}
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		tp, err := t.names.split(p)
		if err != nil {
			return nil, err
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = tp.partition, offsets[p]
		byTopic[tp.topic] = append(byTopic[tp.topic], rp)
		ids[tp.topic] = t.routes.topicID(ctx, tp)
	}
	var topics []kmsg.TxnOffsetCommitRequestTopic
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID, rt.Partitions = topic, ids[topic], byTopic[topic]
		topics = append(topics, rt)
	}
	return topics, nil
}

// EndTxn commits or aborts. Under transactions v2 the answer carries the
// producer id and the bumped epoch the producer goes on with (KIP-890).
func (t *Target) EndTxn(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrEndTxnRequest()
	id := t.names.txnID(r.TransactionalID)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, r.ProducerID, r.Epoch, r.Commit
	resp, undecided := exchange[*kmsg.EndTxnResponse](ctx, t, model.EndTxn,
		t.toCoordinator(txnCoordinator, id, topCode(func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })), req)
	if undecided != nil {
		return *undecided
	}
	out := model.NewResponse()
	if resp.GetVersion() >= endTxnV2 {
		out.ProducerID, out.Epoch = resp.ProducerID, resp.ProducerEpoch
	}
	return t.result(model.EndTxn, resp.ErrorCode, out)
}
