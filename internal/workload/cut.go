package workload

import (
	"slices"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// maxCuts bounds how many moments after a violation cutAt tries
// for each broken check: the check almost always breaks at the first.
const maxCuts = 16

// cutAt is the shortest counterexample a history holds for one of its
// violations: the history up to the first moment, from the one the
// violating operation was answered at, where check still breaks (a prefix
// of a history is a history, and a safety check broken by a prefix is
// broken by the whole), judged as the report was, with that prefix's
// report. Progress is judged at the end: its violation keeps the whole
// history.
func cutAt(whole checker.Report, check string, op int) (histories.History, checker.Report) {
	h := whole.History
	if check == checker.Progress {
		return h, whole
	}
	for _, t := range momentsFrom(h, op) {
		cut := h.Until(t)
		if len(cut.Ops) >= len(h.Ops) {
			break
		}
		if report := checker.Check(cut, whole.Options()); report.Verdict(check).Status == checker.Violated {
			return cut, report
		}
	}
	return h, whole
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
