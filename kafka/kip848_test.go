package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/model"
)

// kip848Budget is the exploration CI keeps: a few interleavings, because
// kfake's time is real (about a second each way on two busy cores).
var kip848Budget = workload.Budget{Checks: 6, Steps: 30, Seed: 1, ShrinkTime: 8 * time.Second}

// exploreKIP848 explores kip848-consumers on kfake, going past the known
// findings given, and returns what it met.
func exploreKIP848(t *testing.T, kafkaVersion string, txnVersion int, known checker.Known) (workload.Outcome, []workload.Sighting) {
	t.Helper()
	sc, err := workload.ScenarioNamed("kip848-consumers")
	require.NoError(t, err)
	target := func() (model.Target, error) {
		return NewKfake(Config{Topics: workload.Topics, KafkaVersion: kafkaVersion, Logf: func(string, ...any) {}})
	}
	sightings := workload.NewSightings()
	opts := workload.Options{Scenario: sc, Target: target, TxnVersion: txnVersion, Known: known, Sightings: sightings}
	start := time.Now()
	out, err := workload.Explore(opts, kip848Budget, nil)
	require.NoError(t, err)
	t.Logf("%d checks, %d operations in %v", out.Checks, out.Ops, time.Since(start).Round(time.Millisecond))
	return out, sightings.All()
}

// TestKIP848ConsumersHoldOnKfake: the KIP-848 workers, which speak
// ConsumerGroupHeartbeat through this target, hold every check on kfake
// under both transaction protocols, or break only as a known finding
// does (known.json). `fencecheck run --target kfake --scenario
// kip848-consumers` explores further.
func TestKIP848ConsumersHoldOnKfake(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			out, sightings := exploreKIP848(t, p.kafkaVersion, p.txnVersion, KnownFindings())
			require.Equal(t, kip848Budget.Checks, out.Checks)
			for _, sg := range sightings {
				require.NotEmpty(t, sg.Known, "an error-code difference known.json does not list: %s; decide it against Kafka's source", sg.Signature)
				t.Logf("known finding %s met in %d interleavings", sg.Known, sg.Runs)
			}
			if out.Failure != nil {
				defer out.Discard()
				h, report, steps, _ := out.Failure.Found()
				var timeline strings.Builder
				_ = report.WriteTimeline(&timeline)
				t.Fatalf("a new finding on kfake (%v, %d operations): decide it against Kafka's source, then write it up in FINDINGS.md and list it in known.json\n%s\nactions: %s",
					report.Signatures(), len(h.Ops), timeline.String(), strings.Join(steps, "; "))
			}
		})
	}
}

// TestKIP848ConsumersOnKfakeMeetFinding29: the same exploration without
// kfake's known findings reports finding 29's signature as a new
// error-code difference, which TestKIP848ConsumersHoldOnKfake would fail
// on. So that test reaches KIP-848's refusals on kfake, and holds only
// because known.json lists what kfake does differently.
func TestKIP848ConsumersOnKfakeMeetFinding29(t *testing.T) {
	p := protocols[len(protocols)-1]
	_, sightings := exploreKIP848(t, p.kafkaVersion, p.txnVersion, checker.Known{})
	f29 := checker.Signature{Check: "error-codes", Type: model.ConsumerGroupHeartbeat, Rule: "consumer-unknown-group", Answer: model.FencedConsumer}
	var met []checker.Signature
	for _, sg := range sightings {
		require.Empty(t, sg.Known)
		met = append(met, sg.Signature)
	}
	require.Contains(t, met, f29)
}
