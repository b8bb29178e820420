package kafka

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/internal/clients/sarama"
)

// TestPropertyClientLoopsSarama: each of sarama's loops (package
// internal/clients/sarama) under the session's faults, through the proxy, under
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
// otherwise (clientVerdicts) is held to that. A fenced loop whose library
// speaks KIP-848's consumer protocol (clients.Loop.ConsumerProtocol) runs
// with it too, on Kafka 4 (kip848). A fenced loop that can be a whole
// static member (clients.Loop.Static) runs with static members too, on
// the newest protocol: each worker has an instance id of its own, kept
// across its restarts, as TestPropertyKafkaGroupTransactSessionStaticMembers
// runs franz-go's.
func checkClientLoops(t *testing.T, loops []clients.Loop) {
	for _, loop := range loops {
		for _, p := range protocols {
			t.Run(loop.Name+"/"+p.name, func(t *testing.T) {
				checkClientLoop(t, sessionRun{kafkaVersion: p.kafkaVersion, loop: &loop})
			})
		}
		if loop.Fenced && loop.ConsumerProtocol {
			t.Run(loop.Name+"/"+kip848.name, func(t *testing.T) {
				checkClientLoop(t, sessionRun{kafkaVersion: kip848.kafkaVersion, loop: &loop, base: SessionConfig{ConsumerProtocol: true}})
			})
		}
		if loop.Fenced && loop.Static {
			t.Run(loop.Name+"/static", func(t *testing.T) {
				checkClientLoop(t, sessionRun{loop: &loop, static: true})
			})
		}
	}
}

// checkClientLoop runs one loop's property under one protocol.
func checkClientLoop(t *testing.T, run sessionRun) {
	loop := run.loop
	want, decided := clientVerdicts[loop.Library+"/"+loop.Name]
	if loop.Fenced && !decided {
		sessionBudget(t, clientLoopChecks)
		rapid.Check(t, sessionProperty(t, run))
		return
	}
	if !decided {
		// offsets-monotonic first: its counterexample tells the
		// story (a generation-less commit after a rebalance)
		want = []string{checker.OffsetsMonotonic, checker.ExactlyOnce}
	}
	requireCaught(t, run, want)
}

// clientVerdicts are the loops that break a check for a reason decided in
// histories/clients/README.md: the checks one of which must break.
var clientVerdicts = map[string][]string{}

// requireCaught runs run's interleavings, each from seed 002's situation
// (sessionRun.fromSeed002), until one breaks one of checks,
// and minimizes its history (checker.Minimize) to a counterexample of at
// most maxCounterexample operations; -update saves it under
// histories/clients, with its verdict lines.
func requireCaught(t *testing.T, run sessionRun, checks []string) {
	sessionBudget(t, misconfiguredSessionChecks)
	setRapidFlag(t, "rapid.nofailfile", true)
	setRapidFlag(t, "rapid.shrinktime", time.Second)
	var last histories.History
	run.failed = func(h histories.History) { last = h }
	run.fromSeed002 = true
	failure := &failureOf{T: t}
	rapid.Check(failure, sessionProperty(t, run))
	require.True(t, failure.failed, "%s's %s loop broke no check", run.loop.Library, run.loop.Name)
	// The last failing history is rapid's shrunk interleaving, which may
	// break other checks than the first failure did.
	violated := checker.Check(last, checker.Options{}).Violated()
	broken := slices.IndexFunc(checks, func(c string) bool { return slices.Contains(violated, c) })
	require.GreaterOrEqual(t, broken, 0, "%s's %s loop broke another check than %v:\n%s", run.loop.Library, run.loop.Name, checks, failure.report)
	if seed := failingSeed.FindStringSubmatch(failure.report); seed != nil {
		t.Logf("%s: replay the interleaving with RAPID_SEED=%s FENCECHECK_SESSION_CHECKS=1 go test ./kafka/ -run '^%s$'", checks[broken], seed[1], t.Name())
	}

	small := checker.Minimize(last, checks[broken], time.Minute)
	small.Name = clientHistoryName(run)
	t.Logf("%s breaks %s in %d operations (of %d)", small.Name, checks[broken], len(small.Ops), len(last.Ops))
	require.LessOrEqual(t, len(small.Ops), maxCounterexample, "the counterexample is too long to read")
	if *update {
		saveClientHistory(t, small)
	}
}

// failingSeed finds the seed of the failing interleaving in rapid's
// report: with it as RAPID_SEED, rapid's first interleaving draws the
// same actions.
var failingSeed = regexp.MustCompile(`-rapid\.seed=(\d+)`)

// maxCounterexample is the longest counterexample a reader is handed.
const maxCounterexample = 20

// clientsDir holds the minimized counterexamples of the client loops.
const clientsDir = "../histories/clients"

func clientHistoryName(run sessionRun) string {
	protocol := "txn-v2"
	switch {
	case run.base.ConsumerProtocol:
		protocol = kip848.name
	case run.kafkaVersion != "":
		protocol = "txn-v1"
	}
	return run.loop.Library + "-" + run.loop.Name + "-" + protocol
}

// saveClientHistory writes h and its verdict lines (without their
// reasons, as TestGoldenHistories compares them).
func saveClientHistory(t *testing.T, h histories.History) {
	require.NoError(t, os.MkdirAll(clientsDir, 0o755))
	path := filepath.Join(clientsDir, h.Name)
	require.NoError(t, histories.SaveFile(path+".json", h))
	var verdicts strings.Builder
	for _, v := range checker.Check(h, checker.Options{}).Verdicts {
		line, _, _ := strings.Cut(v.String(), " (")
		verdicts.WriteString(line + "\n")
	}
	require.NoError(t, os.WriteFile(path+".verdict", []byte(verdicts.String()), 0o644))
}
