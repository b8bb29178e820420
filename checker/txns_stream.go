package checker

import (
	"container/heap"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// txnStream is analyzeTxns for operations that come one at a time, in call
// order, ties by id. It replays the same events in the same order
// (txnEvent.before), and tells its listener of each join and each end.
//
// An event at an instant can only be replayed once every operation called
// at that instant has come, because an instant's events are ordered by
// phase before their operations' order. So the events wait in a heap, and
// those up to an instant are replayed when an operation called after it
// comes (or at finish): every event before that operation's call is
// replayed before it is given to the checks. Every operation called later
// acts later, so the order is the one a sort of the whole history gives.
//
// It holds the operations whose events are still to be replayed (a copy
// each), the open transactions, and the end_txns that may still act.
type txnStream struct {
	r       txnReplay
	pending txnEventHeap
	instant int64 // the call of the operations that came last
	seq     int   // operations come so far
}

func newTxnStream(listener txnListener) *txnStream {
	return &txnStream{r: txnReplay{txnAnalysis: txnAnalysis{txnOf: map[int]*txn{}}, open: map[sessionKey]*txn{},
		lateCommits: map[sessionKey]histories.Op{}, kept: map[sessionKey]sessionKey{}, listener: listener}}
}

// add takes the next operation in call order. op is not retained.
func (s *txnStream) add(op *histories.Op) {
	if s.seq > 0 && op.Call > s.instant {
		// Every operation called before op has come, and so has every
		// event before op's call.
		s.replayUpTo(op.Call - 1)
	}
	s.instant = op.Call
	seq := s.seq
	s.seq++
	var own *histories.Op // one copy for the op's events
	push := func(at int64, ends bool) {
		if own == nil {
			c := *op
			own = &c
		}
		heap.Push(&s.pending, txnEvent{at: at, ends: ends, op: own, seq: seq})
	}
	// As txnEvents lists them.
	switch {
	case joinsTxn(*op):
		push(op.Call, false)
	case op.Kind == model.TimeoutAbort:
		push(op.Call, true)
	case op.Kind == model.InitProducerID && op.Req.TransactionalID != "" && op.Result.Succeeded():
		push(op.Return, true)
	}
	if op.Kind == model.EndTxn && op.Returned {
		push(op.Return, true)
	}
}

// finish replays every event left.
func (s *txnStream) finish() { s.replayUpTo(maxInstant) }

const maxInstant = int64(^uint64(0) >> 1)

func (s *txnStream) replayUpTo(instant int64) {
	for s.pending.Len() > 0 && s.pending[0].at <= instant {
		e := heap.Pop(&s.pending).(txnEvent)
		if e.ends {
			s.r.end(*e.op)
		} else {
			s.r.join(e.op)
		}
	}
}

// txnEventHeap orders events as txnEvents sorts them.
type txnEventHeap []txnEvent

func (h txnEventHeap) Len() int           { return len(h) }
func (h txnEventHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h txnEventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *txnEventHeap) Push(x any)        { *h = append(*h, x.(txnEvent)) }
func (h *txnEventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
