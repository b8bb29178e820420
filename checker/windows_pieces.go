package checker

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
)

// pieceMap is what CheckFile's first reading learns of the pieces a
// history splits into (partition): which transactional ids, groups,
// partitions and producer ids operations link, and how many operations
// each piece has. The second reading then judges each piece with a
// search of its own (pieceSearches).
type pieceMap struct {
	uf      unionFind
	keys    []touchKey       // every key, in the order first named
	ops     map[touchKey]int // operations per first key
	index   map[touchKey]int // each key's piece, once numbered
	sizes   []int            // operations per piece, once numbered
	globals int              // operations that reach every piece
	scratch []touchKey       // note's keys, kept between calls
}

func newPieceMap() *pieceMap {
	return &pieceMap{uf: newUnionFind(), ops: map[touchKey]int{}}
}

// note links the keys op touches. It takes the operations the search may
// judge (porcupineOp), by kind alone, because the first reading knows
// nothing of the broker's config yet. Taking a few more links pieces
// that need not be, which is sound: a piece judged with another is
// judged all the same.
func (p *pieceMap) note(op *histories.Op) {
	if !searchedKind(op.Kind) {
		return
	}
	keys := appendTouches(p.scratch[:0], op)
	p.scratch = keys
	if len(keys) == 0 {
		p.globals++
		return
	}
	for _, k := range keys {
		if _, seen := p.uf[k]; !seen {
			p.uf[k] = k
			p.keys = append(p.keys, k)
		}
	}
	for _, k := range keys[1:] {
		p.uf.union(keys[0], k)
	}
	p.ops[keys[0]]++
}

// number gives each piece its place, in the order its first key was
// named, and counts its operations. It returns the number of pieces.
func (p *pieceMap) number() int {
	p.index = make(map[touchKey]int, len(p.keys))
	roots := map[touchKey]int{}
	for _, k := range p.keys {
		root := p.uf.find(k)
		i, ok := roots[root]
		if !ok {
			i = len(p.sizes)
			roots[root] = i
			p.sizes = append(p.sizes, 0)
		}
		p.index[k] = i
		p.sizes[i] += p.ops[k]
	}
	p.uf, p.ops = nil, nil
	return len(p.sizes)
}

// of is op's piece, or -1 for an operation that reaches every piece.
func (p *pieceMap) of(op *histories.Op) int {
	first, ok := firstTouch(op)
	if !ok {
		return -1
	}
	if i, ok := p.index[first]; ok {
		return i
	}
	// An operation the first reading did not take is a fault, which
	// reaches every piece and which each piece's search leaves out.
	return -1
}

// pieceSearches is the streamed search (streamSearch) of a history that
// splits into pieces: one search per piece, each of its own operations
// and of the ones that reach every piece, as partition splits a whole
// history. The pieces are spread over lanes, one per core, so that
// pieces that never meet are judged at once. Each lane is a judge of
// judgeInTurn, which hands every operation to every lane in call order,
// so that a piece's search sees the same operations whatever the number
// of cores.
//
// An order found for each piece is an order of the whole history,
// because operations of pieces that never meet commute. A piece that
// fits no order sends the check to the whole search, as one streamed
// search that finds none does, so that the verdict does not depend on
// how the pieces were spread.
type pieceSearches struct {
	pieces *pieceMap
	search []*streamSearch // per piece
	lanes  [][]int         // the pieces of each lane
	laneOf []int           // the lane of each piece
	seen   []atomic.Int64  // operations each lane has taken
	report func(int)       // the search's progress, as one search's
	mu     sync.Mutex
	next   int // the progress to report next
}

// newPieceSearches makes a search per piece of pieces, each made by
// newSearch with the piece's number of operations, over lanes lanes.
func newPieceSearches(pieces *pieceMap, lanes int, newSearch func(ops int) *streamSearch, report func(int)) *pieceSearches {
	s := &pieceSearches{pieces: pieces, report: report, next: progressEvery}
	for _, size := range pieces.sizes {
		s.search = append(s.search, newSearch(size+pieces.globals))
	}
	s.lanes, s.laneOf = spread(pieces.sizes, lanes)
	s.seen = make([]atomic.Int64, len(s.lanes))
	return s
}

// spread gives each piece a lane, the largest first to the lane with the
// fewest operations so far, so that the lanes' work is about even.
func spread(sizes []int, lanes int) ([][]int, []int) {
	lanes = max(1, min(lanes, len(sizes)))
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	load := make([]int, lanes)
	of := make([]int, len(sizes))
	out := make([][]int, lanes)
	for _, piece := range order {
		lane := 0
		for l := range load {
			if load[l] < load[lane] {
				lane = l
			}
		}
		load[lane] += sizes[piece]
		of[piece] = lane
		out[lane] = append(out[lane], piece)
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out, of
}

// judges are the lanes, each a judge for judgeInTurn.
func (s *pieceSearches) judges() []func(*histories.Op) {
	var out []func(*histories.Op)
	for lane := range s.lanes {
		out = append(out, func(op *histories.Op) { s.add(lane, op) })
	}
	return out
}

// add hands op to the searches of lane's pieces that it belongs to.
func (s *pieceSearches) add(lane int, op *histories.Op) {
	if piece := s.pieces.of(op); piece < 0 {
		for _, p := range s.lanes[lane] {
			s.search[p].add(op)
		}
	} else if s.laneOf[piece] == lane {
		s.search[piece].add(op)
	}
	if seen := s.seen[lane].Add(1); s.report != nil && seen%progressEvery == 0 {
		s.progress()
	}
}

// progress reports the operations every lane has taken, from one lane
// at a time, and never fewer than it reported before.
func (s *pieceSearches) progress() {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := int(s.seen[0].Load())
	for i := range s.seen {
		done = min(done, int(s.seen[i].Load()))
	}
	if done >= s.next {
		s.report(done)
		s.next = done + progressEvery
	}
}

// finish judges what each piece has left, and is Ok when every piece
// found an order. The pieces finish on their lanes' goroutines.
func (s *pieceSearches) finish() porcupine.CheckResult {
	results := make([]porcupine.CheckResult, len(s.search))
	var wg sync.WaitGroup
	for _, lane := range s.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range lane {
				results[p] = s.search[p].finish()
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != porcupine.Ok {
			return r
		}
	}
	return porcupine.Ok
}

// judged is how many operations the searches judged, an operation that
// reaches every piece counted once for each. WriteHTML asks only whether
// it is 0.
func (s *pieceSearches) judged() int {
	total := 0
	for _, search := range s.search {
		total += search.judged
	}
	return total
}

// searchLanes is how many lanes the pieces of a streamed check take: one
// per core the search may use.
func searchLanes() int { return runtime.GOMAXPROCS(0) }

// withBudget makes a streamed search of ops operations under m whose
// search time is bounded as the whole search's is (Options.Timeout).
func withBudget(ctx context.Context, m porcupine.Model, header histories.History, never int64, timeout time.Duration, ahead *fetchesAhead) func(ops int) *streamSearch {
	return func(ops int) *streamSearch {
		search := newStreamSearch(ctx, m, header, never, nil)
		if ahead != nil {
			search.ahead = ahead.another()
		}
		search.limit(timeout * time.Duration(1+ops/timeoutOps))
		return search
	}
}
