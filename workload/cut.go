package workload

import (
	"slices"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// maxCuts bounds how many moments after a violation cutAtViolation tries
// for each broken check: the check almost always breaks at the first.
const maxCuts = 16

// cutAtViolation is the shortest counterexample a failed run holds: the
// history up to the moment a safety check it breaks first breaks (a
// prefix of a history is a history, and a safety check broken by a prefix
// is broken by the whole), with that prefix's report. A run that only
// fails to make progress is its whole history: progress is judged at the
// end.
//
// Only the verdicts that matter count: the cut must break one of them.
func cutAtViolation(h histories.History, whole checker.Report, matters func(checker.Verdict) bool) (histories.History, checker.Report) {
	best, bestReport := h, whole
	for _, v := range whole.Verdicts {
		if !matters(v) || v.Check == checker.Progress {
			continue
		}
		for _, t := range momentsFrom(h, v.Violations[0].Op) {
			cut := h.Until(t)
			if len(cut.Ops) >= len(best.Ops) {
				break
			}
			if report := checker.Check(cut, checker.Options{}); matters(report.Verdict(v.Check)) {
				best, bestReport = cut, report
				break
			}
		}
	}
	return best, bestReport
}

// momentsFrom lists the times at which the history changes, from the
// moment operation id was answered (or called, if it never was), up to
// maxCuts of them.
func momentsFrom(h histories.History, id int) []int64 {
	var from int64
	var times []int64
	for _, op := range h.Ops {
		times = append(times, op.Call)
		if op.Returned {
			times = append(times, op.Return)
		}
		if op.ID == id {
			from = op.Call
			if op.Returned {
				from = op.Return
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	times = times[slices.Index(times, from):]
	return times[:min(len(times), maxCuts)]
}
