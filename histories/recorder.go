package histories

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/fencecheck/fencecheck/model"
)

// MainProc is the process under which a Recorder's own Broker methods
// record.
const MainProc = "main"

// Recorder wraps a broker and records every call to it as an operation of a
// history: the call time before the request goes out, the return time after
// the answer comes back, ids in call order. It is itself a model.Broker
// (recording under MainProc); Proc gives views for other processes.
//
// It records a plain OffsetCommit too when the broker it wraps takes one
// (model.OffsetCommitter): its views are then OffsetCommitters, and
// otherwise not (see TakesOffsetCommit).
//
// It is safe for concurrent use. A process's calls must not overlap (one
// goroutine per process), as the format requires.
type Recorder struct {
	model.BrokerFunc // the Broker methods, under MainProc

	b      model.Broker
	mu     sync.Mutex // guards clock, ops and stream
	clock  func() int64
	nextID int
	ops    []Op
	stream *Writer
	// inFlight holds the call time of each operation begun and not yet
	// ended nor left out, and endedBelow is the least of their ids
	// (nextID when there is none); lastClock is the latest reading of
	// the clock.
	inFlight   map[int]int64
	endedBelow int
	lastClock  int64
}

var _ model.Broker = (*Recorder)(nil)

// NewRecorder records the calls made through it to b, timed by clock. A nil
// clock is a counter that moves on at every reading, which keeps recorded
// histories deterministic.
func NewRecorder(b model.Broker, clock func() int64) *Recorder {
	if clock == nil {
		var now int64
		clock = func() int64 { now++; return now }
	}
	r := &Recorder{b: b, clock: clock}
	r.BrokerFunc = r.proc(MainProc)
	return r
}

// Proc is a view of the recorder whose calls are recorded as operations of
// the process name. It is a model.OffsetCommitter exactly when the broker
// the recorder wraps is one, so that a caller asking the view learns what
// the broker takes.
func (r *Recorder) Proc(name string) model.Broker {
	if r.TakesOffsetCommit() {
		return committingProc{r.proc(name)}
	}
	return r.proc(name)
}

// TakesOffsetCommit reports whether the wrapped broker takes a plain
// OffsetCommit (model.OffsetCommitter).
func (r *Recorder) TakesOffsetCommit() bool {
	_, ok := r.b.(model.OffsetCommitter)
	return ok
}

// OffsetCommit records a plain OffsetCommit under MainProc. The wrapped
// broker must be a model.OffsetCommitter (TakesOffsetCommit): a recorder
// of one that is not panics, naming it, as for any request its broker
// cannot be sent, because no answer could be recorded for it.
func (r *Recorder) OffsetCommit(ctx context.Context, req model.Request) model.Result {
	return r.record(ctx, MainProc, model.OffsetCommit, req)
}

var _ model.OffsetCommitter = (*Recorder)(nil)

// committingProc is a process's view of a recorder whose broker takes a
// plain OffsetCommit.
type committingProc struct{ model.BrokerFunc }

func (p committingProc) OffsetCommit(ctx context.Context, req model.Request) model.Result {
	return p.BrokerFunc(ctx, model.OffsetCommit, req)
}

func (r *Recorder) proc(name string) model.BrokerFunc {
	return func(ctx context.Context, kind model.Kind, req model.Request) model.Result {
		return r.record(ctx, name, kind, req)
	}
}

// Observe records a request that proc sent by other means (a client
// library's, read off the wire): it is called now, and returns when end is
// given an answered result; an unanswered one leaves it pending for ever.
// An operation whose end is never called is left out (a request the
// broker did not take up, say). client is the client instance when proc
// is one of its lanes (Op.Client), else "". op carries the request and,
// when the observer read it, its API version.
func (r *Recorder) Observe(proc, client string, op model.Op) (end func(model.Result)) {
	end, _ = r.ObserveLeaving(proc, client, op)
	return end
}

// ObserveLeaving is Observe for an observer that knows when it leaves an
// operation out: leave says that end will never be called. Then the
// recorder knows which operations are still in flight, and a history it
// streams tells a reader following the file which of the operations
// it lacks are still to come (Writer.WriteEnded).
func (r *Recorder) ObserveLeaving(proc, client string, op model.Op) (end func(model.Result), leave func()) {
	begun := r.begin(proc, op.Kind, op.Req)
	begun.Client, begun.APIVersion = client, op.APIVersion
	return func(res model.Result) { r.end(begun, res, res.Answered) },
		func() { r.leave(begun.ID) }
}

