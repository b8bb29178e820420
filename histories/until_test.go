package histories

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUntil cuts a history the way an observer at time t saw it: later
// calls are not there yet, later answers are still pending.
func TestUntil(t *testing.T) {
	h, err := LoadFile("canonical/seed-000-zombie-fenced.json")
	require.NoError(t, err)
	require.NotEmpty(t, h.Trips)
	at := h.Ops[3]
	require.True(t, at.Returned)

	cut := h.Until(at.Call)
	require.Nil(t, cut.Trips, "a cut run has not finished its work: no progress to judge")
	for _, op := range cut.Ops {
		require.LessOrEqual(t, op.Call, at.Call)
		if op.Returned {
			require.LessOrEqual(t, op.Return, at.Call)
		}
	}
	last := cut.Ops[len(cut.Ops)-1]
	require.Equal(t, at.ID, last.ID)
	require.False(t, last.Returned, "answered after the cut: pending")
	require.False(t, last.Result.Answered)

	whole := h.Until(h.Ops[len(h.Ops)-1].Call + 1_000_000)
	require.Equal(t, h.Ops, whole.Ops)
}
