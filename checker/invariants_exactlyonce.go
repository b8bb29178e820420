package checker

import (
	"fmt"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// checkExactlyOnce: read_committed readers see each trip once (no
// duplicate), every committed record wherever a read covered its offset (no
// lost write), and one offset never holds two records (inconsistent offsets).
func checkExactlyOnce(h histories.History) Verdict {
	a := analyze(h)
	var violations []Violation
	violations = append(violations, a.duplicates()...)
	violations = append(violations, a.lostWrites()...)
	violations = append(violations, a.inconsistentOffsets()...)
	return a.verdict(ExactlyOnce, violations)
}

// duplicates finds trip keys that read_committed fetches found at more than
// one offset of one topic (Jepsen's duplicate).
func (a *analysis) duplicates() []Violation {
	type tripInTopic struct{ topic, key string }
	firstSeen := map[tripInTopic]sighting{}
	reported := map[slot]bool{}
	var violations []Violation
	for _, op := range inCallOrder(a.h.Ops) {
		if !isReadCommitted(op) {
			continue
		}
		for _, s := range fetchedRecords(op) {
			trip := tripInTopic{topicOf(s.partition), s.key}
			first, seen := firstSeen[trip]
			if !seen {
				firstSeen[trip] = s
				continue
			}
			if first.slot == s.slot || reported[s.slot] {
				continue
			}
			reported[s.slot] = true
			violations = append(violations, duplicate(trip.topic, first, s))
		}
	}
	return violations
}

// duplicate is the violation of a fetch that found a trip at again, after
// first.
func duplicate(topic string, first, again sighting) Violation {
	v := Violation{Op: again.op, Reason: fmt.Sprintf("%s read committed twice in %s: at %s offset %d and at %s offset %d",
		again.key, topic, first.partition, first.offset, again.partition, again.offset)}
	if first.op != again.op {
		v.Related = []int{first.op}
		v.Reason += fmt.Sprintf(" (op %d read the first)", first.op)
	}
	return v
}

// lostWrites finds read_committed fetches that returned offsets on both
// sides of a committed record but not the record itself.
func (a *analysis) lostWrites() []Violation {
	committed := a.committedRecords()
	var violations []Violation
	for _, fetch := range a.h.Ops {
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

// committedRecords is the records of committed writes, by partition, in
// the call order of their writes.
func (a *analysis) committedRecords() map[model.Partition][]sighting {
	committed := map[model.Partition][]sighting{}
	for _, op := range inCallOrder(a.h.Ops) {
		if a.committedWrite(op) {
			committed[op.Req.Partition] = append(committed[op.Req.Partition], producedRecords(op)...)
		}
	}
	return committed
}

// skippedBy is the records among written that lie in the range a fetch
// covered (from its start to the highest offset it returned) but that it
// did not return.
func skippedBy(fetch histories.Op, written []sighting) []sighting {
	returned := map[int64]bool{}
	for _, s := range fetchedRecords(fetch) {
		returned[s.offset] = true
	}
	high := highestOffset(fetch)
	var skipped []sighting
	for _, w := range written {
		if w.offset >= fetch.Req.Offset && w.offset <= high && !returned[w.offset] {
			skipped = append(skipped, w)
		}
	}
	return skipped
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
