package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
)

// TestMinimizeKeepsTheViolation: seed 002's zombie minimizes to a
// shorter history that breaks exactly-once the same way, from which no
// single operation can be dropped.
func TestMinimizeKeepsTheViolation(t *testing.T) {
	h, err := histories.LoadFile("../histories/canonical/seed-002-groupid-string.json")
	require.NoError(t, err)
	want, ok := signatureIn(h, ExactlyOnce)
	require.True(t, ok, "the canonical history breaks exactly-once")

	small := Minimize(h, ExactlyOnce, time.Minute)
	got, ok := signatureIn(small, ExactlyOnce)
	require.True(t, ok)
	require.Equal(t, want, got)
	require.Less(t, len(small.Ops), len(h.Ops), "seed 002's history has operations the violation does not need")
	for i := range small.Ops {
		fewer := small
		fewer.Ops = append(append([]histories.Op(nil), small.Ops[:i]...), small.Ops[i+1:]...)
		if sig, ok := signatureIn(fewer, ExactlyOnce); ok && sig == want {
			t.Fatalf("op %d could be dropped too", small.Ops[i].ID)
		}
	}
}

// TestMinimizeLeavesAHistoryThatHolds: nothing to minimize.
func TestMinimizeLeavesAHistoryThatHolds(t *testing.T) {
	h, err := histories.LoadFile("../histories/canonical/seed-002-fenced-by-generation.json")
	require.NoError(t, err)
	require.Equal(t, h, Minimize(h, ExactlyOnce, time.Minute))
}
