package checker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

func TestDescribeInKafkasWords(t *testing.T) {
	b := &historyBuilder{}
	cases := []struct {
		op           int
		does, result string
	}{
		{b.initTxns("A", 0, 5, fw0), "`init_transactions()` fare-writer-7", "producer id 4001, epoch 0"},
		{b.addPartitions("A", 6, 7, fw0, "fares-2"), "`add_partitions()` fares-2", "ok"},
		{b.produce("A", 8, 9, fw0, "fares-2", 40, "trip-9001"),
			"`produce()` trip-9001 to `fares-2` (pid 4001, epoch 0, seq 0)", "offset 40"},
		{b.produce("A", 10, 11, fw0, "fares-2", 41, "trip-1", "trip-2"),
			"`produce()` trip-1, trip-2 to `fares-2` (pid 4001, epoch 0, seq 0)", "offsets 41–42"},
		{b.fail(b.produce("A", 410, 420, fw0, "fares-2", -1, "trip-9002"), model.ProducerFenced),
			"`produce()` trip-9002 to `fares-2` (pid 4001, epoch 0, seq 0)", "rejected: PRODUCER_FENCED"},
		{b.lose(b.endTxn("A", 12, 0, fw0, true)), "`commit_transaction()`", "no answer"},
		{b.fail(b.endTxn("A", 13, 14, fw0, true), model.RequestTimedOut), "`commit_transaction()`", "REQUEST_TIMED_OUT, may have taken effect"},
		{b.endTxn("A", 15, 16, fw0, false), "`abort_transaction()`", "aborted"},
		{b.endTxnV2("A", 17, 18, fw0, true, fw1), "`commit_transaction()`", "committed; producer id 4001, epoch 1 next"},
		{b.txnOffsetCommit("W", 19, 20, ctp, "g", 2, "trips-0", 6), "`send_offsets_to_transaction()` trips-0 → 6 (generation 2)", "ok"},
		{b.txnOffsetCommit("W", 21, 22, ctp, "g", -1, "trips-0", 6),
			"`send_offsets_to_transaction()` trips-0 → 6 (group id only, no generation)", "ok"},
		{b.plainCommit("C", 21, 22, "g", "m", 2, "trips-0", 7), "`commit_offsets()` trips-0 → 7 (generation 2)", "ok"},
		{b.plainCommit("C", 23, 24, "g", "", -1, "trips-0", 8),
			"`commit_offsets()` trips-0 → 8 (a simple consumer's: no member, no generation)", "ok"},
		{b.joinGroup("W", 23, 24, "g", 2, "trips-0"), "`join_group()` g", "generation 2, gets trips-0"},
		{b.joinGroup("W", 25, 26, "g", 3), "`join_group()` g", "generation 3, gets nothing"},
		{b.offsetFetch("W", 27, 28, "g", "trips-0", -1), "`offset_fetch()` trips-0 of group g", "no offset"},
		{b.offsetFetchAll("W", 27, 28, "g", map[model.Partition]int64{"trips-0": 6}, "trips-1"),
			"`offset_fetch()` all partitions of group g", "trips-0 at 6, trips-1 unstable"},
		{b.offsetFetchAll("W", 27, 28, "g", nil), "`offset_fetch()` all partitions of group g", "no offsets"},
		{b.fetch("R", 29, 30, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001)),
			"`fetch()` fares-2 from 0 read_committed", "trip-9001@42, hw -1, lso -1"},
		{b.timeoutAbort(31, fw1), "coordinator aborts expired txn", "fare-writer-7 now producer id 4001, epoch 1"},
		{b.add("A", 32, 0, model.Stall, model.NewRequest(), model.NewResponse()), "stalls", ""},
		{b.add("broker-1", 33, 0, model.BrokerRestart, model.NewRequest(), model.NewResponse()), "broker restarts", ""},
	}
	for _, c := range cases {
		does, result := describe(b.h.Ops[c.op])
		require.Equal(t, c.does, does, "op %d", c.op)
		require.Equal(t, c.result, result, "op %d", c.op)
	}
}

func TestDescribeTickAndKIP360Bump(t *testing.T) {
	b := &historyBuilder{}
	req := model.NewRequest()
	req.Ms = 30000
	tick := b.add("clock", 0, 0, model.Tick, req, model.NewResponse())
	bump := b.initTxns("A", 1, 2, fw1)
	b.op(bump).Req.ProducerID, b.op(bump).Req.Epoch = 4001, 0
	does, _ := describe(b.h.Ops[tick])
	require.Equal(t, "clock +30000 ms", does)
	does, _ = describe(b.h.Ops[bump])
	require.Equal(t, "`init_transactions()` fare-writer-7, bumping pid 4001 epoch 0", does)
}

func TestDescribeAbbreviatesLongRecordLists(t *testing.T) {
	b := &historyBuilder{}
	var keys []string
	var records []model.FetchedRecord
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("trip-%d", i))
		records = append(records, rec(int64(i), keys[i], 3001))
	}
	does, _ := describe(b.h.Ops[b.produce("P", 0, 1, session{"", 3001, 0}, "fares-2", 0, keys...)])
	require.Equal(t, "`produce()` trip-0, trip-1, trip-2, …, trip-37, trip-38, trip-39 (40 records) to `fares-2` (outside a transaction: pid 3001, epoch 0, seq 0)", does)
	_, result := describe(b.h.Ops[b.fetch("R", 2, 3, "fares-2", 0, model.ReadCommitted, records...)])
	require.Equal(t, "trip-0@0, trip-1@1, trip-2@2, …, trip-37@37, trip-38@38, trip-39@39 (40 records), hw -1, lso -1", result)
}

// A static member's request names its instance, so that a zombie and the
// member id that replaced it read as one consumer.
func TestDescribeStaticMember(t *testing.T) {
	b := &historyBuilder{}
	commit := b.fail(b.plainCommit("C", 0, 1, "g", "m", 2, "trips-0", 7), model.FencedInstanceID)
	b.op(commit).Req.InstanceID = "pricer-1"
	does, result := describe(b.h.Ops[commit])
	require.Equal(t, "`commit_offsets()` trips-0 → 7 (generation 2) as instance pricer-1", does)
	require.Equal(t, "rejected: FENCED_INSTANCE_ID", result)
}

// A commit refused for some partitions alone names them, and a fetch
// that says the committed metadata shows it.
func TestDescribePartitionErrorsAndMetadata(t *testing.T) {
	b := &historyBuilder{}
	commit := b.plainCommit("C", 0, 1, "g", "", -1, "trips-0", 7)
	b.op(commit).Req.Offsets["trips-1"] = 8
	b.op(commit).Result.Resp.PartitionErrors = map[model.Partition]model.Code{"trips-1": model.OffsetMetadataTooLarge}
	fetch := b.offsetFetch("C", 2, 3, "g", "trips-0", 7)
	b.op(fetch).Result.Resp.Metadata, b.op(fetch).Result.Resp.MetadataSaid = "batch-7", true
	_, result := describe(b.h.Ops[commit])
	require.Equal(t, "ok, but trips-1 rejected: OFFSET_METADATA_TOO_LARGE", result)
	_, result = describe(b.h.Ops[fetch])
	require.Equal(t, `offset 7, metadata "batch-7"`, result)
}
