package checker

import (
	"cmp"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// fate is how a transaction ended, as far as the history tells.
type fate int

const (
	fateUnknown   fate = iota // still open, or its end never got an answer
	fateCommitted             // an end_txn commit succeeded
	fateAborted               // aborted by end_txn, by a newer init, or by the coordinator's timeout
)

// txn is one transaction instance: the operations one producer session
// (transactional.id, producer id, epoch) sent between the start of a
// transaction and the operation that ended it. Under transactions v1 a
// session runs many transactions at one epoch, one after the other; under v2
// every transaction has an epoch of its own.
type txn struct {
	transactionalID string
	producerID      int64
	epoch           int16
	ops             []int // ids of its operations, in call order
	fate            fate
	endedBy         int // id of the operation that decided its fate; -1 while open

	// An end_txn commit that succeeded, or may have, was called at
	// commitCall: its records may be visible from then on (the commit
	// marker can land before the answer comes back).
	commitCalled bool
	commitCall   int64
	// commitReturn is when the successful end_txn commit returned: from
	// then on every reader must see the transaction committed.
	commitReturn int64
	// seq is its place among the transactions, in the order they began,
	// so that a stream tells of transactions ended at once in that order.
	seq int
}

// visibleBy reports whether a read_committed reader may have seen the
// transaction's records by time at: a commit had been called and the
// transaction was not aborted.
func (t *txn) visibleBy(at int64) bool {
	return t.fate != fateAborted && t.commitCalled && t.commitCall <= at
}

// sessionKey names a producer session of a transactional.id.
type sessionKey struct {
	transactionalID string
	producerID      int64
	epoch           int16
}

// txnAnalysis assigns every transactional operation to its transaction.
type txnAnalysis struct {
	txnOf map[int]*txn // op id -> its transaction
	txns  []*txn       // in order of their first operation
}

// committedWrite reports whether op is a produce whose records are committed:
// a non-transactional produce that succeeded, or a transactional one whose
// transaction committed.
func (a txnAnalysis) committedWrite(op histories.Op) bool {
	if op.Kind != model.Produce || !op.Result.Succeeded() {
		return false
	}
	if op.Req.TransactionalID == "" {
		return true
	}
	t := a.txnOf[op.ID]
	return t != nil && t.fate == fateCommitted
}

// txnEvent is a moment at which an operation joins or ends a transaction.
type txnEvent struct {
	at   int64
	ends bool
	op   *histories.Op // into the history: a long one has an event or two per operation
	seq  int           // the operation's place in the history, to keep ties in its order
}

// Within one instant of the clock, events go in the order a finer clock
// would have seen them: first what ends there (the answers that come back
// at that instant: the next transaction starts after them), then the
// operations that begin and end there, each joining before it ends and in
// the history's order (a coarse clock writes a whole request at one
// instant), then the inits answered there, and last the requests that go
// out and return later. An init fences the sessions before it at some
// moment up to its answer: a request of such a session that the clock
// puts at the same instant and that succeeded went first (it would have
// been fenced after), and one refused tells nothing either way.
const (
	endsAtInstant = iota
	withinInstant
	fencesAtInstant
	startsAtInstant
)

// phase is where e falls among the events of its instant.
func (e txnEvent) phase() int {
	switch {
	case e.op.Kind == model.InitProducerID:
		return fencesAtInstant
	case e.op.Returned && e.op.Call == e.op.Return && e.op.Kind != model.TimeoutAbort:
		return withinInstant
	case e.ends:
		return endsAtInstant
	}
	return startsAtInstant
}

// before orders events by time and, at one instant, by phase.
func (e txnEvent) before(o txnEvent) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	if pe, po := e.phase(), o.phase(); pe != po {
		return pe < po
	}
	if e.seq != o.seq {
		return e.seq < o.seq
	}
	return !e.ends && o.ends
}

