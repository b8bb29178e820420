package histories

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fencecheck/fencecheck/model"
)

// field is one member of a struct S as the document spells it.
type field[S any] struct {
	name string
	bind func(*S) codec
}

// slot is a field as one operation type uses it.
type slot[S any] struct {
	field[S]
	need presence
}

func (f field[S]) opt() slot[S]    { return slot[S]{f, optional} }
func (f field[S]) req() slot[S]    { return slot[S]{f, required} }
func (f field[S]) always() slot[S] { return slot[S]{f, always} }

// decodeStruct fills s from the object raw. Members that no slot names are
// ignored: the format grows only by adding fields.
func decodeStruct[S any](path string, raw json.RawMessage, s *S, slots []slot[S]) error {
	var room [16]rawMember
	m, err := asMembers(path, raw, room[:0])
	if err != nil {
		return err
	}
	for _, sl := range slots {
		if sl.need == optional && !has(m, sl.name) {
			continue // as take would, without binding a codec to it
		}
		if err := take(m, path, sl.name, sl.need, sl.bind(s)); err != nil {
			return err
		}
	}
	return nil
}

// encodeStruct is s as an object in slot order, leaving out optional
// fields that hold their absent value.
func encodeStruct[S any](s *S, slots []slot[S]) object {
	out := object{}
	for _, sl := range slots {
		c := sl.bind(s)
		if sl.need == optional && c.absent() {
			continue
		}
		out = append(out, member{sl.name, c.encode()})
	}
	return out
}

