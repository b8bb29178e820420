package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// checkExactlyOnce: each trip is carried by at most one committed record
// per topic, as read_committed reads and committed writes show (no
// duplicate); read_committed readers see every committed record wherever a
// read covered its offset (no lost write); and one offset never holds two
// records (inconsistent offsets).
func checkExactlyOnce(a *analysis) Verdict {
	var violations []Violation
	violations = append(violations, a.duplicates()...)
	violations = append(violations, a.lostWrites()...)
	violations = append(violations, a.inconsistentOffsets()...)
	return a.verdict(ExactlyOnce, violations)
}

// duplicates finds trip keys carried by more than one committed record of
// one topic (Jepsen's duplicate): seen at two offsets by read_committed
// fetches, or written at two offsets by writes that committed, which every
// read_committed reader of the topic will see. A duplicate is reported at
// the operation that completed the evidence: the fetch that saw the second
// record, or the commit of the second write.
func (a *analysis) duplicates() []Violation {
	type tripInTopic struct{ topic, key string }
	all := a.committedEvidence()
	firstSeen := map[tripInTopic]int{} // into all: a trip for every record
	reported := map[slot]bool{}
	var violations []Violation
	for i, e := range all {
		trip := tripInTopic{topicOf(e.partition), e.key}
		at, seen := firstSeen[trip]
		if !seen {
			firstSeen[trip] = i
			continue
		}
		first := all[at]
		if first.slot == e.slot || reported[e.slot] {
			continue
		}
		reported[e.slot] = true
		violations = append(violations, duplicate(trip.topic, first, e))
	}
	return violations
}

// evidence is a committed record as an operation showed it: a
// read_committed fetch that returned it, or the operation that committed a
// write of it (the write itself when it was not transactional).
type evidence struct {
	sighting
	by      int  // the operation that shows the record committed
	written bool // shown by a committed write, not by a read
	at      int64
}

// committedEvidence lists every committed record the history shows, in the
// order the operations showing them returned.
func (a *analysis) committedEvidence() []evidence {
	var all []evidence
	for _, op := range counted(a.progress, slices.All(a.h.Ops)) {
		if isReadCommitted(op) {
			for _, s := range fetchedRecords(op) {
				all = append(all, evidence{sighting: s, by: op.ID, at: op.Return})
			}
		}
		if !a.committedWrite(op) {
			continue
		}
		by := a.byID.get(op.ID)
		if t := a.txnOf[op.ID]; t != nil {
			by = a.byID.get(t.endedBy)
		}
		for _, s := range producedRecords(op) {
			if a.names(s) {
				all = append(all, evidence{sighting: s, by: by.ID, written: true, at: max(by.Return, op.Return)})
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].at != all[j].at {
			return all[i].at < all[j].at
		}
		return all[i].by < all[j].by
	})
	return all
}

// names reports whether a produce's acknowledgement names the slot of s: a
// produce repeating an earlier batch's sequence numbers names none.
func (a *analysis) names(s sighting) bool {
	return slices.ContainsFunc(a.records[s.slot], func(o sighting) bool { return o.op == s.op })
}

// duplicate is the violation of again, a second committed record of a
// trip, after first.
func duplicate(topic string, first, again evidence) Violation {
	how := "read committed"
	if first.written || again.written {
		how = "committed"
	}
	v := Violation{Op: again.by, Reason: fmt.Sprintf("%s %s twice in %s: at %s offset %d and at %s offset %d",
		again.key, how, topic, first.partition, first.offset, again.partition, again.offset)}
	if first.by != again.by {
		verb := "read"
		if first.written {
			verb = "committed"
		}
		v.Related = []int{first.by}
		v.Reason += fmt.Sprintf(" (op %d %s the first)", first.by, verb)
	}
	return v
}

