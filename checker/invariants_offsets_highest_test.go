package checker

import (
	"testing"
)

// A commit is judged against the earlier commits only when it is below
// the highest offset committed so far; one just below it, after the
// highest moved up past the first commit, is still found.
func TestOffsetsMonotonicCommitBelowTheHighest(t *testing.T) {
	b := &historyBuilder{}
	b.plainCommit("W1", 0, 1, "g", "", -1, "trips-0", 5)
	b.plainCommit("W1", 2, 3, "g", "", -1, "trips-0", 9)
	b.plainCommit("W1", 4, 5, "g", "", -1, "trips-0", 9) // the same again holds
	back := b.plainCommit("W1", 6, 7, "g", "", -1, "trips-0", 8)
	requireViolation(t, CheckOne(b.h, OffsetsMonotonic), back, "group g trips-0 committed offset 8 after op 1 had committed 9")
}
