package checker

import (
	"iter"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// collectedCheckFuncs are the end-to-end checks that judge a whole
// history's analysis, by name; the others are folds (invariantFolds).
var collectedCheckFuncs = map[string]func(*analysis) Verdict{
	ExactlyOnce: checkExactlyOnce,
	OneOwner:    checkOneOwner,
}

// analysis is what every check needs to know about one history.
type analysis struct {
	h    histories.History
	byID opIndex
	txnAnalysis
	records recordIndex
	repeats recordIndex // the answers of produces that repeat a batch
	// progress reports the passes of the checks over the history.
	progress *passProgress
}

func analyze(h histories.History) *analysis { return analyzeWithProgress(h, nil) }

// analyzeWithProgress is analyze that reports its passes to progress, as
// the phase PhaseInvariants, and keeps progress for the checks'.
func analyzeWithProgress(h histories.History, progress *passProgress) *analysis {
	progress.begin(PhaseInvariants)
	a := &analysis{h: h, byID: opsByID(h), txnAnalysis: analyzeTxns(h, progress), progress: progress}
	a.records, a.repeats = indexRecords(h, progress)
	return a
}

// opIndex finds an operation of the history by its id. It points into
// the history: a copy of every operation would double what a long
// history holds.
type opIndex map[int]*histories.Op

func opsByID(h histories.History) opIndex {
	byID := make(opIndex, len(h.Ops))
	for i := range h.Ops {
		byID[h.Ops[i].ID] = &h.Ops[i]
	}
	return byID
}

// get is the operation with id, or the zero operation when there is none.
func (x opIndex) get(id int) histories.Op {
	if op := x[id]; op != nil {
		return *op
	}
	return histories.Op{}
}

// inCallOrder is ops sorted by call time, ties by id, as an iteration:
// the order is kept as indexes, not as a copy of every operation.
func inCallOrder(ops []histories.Op) iter.Seq2[int, histories.Op] {
	order := callOrder(ops)
	return func(yield func(int, histories.Op) bool) {
		for n, i := range order {
			if !yield(n, ops[i]) {
				return
			}
		}
	}
}

// verdict is check's verdict given its violations, which it puts first
// breach first: by the call time of the operation that breaks the check.
func (a *analysis) verdict(check string, violations []Violation) Verdict {
	if len(violations) == 0 {
		return Verdict{Check: check, Status: OK}
	}
	sort.SliceStable(violations, func(i, j int) bool {
		ci, cj := a.byID.get(violations[i].Op).Call, a.byID.get(violations[j].Op).Call
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
