package impl

import "testing"

// TestRestartRebuildsState restarts the broker after every request of the
// differential property: every answer comes from tables rebuilt from the
// logs, and must still be the model's (which treats a restart as nothing:
// DESIGN, nothing acknowledged is lost).
func TestRestartRebuildsState(t *testing.T) { checkDifferential(t, true) }
