package workload

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// TestCutAt cuts each canonical counterexample at each of its violations:
// the cut is a prefix, breaks the same check, and a progress violation is
// kept whole.
func TestCutAt(t *testing.T) {
	files, err := filepath.Glob("../../histories/canonical/*.json")
	require.NoError(t, err)
	shortened := 0
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		whole := checker.Check(h, checker.Options{})
		for _, v := range violationsOf(whole) {
			cut, report := cutAt(whole, v.sig.Check, v.op)
			require.Equal(t, checker.Violated, report.Verdict(v.sig.Check).Status, "%s: the cut does not break %s", file, v.sig.Check)
			for i, op := range cut.Ops {
				require.Equal(t, h.Ops[i].ID, op.ID, "%s: the cut is not a prefix", file)
			}
			if v.sig.Check == checker.Progress {
				require.Equal(t, h, cut, file)
			}
			if len(cut.Ops) < len(h.Ops) {
				shortened++
			}
		}
	}
	require.Positive(t, shortened, "no canonical counterexample has operations after its violation")
}
