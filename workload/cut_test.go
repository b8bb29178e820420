package workload

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// TestCutAtViolation cuts each canonical counterexample to the moment its
// first safety check breaks: the cut is a prefix, breaks a check the whole
// breaks, and a run that only lacks progress is kept whole.
func TestCutAtViolation(t *testing.T) {
	files, err := filepath.Glob("../histories/canonical/*.json")
	require.NoError(t, err)
	shortened := 0
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		whole := checker.Check(h, checker.Options{})
		cut, report := cutAtViolation(h, whole, func(v checker.Verdict) bool { return v.Status == checker.Violated })
		if whole.Held() {
			continue
		}
		require.False(t, report.Held(), file)
		for i, op := range cut.Ops {
			require.Equal(t, h.Ops[i].ID, op.ID, "%s: the cut is not a prefix", file)
		}
		for _, v := range report.Verdicts {
			if v.Status == checker.Violated {
				require.Equal(t, checker.Violated, whole.Verdict(v.Check).Status, "%s: the cut breaks %s, the whole does not", file, v.Check)
			}
		}
		onlyProgress := true
		for _, v := range whole.Verdicts {
			onlyProgress = onlyProgress && (v.Status != checker.Violated || v.Check == checker.Progress)
		}
		if onlyProgress {
			require.Equal(t, h, cut, file)
		}
		if len(cut.Ops) < len(h.Ops) {
			shortened++
		}
	}
	require.Positive(t, shortened, "no canonical counterexample has operations after its violation")
}
