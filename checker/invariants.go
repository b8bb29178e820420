package checker

import (
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// invariantChecks are the end-to-end checks, in the order of Checks (after
// linearizable, which needs the model and lives elsewhere).
func invariantChecks() []func(*analysis) Verdict {
	return []func(*analysis) Verdict{
		checkOneLiveProducer,
		checkExactlyOnce,
		checkNoAbortedRead,
		checkOffsetsMonotonic,
		checkProgress,
	}
}

// analysis is what every check needs to know about one history.
type analysis struct {
	h    histories.History
	byID map[int]histories.Op
	txnAnalysis
	records recordIndex
}

func analyze(h histories.History) *analysis {
	return &analysis{h: h, byID: opsByID(h), txnAnalysis: analyzeTxns(h), records: indexRecords(h)}
}

func opsByID(h histories.History) map[int]histories.Op {
	byID := make(map[int]histories.Op, len(h.Ops))
	for _, op := range h.Ops {
		byID[op.ID] = op
	}
	return byID
}

// inCallOrder is ops sorted by call time, ties by id.
func inCallOrder(ops []histories.Op) []histories.Op {
	sorted := append([]histories.Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Call != sorted[j].Call {
			return sorted[i].Call < sorted[j].Call
		}
		return sorted[i].ID < sorted[j].ID
	})
	return sorted
}

// verdict is check's verdict given its violations, which it puts first
// breach first: by the call time of the operation that breaks the check.
func (a *analysis) verdict(check string, violations []Violation) Verdict {
	if len(violations) == 0 {
		return Verdict{Check: check, Status: OK}
	}
	sort.SliceStable(violations, func(i, j int) bool {
		ci, cj := a.byID[violations[i].Op].Call, a.byID[violations[j].Op].Call
		if ci != cj {
			return ci < cj
		}
		return violations[i].Op < violations[j].Op
	})
	return Verdict{Check: check, Status: Violated, Violations: violations}
}

// topicOf is the topic a partition belongs to; a name that is not
// "topic-N" is taken as a topic of one partition.
func topicOf(p model.Partition) string {
	if topic, ok := p.Topic(); ok {
		return topic
	}
	return string(p)
}
