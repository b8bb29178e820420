package impl

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestRestartRebuildsState restarts the broker after every request of the
// differential property: every answer comes from tables rebuilt from the
// logs, and must still be the model's (which treats a restart as nothing:
// DESIGN, nothing acknowledged is lost).
func TestRestartRebuildsState(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("txn-v%d", version), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				d := newDifferential(version)
				d.restartAlways = true
				rt.Repeat(d.actions())
			})
		})
	}
}
