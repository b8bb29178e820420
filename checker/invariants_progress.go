package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// checkProgress: every trip the workload had to process is committed by the
// end: carried by a committed write, or seen by a read_committed reader.
// A config that can never commit (replicas sharing one transactional.id)
// ends here as "no progress" rather than as a hang.
func checkProgress(a *analysis) Verdict {
	if a.h.Trips == nil {
		return Verdict{Check: Progress, Status: Skipped, Reason: "the history lists no trips"}
	}
	missing := a.uncommittedTrips()
	if len(missing) == 0 {
		return a.verdict(Progress, nil)
	}
	return a.verdict(Progress, []Violation{{Op: lastOp(a.h),
		Reason: fmt.Sprintf("no progress: %d of %d trips never committed (%s)", len(missing), len(distinct(a.h.Trips)), listSome(missing, 3))}})
}

// lastOp is the id of the operation called last; -1 in an empty history.
func lastOp(h histories.History) int {
	last := -1
	for _, op := range inCallOrder(h.Ops) {
		last = op.ID
	}
	return last
}

// uncommittedTrips is the trips, in the history's order, that no committed
// write carries and no read_committed fetch returned, in the output topics.
func (a *analysis) uncommittedTrips() []string {
	committed := map[string]bool{}
	for _, op := range a.h.Ops {
		if a.committedWrite(op) && a.isOutput(op.Req.Partition) {
			for _, rec := range op.Req.Records {
				committed[rec.Key] = true
			}
		}
		if isReadCommitted(op) && a.isOutput(op.Req.Partition) {
			for _, s := range fetchedRecords(op) {
				committed[s.key] = true
			}
		}
	}
	var missing []string
	for _, trip := range distinct(a.h.Trips) {
		if !committed[trip] {
			missing = append(missing, trip)
		}
	}
	return missing
}

// isOutput reports whether p belongs to an output topic (every topic is one
// when the history does not say).
func (a *analysis) isOutput(p model.Partition) bool {
	return a.h.OutputTopics == nil || slices.Contains(a.h.OutputTopics, topicOf(p))
}

func distinct(keys []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// listSome is the first n items, then "..." when there are more.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + ", ..."
}
