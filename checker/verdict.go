// Package checker judges a history: linearizability against the reference
// model (porcupine) and the end-to-end invariants of exactly-once processing.
package checker

import (
	"fmt"
	"strings"
)

// The check names are fixed by docs/history-format.md.
const (
	Linearizable     = "linearizable"
	OneLiveProducer  = "one-live-producer"
	ExactlyOnce      = "exactly-once"
	NoAbortedRead    = "no-aborted-read"
	OffsetsMonotonic = "offsets-monotonic"
	Progress         = "progress"
	// OneOwner: no two members of a KIP-848 consumer group hold one
	// partition at once, as the answers show it.
	OneOwner = "one-owner"
	// ErrorCodes: a rightful refusal answered with another class than the
	// model's. It comes last, so the lines before it read as before.
	ErrorCodes = "error-codes"
)

// Checks lists the checks in the order verdicts are printed.
var Checks = []string{Linearizable, OneLiveProducer, ExactlyOnce, NoAbortedRead, OffsetsMonotonic, Progress, OneOwner, ErrorCodes}

// Status is a check's outcome.
type Status int

const (
	OK Status = iota
	Violated
	Unknown // the check could not decide (a time-out); not counted as ok
	Skipped // the history lacks what the check needs
)

// Violation is one breach of a check: the operation that breaks it, the
// operations it is judged against, and why.
type Violation struct {
	Op      int   // the id of the operation that breaks the check
	Related []int // ids of the operations that make it a breach
	// Rule is the model's stable name for the rule that refuses the
	// answer (linearizable, error-codes), or the kind of breach.
	Rule   string
	Reason string // in Kafka's words, naming ids, epochs, offsets
}

// Verdict is one check's outcome on one history.
type Verdict struct {
	Check      string
	Status     Status
	Violations []Violation // when Violated, the first one first
	Reason     string      // when Unknown or Skipped
}

// String is the verdict line of docs/history-format.md: "exactly-once: ok",
// "one-live-producer: VIOLATED op 4 (...)", "linearizable: unknown (...)",
// "progress: skipped".
func (v Verdict) String() string {
	switch v.Status {
	case OK:
		return v.Check + ": ok"
	case Violated:
		first := v.Violations[0]
		line := fmt.Sprintf("%s: VIOLATED op %d (%s)", v.Check, first.Op, first.Reason)
		if n := len(v.Violations) - 1; n > 0 {
			line = strings.TrimSuffix(line, ")") + fmt.Sprintf("; %d more)", n)
		}
		return line
	case Unknown:
		return fmt.Sprintf("%s: unknown (%s)", v.Check, v.Reason)
	default:
		return v.Check + ": skipped"
	}
}

// Held reports whether the check holds (ok, or skipped for lack of input).
func (v Verdict) Held() bool { return v.Status == OK || v.Status == Skipped }
