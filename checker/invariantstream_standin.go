package checker

import (
	"runtime"

	"github.com/fencecheck/fencecheck/histories"
)

// invariantStream stands in for the invariants' folds, which take the
// operations one at a time in call order: it keeps every operation and
// judges them at the end with the analysis of the whole history, as
// Check does. So a check through it holds the whole history.
type invariantStream struct {
	h histories.History
	// chunks are the operations so far, in chunks of a fixed size: a
	// slice grown by appending held its old and its new array at once.
	chunks   [][]histories.Op
	progress *passProgress
}

// standInChunk is how many operations one chunk holds.
const standInChunk = 1 << 16

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
	if standInOff {
		return
	}
	if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) == standInChunk {
		s.chunks = append(s.chunks, make([]histories.Op, 0, standInChunk))
	}
	last := &s.chunks[len(s.chunks)-1]
	*last = append(*last, *op)
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
	total := 0
	for _, c := range s.chunks {
		total += len(c)
	}
	s.h.Ops = make([]histories.Op, 0, total)
	for i, c := range s.chunks {
		s.h.Ops = append(s.h.Ops, c...)
		s.chunks[i] = nil // each chunk goes once copied
	}
	s.chunks = nil
	if total == 0 {
		s.h.Ops = nil
	}
	// The chunks are garbage now, as large as the history: collected
	// here, they do not set the heap's next goal at twice both.
	runtime.GC()
	a := analyzeWithProgress(s.h, s.progress)
	for i, check := range invariantChecks() {
		s.progress.begin(Checks[1+i])
		verdicts = append(verdicts, check(a))
	}
	return verdicts
}