// writeStruct writes s as encodeStruct's object, without making it.
func writeStruct[S any](b *bytes.Buffer, s *S, slots []slot[S]) {
	b.WriteByte('{')
	first := true
	for _, sl := range slots {
		c := sl.bind(s)
		if sl.need == optional && c.absent() {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		member{sl.name, c.encode()}.write(b)
	}
	b.WriteByte('}')
}

// Fields that requests and responses share, built for either struct.
func producerID[S any](f func(*S) *int64) field[S] {
	return field[S]{"producer_id", func(s *S) codec { return number[int64]{f(s), producerIDs} }}
}

func epoch[S any](f func(*S) *int16) field[S] {
	return field[S]{"epoch", func(s *S) codec { return number[int16]{f(s), epochs} }}
}

func transactionalID[S any](f func(*S) *string) field[S] {
	return field[S]{"transactional_id", func(s *S) codec { return text[string]{p: f(s)} }}
}

func memberID[S any](f func(*S) *string) field[S] {
	return field[S]{"member_id", func(s *S) codec { return text[string]{p: f(s)} }}
}

func generationID[S any](f func(*S) *int32) field[S] {
	return field[S]{"generation_id", func(s *S) codec { return number[int32]{f(s), generations} }}
}

func partitions[S any](name string, f func(*S) *[]model.Partition) field[S] {
	return field[S]{name, func(s *S) codec { return texts[model.Partition]{f(s), validPartition} }}
}

type request = model.Request

var (
	qTxnID = transactionalID(func(r *request) *string { return &r.TransactionalID })
	// init_producer_id's, add_partitions' and end_txn's, which may be
	// empty.
	qTxnIDOrEmpty = field[request]{"transactional_id", func(r *request) codec {
		return textOrEmpty{&r.TransactionalID, &r.EmptyTransactionalID}
	}}
	qProducerID = producerID(func(r *request) *int64 { return &r.ProducerID })
	qEpoch      = epoch(func(r *request) *int16 { return &r.Epoch })
	qMemberID   = memberID(func(r *request) *string { return &r.MemberID })
	qGeneration = generationID(func(r *request) *int32 { return &r.GenerationID })
	qInstanceID = field[request]{"group_instance_id", func(r *request) codec { return text[string]{p: &r.InstanceID} }}
	qPartitions = partitions("partitions", func(r *request) *[]model.Partition { return &r.Partitions })

	qTimeoutMs = field[request]{"timeout_ms", func(r *request) codec { return number[int64]{&r.TimeoutMs, durations} }}
	// init_producer_id's KIP-939 flags (InitProducerId v6+).
	qEnable2PC       = field[request]{"enable_2pc", func(r *request) codec { return flag{&r.Enable2PC} }}
	qKeepPreparedTxn = field[request]{"keep_prepared_txn", func(r *request) codec { return flag{&r.KeepPreparedTxn} }}
	qPartition       = field[request]{"partition", func(r *request) codec {
		return text[model.Partition]{&r.Partition, validPartition}
	}}
	qSequence = field[request]{"sequence", func(r *request) codec { return number[int32]{&r.Sequence, sequences} }}
	qRecords  = field[request]{"records", func(r *request) codec {
		return list[model.Record]{&r.Records, func() model.Record { return model.Record{} }, recordSlots}
	}}
	qGroup = field[request]{"group", func(r *request) codec { return text[string]{p: &r.Group} }}
	// The group of a classic group's requests and of the commits, which
	// may be empty (model.Request.EmptyGroup).
	qGroupOrEmpty     = field[request]{"group", func(r *request) codec { return textOrEmpty{&r.Group, &r.EmptyGroup} }}
	qOffsets          = field[request]{"offsets", func(r *request) codec { return partitionOffsets{&r.Offsets} }}
	qCommit           = field[request]{"commit", func(r *request) codec { return flag{&r.Commit} }}
	qSessionTimeoutMs = field[request]{"session_timeout_ms", func(r *request) codec {
		return number[int64]{&r.SessionTimeoutMs, durations}
	}}
	qJoinOnly           = field[request]{"join_only", func(r *request) codec { return flag{&r.JoinOnly} }}
	qRebalanceTimeoutMs = field[request]{"rebalance_timeout_ms", func(r *request) codec {
		return number[int64]{&r.RebalanceTimeoutMs, durations}
	}}
	qProtocolType = field[request]{"protocol_type", func(r *request) codec { return text[string]{p: &r.ProtocolType} }}
	// join_group's, which may be empty (model.Request.EmptyProtocolType).
	qJoinProtocolType = field[request]{"protocol_type", func(r *request) codec {
		return textOrEmpty{&r.ProtocolType, &r.EmptyProtocolType}
	}}
	qProtocols = field[request]{"protocols", func(r *request) codec {
		return list[model.Protocol]{&r.Protocols, func() model.Protocol { return model.Protocol{} }, protocolSlots}
	}}
	// sync_group's protocol name (SyncGroup v5+).
	qProtocol    = field[request]{"protocol", func(r *request) codec { return text[string]{p: &r.Protocol} }}
	qAssignments = field[request]{"assignments", func(r *request) codec { return memberAssignments{&r.Assignments} }}
	qOffset      = field[request]{"offset", func(r *request) codec { return number[int64]{&r.Offset, offsets} }}
	qIsolation   = field[request]{"isolation", func(r *request) codec {
		return text[model.Isolation]{&r.Isolation, validIsolation}
	}}
	qPartitionVerification = field[request]{model.PartitionVerificationConfig, func(r *request) codec {
		return flag{&r.PartitionVerification}
	}}
	qDeleteOffset = field[request]{"offset", func(r *request) codec { return number[int64]{&r.Offset, deleteOffsets} }}
	// create_topics', create_partitions' and delete_topics' topic, and the
	// partition count the first two set.
	qTopic = field[request]{"topic", func(r *request) codec { return text[string]{&r.Topic, validTopic} }}
	qCount = field[request]{"count", func(r *request) codec {
		return number[int32]{&r.PartitionCount, partitionCounts}
	}}
	// produce's: its request carried transactional batches of more than
	// one producer id and epoch.
	qMixedProducers = field[request]{"mixed_producers", func(r *request) codec { return flag{&r.MixedProducers} }}
	qRequireStable  = field[request]{"require_stable", func(r *request) codec { return flag{&r.RequireStable} }}
	qAllPartitions  = field[request]{"all_partitions", func(r *request) codec { return flag{&r.AllPartitions} }}
	qMs             = field[request]{"ms", func(r *request) codec { return number[int64]{&r.Ms, nonNegative} }}
)

type response = model.Response

var (
	pTxnID      = transactionalID(func(r *response) *string { return &r.TransactionalID })
	pProducerID = producerID(func(r *response) *int64 { return &r.ProducerID })
	pEpoch      = epoch(func(r *response) *int16 { return &r.Epoch })
	// init_producer_id's KIP-939 answer (InitProducerId v6+): the kept
	// transaction's producer id and epoch.
	pOngoingTxnProducerID = field[response]{"ongoing_txn_producer_id", func(r *response) codec {
		return number[int64]{&r.OngoingTxnProducerID, producerIDs}
	}}
	pOngoingTxnEpoch = field[response]{"ongoing_txn_epoch", func(r *response) codec {
		return number[int16]{&r.OngoingTxnEpoch, epochs}
	}}
	pMemberID   = memberID(func(r *response) *string { return &r.MemberID })
	pGeneration = generationID(func(r *response) *int32 { return &r.GenerationID })
	pAssignment = partitions("assignment", func(r *response) *[]model.Partition { return &r.Assignment })
	pLeader     = field[response]{"leader", func(r *response) codec { return text[string]{p: &r.Leader} }}
	// join_group's chosen protocol (JoinGroupResponse.ProtocolName, and
	// ProtocolType from v7).
	pProtocolType = field[response]{"protocol_type", func(r *response) codec { return text[string]{p: &r.ProtocolType} }}
	pProtocol     = field[response]{"protocol", func(r *response) codec { return text[string]{p: &r.Protocol} }}

	pBaseOffset = field[response]{"base_offset", func(r *response) codec { return number[int64]{&r.BaseOffset, offsets} }}
	pOffset     = field[response]{"offset", func(r *response) codec { return number[int64]{&r.Offset, offsets} }}
	pRecords    = field[response]{"records", func(r *response) codec {
		return list[model.FetchedRecord]{&r.Records, freshFetched, fetchedSlots}
	}}
	pHighWatermark = field[response]{"high_watermark", func(r *response) codec {
		return number[int64]{&r.HighWatermark, offsets}
	}}
	pLastStable = field[response]{"last_stable_offset", func(r *response) codec {
		return number[int64]{&r.LastStableOffset, offsets}
	}}
	pLowWatermark = field[response]{"low_watermark", func(r *response) codec {
		return number[int64]{&r.LowWatermark, offsets}
	}}
	// An offset_fetch of all partitions' answer.
	pFetchedOffsets = field[response]{"offsets", func(r *response) codec { return partitionOffsets{&r.FetchedOffsets} }}
	pUnstable       = partitions("unstable", func(r *response) *[]model.Partition { return &r.Unstable })
)

var recordSlots = []slot[model.Record]{
	{field[model.Record]{"key", func(r *model.Record) codec { return text[string]{p: &r.Key} }}, always},
	{field[model.Record]{"value", func(r *model.Record) codec { return text[string]{p: &r.Value} }}, optional},
}

var protocolSlots = []slot[model.Protocol]{
	{field[model.Protocol]{"name", func(p *model.Protocol) codec { return text[string]{p: &p.Name} }}, always},
	{field[model.Protocol]{"topics", func(p *model.Protocol) codec { return texts[string]{p: &p.Topics} }}, optional},
}

// freshFetched is a fetched record before decoding: a record with no
// "producer_id" was written by no producer id, Kafka's -1.
func freshFetched() model.FetchedRecord { return model.FetchedRecord{ProducerID: model.NoProducerID} }

type fetched = model.FetchedRecord

var fetchedSlots = []slot[fetched]{
	{field[fetched]{"offset", func(r *fetched) codec { return number[int64]{&r.Offset, nonNegative} }}, always},
	{field[fetched]{"key", func(r *fetched) codec { return text[string]{p: &r.Key} }}, always},
	{field[fetched]{"value", func(r *fetched) codec { return text[string]{p: &r.Value} }}, optional},
	producerID(func(r *fetched) *int64 { return &r.ProducerID }).opt(),
}

// reqSlots are the request fields of each type that has a "req", in the
// order of docs/history-format.md. Documents that leave out
// session_timeout_ms (join_group) get the broker's default.
var reqSlots = map[model.Kind][]slot[request]{
	model.InitProducerID: {qTxnIDOrEmpty.opt(), qTimeoutMs.opt(), qProducerID.opt(), qEpoch.opt(), qEnable2PC.opt(),
		qKeepPreparedTxn.opt()},
	model.AddPartitions: {qTxnIDOrEmpty.req(), qProducerID.req(), qEpoch.req(), qPartitions.always()},
	model.Produce: {qTxnID.opt(), qProducerID.req(), qEpoch.req(), qPartition.req(), qSequence.always(),
		qRecords.always(), qMixedProducers.opt()},
	model.AddOffsets: {qTxnID.req(), qProducerID.req(), qEpoch.req(), qGroupOrEmpty.req()},
	// The groupId-string overload sends no member and generation -1.
	model.TxnOffsetCommit: {qTxnID.req(), qProducerID.req(), qEpoch.req(), qGroupOrEmpty.req(), qMemberID.opt(),
		qGeneration.opt(), qOffsets.always(), qInstanceID.opt(), qOffsetMetadata.opt()},
	// A plain commit: the "simple" or admin commit sends no member and
	// generation -1.
	model.OffsetCommit: {qGroupOrEmpty.req(), qMemberID.opt(), qGeneration.opt(), qOffsets.always(), qInstanceID.opt(),
		qOffsetMetadata.opt()},
	model.EndTxn: {qTxnIDOrEmpty.req(), qProducerID.req(), qEpoch.req(), qCommit.always()},
	model.JoinGroup: {qGroupOrEmpty.req(), qMemberID.always(), qPartitions.always(), qSessionTimeoutMs.opt(),
		qJoinOnly.opt(), qRebalanceTimeoutMs.opt(), qJoinProtocolType.opt(), qProtocols.opt(), qInstanceID.opt()},
	model.SyncGroup: {qGroupOrEmpty.req(), qMemberID.req(), qGeneration.req(), qAssignments.opt(), qInstanceID.opt(),
		qProtocolType.opt(), qProtocol.opt()},
	// A leave may name a static member by its instance alone (member_id
	// ""), as an admin's removal does (LeaveGroup v3+).
	model.LeaveGroup: {qGroupOrEmpty.req(), qMemberID.always(), qInstanceID.opt()},
	// OffsetFetch v9+ names the member of a KIP-848 consumer group and
	// its epoch; an admin's fetch names neither.
	// A fetch of all partitions (OffsetFetch with topics null) names no
	// partition; Load holds it to one of the two.
	model.OffsetFetch: {qGroupOrEmpty.req(), qPartition.opt(), qRequireStable.opt(), qMemberID.opt(), qFetchMemberEpoch.opt(), qAllPartitions.opt()},
	model.Fetch:       {qPartition.req(), qOffset.req(), qIsolation.req()},
	model.Heartbeat:   {qGroupOrEmpty.req(), qMemberID.req(), qGeneration.req(), qInstanceID.opt()},
	model.Tick:        {qMs.always()},
	// consumergroups.go
	model.ConsumerGroupHeartbeat: consumerHeartbeatReq,
	model.DeleteRecords:          {qPartition.req(), qDeleteOffset.always()},
	// The one config the model reads that Kafka lets change while the
	// broker runs, under its own name, as in "broker_config".
	model.AlterConfig: {qPartitionVerification.always()},
	// An admin's change of one topic's partitions (model/topics.go).
	model.CreateTopics:     {qTopic.req(), qCount.req()},
	model.CreatePartitions: {qTopic.req(), qCount.req()},
	model.DeleteTopics:     {qTopic.req()},
}

// respSlots are the response fields of each type that has a "resp". They
// are optional (but for timeout_abort's): a response is whatever the broker
// said, and judging it is the checker's job, not the loader's.
var respSlots = map[model.Kind][]slot[response]{
	model.InitProducerID:  {pProducerID.opt(), pEpoch.opt(), pOngoingTxnProducerID.opt(), pOngoingTxnEpoch.opt()},
	model.AddPartitions:   {},
	model.Produce:         {pBaseOffset.opt()},
	model.AddOffsets:      {},
	model.TxnOffsetCommit: {pPartitionErrors.opt()},
	model.OffsetCommit:    {pPartitionErrors.opt()},
	model.EndTxn:          {pProducerID.opt(), pEpoch.opt()},
	model.JoinGroup: {pMemberID.opt(), pGeneration.opt(), pAssignment.opt(), pLeader.opt(), pProtocolType.opt(),
		pProtocol.opt()},
	model.LeaveGroup:   {},
	model.OffsetFetch:  {pOffset.opt(), pMetadata.opt(), pFetchedOffsets.opt(), pUnstable.opt()},
	model.Fetch:        {pRecords.opt(), pHighWatermark.opt(), pLastStable.opt()},
	model.Heartbeat:    {},
	model.SyncGroup:    {pAssignment.opt()},
	model.TimeoutAbort: {pTxnID.req(), pProducerID.req(), pEpoch.req()},
	// consumergroups.go
	model.ConsumerGroupHeartbeat: consumerHeartbeatResp,
	model.DeleteRecords:          {pLowWatermark.opt()},
	model.AlterConfig:            {},
	model.CreateTopics:           {},
	model.CreatePartitions:       {},
	model.DeleteTopics:           {},
}

func validIsolation(i model.Isolation) error {
	if i != model.ReadCommitted && i != model.ReadUncommitted {
		return fmt.Errorf("must be %q or %q, got %q", model.ReadCommitted, model.ReadUncommitted, string(i))
	}
	return nil
}

func validKind(k model.Kind) error {
	for _, known := range model.Kinds {
		if k == known {
			return nil
		}
	}
	return fmt.Errorf("unknown operation type %q", string(k))
}

func validCode(c model.Code) error {
	if !model.KnownCode(c) {
		return fmt.Errorf("unknown error code %q", string(c))
	}
	return nil
}
