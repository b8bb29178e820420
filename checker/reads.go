package checker

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// readsOf are the offsets the fetches of ops read from (model.Reads), so
// that the model judging them keeps no record no fetch reads. CheckFile
// learns them in its first reading of a file, before the search begins.
func readsOf(ops []histories.Op) *model.Reads {
	reads := model.NewReads()
	for i := range ops {
		noteRead(reads, &ops[i])
	}
	return reads
}

// noteRead adds op to reads when it is a fetch.
func noteRead(reads *model.Reads, op *histories.Op) {
	if op.Op.Kind == model.Fetch {
		reads.Fetch(op.Op.Req.Partition, op.Op.Req.Offset)
	}
}

// fetchesAhead tells, for each partition a fetch reads, the lowest
// offset that the fetches called at or after a given moment read. The
// streamed search asks it between two windows, and tells the model
// (model.ReadsFrom), so that the log keeps no record every fetch still to
// come has passed. It is learnt in the first reading of a file.
type fetchesAhead struct {
	stairs map[model.Partition][]stair
	// span is the most fetches one stair of each partition may stand for.
	span map[model.Partition]int
	// parts are the partitions of stairs in order, and next each one's
	// first stair at or after the moment last asked about.
	parts []model.Partition
	next  map[model.Partition]int
}

// stair says that the fetches called at or before call, and after the
// stair before, read from offset at the lowest, and the later ones from
// higher. A partition's stairs rise in call and in offset.
// fetches is how many fetches it stands for.
type stair struct {
	call, offset int64
	fetches      int
}

// maxStairs bounds the stairs of one partition. Past it, neighbouring
// stairs are merged into groups of at most a span of fetches, each group
// into one stair that reads from its lowest offset, and the span doubles
// until half as many stairs are left. That keeps more records, never
// fewer than a fetch reads, and no stair stands for more than about
// 8/maxStairs of the partition's fetches.
const maxStairs = 1 << 12

func newFetchesAhead() *fetchesAhead {
	return &fetchesAhead{stairs: map[model.Partition][]stair{}, span: map[model.Partition]int{}, next: map[model.Partition]int{}}
}

// note adds op when it is a fetch. The operations may come in any order
// of their calls.
func (f *fetchesAhead) note(op *histories.Op) {
	if op.Op.Kind != model.Fetch {
		return
	}
	p, at, offset := op.Op.Req.Partition, op.Call, max(op.Op.Req.Offset, 0)
	st := f.stairs[p]
	i := sort.Search(len(st), func(i int) bool { return st[i].call >= at })
	if i < len(st) && st[i].offset <= offset {
		return // a fetch called no sooner reads from no higher
	}
	j := i
	for j > 0 && st[j-1].offset >= offset {
		j--
	}
	end := i
	if end < len(st) && st[end].call == at {
		end++
	}
	fetches := 1
	for _, s := range st[j:end] {
		fetches += s.fetches
	}
	st = slices.Replace(st, j, end, stair{call: at, offset: offset, fetches: fetches})
	if len(st) > maxStairs {
		// Down to half, so that the next merge is maxStairs/2 fetches
		// away and merging costs a constant for each fetch.
		span := max(f.span[p], 1)
		for st = mergeStairs(st, span); len(st) > maxStairs/2; st = mergeStairs(st, span) {
			span *= 2
		}
		f.span[p] = span
	}
	f.stairs[p] = st
}

// mergeStairs merges neighbouring stairs, in order, into groups of at
// most span fetches. A group is its last call and its first, lowest,
// offset.
func mergeStairs(st []stair, span int) []stair {
	merged := st[:0]
	for _, s := range st {
		if n := len(merged); n > 0 && merged[n-1].fetches+s.fetches <= span {
			merged[n-1].call, merged[n-1].fetches = s.call, merged[n-1].fetches+s.fetches
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// forget is state once no operation called before at is still to come:
// each partition's log keeps no record below the lowest offset the
// fetches called from at on read. The moments asked about only rise.
func (f *fetchesAhead) forget(state model.State, at int64) model.State {
	if f.parts == nil {
		f.parts = slices.Sorted(maps.Keys(f.stairs))
	}
	for _, p := range f.parts {
		state = model.ReadsFrom(state, p, f.from(p, at))
	}
	return state
}

// from is the lowest offset the fetches of p called at or after at read,
// math.MaxInt64 when no fetch of p is still to come. The moments asked
// about only rise, partition by partition.
func (f *fetchesAhead) from(p model.Partition, at int64) int64 {
	st, i := f.stairs[p], f.next[p]
	for i < len(st) && st[i].call < at {
		i++
	}
	f.next[p] = i
	if i < len(st) {
		return st[i].offset
	}
	return math.MaxInt64
}

// another is a fetchesAhead of the same fetches whose moments asked about
// are its own, so that two passes that run side by side (the search and
// the invariants) each follow theirs. The fetches must all be noted.
func (f *fetchesAhead) another() *fetchesAhead {
	return &fetchesAhead{stairs: f.stairs, span: f.span, next: map[model.Partition]int{}}
}
