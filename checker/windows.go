package checker

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Porcupine searches a piece of the history as one: its cache keeps a set
// of every operation for every state it visits, so its memory grows with
// the square of the piece. But wherever no operation is in flight (every
// earlier one returned before every later one was called) the order is
// fixed: all of the earlier ones come first. So the search here cuts each
// piece at those instants, searches each window alone from every state the
// windows before it may have ended in, and keeps only those end states.
// The offsets, epochs and generations the answers carry leave most windows
// one end state; when a window leaves several, each may have to be gone on
// from (see checkPiece).
//
// An operation that never returned is in flight to the end (porcupineOps
// gives it a return after everything), so no cut falls after its call: it
// may take effect at any time after it, and the last window, which holds
// it, is searched as one, by porcupine.

// window is a run of one piece's operations, in call order, with nothing in
// flight at either end.
type window []porcupine.Operation

// windowsOf cuts piece wherever no operation is in flight. An answer at the
// very instant of the next call is still in flight (porcupine orders calls
// before returns at one instant), so a cut needs a strict gap, or a touch
// that one process orders (touchOrdered).
func windowsOf(piece []porcupine.Operation) []window {
	sorted := slices.Clone(piece)
	slices.SortStableFunc(sorted, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var windows []window
	start, reach := 0, int64(0)
	var ending []porcupine.Operation // the window's operations that return at reach
	for i, o := range sorted {
		if i > start && (reach < o.Call || reach == o.Call && touchOrdered(ending, sorted[i:])) {
			windows = append(windows, sorted[start:i])
			start = i
		}
		if i == start || o.Return > reach {
			reach, ending = o.Return, ending[:0]
		}
		if o.Return == reach {
			ending = append(ending, o)
		}
	}
	if start < len(sorted) {
		windows = append(windows, sorted[start:])
	}
	return windows
}

// touchOrdered reports whether every operation that returns at the instant
// after[0] is called (ending) comes ahead of every one of after. That
// holds when one process made every request that meets at that instant,
// and those of ending were called earlier. A process's requests do not
// overlap (docs/history-format.md), so the ones of ending came first. A
// single client recorded on a millisecond clock touches at nearly every
// request. Without this cut its whole recording is one window, which
// porcupine's cache cannot hold.
func touchOrdered(ending, after []porcupine.Operation) bool {
	at := after[0].Call
	proc := ""
	sameRequester := func(o porcupine.Operation) bool {
		op := o.Input.(*histories.Op)
		if !op.Kind.IsRequest() || proc != "" && op.Proc != proc {
			return false
		}
		proc = op.Proc
		return true
	}
	// From the newest: an answer at the very instant of its call (which
	// may have come after any of after) is the likeliest to stop the cut.
	for i := len(ending) - 1; i >= 0; i-- {
		if o := ending[i]; o.Call == at || !sameRequester(o) {
			return false
		}
	}
	for _, o := range after {
		if o.Call != at {
			break
		}
		if !sameRequester(o) {
			return false
		}
	}
	return true
}

// windowedResult is the outcome of the windowed search of one history.
type windowedResult struct {
	result porcupine.CheckResult
	// Where the search stopped: when Illegal or Unknown, the first piece
	// (in partition order) that no order explains and the window in it
	// that no state reached so far can place; when Ok, the last window of
	// the last piece. starts are the states the piece may be in when
	// that window begins.
	piece  []porcupine.Operation
	window window
	at     int // the window's place in the piece
	starts []any
}

// checkWindowed is porcupine's verdict on ops under m, found window by
// window. timeout bounds the search of every timeoutOps operations, so
// that a long history, whose search takes time in proportion, is not
// given up for its length alone.
//
// The pieces are searched on up to GOMAXPROCS goroutines at once. The
// result is the one the pieces searched one after the other give: the
// first piece's, in partition order, that is not Ok, or the last piece's
// when all are. So the verdict does not depend on the number of cores.
func checkWindowed(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration, progress func(int)) windowedResult {
	return searchWindowed(m, ops, timeout, &progressCount{report: progress, every: progressEvery, next: progressEvery})
}

// searchWindowed is checkWindowed telling its progress to count.
func searchWindowed(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration, count *progressCount) windowedResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout*time.Duration(1+len(ops)/timeoutOps))
	defer cancel()
	pieces := [][]porcupine.Operation{ops}
	if m.Partition != nil {
		pieces = m.Partition(ops)
	}
	if workers := min(runtime.GOMAXPROCS(0), len(pieces)); workers > 1 {
		return searchPieces(ctx, m, pieces, count, workers)
	}
	res := windowedResult{result: porcupine.Ok} // a history with nothing to search holds
	for _, piece := range pieces {
		if res = searchPiece(ctx, m, piece, count); res.result != porcupine.Ok {
			return res
		}
	}
	return res
}

