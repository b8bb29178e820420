package checker

import (
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/histories"
)

// Minimize is the shortest history it finds, within budget, that breaks
// check the way h does: the same signature (the check, the rule, the type
// and answer class of the operation that breaks it). A history recorded
// from a real client holds hundreds of heartbeats and fetches that the
// bug report does not need; a counterexample a reader can follow holds
// the dozen operations that make the bug. It is delta debugging (Zeller
// and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
// 2002) over the history's operations: drop a chunk, keep the rest if the
// check still breaks the same way, and split the chunks finer when no
// chunk can go. The operations keep their ids, so that the minimized
// history's verdict names the same operations as the full one's.
//
// h is returned unchanged when check does not break on it.
func Minimize(h histories.History, check string, budget time.Duration) histories.History {
	want, ok := signatureIn(h, check)
	if !ok {
		return h
	}
	deadline := time.Now().Add(budget)
	breaks := func(ops []histories.Op) bool {
		candidate := h
		candidate.Ops = ops
		got, ok := signatureIn(candidate, check)
		return ok && got == want
	}
	ops := slices.Clone(h.Ops)
	for chunks := 2; len(ops) > 1 && time.Now().Before(deadline); {
		size := (len(ops) + chunks - 1) / chunks
		dropped := false
		for start := 0; start < len(ops) && time.Now().Before(deadline); start += size {
			rest := slices.Concat(ops[:start], ops[min(start+size, len(ops)):])
			if breaks(rest) {
				ops, dropped = rest, true
				break
			}
		}
		switch {
		case dropped:
			chunks = max(chunks-1, 2)
		case size == 1:
			chunks = len(ops) + 1 // every single operation is needed
		default:
			chunks = min(chunks*2, len(ops))
		}
		if chunks > len(ops) {
			break
		}
	}
	h.Ops = ops
	return h
}

// signatureIn is the signature of check's violation on h, false when it
// holds (or is not decided).
func signatureIn(h histories.History, check string) (Signature, bool) {
	v := CheckOne(h, check)
	if v.Status != Violated {
		return Signature{}, false
	}
	return signatureOf(v, opsByID(h)), true
}

// CheckOne runs the one check named check on h, with Check's default
// options: a test that wants one invariant of a long conversation need
// not pay for the linearizability search.
func CheckOne(h histories.History, check string) Verdict {
	switch check {
	case Linearizable:
		return checkLinearizable(h, Options{Timeout: DefaultTimeout}).verdict
	case ErrorCodes:
		return checkLinearizable(h, Options{Timeout: DefaultTimeout}).codes
	}
	for _, v := range judgeInvariants(h, nil) {
		if v.Check == check {
			return v
		}
	}
	return Verdict{Check: check, Status: Unknown}
}
