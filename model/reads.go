package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Reads say, for each partition, the lowest offset any fetch of a history
// asks for. A fetch returns records from its own offset upward, never one
// below it (UnifiedLog.read hands its startOffset to LocalLog.read, 3.9.0;
// UnifiedLogTest#testAppendAndReadWithSequentialOffsets). So under
// Options.Reads a partition log keeps the key and value of no record below
// its partition's lowest offset: it only counts those offsets (partLog).
// A partition no fetch reads keeps none at all, for example the soak's,
// which only produces.
//
// Nothing a request can tell changes: the offsets, the producers' state,
// the last stable offset and the high watermark are what they would be,
// and every record a fetch of the history reads is kept. An aborted range
// that ends at or below the lowest offset holds no record a fetch reads,
// so it is not kept either. Reads are for judging one history whose
// fetches are all known before the search, as a checker's first reading
// of a file knows them. A fetch below its partition's lowest offset is
// refused with the rule fetch-below-reads, because the model no longer
// holds what it would return.
//
// A Reads is built with Fetch before the model's Init and never changed
// after, because the states of one search share it.
type Reads struct {
	from map[Partition]int64
}

// NewReads is the Reads of a history with no fetch yet.
func NewReads() *Reads { return &Reads{from: map[Partition]int64{}} }

// Fetch notes a fetch of p from offset. An offset below 0 reads from 0,
// as the model's fetch does.
func (r *Reads) Fetch(p Partition, offset int64) {
	offset = max(offset, 0)
	if from, ok := r.from[p]; !ok || offset < from {
		r.from[p] = offset
	}
}

// Lowest is the lowest offset a fetch of p reads from, and whether one
// reads p at all.
func (r *Reads) Lowest(p Partition) (offset int64, read bool) {
	offset, read = r.from[p]
	return offset, read
}

// keepFrom is the lowest offset of p whose record a fetch reads:
// math.MaxInt64 when no fetch reads p, and 0 for every partition without
// Reads.
func (r *Reads) keepFrom(p Partition) int64 {
	if r == nil {
		return 0
	}
	if from, ok := r.from[p]; ok {
		return from
	}
	return math.MaxInt64
}

// String lists each fetched partition with its lowest offset, in order.
func (r *Reads) String() string {
	if r == nil {
		return "every record kept"
	}
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(r.from)) {
		fmt.Fprintf(&b, "%s from %d; ", p, r.from[p])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// ReadsFrom is s once no fetch from now on reads p below offset. The
// entries of p's log below offset are then only counted, and so are
// those appended below it later; its aborted ranges ending at or below it
// go. A checker says so between two windows, from the offsets of the
// fetches still to come (checker/reads.go), so that a record every fetch
// has passed is not held. It never lowers what a log keeps from.
//
// The entries go once at least half of those kept lie below offset, so
// that moving a log's entries costs a constant for each entry over the
// log's life. Until then a log may keep some below offset.
func ReadsFrom(s State, p Partition, offset int64) State {
	ps, ok := s.parts[p]
	if !ok || offset <= ps.log.floor {
		return s
	}
	ps.log.floor = offset
	if drop := min(offset, int64(ps.log.Len())) - ps.log.counted; drop > 0 && 2*drop >= int64(ps.log.kept.Len()) {
		ps.log = ps.log.from(offset)
		ps.aborted = abortedPast(ps.aborted, offset)
	}
	s.setPart(p, ps)
	return s
}

// abortedPast is ranges without those that end at or below offset. The
// ranges are in the order of their markers.
func abortedPast(ranges vec[abortedTxn], offset int64) vec[abortedTxn] {
	i := 0
	for i < ranges.Len() && ranges.At(i).marker <= offset {
		i++
	}
	if i == 0 {
		return ranges
	}
	var past vec[abortedTxn]
	for ; i < ranges.Len(); i++ {
		past = past.Append(ranges.At(i))
	}
	return past
}

// partLog is a partition log: its first counted offsets, whose entries no
// fetch reads and so are not kept (Options.Reads, ReadsFrom), then the
// entries kept. Without either, counted is 0 and every entry is kept.
type partLog struct {
	counted int64
	kept    vec[entry]
	// floor is the offset ReadsFrom said no later fetch reads below.
	floor int64
}

// Len is the log end offset.
func (l partLog) Len() int { return int(l.counted) + l.kept.Len() }

// At is the entry at offset i, which must be one kept (i >= counted).
func (l partLog) At(i int) entry { return l.kept.At(i - int(l.counted)) }

// Append returns l with e at its end, keeping e only from offset keepFrom
// and the log's floor on; l itself is unchanged.
func (l partLog) Append(e entry, keepFrom int64) partLog {
	if l.kept.Len() == 0 && l.counted < max(keepFrom, l.floor) {
		l.counted++
		return l
	}
	l.kept = l.kept.Append(e)
	return l
}

// from is l counting, not keeping, its entries below offset.
func (l partLog) from(offset int64) partLog {
	offset = min(offset, int64(l.Len()))
	var kept vec[entry]
	for i := int(offset); i < l.Len(); i++ {
		kept = kept.Append(l.At(i))
	}
	l.counted, l.kept = offset, kept
	return l
}

// keepsFrom is the lowest offset whose record the log keeps when written.
func (l partLog) keepsFrom(keepFrom int64) int64 { return max(keepFrom, l.floor) }

func (l partLog) equal(o partLog) bool {
	return l.counted == o.counted && l.floor == o.floor && l.kept.equal(o.kept, sameEntry)
}
