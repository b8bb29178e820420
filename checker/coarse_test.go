package checker_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// coarsened is h as a recorder with a clock of resolution tick would have
// written it: every instant rounded down, so that calls touch the previous
// answer of their process, answers come back at their call's instant, and
// many operations share one.
func coarsened(h histories.History, tick int64) histories.History {
	out := h
	out.Ops = append([]histories.Op(nil), h.Ops...)
	for i := range out.Ops {
		out.Ops[i].Call /= tick
		out.Ops[i].Return /= tick
	}
	return out
}

// reloaded is h saved and loaded again: the loader must accept what a
// coarse clock writes.
func reloaded(t *rapid.T, h histories.History) histories.History {
	var buf bytes.Buffer
	require.NoError(t, histories.Save(&buf, h))
	back, err := histories.Load(&buf)
	require.NoError(t, err)
	return back
}

// TestPropertyCoarseClock: a correct history stays correct on a coarser
// clock. Rounding instants down keeps every order a finer clock saw or
// turns it into a tie, and a tie must never be read as a violation.
func TestPropertyCoarseClock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(20, 600).Draw(t, "ops")
		clients := rapid.IntRange(1, 8).Draw(t, "clients")
		ids := rapid.IntRange(1, 4).Draw(t, "ids")
		seed := rapid.Uint64().Draw(t, "seed")
		tick := rapid.SampledFrom([]int64{1, 5, 10, 20, 100}).Draw(t, "tick")
		fine := syntheticHistory(n, clients, ids, 4, seed)
		require.True(t, checker.Check(fine, checker.Options{}).Held(), "the generator writes correct histories")
		coarse := reloaded(t, coarsened(fine, tick))
		report := checker.Check(coarse, checker.Options{})
		for _, v := range report.Verdicts {
			require.True(t, v.Held(), "at a tick of %d: %v", tick, v)
		}
	})
}