// searchPiece is one piece's verdict: the first search takes the first end
// state of each window, and only an Illegal piece is searched again,
// coming back (checkPiece).
func searchPiece(ctx context.Context, m porcupine.Model, piece []porcupine.Operation, count *progressCount) windowedResult {
	report := &progressReport{count: count}
	res := checkPiece(ctx, m, piece, report, false)
	if res.result == porcupine.Illegal {
		res = checkPiece(ctx, m, piece, report, true)
	}
	return res
}

// searchPieces searches the pieces on workers goroutines, each taking the
// next piece in order. Once a piece fails, the pieces after it are
// cancelled and none after it is started; the pieces before it go on,
// because one of them may fail too, and its verdict comes first.
func searchPieces(ctx context.Context, m porcupine.Model, pieces [][]porcupine.Operation, count *progressCount, workers int) windowedResult {
	var (
		mu      sync.Mutex
		next    int
		failed  = len(pieces) // the first piece known to fail
		results = make([]windowedResult, len(pieces))
		cancels = make([]context.CancelFunc, len(pieces))
		wg      sync.WaitGroup
	)
	take := func() (int, context.Context, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= failed {
			return 0, nil, false
		}
		i := next
		next++
		pieceCtx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		return i, pieceCtx, true
	}
	finish := func(i int, res windowedResult) {
		mu.Lock()
		defer mu.Unlock()
		cancels[i]()
		cancels[i] = nil
		if res.result == porcupine.Ok && i < len(pieces)-1 {
			// Only the last piece's Ok is read: the others' are not kept.
			res = windowedResult{result: porcupine.Ok}
		}
		results[i] = res
		if res.result != porcupine.Ok && i < failed {
			failed = i
			for _, cancel := range cancels[i+1:] {
				if cancel != nil {
					cancel()
				}
			}
		}
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, pieceCtx, ok := take(); ok; i, pieceCtx, ok = take() {
				finish(i, searchPiece(pieceCtx, m, pieces[i], count))
			}
		}()
	}
	wg.Wait()
	if failed < len(pieces) {
		return results[failed]
	}
	return results[len(pieces)-1]
}