// lostWrites finds read_committed fetches that returned offsets on both
// sides of a committed record but not the record itself.
func (a *analysis) lostWrites() []Violation {
	committed := a.committedRecords()
	var violations []Violation
	for _, fetch := range counted(a.progress, slices.All(a.h.Ops)) {
		if !isReadCommitted(fetch) {
			continue
		}
		for _, w := range skippedBy(fetch, committed[fetch.Req.Partition]) {
			violations = append(violations, Violation{Op: fetch.ID, Related: a.writeAndCommit(w.op),
				Reason: fmt.Sprintf("%s committed at %s offset %d (op %d) missing from a read_committed fetch of offsets %d to %d",
					w.key, w.partition, w.offset, w.op, fetch.Req.Offset, highestOffset(fetch))})
		}
	}
	return violations
}

// committedLog is the records of one partition's committed writes, in
// the call order of their writes, and the same records by offset.
type committedLog struct {
	records  []sighting
	byOffset []int // indexes into records, in the order of their offsets
}

// committedRecords is the records of committed writes, by partition.
func (a *analysis) committedRecords() map[model.Partition]*committedLog {
	committed := map[model.Partition]*committedLog{}
	for _, op := range counted(a.progress, inCallOrder(a.h.Ops)) {
		if a.committedWrite(op) {
			l := committed[op.Req.Partition]
			if l == nil {
				l = &committedLog{}
				committed[op.Req.Partition] = l
			}
			l.records = append(l.records, producedRecords(op)...)
		}
	}
	for _, l := range committed {
		l.byOffset = make([]int, len(l.records))
		for i := range l.byOffset {
			l.byOffset[i] = i
		}
		slices.SortStableFunc(l.byOffset, func(i, j int) int { return cmp.Compare(l.records[i].offset, l.records[j].offset) })
	}
	return committed
}

// skippedBy is the records of written that lie in the range a fetch
// covered (from its start to the highest offset it returned) but that it
// did not return, in the order of written.
func skippedBy(fetch histories.Op, written *committedLog) []sighting {
	if written == nil {
		return nil
	}
	returned := map[int64]bool{}
	for _, s := range fetchedRecords(fetch) {
		returned[s.offset] = true
	}
	high := highestOffset(fetch)
	from, _ := slices.BinarySearchFunc(written.byOffset, fetch.Req.Offset, func(i int, offset int64) int {
		return cmp.Compare(written.records[i].offset, offset)
	})
	var skipped []int
	for _, i := range written.byOffset[from:] {
		if w := written.records[i]; w.offset > high {
			break
		} else if !returned[w.offset] {
			skipped = append(skipped, i)
		}
	}
	slices.Sort(skipped)
	out := make([]sighting, len(skipped))
	for n, i := range skipped {
		out[n] = written.records[i]
	}
	return out
}

// highestOffset is the highest offset a fetch returned; -1 when none.
func highestOffset(fetch histories.Op) int64 {
	high := int64(-1)
	for _, s := range fetchedRecords(fetch) {
		high = max(high, s.offset)
	}
	return high
}

// writeAndCommit is a produce and, when transactional, the operation that
// committed it.
func (a *analysis) writeAndCommit(produce int) []int {
	related := []int{produce}
	if t := a.txnOf[produce]; t != nil && t.endedBy >= 0 {
		related = append(related, t.endedBy)
	}
	return related
}

// inconsistentOffsets finds slots that two operations showed holding
// different records.
func (a *analysis) inconsistentOffsets() []Violation {
	var violations []Violation
	for at, seen := range a.records {
		first := seen[0]
		for _, s := range seen[1:] {
			if !s.sameRecord(first) {
				violations = append(violations, Violation{Op: s.op, Related: []int{first.op},
					Reason: fmt.Sprintf("%s offset %d holds %s, but op %d showed %s there",
						at.partition, at.offset, recordName(s), first.op, recordName(first))})
				break
			}
		}
	}
	return violations
}

// recordName is a record as reasons name it: key, value and producer id.
func recordName(s sighting) string {
	name := s.key
	if s.value != "" {
		name += fmt.Sprintf(" (%q)", s.value)
	}
	return fmt.Sprintf("%s of producer id %d", name, s.producerID)
}
