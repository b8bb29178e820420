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

// partLog is a partition log: its first counted offsets, whose entries no
// fetch reads and so are not kept (Options.Reads), then the entries kept.
// Without Reads, counted is 0 and every entry is kept.
type partLog struct {
	counted int64
	kept    vec[entry]
}

// Len is the log end offset.
func (l partLog) Len() int { return int(l.counted) + l.kept.Len() }

// At is the entry at offset i, which must be one kept (i >= counted).
func (l partLog) At(i int) entry { return l.kept.At(i - int(l.counted)) }

// Append returns l with e at its end, keeping e only from offset keepFrom
// on; l itself is unchanged.
func (l partLog) Append(e entry, keepFrom int64) partLog {
	if l.kept.Len() == 0 && l.counted < keepFrom {
		l.counted++
		return l
	}
	l.kept = l.kept.Append(e)
	return l
}

func (l partLog) equal(o partLog) bool {
	return l.counted == o.counted && l.kept.equal(o.kept, sameEntry)
}
