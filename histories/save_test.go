package histories

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// req is a request with the sentinels of model.NewRequest and the fields
// that fill sets.
func req(fill func(*model.Request)) model.Request {
	r := model.NewRequest()
	fill(&r)
	return r
}

func ok(fill func(*model.Response)) model.Result {
	r := model.NewResponse()
	fill(&r)
	return model.OK(r)
}

// everyType is a history with an operation of every type, answered,
// refused and unanswered ones, and every optional field set somewhere.
func everyType() History {
	const tid = "fare-writer-7"
	txn := func(r *model.Request) { r.TransactionalID, r.ProducerID, r.Epoch = tid, 4001, 0 }
	ops := []Op{
		{Proc: "A", Op: model.Op{Kind: model.InitProducerID, Req: req(func(r *model.Request) {
			r.TransactionalID, r.TimeoutMs = tid, 60000
		})}, Result: ok(func(r *model.Response) { r.ProducerID, r.Epoch = 4001, 0 })},
		{Proc: "A", Op: model.Op{Kind: model.AddPartitions, Req: req(func(r *model.Request) {
			txn(r)
			r.Partitions = []model.Partition{"fares-2", "fares-10"}
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "A", Op: model.Op{Kind: model.Produce, Req: req(func(r *model.Request) {
			txn(r)
			r.Partition, r.Sequence = "fares-2", 0
			r.Records = []model.Record{{Key: "trip-9001", Value: "fare 12.50"}, {Key: "trip-9002"}}
		})}, Result: ok(func(r *model.Response) { r.BaseOffset = 40 })},
		{Proc: "A", Op: model.Op{Kind: model.AddOffsets, Req: req(func(r *model.Request) {
			txn(r)
			r.Group = "fare-pricers"
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "A", Op: model.Op{Kind: model.TxnOffsetCommit, Req: req(func(r *model.Request) {
			txn(r)
			r.Group, r.MemberID, r.GenerationID = "fare-pricers", "m-1", 3
			r.Offsets = map[model.Partition]int64{"trips-1": 7, "trips-0": 12}
		})}, Result: model.Fail(model.IllegalGeneration)},
		{Proc: "A", Op: model.Op{Kind: model.EndTxn, Req: req(func(r *model.Request) {
			txn(r)
			r.Commit = true
		})}, Result: ok(func(r *model.Response) { r.ProducerID, r.Epoch = 4001, 1 })},
		{Proc: "B", Op: model.Op{Kind: model.JoinGroup, Req: req(func(r *model.Request) {
			r.Group, r.SessionTimeoutMs = "fare-pricers", 10000
			r.Partitions = []model.Partition{"trips-0", "trips-1"}
		})}, Result: ok(func(r *model.Response) {
			r.MemberID, r.GenerationID, r.Assignment = "m-2", 4, []model.Partition{"trips-0"}
		})},
		{Proc: "B", Op: model.Op{Kind: model.OffsetFetch, Req: req(func(r *model.Request) {
			r.Group, r.Partition, r.RequireStable = "fare-pricers", "trips-0", true
		})}, Result: model.Fail(model.UnstableOffsetCommit)},
		{Proc: "B", Op: model.Op{Kind: model.OffsetFetch, Req: req(func(r *model.Request) {
			r.Group, r.Partition = "fare-pricers", "trips-1"
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "B", Op: model.Op{Kind: model.LeaveGroup, Req: req(func(r *model.Request) {
			r.Group, r.MemberID = "fare-pricers", "m-2"
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "R", Op: model.Op{Kind: model.Fetch, Req: req(func(r *model.Request) {
			r.Partition, r.Offset, r.Isolation = "fares-2", 0, model.ReadCommitted
		})}, Result: ok(func(r *model.Response) {
			r.Records = []model.FetchedRecord{
				{Offset: 40, Key: "trip-9001", Value: "fare 12.50", ProducerID: 4001},
				{Offset: 41, Key: "trip-9003", ProducerID: model.NoProducerID},
			}
			r.HighWatermark, r.LastStableOffset = 43, 43
		})},
		{Proc: "A", Op: model.Op{Kind: model.Stall}},
		{Proc: "C", Op: model.Op{Kind: model.Produce, Req: req(func(r *model.Request) {
			r.ProducerID, r.Epoch, r.Partition, r.Sequence = 5000, 0, "fares-3", 0
			r.Records = []model.Record{{Key: "trip-9004"}}
		})}},
		{Proc: "C.2", Client: "C", Op: model.Op{Kind: model.Produce, Req: req(func(r *model.Request) {
			r.ProducerID, r.Epoch, r.Partition, r.Sequence = 5000, 0, "fares-3", 0
			r.Records = []model.Record{{Key: "trip-9004"}}
		})}, Result: model.Fail(model.RequestTimedOut)},
		{Proc: "C", Op: model.Op{Kind: model.InitProducerID, Req: req(func(r *model.Request) {
			r.ProducerID, r.Epoch = 5000, 0
		})}, Result: ok(func(r *model.Response) { r.ProducerID, r.Epoch = 5000, 1 })},
		{Proc: "broker", Op: model.Op{Kind: model.Tick, Req: req(func(r *model.Request) { r.Ms = 60000 })}},
		{Proc: "coordinator", Op: model.Op{Kind: model.TimeoutAbort}, Result: ok(func(r *model.Response) {
			r.TransactionalID, r.ProducerID, r.Epoch = tid, 4001, 2
		})},
		{Proc: "broker", Op: model.Op{Kind: model.BrokerRestart}},
		{Proc: "A", Op: model.Op{Kind: model.Wake}},
		{Proc: "A", Op: model.Op{Kind: model.Crash}},
		{Proc: "A", Op: model.Op{Kind: model.Restart}},
		// An empty transactional id, which Kafka refuses.
		{Proc: "D", Op: model.Op{Kind: model.EndTxn, Req: req(func(r *model.Request) {
			r.ProducerID, r.Epoch, r.EmptyTransactionalID = 6000, 0, true
		})}, Result: model.Fail(model.InvalidRequest)},
		{Proc: "D", Op: model.Op{Kind: model.InitProducerID, Req: req(func(r *model.Request) {
			r.EmptyTransactionalID = true
		})}, Result: model.Fail(model.InvalidRequest)},
		// KIP-939: a producer that keeps the transaction its crashed
		// session prepared.
		{Proc: "D", Op: model.Op{Kind: model.InitProducerID, Req: req(func(r *model.Request) {
			r.TransactionalID, r.Enable2PC, r.KeepPreparedTxn = "fare-writer-8", true, true
		})}, Result: ok(func(r *model.Response) {
			r.ProducerID, r.Epoch, r.OngoingTxnProducerID, r.OngoingTxnEpoch = 6000, 3, 6000, 2
		})},
		// KIP-107: an admin deletes records, before an offset and up to
		// the high watermark (-1).
		{Proc: "E", Op: model.Op{Kind: model.DeleteRecords, Req: req(func(r *model.Request) {
			r.Partition, r.Offset = "fares-2", 40
		})}, Result: ok(func(r *model.Response) { r.LowWatermark = 40 })},
		{Proc: "E", Op: model.Op{Kind: model.DeleteRecords, Req: req(func(r *model.Request) {
			r.Partition, r.Offset = "fares-3", model.HighWatermarkOffset
		})}, Result: model.Fail(model.PolicyViolation)},
		// A produce request whose transactional batches carry two
		// producer ids, which Kafka refuses whole.
		{Proc: "F", Op: model.Op{Kind: model.Produce, Req: req(func(r *model.Request) {
			r.TransactionalID, r.ProducerID, r.Epoch, r.Partition = "fare-writer-9", 7000, 0, "fares-4"
			r.Records, r.MixedProducers = []model.Record{{Key: "trip-9005"}}, true
		})}, Result: model.Fail(model.InvalidProducerIDMapping)},
		// An admin turns partition verification off while the broker
		// runs.
		{Proc: "E", Op: model.Op{Kind: model.AlterConfig, Req: req(func(r *model.Request) {
			r.PartitionVerification = false
		})}, Result: ok(func(*model.Response) {})},
		// An admin creates a topic, grows it, and may not delete it.
		{Proc: "E", Op: model.Op{Kind: model.CreateTopics, Req: req(func(r *model.Request) {
			r.Topic, r.PartitionCount = "fare-audit", 3
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "E", Op: model.Op{Kind: model.CreatePartitions, Req: req(func(r *model.Request) {
			r.Topic, r.PartitionCount = "fare-audit", 6
		})}, Result: ok(func(*model.Response) {})},
		{Proc: "E", Op: model.Op{Kind: model.DeleteTopics, Req: req(func(r *model.Request) {
			r.Topic = "fare-audit"
		})}, Result: model.Fail(model.TopicDeletionDisabled)},
	}
	for i := range ops {
		op := &ops[i]
		op.ID, op.Call = i, int64(10*i)
		if op.Kind.IsFault() && op.Kind != model.Tick {
			op.Req = model.NewRequest()
		}
		if !op.Result.Answered {
			op.Result = model.NoAnswer()
		}
		if op.Kind.IsRequest() && op.Result.Answered {
			op.Return, op.Returned = op.Call+5, true
		}
	}
	return History{
		Name:                "every type",
		Ops:                 ops,
		Trips:               []string{"trip-9001", "trip-9002", "trip-9003", "trip-9004"},
		OutputTopics:        []string{"fares"},
		TransactionsVersion: 2,
		TopicsChangeOutside: true,
		Topics:              map[string]int32{"fares": 12, "trips": 2},
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	h := everyType()
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	got, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, got)
}

// The broker's expiry intervals survive a save and a load; those left at
// Kafka's default are not written.
func TestSaveLoadBrokerConfig(t *testing.T) {
	h := History{Expiry: model.Expiry{TransactionalIDMs: 60_000, ProducerIDCheckMs: 1_000}}
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	require.Contains(t, buf.String(), `"broker_config": {"producer.id.expiration.check.interval.ms": 1000, "transactional.id.expiration.ms": 60000}`)
	got, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h.Expiry, got.Expiry)
	require.Zero(t, got.TxnMaxTimeoutMs, "a maximum not named stays unknown")
	require.Zero(t, got.GroupMaxSize, "a group size not named stays unknown")
	require.Zero(t, got.ConsumerGroupMaxSize, "a consumer group size not named stays unknown")
	require.Equal(t, model.MigrationPolicyUnknown, got.MigrationPolicy, "a migration policy not named stays unknown")
	require.Zero(t, got.GroupMinSessionTimeoutMs, "a session timeout bound not named stays unknown")
	require.Zero(t, got.GroupMaxSessionTimeoutMs, "a session timeout bound not named stays unknown")
	require.Equal(t, model.TwoPhaseCommitUnknown, got.TwoPhaseCommit, "a two-phase commit switch not named stays unknown")
}

// transaction.max.timeout.ms and transaction.partition.verification.enable
// survive a save and a load, in their place among the expiry intervals;
// by itself each is a broker_config too.
func TestSaveLoadTxnMaxTimeout(t *testing.T) {
	for name, c := range map[string]struct {
		h    History
		want string
	}{
		"with an interval": {History{Expiry: model.Expiry{TransactionalIDMs: 60_000}, TxnMaxTimeoutMs: 900_000},
			`"broker_config": {"transaction.max.timeout.ms": 900000, "transactional.id.expiration.ms": 60000}`},
		"alone": {History{TxnMaxTimeoutMs: 30_000}, `"broker_config": {"transaction.max.timeout.ms": 30000}`},
		"with verification off": {History{TxnMaxTimeoutMs: 30_000, NoPartitionVerification: true},
			`"broker_config": {"transaction.max.timeout.ms": 30000, "transaction.partition.verification.enable": false}`},
		"verification off alone": {History{NoPartitionVerification: true},
			`"broker_config": {"transaction.partition.verification.enable": false}`},
		"group size alone": {History{GroupMaxSize: 4}, `"broker_config": {"group.max.size": 4}`},
		"group size first by name": {History{GroupMaxSize: 10, TxnMaxTimeoutMs: 30_000},
			`"broker_config": {"group.max.size": 10, "transaction.max.timeout.ms": 30000}`},
		"consumer group size before the classic one": {History{GroupMaxSize: 10, ConsumerGroupMaxSize: 2},
			`"broker_config": {"group.consumer.max.size": 2, "group.max.size": 10}`},
		"migration policy": {History{MigrationPolicy: model.MigrationDowngrade, ConsumerGroupMaxSize: 2},
			`"broker_config": {"group.consumer.max.size": 2, "group.consumer.migration.policy": "downgrade"}`},
		"session timeout bounds": {History{GroupMinSessionTimeoutMs: 6000, GroupMaxSessionTimeoutMs: 1_800_000, GroupMaxSize: 4},
			`"broker_config": {"group.max.session.timeout.ms": 1800000, "group.max.size": 4, "group.min.session.timeout.ms": 6000}`},
		"offset retention": {History{Expiry: model.Expiry{OffsetsRetentionMinutes: 1, OffsetsRetentionCheckMs: 1000}},
			`"broker_config": {"offsets.retention.check.interval.ms": 1000, "offsets.retention.minutes": 1}`},
		"two-phase commit on": {History{TwoPhaseCommit: model.TwoPhaseCommitEnabled},
			`"broker_config": {"transaction.two.phase.commit.enable": true}`},
		"two-phase commit off, last by name": {History{TwoPhaseCommit: model.TwoPhaseCommitDisabled, TxnMaxTimeoutMs: 30_000},
			`"broker_config": {"transaction.max.timeout.ms": 30000, "transaction.two.phase.commit.enable": false}`},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Save(&buf, c.h))
			require.Contains(t, buf.String(), c.want)
			got, err := Load(&buf)
			require.NoError(t, err)
			require.Equal(t, c.h.TxnMaxTimeoutMs, got.TxnMaxTimeoutMs)
			require.Equal(t, c.h.Expiry, got.Expiry)
			require.Equal(t, c.h.NoPartitionVerification, got.NoPartitionVerification)
			require.Equal(t, c.h.GroupMaxSize, got.GroupMaxSize)
			require.Equal(t, c.h.ConsumerGroupMaxSize, got.ConsumerGroupMaxSize)
			require.Equal(t, c.h.MigrationPolicy, got.MigrationPolicy)
			require.Equal(t, c.h.TwoPhaseCommit, got.TwoPhaseCommit)
			require.Equal(t, c.h.TopicsChangeOutside, got.TopicsChangeOutside)
			require.Equal(t, c.h.Topics, got.Topics)
		})
	}
}

// The golden file shows what Save writes; a change to it is a change to
// every saved history, so it must be deliberate.
func TestSaveGolden(t *testing.T) {
	path := filepath.Join("testdata", "every-type.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, SaveFile(path, everyType()))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, everyType()))
	require.Equal(t, string(want), buf.String())

	loaded, err := LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, everyType(), loaded)
}

func TestLoadExample(t *testing.T) {
	h, err := LoadFile(filepath.Join("testdata", "example.json"))
	require.NoError(t, err)
	require.Equal(t, "fare-writer-7: zombie fenced by a restart", h.Name)
	require.Nil(t, h.Trips)
	require.Zero(t, h.TransactionsVersion)
	require.Len(t, h.Ops, 5)

	produce := h.Ops[2]
	require.Equal(t, model.Produce, produce.Kind)
	require.True(t, produce.Returned)
	require.Equal(t, int64(15), produce.Return)
	require.Equal(t, []model.Record{{Key: "trip-9001", Value: "fare 12.50"}}, produce.Req.Records)
	require.Equal(t, model.Partition("fares-2"), produce.Req.Partition)
	require.Equal(t, model.NoGeneration, produce.Req.GenerationID)
	require.Equal(t, model.OK(respWith(func(r *model.Response) { r.BaseOffset = 40 })), produce.Result)

	stall := h.Ops[3]
	require.False(t, stall.Returned)
	require.Equal(t, model.NoAnswer(), stall.Result)
	require.Equal(t, model.NewRequest(), stall.Req)

	require.Equal(t, model.Fail(model.ProducerFenced), h.Ops[4].Result)
}

func respWith(fill func(*model.Response)) model.Response { return ok(fill).Resp }

func TestLoadLenient(t *testing.T) {
	doc := `{"format": "fencecheck/history/v1", "later": {"x": [1]}, "trips": [], "ops": [
	  {"id": 1, "proc": "A", "call": 0, "return": null, "type": "txn_offset_commit", "note": "ignored",
	   "req": {"transactional_id": "t", "producer_id": 1, "epoch": 0, "group": "g", "offsets": {}, "colour": 3}},
	  {"id": 2, "proc": "A", "call": 1, "return": 1, "type": "end_txn", "resp": null, "error": null,
	   "req": {"transactional_id": "t", "producer_id": 1, "epoch": -1, "commit": false}}
	]}`
	_, err := Load(bytes.NewReader([]byte(doc)))
	require.EqualError(t, err, `op 2: end_txn: req.epoch is required, got -1, which means absent`)

	doc = `{"format": "fencecheck/history/v1", "later": {"x": [1]}, "trips": [], "ops": [
	  {"id": 1, "proc": "A", "call": 0, "return": null, "type": "txn_offset_commit", "note": "ignored",
	   "req": {"transactional_id": "t", "producer_id": 1, "epoch": 0, "group": "g", "offsets": {}, "colour": 3}},
	  {"id": 2, "proc": "A", "call": 1, "return": 1, "type": "end_txn", "resp": null, "error": null,
	   "req": {"transactional_id": "t", "producer_id": 1, "epoch": 0, "commit": false}}
	]}`
	h, err := Load(bytes.NewReader([]byte(doc)))
	require.NoError(t, err)
	require.Equal(t, []string{}, h.Trips)
	require.Equal(t, model.NoGeneration, h.Ops[0].Req.GenerationID, "generation_id absent means the groupId-string overload")
	require.Nil(t, h.Ops[0].Req.Offsets)
	require.False(t, h.Ops[0].Returned)
	require.True(t, h.Ops[1].Returned)
	require.False(t, h.Ops[1].Result.Answered, "neither resp nor error: undecided")
}

// The scalars written by hand read as encoding/json writes them.
func TestScalarsAsEncodingJSONWritesThem(t *testing.T) {
	for _, v := range []any{"", "trip-9001", "a \"quoted\" \\ value", "tab\there", "é", "\u2028", "\x7f", string([]byte{0xff}),
		0, -1, int64(math.MaxInt64), int64(math.MinInt64), int32(-7), int16(32767), true, false, 1.5} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(v))
		var got bytes.Buffer
		writeScalar(&got, v)
		require.Equal(t, strings.TrimSuffix(want.String(), "\n"), got.String(), "%#v", v)
	}
}

// Records are written by hand as their slots would write them.
func TestRecordsAsTheirSlotsWriteThem(t *testing.T) {
	produced := []model.Record{{Key: "trip-1"}, {Key: "trip-2", Value: "fare 12.50"}, {Key: "a \"b\"", Value: "\n"}, {}}
	fetched := []model.FetchedRecord{{Offset: 0, Key: "trip-1", ProducerID: model.NoProducerID},
		{Offset: 7, Key: "trip-2", Value: "fare", ProducerID: 4001}, {Offset: 9, Key: "é", Value: "", ProducerID: 0}}
	for _, l := range []interface {
		encode() any
	}{list[model.Record]{p: &produced, slots: recordSlots}, list[model.FetchedRecord]{p: &fetched, slots: fetchedSlots}} {
		var want, got bytes.Buffer
		switch l := l.(type) {
		case list[model.Record]:
			l.encodeBySlots()(&want)
		case list[model.FetchedRecord]:
			l.encodeBySlots()(&want)
		}
		writeValue(&got, l.encode())
		require.Equal(t, want.String(), got.String())
	}
}

// A round recorded in two parts, a join_group with join_only and its
// fields, then the leader's sync_group, survives a save and a load.
func TestSaveLoadSplitRound(t *testing.T) {
	req := func(set func(*model.Request)) model.Request {
		r := model.NewRequest()
		set(&r)
		return r
	}
	join := model.Op{Kind: model.JoinGroup, Req: req(func(r *model.Request) {
		r.Group, r.JoinOnly, r.RebalanceTimeoutMs, r.ProtocolType = "fare-pricers", true, 30000, "consumer"
		r.Protocols = []model.Protocol{{Name: "range", Topics: []string{"trips"}}, {Name: "roundrobin"}}
	})}
	joined := model.NewResponse()
	joined.MemberID, joined.GenerationID, joined.Leader = "m-1", 1, "m-1"
	joined.ProtocolType, joined.Protocol = "consumer", "range"
	sync := model.Op{Kind: model.SyncGroup, Req: req(func(r *model.Request) {
		r.Group, r.MemberID, r.GenerationID = "fare-pricers", "m-1", 1
		r.ProtocolType, r.Protocol = "consumer", "range"
		r.Assignments = map[string][]model.Partition{"m-1": {"trips-0"}, "m-2": {"trips-1"}}
	})}
	synced := model.NewResponse()
	synced.Assignment = []model.Partition{"trips-0"}
	h := History{Ops: []Op{
		{ID: 0, Proc: "B", Call: 0, Return: 5, Returned: true, Op: join, Result: model.OK(joined)},
		{ID: 1, Proc: "B", Call: 10, Return: 15, Returned: true, Op: sync, Result: model.OK(synced)},
	}}
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	require.Contains(t, buf.String(), `"join_only": true, "rebalance_timeout_ms": 30000`)
	require.Contains(t, buf.String(), `"leader": "m-1", "protocol_type": "consumer", "protocol": "range"`)
	require.Contains(t, buf.String(), `"protocol_type": "consumer", "protocol": "range"}`)
	got, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, got)
}

// A static member's group.instance.id (KIP-345) survives a save and a
// load on each of the six requests that carry it.
func TestSaveLoadInstanceID(t *testing.T) {
	var ops []Op
	for i, kind := range []model.Kind{model.JoinGroup, model.SyncGroup, model.Heartbeat, model.LeaveGroup,
		model.OffsetCommit, model.TxnOffsetCommit} {
		r := model.NewRequest()
		r.Group, r.MemberID, r.InstanceID = "fare-pricers", "m-1", "pricer-1"
		if kind == model.SyncGroup || kind == model.Heartbeat {
			r.GenerationID = 1
		}
		if kind == model.TxnOffsetCommit {
			r.TransactionalID, r.ProducerID, r.Epoch = "t", 7, 0
		}
		ops = append(ops, Op{ID: i, Proc: "B", Call: int64(10 * i), Return: int64(10*i + 5), Returned: true,
			Op: model.Op{Kind: kind, Req: r}, Result: model.Fail(model.FencedInstanceID)})
	}
	h := History{Ops: ops}
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	require.Equal(t, len(ops), strings.Count(buf.String(), `"group_instance_id": "pricer-1"`))
	got, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, got)
}

// Kafka reads group.consumer.migration.policy in any case, and so does
// Load; the history keeps Kafka's lower-case name.
func TestLoadMigrationPolicyInAnyCase(t *testing.T) {
	h, err := Load(strings.NewReader(`{"format": "fencecheck/history/v1", "broker_config": {"group.consumer.migration.policy": "DownGrade"}, "ops": []}`))
	require.NoError(t, err)
	require.Equal(t, model.MigrationDowngrade, h.MigrationPolicy)
}
