package checker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// A long correct history with one answer wrong near its end: the search
// must get there, through every window whose answers left it more than one
// state to go on from, and name the operation no order can place, not give
// up. (Two inits fencing two producers open in one partition write their
// ABORT markers in either order; each such pair was a choice the search
// came back to, and their number grows with the history.)
func TestLateViolationIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("a history of 100,000 operations")
	}
	h := syntheticHistory(100_000, 8, 4, 8, 1)
	bad := len(h.Ops) - 2_000
	for h.Ops[bad].Kind != model.Produce || !h.Ops[bad].Result.Succeeded() {
		bad++
	}
	h.Ops[bad].Result.Resp.BaseOffset++
	v := checker.Check(h, checker.Options{}).Verdict(checker.Linearizable)
	require.Equal(t, checker.Violated, v.Status, "%v", v)
	require.Equal(t, h.Ops[bad].ID, v.Violations[0].Op, "%v", v)
	require.Equal(t, "log-offset", v.Violations[0].Rule, "%v", v)
}
