package model

import (
	"cmp"
	"reflect"
	"slices"
)

// Equal reports whether two states are the same broker, as far as any
// request can tell. That is reflect.DeepEqual's relation (a nil map or
// slice is not an empty one) but in one respect, the order of markers
// written one after the other (see partState.equal). It is written out field
// by field, so that what two states share (a log's chunks, a map no step
// wrote since) is found equal without being read: porcupine and the
// windowed search compare states at every step, and their logs grow with
// the history. TestTranscripts holds it to model.EqualByReflection, which
// says the same by rewriting the states.
func Equal(a, b State) bool {
	return a.opts == b.opts && a.now == b.now && a.restartedAt == b.restartedAt && a.nextPID == b.nextPID && a.nextMember == b.nextMember &&
		mapsEqual(a.txns, b.txns, txnMeta.equal) &&
		mapsEqual(a.pids, b.pids, same) &&
		mapsEqual(a.parts, b.parts, partState.equal) &&
		mapsEqual(a.groups, b.groups, group.equal) &&
		mapsEqual(a.consumer, b.consumer, consumerGroup.equal) &&
		mapsEqual(a.triedEpochs, b.triedEpochs, same) &&
		mapsEqual(a.topics, b.topics, same)
}

func (t txnMeta) equal(o txnMeta) bool {
	return t.pid == o.pid && t.epoch == o.epoch && t.prevPID == o.prevPID && t.prevEpoch == o.prevEpoch &&
		t.phase == o.phase && t.startedAt == o.startedAt && t.timeoutMs == o.timeoutMs &&
		t.abortedOnItsOwn == o.abortedOnItsOwn && t.endedEpoch == o.endedEpoch &&
		slicesEqual(t.partitions, o.partitions, same) && slicesEqual(t.groups, o.groups, same) &&
		slicesEqual(t.unwritten, o.unwritten, same) && slicesEqual(t.unsettled, o.unsettled, same) &&
		t.markerPID == o.markerPID && t.markerEpoch == o.markerEpoch && t.completedAt == o.completedAt &&
		t.pendingShownAt == o.pendingShownAt && (t.kept == nil) == (o.kept == nil) && (t.kept == nil || *t.kept == *o.kept) &&
		t.updatedAt == o.updatedAt &&
		mapsEqual(t.pending, o.pending, func(x, y map[Partition]pendingOffset) bool { return mapsEqual(x, y, same) })
}

// Two inits that fence two producers with transactions open in one
// partition write their ABORT markers there in either order, and the two
// logs differ in which marker holds which offset. No request can tell them
// apart: fetches skip markers, and an aborted range is read only at the
// offsets of records, none of which lies between two markers. The windowed
// search would keep both orders as two states to come back to, and with
// every such pair the states to come back to double; so the logs are
// compared as a reader sees them: a marker is a marker, and an aborted
// range ends at the first of the markers its own is among.
func (ps partState) equal(o partState) bool {
	return ps.start == o.start && ps.log.equal(o.log) && ps.sameAborted(o) &&
		mapsEqual(ps.producers, o.producers, producerEntry.equal) && mapsEqual(ps.verifying, o.verifying, same)
}

// sameEntry reports whether two offsets read alike: the same record, or
// both a marker (what a marker says, its producer, epoch and outcome, took
// its effect in the producer state and the aborted ranges, compared apart).
func sameEntry(a, b entry) bool { return a == b || (a.control && b.control) }

// sameAborted reports whether the aborted ranges of two logs that read
// alike hold the same records: past the ranges the two share, the same
// ranges in any order, each ending where its run of markers begins.
func (ps partState) sameAborted(o partState) bool {
	n := ps.aborted.Len()
	if n != o.aborted.Len() {
		return false
	}
	from := ps.aborted.firstDiff(o.aborted, same)
	if from == n {
		return true
	}
	mine, theirs := ps.abortedRead(from), o.abortedRead(from)
	return slices.Equal(mine, theirs)
}

// abortedRead is the aborted ranges from the one at index from on, as a
// read_committed fetch reads them, in one order.
func (ps partState) abortedRead(from int) []abortedTxn {
	var ranges []abortedTxn
	for i := from; i < ps.aborted.Len(); i++ {
		a := ps.aborted.At(i)
		for a.marker > ps.log.counted && ps.log.At(int(a.marker-1)).control {
			a.marker--
		}
		ranges = append(ranges, a)
	}
	slices.SortFunc(ranges, func(a, b abortedTxn) int {
		return cmp.Or(cmp.Compare(a.marker, b.marker), cmp.Compare(a.pid, b.pid), cmp.Compare(a.first, b.first))
	})
	return ranges
}

