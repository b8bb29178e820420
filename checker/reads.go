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
	// parts are the partitions of stairs in order, and next each one's
	// first stair at or after the moment last asked about.
	parts []model.Partition
	next  map[model.Partition]int
}

// stair says that the fetches called at or before call, and after the
// stair before, read from offset at the lowest, and the later ones from
// higher. A partition's stairs rise in call and in offset.
type stair struct{ call, offset int64 }

// maxStairs bounds the stairs of one partition. Past it, two stairs are
// merged into one that reads from the lower offset, which keeps more
// records but never fewer than a fetch reads.
const maxStairs = 1 << 12

func newFetchesAhead() *fetchesAhead {
	return &fetchesAhead{stairs: map[model.Partition][]stair{}, next: map[model.Partition]int{}}
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
	st = slices.Replace(st, j, end, stair{call: at, offset: offset})
	if len(st) > maxStairs {
		merged := st[:0]
		for k := 0; k < len(st); k += 2 {
			if k+1 < len(st) {
				merged = append(merged, stair{call: st[k+1].call, offset: st[k].offset})
			} else {
				merged = append(merged, st[k])
			}
		}
		st = merged
	}
	f.stairs[p] = st
}

// forget is state once no operation called before at is still to come:
// each partition's log keeps no record below the lowest offset the
// fetches called from at on read. The moments asked about only rise.
func (f *fetchesAhead) forget(state model.State, at int64) model.State {
	if f.parts == nil {
		f.parts = slices.Sorted(maps.Keys(f.stairs))
	}
	for _, p := range f.parts {
		st, i := f.stairs[p], f.next[p]
		for i < len(st) && st[i].call < at {
			i++
		}
		f.next[p] = i
		from := int64(math.MaxInt64) // no fetch of p is still to come
		if i < len(st) {
			from = st[i].offset
		}
		state = model.ReadsFrom(state, p, from)
	}
	return state
}