// analyzeTxns replays the history's transactional operations in time order.
// An operation joins the open transaction of its session at its call; an
// end_txn, a successful init_producer_id of the same transactional.id or a
// timeout_abort ends it at the moment its outcome is known.
func analyzeTxns(h histories.History) txnAnalysis {
	r := txnReplay{txnAnalysis: txnAnalysis{txnOf: map[int]*txn{}}, open: map[sessionKey]*txn{}, lateCommits: map[sessionKey]histories.Op{},
		kept: map[sessionKey]sessionKey{}}
	for _, e := range txnEvents(h) {
		if e.ends {
			r.end(*e.op)
		} else {
			r.join(e.op)
		}
	}
	return r.txnAnalysis
}

// txnEvents lists when each operation that matters to transactions acts.
func txnEvents(h histories.History) []txnEvent {
	var events []txnEvent
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case joinsTxn(*op):
			events = append(events, txnEvent{at: op.Call, op: op, seq: i})
		case op.Kind == model.TimeoutAbort:
			events = append(events, txnEvent{at: op.Call, ends: true, op: op, seq: i})
		case op.Kind == model.InitProducerID && op.Req.TransactionalID != "" && op.Result.Succeeded():
			events = append(events, txnEvent{at: op.Return, ends: true, op: op, seq: i})
		}
		if op.Kind == model.EndTxn && op.Returned {
			events = append(events, txnEvent{at: op.Return, ends: true, op: op, seq: i})
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].before(events[j]) })
	return events
}

// joinsTxn reports whether op belongs to a transaction of its session.
func joinsTxn(op histories.Op) bool {
	switch op.Kind {
	case model.AddPartitions, model.Produce, model.AddOffsets, model.TxnOffsetCommit, model.EndTxn:
		return op.Req.TransactionalID != ""
	}
	return false
}

// txnReplay is the state of analyzeTxns between events.
type txnReplay struct {
	txnAnalysis
	open map[sessionKey]*txn
	// lateCommits are end_txn(commit) requests that found no transaction
	// open at their call and may still act: one never answered (a copy
	// held back in the network, KAFKA-17754) for ever, one that succeeded
	// until its answer. Either may commit a transaction of its session
	// that begins meanwhile: an adversary's commit at an epoch above the
	// current one, held while another process's init reaches that epoch
	// and writes, commits what that process wrote (met on kfake).
	lateCommits map[sessionKey]histories.Op
	// kept maps the client identity an init that kept a prepared
	// transaction handed out (KIP-939) to the transaction's own session,
	// so that the end_txn it sends ends that transaction.
	kept map[sessionKey]sessionKey
	// began counts the transactions begun.
	began int
	// listener, when set, is told of each join and each end, and the
	// replay keeps only what is still open (a stream's): txnOf then maps
	// only the end_txns whose answer is still to act, and neither
	// txn.ops nor txns is kept.
	listener txnListener
}

// txnListener is told what a transaction replay decides, as it decides it.
type txnListener interface {
	// joined: op joined the open transaction t.
	joined(op *histories.Op, t *txn)
	// closed: t's fate is decided for good.
	closed(t *txn)
}

// assign records that the operation op joined t.
func (r *txnReplay) assign(op *histories.Op, t *txn) {
	if r.listener == nil {
		t.ops = append(t.ops, op.ID)
		r.txnOf[op.ID] = t
		return
	}
	if op.Kind == model.EndTxn && op.Returned {
		r.txnOf[op.ID] = t // its answer decides t
	}
	r.listener.joined(op, t)
}

func (r *txnReplay) keyOf(op histories.Op) sessionKey {
	key := sessionKey{op.Req.TransactionalID, op.Req.ProducerID, op.Req.Epoch}
	if own, ok := r.kept[key]; ok && op.Kind == model.EndTxn {
		return own
	}
	return key
}

