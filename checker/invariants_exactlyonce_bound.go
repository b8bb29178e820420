package checker

import (
	"maps"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// forgetRead forgets, once no operation called before now is still to
// come, what no operation of a history that keeps to Kafka's order can
// look at again:
//   - the first record of an offset that no fetch still to come reads,
//     and that lies more than exactlyOnceMargin below the partition's
//     highest offset sighted, because a produce is answered above the
//     records that exist when it is called;
//   - a range a read_committed fetch skipped, once the fetch has
//     returned and no open transaction holds a record inside it, because
//     only such a record may still commit there;
//   - a committed record no fetch still to come reads, after pairing it
//     with the skipped ranges held;
//   - the detail of a trip's first committed record, once no fetch still
//     to come reads its offset and no commit or read waiting to be
//     judged shows it; the trip's fingerprint stays (tripPrints).
//
// An operation that needs what was forgotten is named by forgotten.
func (f *exactlyOnceFold) forgetRead(now int64) {
	b := f.bounded
	// open are the offsets that open transactions' records hold, whose
	// commits may still show them; shown adds those of the records
	// waiting to be judged.
	open, shown := map[model.Partition][]int64{}, map[model.Partition][]int64{}
	for _, c := range f.produces {
		for o := c.first; o <= c.last; o++ {
			open[c.partition] = append(open[c.partition], o)
		}
	}
	held := len(f.produces)
	for _, w := range f.open {
		for _, r := range w.records {
			open[r.partition] = append(open[r.partition], r.offset)
		}
		held += len(w.records)
	}
	for p, offsets := range open {
		shown[p] = slices.Clone(offsets)
	}
	for _, e := range f.shown {
		shown[e.partition] = append(shown[e.partition], e.offset)
	}
	for _, offsets := range open {
		slices.Sort(offsets)
	}
	for _, offsets := range shown {
		slices.Sort(offsets)
	}
	held += len(f.shown)
	readFrom := map[model.Partition]int64{}
	ahead := func(p model.Partition) int64 {
		from, ok := readFrom[p]
		if !ok {
			from = math.MinInt64 // without the fetches, every offset may be read
			if f.ahead != nil {
				from = f.ahead.from(p, now)
			}
			readFrom[p] = from
		}
		return from
	}
	for p, l := range f.logs {
		below := int64(math.MinInt64)
		if l.sighted && l.highest >= math.MinInt64+exactlyOnceMargin {
			below = min(ahead(p), l.highest-exactlyOnceMargin)
		}
		if below > l.below {
			l.below = below
			for o := range l.at {
				if o < below {
					delete(l.at, o)
					l.dropped++
				}
			}
			if l.dropped > len(l.at) {
				// A map does not shrink: a new one holds only what is left.
				l.at, l.dropped = maps.Clone(l.at), 0
			}
		}
		held += len(l.at)
	}
	for p, ranges := range f.skipped {
		kept, dropped := ranges[:0], []skippedRange(nil)
		for _, r := range ranges {
			if r.fetch.ret < now && !anyWithin(open[p], r.from, r.to) {
				dropped = append(dropped, r)
				if to, ok := b.rangesTo[p]; !ok || r.to > to {
					b.rangesTo[p] = r.to
				}
				continue
			}
			kept = append(kept, r)
		}
		if len(dropped) > 0 {
			f.pair(p, dropped, f.sortedCommitted(p))
		}
		clear(ranges[len(kept):])
		if len(kept) == 0 {
			delete(f.skipped, p)
		} else {
			f.skipped[p] = kept
		}
		held += len(kept)
	}
	for p := range f.committed {
		committed := f.sortedCommitted(p)
		from := ahead(p)
		n, _ := slices.BinarySearchFunc(committed, from, func(w committedRecord, o int64) int {
			if w.offset < o {
				return -1
			}
			return 1
		})
		f.pair(p, f.skipped[p], committed[:n])
		kept := copy(committed, committed[n:])
		clear(committed[kept:])
		if kept == 0 {
			delete(f.committed, p)
		} else {
			f.committed[p] = committed[:kept]
		}
		held += kept
	}
	var prints []uint64
	tripsHeld := 0
	for topic, trips := range f.firstShown {
		for key, first := range trips {
			p := f.partitions[first.partition]
			if first.offset < ahead(p) && !anyWithin(shown[p], first.offset, first.offset) {
				delete(trips, key)
				prints = append(prints, tripPrint(topic, key))
				b.tripsDropped++
			}
		}
		tripsHeld += len(trips)
	}
	held += tripsHeld
	if b.tripsDropped > tripsHeld {
		for topic, trips := range f.firstShown {
			f.firstShown[topic] = maps.Clone(trips)
		}
		b.tripsDropped = 0
	}
	b.trips.add(prints)
	b.next = f.seq + max(exactlyOnceEvery, held/8)
}

// anyWithin reports whether sorted holds an offset from from to to.
func anyWithin(sorted []int64, from, to int64) bool {
	i, _ := slices.BinarySearch(sorted, from)
	return i < len(sorted) && sorted[i] <= to
}

// tripPrint is the fingerprint of a trip in a topic: FNV-1a of both, 64
// bits.
func tripPrint(topic, key string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint64(topic[i])) * prime
	}
	h = (h ^ 0xff) * prime // no byte of a string is 0xff alone in UTF-8
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	return h
}

// tripPrints is a set of fingerprints in sorted runs, each at most half
// as long as the one before, so that each fingerprint takes 8 bytes,
// adding one costs a logarithm amortised, and a look-up a binary search
// of each of the logarithmically many runs.
type tripPrints struct {
	runs [][]uint64
}

// add adds prints, which it may reorder.
func (t *tripPrints) add(prints []uint64) {
	if len(prints) == 0 {
		return
	}
	slices.Sort(prints)
	t.runs = append(t.runs, slices.Clip(prints))
	for n := len(t.runs); n >= 2 && 2*len(t.runs[n-1]) > len(t.runs[n-2]); n = len(t.runs) {
		t.runs = append(t.runs[:n-2], mergeSorted(t.runs[n-2], t.runs[n-1]))
	}
}

// has reports whether print was added.
func (t *tripPrints) has(print uint64) bool {
	for _, run := range t.runs {
		if _, ok := slices.BinarySearch(run, print); ok {
			return true
		}
	}
	return false
}

// size is how many fingerprints were added.
func (t *tripPrints) size() int {
	n := 0
	for _, run := range t.runs {
		n += len(run)
	}
	return n
}

// mergeSorted is a and b, both sorted, merged into one sorted slice.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}
