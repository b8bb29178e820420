package checker

import (
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Cut is h as it stood at the instant before: the operations called
// before it, and of those, the ones answered at or after it as never
// answered. It is the history a recorder would have written had every
// client crashed just before that instant, with what was in flight then
// left in flight to the end.
//
// h must hold every operation called before the instant (a recording
// still being written says up to when it does, with the mark
// "complete_before" of docs/history-format.md). Then a violation of
// the cut is one of h too, for every check but progress: an answer the
// cut still holds came back before every operation the cut leaves out
// was called, so none of those could have shaped it. An answer that came
// back later might have been shaped by one, which is why the cut keeps
// its request and not its answer. The cut's ops share their requests
// with h's.
func Cut(h histories.History, before int64) histories.History {
	cut := h
	cut.Ops = make([]histories.Op, 0, len(h.Ops))
	for _, op := range h.Ops {
		if op.Call >= before {
			continue
		}
		if op.Returned && op.Return >= before {
			op.Return, op.Returned, op.Result = 0, false, model.NoAnswer()
		}
		cut.Ops = append(cut.Ops, op)
	}
	// Progress asks whether the run did all its work by its end, and a
	// cut is no end: the trips are the whole run's.
	cut.Trips, cut.OutputTopics = nil, nil
	return cut
}

// CheckCut judges the cut of h at before (Cut): every check but
// progress, which is skipped. A violation it reports is one that h, and
// every history that goes on from h, shows as well, so that a recording
// can be judged while it is written.
func CheckCut(h histories.History, before int64, opts Options) Report {
	return Check(Cut(h, before), opts)
}