func (r *txnReplay) join(op *histories.Op) {
	key := r.keyOf(*op)
	t := r.open[key]
	if t == nil {
		if op.Kind == model.EndTxn {
			if op.Req.Commit && (!op.Returned || op.Result.Succeeded() || op.Result.Undecided()) {
				r.lateCommits[key] = *op
			}
			return // ends a transaction that is already over, or an empty one
		}
		t = &txn{transactionalID: key.transactionalID, producerID: key.producerID, epoch: key.epoch, endedBy: -1}
		if late, ok := r.lateCommits[key]; ok {
			t.commitCalled, t.commitCall = true, late.Call
			if late.Returned && late.Result.Succeeded() {
				// Its answer, a success, ends this transaction.
				r.assign(&late, t)
			}
		}
		t.seq = r.began
		r.began++
		r.open[key] = t
		if r.listener == nil {
			r.txns = append(r.txns, t)
		}
	}
	r.assign(op, t)
	if op.Kind == model.EndTxn && op.Req.Commit && !refused(*op) && !t.commitCalled {
		t.commitCalled, t.commitCall = true, op.Call
	}
}

func (r *txnReplay) end(op histories.Op) {
	switch op.Kind {
	case model.EndTxn:
		r.endByEndTxn(op)
		if late, ok := r.lateCommits[r.keyOf(op)]; ok && late.ID == op.ID && !op.Result.Undecided() {
			delete(r.lateCommits, r.keyOf(op)) // answered: it acts no more
		}
	case model.InitProducerID:
		resp := op.Result.Resp
		switch {
		case op.Result.Succeeded() && op.Req.KeepPreparedTxn:
			// KIP-939: the transaction stays open, and the client ends it.
			if resp.OngoingTxnProducerID != model.NoProducerID {
				r.kept[sessionKey{op.Req.TransactionalID, resp.ProducerID, resp.Epoch}] =
					sessionKey{op.Req.TransactionalID, resp.OngoingTxnProducerID, resp.OngoingTxnEpoch}
			}
		case op.Result.Succeeded():
			r.abortAll(op.Req.TransactionalID, resp, op)
		}
	case model.TimeoutAbort:
		r.abortAll(op.Result.Resp.TransactionalID, op.Result.Resp, op)
	}
}

// endByEndTxn decides the transaction an answered end_txn was sent for.
func (r *txnReplay) endByEndTxn(op histories.Op) {
	t := r.txnOf[op.ID]
	if r.listener != nil {
		delete(r.txnOf, op.ID) // acts only once
	}
	if t == nil || t.endedBy >= 0 {
		return
	}
	switch {
	case op.Result.Succeeded() && op.Req.Commit:
		t.fate, t.commitReturn = fateCommitted, op.Return
	case op.Result.Succeeded():
		t.fate = fateAborted
	case model.ClassOf(op.Kind, op.Result.Err) == model.FencedProducer:
		r.abortUnlessCommitting(t)
	default:
		return // undecided, or refused for a reason that leaves it open
	}
	r.close(t, op.ID)
}

// abortAll aborts every open transaction of transactionalID that the
// grant supersedes: a newer session of the id (KIP-98) or the coordinator's
// timeout ended it. An answer that arrives late may grant an epoch older
// than a session already open, which it does not end.
func (r *txnReplay) abortAll(transactionalID string, grant model.Response, by histories.Op) {
	var ended []*txn
	for key, t := range r.open {
		if key.transactionalID == transactionalID && (key.producerID != grant.ProducerID || key.epoch < grant.Epoch) {
			ended = append(ended, t)
		}
	}
	slices.SortFunc(ended, func(a, b *txn) int { return cmp.Compare(a.seq, b.seq) }) // not the map's order
	for _, t := range ended {
		r.abortUnlessCommitting(t)
		r.close(t, by.ID)
	}
}

// abortUnlessCommitting marks t aborted, unless a commit of it may have taken
// effect: then the coordinator completes that commit, and the fate stays
// unknown.
func (r *txnReplay) abortUnlessCommitting(t *txn) {
	if !t.commitCalled {
		t.fate = fateAborted
	}
}

func (r *txnReplay) close(t *txn, by int) {
	t.endedBy = by
	delete(r.open, sessionKey{t.transactionalID, t.producerID, t.epoch})
	if r.listener != nil {
		r.listener.closed(t)
	}
}

// refused reports whether the broker answered op with a refusal: it had no
// effect. Undecided answers are not refusals.
func refused(op histories.Op) bool {
	return op.Result.Answered && op.Result.Err != "" && model.ClassOf(op.Kind, op.Result.Err) != model.Undecided
}
