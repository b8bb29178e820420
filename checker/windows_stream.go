package checker

import (
	"context"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// streamSearch is the windowed search (windows.go) of a history read in
// call order: it cuts the history where no operation is in flight, as
// windowsOf cuts a piece, judges each window as soon as it is cut, and
// then drops it. It keeps the one state the windows so far end in, and
// the operations of the window still open.
//
// It takes the first end state of each window and never comes back, and
// it does not split the history into pieces. So its Ok is a verdict, as
// the whole search's is: it found an order that explains every answer.
// Its Illegal is not, because another end state of an earlier window
// might have placed the window it failed at. A caller then searches the
// whole history (CheckFile), which comes back and explains.
type streamSearch struct {
	ctx    context.Context
	m      porcupine.Model
	header histories.History // the broker's config, for porcupineOp
	never  int64             // a return after every operation's call and return
	procs  map[string]int    // porcupine's client id of each process
	state  any               // the state the windows judged so far end in
	// window is the open window; instant are the operations called at
	// the latest instant read, which join it, or open the next, once an
	// operation called later is read (touchOrdered looks at them all).
	window, instant window
	reach           int64                 // the latest return in the open window
	ending          []porcupine.Operation // the window's operations that return at reach
	result          porcupine.CheckResult
	judged          int // the operations of the windows judged
	widest          int // the most operations one window held
	progress        func(int)
	nextReport      int
	onCut           func(window) // when set, told each window before it is judged
	// ahead, when set, are the offsets the fetches still to come read
	// from, so that the state keeps no record they have all passed
	// (reads.go); it is asked once every forgetEvery operations judged.
	ahead                   *fetchesAhead
	forgetEvery, nextForget int
}

// forgetEvery is how many operations the search judges between two
// times it asks fetchesAhead, so that asking costs nothing measurable.
const forgetEvery = 1024

func newStreamSearch(ctx context.Context, m porcupine.Model, header histories.History, never int64, progress func(int)) *streamSearch {
	return &streamSearch{ctx: ctx, m: m, header: header, never: never, procs: map[string]int{},
		state: m.Init(), result: porcupine.Ok, progress: progress, nextReport: progressEvery, forgetEvery: forgetEvery}
}

// add reads the next operation in call order. The search keeps op until
// its window is judged.
func (s *streamSearch) add(op *histories.Op) {
	if s.result != porcupine.Ok {
		return // no order places a window already: nothing after it counts
	}
	client, ok := s.procs[op.Proc]
	if !ok {
		client = len(s.procs)
		s.procs[op.Proc] = client
	}
	o, judged := porcupineOp(s.header, op, client, s.never)
	if !judged {
		return
	}
	if len(s.instant) > 0 && s.instant[0].Call != o.Call {
		s.takeInstant()
	}
	s.instant = append(s.instant, o)
}

// takeInstant adds the operations called at the latest instant to the open
// window, after judging it first when nothing is in flight at their call.
func (s *streamSearch) takeInstant() {
	at := s.instant[0].Call
	if len(s.window) > 0 && (s.reach < at || s.reach == at && touchOrdered(s.ending, s.instant)) {
		s.judge()
		s.forgetBefore(at)
	}
	for _, o := range s.instant {
		if len(s.window) == 0 || o.Return > s.reach {
			s.reach, s.ending = o.Return, s.ending[:0]
		}
		if o.Return == s.reach {
			s.ending = append(s.ending, o)
		}
		s.window = append(s.window, o)
	}
	clear(s.instant)
	s.instant = s.instant[:0]
	s.widest = max(s.widest, len(s.window))
}

// judge searches the open window from the state the ones before it end
// in, goes on from its first end state, and drops it.
func (s *streamSearch) judge() {
	if s.result != porcupine.Ok || len(s.window) == 0 {
		return
	}
	if s.onCut != nil {
		s.onCut(s.window)
	}
	end, ok := endsOf(s.ctx, s.m, s.window, s.state, false).next()
	switch {
	case ok:
		s.state = end
	case s.ctx.Err() != nil:
		s.result = porcupine.Unknown
	default:
		s.result = porcupine.Illegal
	}
	s.judged += len(s.window)
	if s.progress != nil && s.judged >= s.nextReport {
		s.progress(s.judged)
		s.nextReport = s.judged + progressEvery
	}
	clear(s.window)
	s.window = s.window[:0]
	clear(s.ending)
	s.ending = s.ending[:0]
}

// forgetBefore tells the state the search goes on from that every
// operation still to come is called at or after at, so that its logs keep
// only what the fetches among them read (fetchesAhead.forget).
func (s *streamSearch) forgetBefore(at int64) {
	if s.ahead == nil || s.result != porcupine.Ok || s.judged < s.nextForget {
		return
	}
	if state, ok := s.state.(model.State); ok {
		s.state = s.ahead.forget(state, at)
	}
	s.nextForget = s.judged + s.forgetEvery
}

// finish judges what is left and says whether an order explains it all.
func (s *streamSearch) finish() porcupine.CheckResult {
	if s.result == porcupine.Ok && len(s.instant) > 0 {
		s.takeInstant()
	}
	s.judge()
	if s.result == porcupine.Ok && s.ctx.Err() != nil {
		s.result = porcupine.Unknown
	}
	return s.result
}