func (pe producerEntry) equal(o producerEntry) bool {
	return pe.epoch == o.epoch && pe.txnFirst == o.txnFirst && pe.lastTimestamp == o.lastTimestamp &&
		slicesEqual(pe.batches, o.batches, same)
}

func (g group) equal(o group) bool {
	return g.generation == o.generation && g.answered == o.answered && g.unseenRound == o.unseenRound && g.leader == o.leader &&
		g.syncDue == o.syncDue && g.phased == o.phased && g.protocol == o.protocol && g.protocolGen == o.protocolGen &&
		mapsEqual(g.members, o.members, member.equal) && mapsEqual(g.removed, o.removed, same) && mapsEqual(g.pending, o.pending, same) &&
		mapsEqual(g.committed, o.committed, same) && mapsEqual(g.unsettled, o.unsettled, same) &&
		mapsEqual(g.committedAt, o.committedAt, same) && g.writes == o.writes && g.loading == o.loading &&
		mapsEqual(g.committedTime, o.committedTime, same) && g.emptySince == o.emptySince &&
		mapsEqual(g.metadata, o.metadata, same)
}

func (m member) equal(o member) bool {
	return m.gen == o.gen && m.lastSeen == o.lastSeen && m.sessionMs == o.sessionMs && m.mayBeGone == o.mayBeGone &&
		m.assignmentUnknown == o.assignmentUnknown && m.subscriptionForgotten == o.subscriptionForgotten &&
		m.syncPending == o.syncPending && m.syncParked == o.syncParked &&
		m.instance == o.instance && m.mayBeReplaced == o.mayBeReplaced &&
		m.protocolType == o.protocolType && slicesEqual(m.protocols, o.protocols, same) && slicesEqual(m.subscription, o.subscription, same) && slicesEqual(m.assignment, o.assignment, same)
}

func same[T comparable](a, b T) bool { return a == b }

// mapsEqual is reflect.DeepEqual's relation on maps, with eq on values. A
// map is never written once a state holds it (copy-on-write), so one map
// is equal to itself without a look inside.
func mapsEqual[K comparable, V any, M ~map[K]V](a, b M, eq func(V, V) bool) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !eq(va, vb) {
			return false
		}
	}
	return true
}

// slicesEqual is reflect.DeepEqual's relation on slices, with eq on items.
func slicesEqual[T any](a, b []T, eq func(T, T) bool) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	return firstDiffIn(a, b, eq) == len(a)
}

// Hash is a hash of s such that equal states hash equally. It reads only
// small parts of the state so that it stays cheap as logs grow, and folds
// each map's entries in with xor, so that their order does not count.
func Hash(s State) uint64 {
	sum := mix(uint64(s.now), uint64(s.nextPID), uint64(s.nextMember), uint64(len(s.pids)))
	for id, t := range s.txns {
		// The times tell apart states that differ only in the order
		// their requests took: without them such states share a bucket,
		// and porcupine compares each new one with all of them.
		sum ^= mix(hashString(id), uint64(t.pid), uint64(t.epoch), uint64(t.phase), uint64(len(t.partitions)), uint64(len(t.pending)),
			uint64(t.startedAt), uint64(t.updatedAt), uint64(t.completedAt), uint64(t.pendingShownAt), uint64(len(t.unwritten)))
	}
	for p, ps := range s.parts {
		sum ^= mix(hashString(string(p)), uint64(ps.log.Len()), uint64(ps.aborted.Len()), uint64(len(ps.producers)), uint64(len(ps.verifying)), uint64(ps.start))
	}
	for g, gr := range s.groups {
		sum ^= mix(hashString(g), uint64(gr.generation), uint64(len(gr.members)), uint64(len(gr.committed)))
	}
	return sum
}

// FNV-1a, on bytes for strings and on whole words for numbers.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func mix(words ...uint64) uint64 {
	h := uint64(fnvOffset)
	for _, w := range words {
		h = (h ^ w) * fnvPrime
	}
	return h
}

func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}
