//go:build soak

package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSoakFollowReportsAnInjectedViolation is
// TestFollowReportsAnInjectedViolationWithinSeconds for FENCECHECK_SOAK
// (default 1m): the soak test's client through fencecheck proxy --check,
// check --follow beside it, trip-0 committed again 10 s before the end.
// Each judgement of the part of the file that is whole judges it all
// again, so the delay grows with the recording: it logs the delay, and
// requires only that the violation be reported while the run goes on. It
// runs only with -tags soak, and .ci/run does not run it:
//
//	FENCECHECK_SOAK=5m go test -tags soak -run SoakFollow -v -timeout 1h ./cmd/fencecheck/
func TestSoakFollowReportsAnInjectedViolation(t *testing.T) {
	length := time.Minute
	if v := os.Getenv("FENCECHECK_SOAK"); v != "" {
		var err error
		length, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	require.Greater(t, length, 15*time.Second, "FENCECHECK_SOAK")
	r := startLiveRun(t)
	n := soakClient(t, r.addr, length, length-10*time.Second)
	r.stop()
	followed, checked := r.reported(r.follow, "exactly-once"), r.reported(r.proxy.stdout, "exactly-once")
	t.Logf("%v: %d transactions, %d operations; reported %v (check --follow) and %v (proxy --check) after the operation",
		length, n, len(r.history.Ops), followed.Round(time.Millisecond), checked.Round(time.Millisecond))
	t.Logf("check --follow's progress:\n%s", r.followStderr)
}