// checkPiece searches one piece window by window, depth first: it goes on
// from the first state a window may end in and, with comeBack, keeps the
// way to the others, to come back to if a later window can be placed from
// none of the states taken. A history whose answers fix the order leaves
// nothing to come back to. A correct history needs one way through, and
// finding a window's other end states costs a search of its every order:
// so the first search of a piece takes the first end state of each window
// only, and only when that way fails is the piece searched again, coming
// back (the second search takes the same first way, so it fails where the
// first did, or comes back and finds another way).
func checkPiece(ctx context.Context, m porcupine.Model, piece []porcupine.Operation, report *progressReport, comeBack bool) windowedResult {
	windows := windowsOf(piece)
	var left []choice // the windows with end states not yet tried, innermost last
	at, state := 0, m.Init()
	var deepest windowedResult
	for {
		w := windows[at]
		if at == len(windows)-1 {
			switch placeFrom(ctx, m, w, state) {
			case porcupine.Ok:
				return windowedResult{result: porcupine.Ok, piece: piece, window: w, starts: []any{state}}
			case porcupine.Unknown:
				return windowedResult{result: porcupine.Unknown, piece: piece, window: w, starts: []any{state}}
			}
		} else {
			ends := endsOf(ctx, m, w, state, comeBack)
			if end, ok := ends.next(); ok {
				if comeBack && ends.mayHaveMore() {
					left = append(left, choice{at + 1, ends})
				}
				report.passed(at, len(w))
				at, state = at+1, end
				continue
			}
		}
		if ctx.Err() != nil {
			return windowedResult{result: porcupine.Unknown, piece: piece, window: w, starts: []any{state}}
		}
		deepest = deeper(deepest, windowedResult{result: porcupine.Illegal, piece: piece, window: w, at: at, starts: []any{state}})
		var ok bool
		if at, state, left, ok = backtrack(left); !ok {
			if ctx.Err() != nil {
				deepest.result = porcupine.Unknown
			}
			return deepest
		}
	}
}

// timeoutOps is how many operations one time-out is for.
const timeoutOps = 100_000

// progressCount counts the operations of the windows passed in every
// piece, for Options.Progress, and calls it every every of them
// (progressEvery, but for tests).
// Pieces searched at once share it: the count and the call are under one
// lock, so that the counts told never go down and one call is made at a
// time.
type progressCount struct {
	report  func(int)
	every   int
	mu      sync.Mutex
	checked int
	next    int
}

// progressReport is one piece's part of the count.
type progressReport struct {
	count *progressCount
	// deepest is how far windows of the piece have been passed: a window
	// passed again after backtracking is not counted.
	deepest int
}

const progressEvery = 50_000

func (p *progressReport) passed(at, ops int) {
	if p.count.report == nil || at < p.deepest {
		return
	}
	p.deepest = at + 1
	p.count.add(ops)
}

func (c *progressCount) add(ops int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked += ops; c.checked >= c.next {
		c.report(c.checked)
		c.next = c.checked + c.every
	}
}

// deeper keeps the failure furthest into the piece, with every state it
// was tried from: the one a violation is explained by.
func deeper(deepest, failed windowedResult) windowedResult {
	switch {
	case deepest.window == nil || failed.at > deepest.at:
		return failed
	case failed.at == deepest.at:
		deepest.starts = append(deepest.starts, failed.starts...)
	}
	return deepest
}

// choice is the start of a window with the end states of the window
// before it still to be tried.
type choice struct {
	at   int
	ends endSource
}

// backtrack takes the next end state of the innermost choice that has one.
func backtrack(left []choice) (int, any, []choice, bool) {
	for len(left) > 0 {
		c := left[len(left)-1]
		if state, ok := c.ends.next(); ok {
			return c.at, state, left, true
		}
		left = left[:len(left)-1]
	}
	return 0, nil, nil, false
}

// placeFrom asks porcupine whether w linearizes from state. A window of
// one operation, as the last of a sequential history is, takes one step
// instead (endsOf): porcupine starts a goroutine and a timer for
// each search, which costs more than the search in the short histories
// that exploration checks after every step.
func placeFrom(ctx context.Context, m porcupine.Model, w window, state any) porcupine.CheckResult {
	if len(w) == 1 {
		if _, ok := endsOf(ctx, m, w, state, false).next(); ok {
			return porcupine.Ok
		}
		return porcupine.Illegal
	}
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if left <= 0 {
		return porcupine.Unknown
	}
	return porcupine.CheckOperationsTimeout(startingAt(m, state), w, left)
}

// startingAt is m starting in state s, over one piece.
func startingAt(m porcupine.Model, s any) porcupine.Model {
	m.Init = func() any { return s }
	m.Partition = nil
	return m
}

// endSource gives the states a window may end in, one at a time.
type endSource interface {
	next() (any, bool)
	// mayHaveMore is false once next is known to have nothing more: the
	// source is then dropped, with the states it holds.
	mayHaveMore() bool
}

