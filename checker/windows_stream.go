package checker

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

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
// It goes on from the first end state of each window. It keeps the last
// windows judged (keptWindows, keptOps), each with the source of its end
// states (endSource), which resumes. When a window fits no order, it
// comes back: it takes the next end state of the newest window kept that
// has one, and searches the windows after it again, depth first, as
// checkPiece does. It does not split the history into pieces. So its Ok
// is a verdict, as the whole search's is: it found an order that explains
// every answer. Its Illegal is not, because an end state of a window no
// longer kept might have placed the window it failed at. A caller then
// searches the whole history (CheckFile), which comes back all the way
// and explains.
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
	// kept are the last windows judged, oldest first, with the source
	// each one's end state came from; keptLen is their operations.
	kept    []keptWindow
	keptLen int
	// cameBack counts the windows placed only by coming back to another
	// end state of a window kept.
	cameBack int
	clock    *searchClock // when set, bounds the time spent searching
}

// forgetEvery is how many operations the search judges between two
// times it asks fetchesAhead, so that asking costs nothing measurable.
const forgetEvery = 1024

// searchClock bounds the time a streamed search spends searching, as the
// whole search's time-out bounds its search. The time the search waits
// for the reading does not count, so that a slow reading (a loaded
// machine, for example) does not end the search as Unknown. A timer
// checks the time spent when the budget could be up, and cancels the
// search's context only once it is.
type searchClock struct {
	budget time.Duration
	spent  atomic.Int64 // nanoseconds spent in the windows searched
	since  atomic.Int64 // when the window being searched began, in Unix nanoseconds; 0 between windows
	cancel context.CancelFunc
	timer  *time.Timer
}

// limit bounds the time s spends searching to budget, from now on.
func (s *streamSearch) limit(budget time.Duration) {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &searchClock{budget: budget, cancel: cancel}
	c.timer = time.AfterFunc(budget, c.check)
	s.ctx, s.clock = ctx, c
}

// check cancels the search once its budget is spent, and otherwise looks
// again when it could be.
func (c *searchClock) check() {
	used := time.Duration(c.spent.Load())
	if since := c.since.Load(); since != 0 {
		used += time.Duration(time.Now().UnixNano() - since)
	}
	if used >= c.budget {
		c.cancel()
		return
	}
	c.timer.Reset(c.budget - used)
}

func (c *searchClock) start() {
	if c != nil {
		c.since.Store(time.Now().UnixNano())
	}
}

func (c *searchClock) stop() {
	if c != nil {
		c.spent.Add(time.Now().UnixNano() - c.since.Swap(0))
	}
}

// keptWindow is a window judged, the state it began in, and the source
// of its end states, of which the search goes on from the latest given.
type keptWindow struct {
	ops   window
	start any
	ends  endSource
}

// keptWindows and keptOps bound the windows kept to come back to: the
// fewer of 64 windows or 4,096 operations, the oldest dropped first. A
// wrong end state shows within a few windows, because the next answers
// read the offsets and epochs it set, so a short way back finds most
// orders. The bound keeps the memory held independent of the history's
// length: a window's source holds the window and its search's points.
const (
	keptWindows = 64
	keptOps     = 4_096
)

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
// in, goes on from its first end state, and keeps it to come back to.
// When no order of it fits, it comes back (comeBack).
func (s *streamSearch) judge() {
	if s.result != porcupine.Ok || len(s.window) == 0 {
		return
	}
	if s.onCut != nil {
		s.onCut(s.window)
	}
	w, start := slices.Clone(s.window), s.state
	s.clock.start()
	ends := endsOf(s.ctx, s.m, w, start, false)
	end, ok := ends.next()
	if !ok && s.ctx.Err() == nil {
		end, ok = s.comeBack(w)
		ends = nil // comeBack kept w with its source
	}
	s.clock.stop()
	switch {
	case ok:
		s.state = end
		if ends != nil {
			s.keep(keptWindow{ops: w, start: start, ends: ends})
		}
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

// keep adds a window judged to the ones kept, and drops the oldest beyond
// keptWindows or keptOps. A window wider than keptOps is not kept at all.
func (s *streamSearch) keep(k keptWindow) {
	s.kept = append(s.kept, k)
	s.keptLen += len(k.ops)
	drop := 0
	for len(s.kept)-drop > keptWindows || s.keptLen > keptOps && drop < len(s.kept) {
		s.keptLen -= len(s.kept[drop].ops)
		drop++
	}
	if drop > 0 {
		clear(s.kept[:drop])
		s.kept = s.kept[drop:]
	}
}

// comeBack places w, which fits no order from the state the search went
// on from, by coming back to the windows kept: it takes the next end
// state of the newest one that has one, and searches the windows after it
// again from there, depth first. It returns the state w then ends in, and
// keeps w, or reports that no end state of the windows kept places it.
// Then every window kept is dropped, because none has a state left to
// try.
func (s *streamSearch) comeBack(w window) (any, bool) {
	// The way taken: s.kept[i] began in s.kept[i].start and went on from
	// its source's latest end state; w is searched after the last one.
	at := len(s.kept) // the window that fits no order: len(s.kept) is w
	for s.ctx.Err() == nil {
		// Back to the newest window before at with another end state.
		var state any
		found := false
		for at > 0 && !found {
			at--
			state, found = s.kept[at].ends.next()
		}
		if !found {
			s.dropAll()
			return nil, false
		}
		// Forward from there, each window searched again from the new
		// state it begins in.
		for at++; at <= len(s.kept); at++ {
			ops := w
			if at < len(s.kept) {
				ops = s.kept[at].ops
			}
			ends := endsOf(s.ctx, s.m, ops, state, false)
			start := state
			var ok bool
			if state, ok = ends.next(); !ok {
				break
			}
			if at == len(s.kept) {
				s.cameBack++
				s.keep(keptWindow{ops: w, start: start, ends: ends})
				return state, true
			}
			s.kept[at] = keptWindow{ops: ops, start: start, ends: ends}
		}
	}
	return nil, false
}

// dropAll drops every window kept.
func (s *streamSearch) dropAll() {
	clear(s.kept)
	s.kept, s.keptLen = s.kept[:0], 0
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
	if s.clock != nil {
		s.clock.timer.Stop()
		s.clock.cancel()
	}
	return s.result
}
