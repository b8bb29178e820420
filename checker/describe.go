package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// describe tells what an operation does and what came of it in the words of
// a Kafka client, as the seeds' timelines do: "`init_transactions()`
// fare-writer-7", "producer id 4001, epoch 0".
func describe(op histories.Op) (does, result string) {
	return describeDoes(op) + asInstance(op.Req), describeResult(op)
}

// asInstance names a static member's group.instance.id (KIP-345), which
// a zombie shares with the member that took its place.
func asInstance(req model.Request) string {
	if req.InstanceID == "" {
		return ""
	}
	return " as instance " + req.InstanceID
}

func describeDoes(op histories.Op) string {
	req := op.Req
	switch op.Kind {
	case model.InitProducerID:
		return describeInit(req)
	case model.AddPartitions:
		return "`add_partitions()` " + joinPartitions(req.Partitions)
	case model.Produce:
		outside := ""
		if req.TransactionalID == "" {
			outside = "outside a transaction: "
		}
		return fmt.Sprintf("`produce()` %s to `%s` (%spid %d, epoch %d, seq %d)",
			recordKeys(req.Records), req.Partition, outside, req.ProducerID, req.Epoch, req.Sequence)
	case model.AddOffsets:
		return "`add_offsets()` group " + req.Group
	case model.TxnOffsetCommit:
		return "`send_offsets_to_transaction()` " + describeOffsets(req)
	case model.OffsetCommit:
		return "`commit_offsets()` " + describePlainCommit(req)
	case model.EndTxn:
		if req.Commit {
			return "`commit_transaction()`"
		}
		return "`abort_transaction()`"
	case model.JoinGroup:
		if req.JoinOnly {
			return strings.TrimSpace("`join_group()` " + req.Group + " (JoinGroup only)")
		}
		return strings.TrimSpace("`join_group()` " + req.Group)
	case model.SyncGroup:
		return describeSync(req)
	case model.LeaveGroup:
		return strings.TrimSpace("`leave_group()` " + req.Group)
	case model.OffsetFetch:
		return describeOffsetFetch(req)
	case model.Fetch:
		return fmt.Sprintf("`fetch()` %s from %d %s", req.Partition, req.Offset, req.Isolation)
	case model.Heartbeat:
		return fmt.Sprintf("`heartbeat()` %s (%s, generation %d)", req.Group, req.MemberID, req.GenerationID)
	case model.DeleteRecords:
		if req.Offset == model.HighWatermarkOffset {
			return fmt.Sprintf("`delete_records()` %s up to the high watermark", req.Partition)
		}
		return fmt.Sprintf("`delete_records()` %s before %d", req.Partition, req.Offset)
	case model.AlterConfig:
		return fmt.Sprintf("`alter_config()` %s=%v", model.PartitionVerificationConfig, req.PartitionVerification)
	case model.CreateTopics:
		return fmt.Sprintf("`create_topics()` %s with %d partitions", req.Topic, req.PartitionCount)
	case model.CreatePartitions:
		return fmt.Sprintf("`create_partitions()` %s to %d partitions", req.Topic, req.PartitionCount)
	case model.DeleteTopics:
		return fmt.Sprintf("`delete_topics()` %s", req.Topic)
	case model.Tick:
		return fmt.Sprintf("clock +%d ms", req.Ms)
	}
	if does, ok := faultWords[op.Kind]; ok {
		return does
	}
	return string(op.Kind)
}

// describeSync is a SyncGroup, with the leader's assignment when it
// carries one.
func describeSync(req model.Request) string {
	out := fmt.Sprintf("`sync_group()` %s (%s, generation %d)", req.Group, req.MemberID, req.GenerationID)
	if len(req.Assignments) == 0 {
		return out
	}
	var shares []string
	for _, member := range slices.Sorted(maps.Keys(req.Assignments)) {
		shares = append(shares, member+": "+orNothing(joinPartitions(req.Assignments[member])))
	}
	return out + ", assigning " + strings.Join(shares, "; ")
}

// faultWords is what the faults without parameters do.
var faultWords = map[model.Kind]string{
	model.Stall:         "stalls",
	model.Wake:          "wakes",
	model.Crash:         "crashes",
	model.Restart:       "restarts",
	model.BrokerRestart: "broker restarts",
	model.TimeoutAbort:  "coordinator aborts expired txn",
}

func describeInit(req model.Request) string {
	if req.TransactionalID == "" {
		return "`init_producer_id()` idempotent"
	}
	does := "`init_transactions()` " + req.TransactionalID
	if req.ProducerID != model.NoProducerID {
		// KIP-360: the producer bumps its own epoch to recover.
		does += fmt.Sprintf(", bumping pid %d epoch %d", req.ProducerID, req.Epoch)
	}
	return does
}

func describeOffsets(req model.Request) string {
	if req.GenerationID == model.NoGeneration {
		return offsetList(req) + " (group id only, no generation)"
	}
	return fmt.Sprintf("%s (generation %d)", offsetList(req), req.GenerationID)
}

// describePlainCommit is describeOffsets for a commit outside a
// transaction, whose commit with no member and no generation is a simple
// consumer's (or an admin's).
func describePlainCommit(req model.Request) string {
	if req.GenerationID == model.NoGeneration && req.MemberID == "" {
		return offsetList(req) + " (a simple consumer's: no member, no generation)"
	}
	return describeOffsets(req)
}

