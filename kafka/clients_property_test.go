package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/clients"
	"github.com/fencecheck/fencecheck/clients/sarama"
)

// TestPropertyClientLoopsSarama: each of sarama's loops (package
// clients/sarama) under the session's faults, through the proxy, under
// each transaction protocol. See checkClientLoops.
func TestPropertyClientLoopsSarama(t *testing.T) {
	checkClientLoops(t, sarama.Loops)
}

// checkClientLoops runs each loop as the franz-go session is run
// (sessionProperty): workers join and leave, stall and wake, crash and
// restart, lose answers, and the clock and the brokers move on. A fenced
// loop must hold every check the session does; a loop that is not fenced
// must be caught by exactly-once or offsets-monotonic (seed 002), and is
// given more interleavings for it. A loop whose verdict is decided
// otherwise (clientVerdicts) is held to that.
func checkClientLoops(t *testing.T, loops []clients.Loop) {
	for _, loop := range loops {
		for _, p := range protocols {
			t.Run(loop.Name+"/"+p.name, func(t *testing.T) {
				run := sessionRun{kafkaVersion: p.kafkaVersion, loop: &loop}
				want, decided := clientVerdicts[loop.Library+"/"+loop.Name]
				if loop.Fenced && !decided {
					setRapidFlag(t, "rapid.checks", sessionChecks)
					rapid.Check(t, sessionProperty(t, run))
					return
				}
				if !decided {
					want = []string{checker.ExactlyOnce, checker.OffsetsMonotonic}
				}
				requireCaught(t, run, want)
			})
		}
	}
}

// clientVerdicts are the loops that break a check for a reason decided in
// histories/clients/README.md: the checks one of which must break.
var clientVerdicts = map[string][]string{}

// requireCaught runs run's interleavings until one breaks one of checks.
func requireCaught(t *testing.T, run sessionRun, checks []string) {
	setRapidFlag(t, "rapid.checks", misconfiguredSessionChecks)
	setRapidFlag(t, "rapid.nofailfile", true)
	setRapidFlag(t, "rapid.shrinktime", time.Second)
	failure := &failureOf{T: t}
	rapid.Check(failure, sessionProperty(t, run))
	require.True(t, failure.failed, "%s's %s loop broke no check", run.loop.Library, run.loop.Name)
	for _, check := range checks {
		if strings.Contains(failure.report, check+": VIOLATED") {
			return
		}
	}
	t.Fatalf("%s's %s loop broke another check than %v:\n%s", run.loop.Library, run.loop.Name, checks, failure.report)
}
