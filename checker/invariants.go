package checker

import (
	"iter"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// analysis is what every check needs to know about one history.
type analysis struct {
	h    histories.History
	byID opIndex
	txnAnalysis
	records recordIndex
}

func analyze(h histories.History) *analysis {
	return &analysis{h: h, byID: opsByID(h), txnAnalysis: analyzeTxns(h), records: indexRecords(h)}
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

// topicOf is the topic a partition belongs to; a name that is not
// "topic-N" is taken as a topic of one partition.
func topicOf(p model.Partition) string {
	if topic, ok := p.Topic(); ok {
		return topic
	}
	return string(p)
}
