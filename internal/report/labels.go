package report

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// shortLabel is what a box in a lane says: the request in a word or two and
// what came of it. The timeline row says it in full.
func shortLabel(row checker.TimelineRow) string {
	op := row.Op
	label := requestWord(op.Kind, op.Req)
	res := op.Result
	switch {
	case res.Undecided():
		return label + " ?"
	case isFenced(op.Kind, res.Err):
		return label + " ✗ fenced"
	case res.Err != "":
		return label + " ✗ " + string(res.Err)
	}
	if op.Kind == model.OffsetFetch && op.Req.AllPartitions {
		label += fmt.Sprintf(" → %d listed", len(res.Resp.FetchedOffsets)+len(res.Resp.Unstable))
	} else if outcome := successWord(op.Kind, res.Resp); outcome != "" {
		label += " " + outcome
	}
	if len(row.Breaks) > 0 {
		label = "⚠ " + label
	}
	return label
}

func requestWord(kind model.Kind, req model.Request) string {
	switch kind {
	case model.InitProducerID:
		return "init"
	case model.AddPartitions:
		return "add " + partitionList(req.Partitions)
	case model.Produce:
		return firstKey(req.Records) // with "@offset" after it, a record that landed
	case model.AddOffsets:
		return "add offsets"
	case model.TxnOffsetCommit:
		return "send offsets"
	case model.OffsetCommit:
		return "commit offsets"
	case model.EndTxn:
		if req.Commit {
			return "commit"
		}
		return "abort"
	case model.JoinGroup:
		return "join"
	case model.SyncGroup:
		return "sync"
	case model.LeaveGroup:
		return "leave"
	case model.OffsetFetch:
		if req.AllPartitions {
			return "offset_fetch all"
		}
		return "offset_fetch"
	case model.Fetch:
		return fmt.Sprintf("fetch %s", req.Partition)
	}
	return string(kind)
}

func successWord(kind model.Kind, resp model.Response) string {
	switch kind {
	case model.InitProducerID:
		return fmt.Sprintf("→ e%d", resp.Epoch)
	case model.Produce:
		return fmt.Sprintf("@%d", resp.BaseOffset)
	case model.JoinGroup:
		return fmt.Sprintf("→ gen %d", resp.GenerationID)
	case model.SyncGroup:
		return "→ " + orNone(partitionList(resp.Assignment))
	case model.OffsetFetch:
		return fmt.Sprintf("→ %d", resp.Offset)
	case model.Fetch:
		return fmt.Sprintf("→ %d rec", len(resp.Records))
	}
	return ""
}

func partitionList(ps []model.Partition) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ",")
}

func firstKey(records []model.Record) string {
	switch len(records) {
	case 0:
		return "produce"
	case 1:
		return records[0].Key
	}
	return fmt.Sprintf("%s +%d", records[0].Key, len(records)-1)
}