// listedEndsUpTo is the window size up to which every end state is found
// at once: a choice with one end state then holds nothing. A wider window
// (many requests on one tick of a coarse clock) may have a great many
// orders, so its end states are found one at a time, as porcupine would
// find its first order.
const listedEndsUpTo = 10

// endsOf is the source of w's end states from start; all of them found at
// once when every one is wanted and w is small.
func endsOf(ctx context.Context, m porcupine.Model, w window, start any, all bool) endSource {
	if len(w) == 1 { // a sequential stretch: one step, nothing to search
		if ok, end := m.StepContext(ctx, start, w[0].Input, w[0].Output); ok {
			return &listedEnds{end}
		}
		return &listedEnds{}
	}
	search := newWindowSearch(ctx, m, w, start)
	if len(w) > listedEndsUpTo || !all {
		return search
	}
	var ends listedEnds
	for end, ok := search.next(); ok; end, ok = search.next() {
		ends = append(ends, end)
	}
	return &ends
}

type listedEnds []any

func (l *listedEnds) next() (any, bool) {
	if len(*l) == 0 {
		return nil, false
	}
	end := (*l)[0]
	(*l)[0] = nil // the state is the search's now, not the list's
	*l = (*l)[1:]
	return end, true
}

func (l *listedEnds) mayHaveMore() bool { return len(*l) > 0 }

func (s *windowSearch) mayHaveMore() bool { return len(s.stack) > 0 }

// windowSearch walks the orders of one window that the model accepts,
// depth first, with porcupine's cache: a point reached again (the same
// operations placed, the same state) is not searched again.
type windowSearch struct {
	ctx   context.Context
	m     porcupine.Model
	ops   window
	stack []point
	seen  map[uint64][]point
	ends  []any
}

// point is a place in the search: the operations placed, the state they
// leave, the first operation not yet tried next, and the last return the
// next one may be called by.
type point struct {
	placed  bitset
	count   int
	state   any
	tried   int
	horizon int64
}

func newWindowSearch(ctx context.Context, m porcupine.Model, w window, start any) *windowSearch {
	s := &windowSearch{ctx: ctx, m: m, ops: w, seen: map[uint64][]point{}}
	s.push(newBitset(len(w)), 0, start)
	return s
}

// next is the next end state not given before.
func (s *windowSearch) next() (any, bool) {
	for len(s.stack) > 0 && s.ctx.Err() == nil {
		top := len(s.stack) - 1
		p := s.stack[top]
		if p.count == len(s.ops) {
			s.stack = s.stack[:top]
			if s.newEnd(p.state) {
				return p.state, true
			}
			continue
		}
		if !s.advance(top) {
			s.stack = s.stack[:top]
		}
	}
	return nil, false
}

// advance places the next operation that fits after the point at i of the
// stack, and reports whether there was one.
func (s *windowSearch) advance(i int) bool {
	for p := &s.stack[i]; p.tried < len(s.ops) && s.ops[p.tried].Call <= p.horizon; {
		op := p.tried
		p.tried++
		if p.placed.has(op) {
			continue
		}
		o := s.ops[op]
		if ok, next := s.m.StepContext(s.ctx, p.state, o.Input, o.Output); ok && s.push(p.placed.with(op), p.count+1, next) {
			return true
		}
	}
	return false
}

// push adds a point to search from, unless it was reached before.
func (s *windowSearch) push(placed bitset, count int, state any) bool {
	// Fewer than two operations placed can be reached in one way only, a
	// whole window's end states are told apart by newEnd, and in a window
	// of a few operations every order costs less than remembering them.
	if count >= 2 && count < len(s.ops) && len(s.ops) > rememberFrom && !s.firstVisit(placed, state) {
		return false
	}
	s.stack = append(s.stack, point{placed: placed, count: count, state: state, horizon: s.earliestReturnLeft(placed)})
	return true
}

