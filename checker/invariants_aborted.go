package checker

import (
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/histories"
)

// checkNoAbortedRead: a read_committed fetch never returns a record of an
// aborted transaction, nor of one still open when the fetch returned
// (Jepsen's G1a). A record whose writer the history cannot name is left to
// the other checks.
func checkNoAbortedRead(a *analysis) Verdict {
	var violations []Violation
	for _, fetch := range counted(a.progress, slices.All(a.h.Ops)) {
		if !isReadCommitted(fetch) {
			continue
		}
		for _, read := range fetchedRecords(fetch) {
			if v, bad := a.uncommittedRead(read, fetch); bad {
				violations = append(violations, v)
			}
		}
	}
	return a.verdict(NoAbortedRead, violations)
}

// uncommittedRead reports a record that no writer it may come from had
// committed, or begun to commit, by the time the fetch returned.
func (a *analysis) uncommittedRead(read sighting, fetch histories.Op) (Violation, bool) {
	writers := a.writersOf(read, fetch)
	if len(writers) == 0 {
		return Violation{}, false
	}
	visible := func(w histories.Op) bool {
		t := a.txnOf[w.ID]
		return t == nil || t.visibleBy(fetch.Return)
	}
	if slices.ContainsFunc(writers, visible) || slices.ContainsFunc(a.repeatsAnsweredAt(read, fetch), visible) {
		return Violation{}, false
	}
	w := writers[0]
	t := a.txnOf[w.ID]
	related := []int{w.ID}
	state := "still open when the fetch returned"
	if t.fate == fateAborted {
		related = append(related, t.endedBy)
		state = fmt.Sprintf("aborted by op %d", t.endedBy)
	}
	return Violation{Op: fetch.ID, Related: related,
		Reason: fmt.Sprintf("read_committed fetch returned %s at %s offset %d, written by op %d in a transaction of %s (producer id %d, epoch %d) %s",
			read.key, read.partition, read.offset, w.ID, t.transactionalID, t.producerID, t.epoch, state)}, true
}