// offsetList is a commit's offsets, "p → next" in partition order.
func offsetList(req model.Request) string {
	var parts []string
	for _, p := range sortedPartitions(req.Offsets) {
		parts = append(parts, fmt.Sprintf("%s → %d", p, req.Offsets[p]))
	}
	return strings.Join(parts, ", ")
}

func describeOffsetFetch(req model.Request) string {
	what := string(req.Partition)
	if req.AllPartitions {
		what = "all partitions"
	}
	does := fmt.Sprintf("`offset_fetch()` %s of group %s", what, req.Group)
	if req.RequireStable {
		does += ", require_stable"
	}
	return does
}

// describeFetchedOffsets is an offset fetch of all partitions' answer.
func describeFetchedOffsets(resp model.Response) string {
	var parts []string
	for _, p := range sortedPartitions(resp.FetchedOffsets) {
		parts = append(parts, fmt.Sprintf("%s at %d", p, resp.FetchedOffsets[p]))
	}
	for _, p := range resp.Unstable {
		parts = append(parts, fmt.Sprintf("%s unstable", p))
	}
	if len(parts) == 0 {
		return "no offsets"
	}
	return strings.Join(parts, ", ")
}

func recordKeys(records []model.Record) string {
	if len(records) == 0 {
		return "no records"
	}
	keys := make([]string, len(records))
	for i, r := range records {
		keys[i] = r.Key
	}
	return abbreviate(keys)
}

// abbreviate joins items, keeping a long list to its ends and its length:
// a timeline row stays one line to read.
func abbreviate(items []string) string {
	const ends = 3
	if len(items) <= 2*ends+1 {
		return strings.Join(items, ", ")
	}
	head, tail := strings.Join(items[:ends], ", "), strings.Join(items[len(items)-ends:], ", ")
	return fmt.Sprintf("%s, …, %s (%d records)", head, tail, len(items))
}

func joinPartitions(ps []model.Partition) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func describeResult(op histories.Op) string {
	res := op.Result
	switch {
	case op.Kind.IsFault():
		return describeFaultResult(op)
	case !res.Answered:
		return "no answer"
	case res.Undecided():
		return string(res.Err) + ", may have taken effect"
	case res.Err != "":
		return "rejected: " + string(res.Err)
	}
	return describeSuccess(op)
}

func describeFaultResult(op histories.Op) string {
	resp := op.Result.Resp
	if op.Kind == model.TimeoutAbort && resp.TransactionalID != "" {
		return fmt.Sprintf("%s now producer id %d, epoch %d", resp.TransactionalID, resp.ProducerID, resp.Epoch)
	}
	return ""
}

func describeSuccess(op histories.Op) string {
	resp := op.Result.Resp
	switch op.Kind {
	case model.InitProducerID:
		return fmt.Sprintf("producer id %d, epoch %d", resp.ProducerID, resp.Epoch)
	case model.Produce:
		return describeOffsetsWritten(resp.BaseOffset, len(op.Req.Records))
	case model.EndTxn:
		return describeEnd(op)
	case model.JoinGroup:
		if op.Req.JoinOnly {
			return fmt.Sprintf("generation %d, led by %s", resp.GenerationID, orNothing(resp.Leader))
		}
		return fmt.Sprintf("generation %d, gets %s", resp.GenerationID, orNothing(joinPartitions(resp.Assignment)))
	case model.SyncGroup:
		return "gets " + orNothing(joinPartitions(resp.Assignment))
	case model.OffsetFetch:
		if op.Req.AllPartitions {
			return describeFetchedOffsets(resp)
		}
		if resp.Offset == model.NoOffset {
			return "no offset"
		}
		if resp.MetadataSaid {
			return fmt.Sprintf("offset %d, metadata %q", resp.Offset, resp.Metadata)
		}
		return fmt.Sprintf("offset %d", resp.Offset)
	case model.OffsetCommit, model.TxnOffsetCommit:
		if len(resp.PartitionErrors) > 0 {
			var refused []string
			for _, p := range slices.Sorted(maps.Keys(resp.PartitionErrors)) {
				refused = append(refused, fmt.Sprintf("%s rejected: %s", p, resp.PartitionErrors[p]))
			}
			return "ok, but " + strings.Join(refused, ", ")
		}
	case model.Fetch:
		return describeFetched(resp)
	case model.DeleteRecords:
		if resp.LowWatermark != model.NoOffset {
			return fmt.Sprintf("low watermark %d", resp.LowWatermark)
		}
	}
	return "ok"
}

func describeOffsetsWritten(base int64, n int) string {
	if n <= 1 {
		return fmt.Sprintf("offset %d", base)
	}
	return fmt.Sprintf("offsets %d–%d", base, base+int64(n)-1)
}

func describeEnd(op histories.Op) string {
	ended := "aborted"
	if op.Req.Commit {
		ended = "committed"
	}
	if resp := op.Result.Resp; resp.ProducerID != model.NoProducerID {
		// KIP-890: the answer names the session the producer goes on with.
		ended += fmt.Sprintf("; producer id %d, epoch %d next", resp.ProducerID, resp.Epoch)
	}
	return ended
}

func describeFetched(resp model.Response) string {
	var records []string
	for _, r := range resp.Records {
		records = append(records, fmt.Sprintf("%s@%d", r.Key, r.Offset))
	}
	return fmt.Sprintf("%s, hw %d, lso %d", orNothing(abbreviate(records)), resp.HighWatermark, resp.LastStableOffset)
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