// rememberFrom is the window size from which the search remembers the
// points it has been to.
const rememberFrom = 4

// earliestReturnLeft is the first return among the unplaced operations:
// an operation called after it cannot come next.
func (s *windowSearch) earliestReturnLeft(placed bitset) int64 {
	horizon := int64(1<<63 - 1)
	for i, o := range s.ops {
		if !placed.has(i) {
			horizon = min(horizon, o.Return)
		}
	}
	return horizon
}

// firstVisit records (placed, state) and reports whether it is new.
func (s *windowSearch) firstVisit(placed bitset, state any) bool {
	key := placed.hash() ^ s.m.Hash(state)
	for _, v := range s.seen[key] {
		if v.placed.equal(placed) && s.m.Equal(v.state, state) {
			return false
		}
	}
	s.seen[key] = append(s.seen[key], point{placed: placed, state: state})
	return true
}

func (s *windowSearch) newEnd(state any) bool {
	for _, e := range s.ends {
		if s.m.Equal(e, state) {
			return false
		}
	}
	s.ends = append(s.ends, state)
	return true
}

// bitset is a set of a window's operations, copied on write: the search
// keeps the ones it has visited.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) with(i int) bitset {
	c := slices.Clone(b)
	c[i/64] |= 1 << (i % 64)
	return c
}

func (b bitset) equal(o bitset) bool { return slices.Equal(b, o) }

func (b bitset) hash() uint64 {
	h := uint64(14695981039346656037)
	for _, w := range b {
		h = (h ^ w) * 1099511628211
	}
	return h
}

// wholeHistoryOps is the size up to which a violation is explained, and a
// history drawn, from porcupine's own search of the whole history, as it
// always was: cheap at that size, and its partial orders are the ones
// every explanation so far was made from. Beyond it, from the window.
const wholeHistoryOps = 10_000

// explain says why no order explains the history: the first operation no
// order can place and the longest legal order before it.
func explain(m porcupine.Model, search windowedResult, h histories.History, ops []porcupine.Operation, timeout time.Duration) Violation {
	if len(ops) <= wholeHistoryOps {
		_, info := check(m, ops, timeout, true)
		return explainIllegal(m, info, h)
	}
	return explainWindow(m, search, timeout)
}

// explainWindow explains a violation from the window no state could place:
// the longest legal order of it from any state the piece may be in when it
// begins, after every operation of the windows before.
func explainWindow(m porcupine.Model, search windowedResult, timeout time.Duration) Violation {
	var longest []porcupine.Operation
	var from any
	for _, s := range search.starts {
		_, info := porcupine.CheckOperationsVerbose(startingAt(m, s), search.window, timeout)
		if partials := info.PartialLinearizationsOperations(); len(partials) > 0 {
			if l := longestOf(partials[0]); from == nil || len(l) > len(longest) {
				longest, from = l, s
			}
		}
	}
	if from == nil {
		return Violation{Op: -1, Reason: "porcupine found no linearization"}
	}
	placed := map[int]bool{}
	for _, o := range search.piece {
		if o.Call < search.window[0].Call {
			placed[o.Input.(*histories.Op).ID] = true
		}
	}
	return explainStuck(search.piece, from.(model.State), placed, len(placed), longest)
}

// drawn is what the visualization shows, with the model that draws it: the whole history up to
// wholeHistoryOps operations, else the window the search stopped at (the
// one no order places, or the last), from a state it may begin in.
func drawn(m porcupine.Model, ops []porcupine.Operation, search windowedResult, timeout time.Duration) (porcupine.Model, porcupine.LinearizationInfo, []porcupine.Operation) {
	if len(ops) <= wholeHistoryOps || len(search.starts) == 0 {
		_, info := check(m, ops, timeout, true)
		return m, info, ops
	}
	from := startingAt(m, search.starts[0])
	_, info := porcupine.CheckOperationsVerbose(from, search.window, timeout)
	return from, info, search.window
}