// Fault records a fault operation (stall, wake, crash, restart,
// broker_restart, tick with req.Ms) of proc at the current time. It panics
// when kind is not a fault, which is a mistake in the calling code.
func (r *Recorder) Fault(proc string, kind model.Kind, req model.Request) {
	r.fault(proc, kind, req, model.NoAnswer())
}

// TimeoutAbort records that the coordinator aborted an expired transaction
// and moved its producer to resp's epoch (resp carries the transactional id,
// producer id and epoch).
func (r *Recorder) TimeoutAbort(proc string, resp model.Response) {
	r.fault(proc, model.TimeoutAbort, model.NewRequest(), model.OK(resp))
}

func (r *Recorder) fault(proc string, kind model.Kind, req model.Request, res model.Result) {
	if !kind.IsFault() {
		panic(fmt.Sprintf("histories: %q is not a fault", kind))
	}
	// A fault is a moment, not a call that waits for an answer.
	r.end(r.begin(proc, kind, req), res, false)
}

// Stream has the operations that end from now on written to w as they
// end, instead of kept: a recording of hours is not held in memory.
// History then holds only those that ended before. Each batch written
// is marked with the instant before which every operation called is
// written or left out (Writer.WriteMarked), which holds when Stream is
// called before the first operation begins.
func (r *Recorder) Stream(w *Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stream = w
}

// History is a copy of the operations recorded so far, sorted by id.
// Requests and responses share their slices with the caller's.
func (r *Recorder) History() History {
	r.mu.Lock()
	ops := append([]Op(nil), r.ops...)
	r.mu.Unlock()
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	return History{Ops: ops}
}

// begin starts an operation: it takes the next id and the call time
// together, so ids follow call order.
func (r *Recorder) begin(proc string, kind model.Kind, req model.Request) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID
	r.nextID++
	call := r.now()
	if r.inFlight == nil {
		r.inFlight = map[int]int64{}
	}
	r.inFlight[id] = call
	return Op{ID: id, Proc: proc, Call: call, Op: model.Op{Kind: kind, Req: req}}
}

// end records op with its result, at the return time when it returned.
func (r *Recorder) end(op Op, res model.Result, returned bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Result = res
	if returned {
		op.Return, op.Returned = r.now(), true
	}
	r.noteEnded(op.ID)
	if r.stream != nil {
		_ = r.stream.WriteMarked(op, r.completeBefore()) // the writer keeps its first error for Close
		return
	}
	r.ops = append(r.ops, op)
}

// leave notes that the operation id is left out: it will never end.
func (r *Recorder) leave(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteEnded(id)
}

// noteEnded notes that the operation id has ended or is left out; the
// caller holds r.mu.
func (r *Recorder) noteEnded(id int) {
	delete(r.inFlight, id)
	for r.endedBelow < r.nextID {
		if _, open := r.inFlight[r.endedBelow]; open {
			return
		}
		r.endedBelow++
	}
}

// completeBefore is the instant before which every operation called has
// ended or is left out: the call of the oldest one in flight, or, with
// none, the clock's latest reading, before which no operation to come
// can be called. The caller holds r.mu.
func (r *Recorder) completeBefore() int64 {
	if call, open := r.inFlight[r.endedBelow]; open {
		return call
	}
	return r.lastClock
}

// now reads the clock; the caller holds r.mu.
func (r *Recorder) now() int64 {
	r.lastClock = r.clock()
	return r.lastClock
}

// record sends a request of proc to the broker and records it.
func (r *Recorder) record(ctx context.Context, proc string, kind model.Kind, req model.Request) model.Result {
	if kind == model.OffsetCommit && !r.TakesOffsetCommit() {
		// Checked before the operation begins, so that no id is taken
		// for a request that never goes out.
		panic(fmt.Sprintf("histories: %s's %q cannot be recorded: the recorder wraps %T, which is not a model.OffsetCommitter", proc, kind, r.b))
	}
	op := r.begin(proc, kind, req)
	ctx, version := model.WithVersionNote(ctx)
	res, err := model.Send(ctx, r.b, model.Op{Kind: kind, Req: req})
	op.APIVersion = *version
	if err != nil {
		// Only the Broker methods call record, each with its own kind.
		panic(err)
	}
	// An unanswered result means the response was lost: the operation
	// never returned.
	r.end(op, res, res.Answered)
	return res
}
