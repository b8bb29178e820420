package checker

import "github.com/fencecheck/fencecheck/histories"

// invariantStream stands in for the invariants' folds, which take the
// operations one at a time in call order: it keeps every operation and
// judges them at the end with the analysis of the whole history, as
// Check does. So a check through it holds the whole history.
type invariantStream struct {
	h        histories.History
	progress *passProgress
}

// standInOff switches the stand-in's invariants off, so that a
// measurement shows what the reading and the search hold alone. Only a
// test sets it.
var standInOff bool

func newInvariantStream(header histories.History, progress *passProgress) *invariantStream {
	header.Ops = nil
	return &invariantStream{h: header, progress: progress}
}

// add takes the next operation in call order, ties by id.
func (s *invariantStream) add(op *histories.Op) {
	if !standInOff {
		s.h.Ops = append(s.h.Ops, *op)
	}
}

// verdicts are the invariants' verdicts, in the order of invariantChecks.
func (s *invariantStream) verdicts() []Verdict {
	var verdicts []Verdict
	if standInOff {
		for _, check := range Checks[1 : 1+len(invariantChecks())] {
			verdicts = append(verdicts, Verdict{Check: check, Status: Skipped, Reason: "switched off"})
		}
		return verdicts
	}
	a := analyzeWithProgress(s.h, s.progress)
	for i, check := range invariantChecks() {
		s.progress.begin(Checks[1+i])
		verdicts = append(verdicts, check(a))
	}
	return verdicts
}
