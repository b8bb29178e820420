package fencecheck_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
)

// The properties against the embedded kfake cluster. kfake's time is real
// (a tick sleeps, a rebalance waits), so the budgets are small and fixed:
// a few interleavings per property, a short shrink. Findings against kfake
// are listed in one place, kafka/known.json (written up in
// kafka/FINDINGS.md, their histories under histories/kfake, each held to
// its signatures by TestFindingsReplay). A violation here is a known
// finding when its signature (check, type of operation, the model's rule,
// the answer's class) is one of theirs: exploring goes past it, and
// anything else fails the test.

// kfakeBudget is one property's exploration on kfake.
var kfakeBudget = workload.Budget{Checks: 3, Steps: 15, Seed: 1}

// kfakeShrinkTime bounds rapid's shrinking on kfake, where every step
// replays real time.
const kfakeShrinkTime = 8 * time.Second

// kfakeProtocols: Kafka 3.9 speaks transactions v1, the newest v2.
var kfakeProtocols = []struct {
	kafkaVersion string
	txnVersion   int
}{{"3.9", 1}, {"", 2}}

func kfakeTarget(kafkaVersion string) model.NewTarget {
	return func() (model.Target, error) {
		return kafka.NewKfake(kafka.Config{
			Topics:       workload.Topics,
			KafkaVersion: kafkaVersion,
			// Joins are serial here: a join waits for members that
			// cannot rejoin meanwhile, so the wait is kept short.
			RebalanceTimeout: 20 * time.Millisecond,
			Logf:             func(string, ...any) {},
		})
	}
}

// exploreKfake explores a scenario on kfake with the given budget, going
// past kfake's known findings; sightings collects what it went past.
func exploreKfake(t *testing.T, sc workload.Scenario, kafkaVersion string, txnVersion int, b workload.Budget) (workload.Outcome, *workload.Sightings) {
	t.Helper()
	start := time.Now()
	b.ShrinkTime = kfakeShrinkTime
	sightings := workload.NewSightings()
	opts := workload.Options{Scenario: sc, Target: kfakeTarget(kafkaVersion), TxnVersion: txnVersion, Known: kafka.KnownFindings(), Sightings: sightings}
	out, err := workload.Explore(opts, b, nil)
	require.NoError(t, err)
	t.Logf("%s on kfake, transactions v%d: %d checks in %v", sc.Name, txnVersion, out.Checks, time.Since(start).Round(time.Millisecond))
	return out, sightings
}

// requireHeldOrKnown passes when the exploration found nothing new: the
// exploration itself goes past kfake's known findings (kafka/known.json)
// and error-code differences, so a failure here is a new finding, which
// fails with its bug report. An error-code difference no finding lists
// fails the test too.
func requireHeldOrKnown(t *testing.T, out workload.Outcome, sc workload.Scenario, txnVersion int, sightings *workload.Sightings) {
	t.Helper()
	var fresh []string
	for _, sg := range sightings.All() {
		if sg.Known != "" {
			t.Logf("known finding %s met in %d interleavings (kafka/FINDINGS.md)", sg.Known, sg.Runs)
			continue
		}
		fresh = append(fresh, fmt.Sprintf("%s (shortest: %d operations)", sg.Signature, len(sg.History.Ops)))
	}
	require.Empty(t, fresh, "error-code differences on kfake that kafka/known.json does not list: decide them against Kafka's source and list them")
	if out.Failure == nil {
		return
	}
	defer out.Discard()
	h, report, steps, _ := out.Failure.Found()
	run := workload.Run{Scenario: sc.Name, Target: "kfake", TxnVersion: txnVersion, KafkaVersion: kafkaVersionOf(txnVersion)}
	dir, err := workload.WriteBundle(os.Getenv("FENCECHECK_OUT"), run, out.Failure, out.FailFile)
	require.NoError(t, err)
	t.Fatalf("a new finding on kfake (%v, %d operations) after %v; bug report %s: decide whether kfake or the model is wrong, write it up in kafka/FINDINGS.md, save its history under histories/kfake and list it in kafka/known.json",
		report.Signatures(), len(h.Ops), steps, dir)
}

func kafkaVersionOf(txnVersion int) string {
	if txnVersion == 1 {
		return "3.9"
	}
	return ""
}

// TestPropertyKafkaStableID: the correct configuration on kfake, under
// both transaction protocols, holds every check or breaks only as a known
// divergence does.
func TestPropertyKafkaStableID(t *testing.T) {
	sc := scenario(t, "stable-id")
	for _, p := range kfakeProtocols {
		t.Run(fmt.Sprintf("txn-v%d", p.txnVersion), func(t *testing.T) {
			out, sightings := exploreKfake(t, sc, p.kafkaVersion, p.txnVersion, kfakeBudget)
			requireHeldOrKnown(t, out, sc, p.txnVersion, sightings)
		})
	}
}

// TestPropertyKafkaAdversary: an adversary sending stale and forged
// requests cannot make kfake break an invariant, beyond the known
// divergences (a zombie winning its id back, finding 5, is one).
func TestPropertyKafkaAdversary(t *testing.T) {
	sc := scenario(t, "adversary")
	for _, p := range kfakeProtocols {
		t.Run(fmt.Sprintf("txn-v%d", p.txnVersion), func(t *testing.T) {
			out, sightings := exploreKfake(t, sc, p.kafkaVersion, p.txnVersion, kfakeBudget)
			requireHeldOrKnown(t, out, sc, p.txnVersion, sightings)
		})
	}
}

// TestPropertyKafkaMisconfigurationsAreCaught: each misconfiguration of the
// seeds is caught on kfake as on the model, breaking the check its seed
// predicts.
func TestPropertyKafkaMisconfigurationsAreCaught(t *testing.T) {
	for _, sc := range workload.Scenarios {
		if sc.Correct() {
			continue
		}
		budget := workload.Budget{Checks: 20, Steps: 20, Seed: 1}
		if sc.SpeaksKIP848() {
			// Its zombie needs a session that ends in the middle of a
			// transaction, which few interleavings draw: `fencecheck
			// run --target kfake` met it after 50.
			budget.Checks = 120
		}
		t.Run(sc.Name, func(t *testing.T) {
			out, _ := exploreKfake(t, sc, "", 2, budget)
			defer out.Discard()
			require.NotNil(t, out.Failure, "no counterexample in %d checks (seed %d)", out.Checks, out.Seed)
			h, report, steps, _ := out.Failure.Found()
			require.True(t, breaksOneOf(report, sc.Breaks), "caught by %v, not by one of %v", report.Signatures(), sc.Breaks)
			t.Logf("shrunk to %d operations after %d actions: %v", len(h.Ops), len(steps), steps)
		})
	}
}

// TestPropertyAdversary: on the reference model, under both protocols, the
// adversary breaks nothing: a correct broker refuses every stale or forged
// request, and the adversary falls silent in the quiet phase, so the
// writers it fenced still finish.
func TestPropertyAdversary(t *testing.T) {
	for _, version := range []int{1, 2} {
		out, err := workload.Explore(workload.Options{Scenario: scenario(t, "adversary"), Target: modelTarget(version), TxnVersion: version},
			workload.Budget{Checks: 100, Steps: 30, Seed: 3}, nil)
		require.NoError(t, err)
		if out.Failure != nil {
			defer out.Discard()
			_, report, steps, _ := out.Failure.Found()
			t.Fatalf("seed %d: a counterexample after %v: %v", out.Seed, steps, report.Verdicts)
		}
	}
}

// TestPropertyKafkaByAddress: `--target kafka --brokers` drives a cluster
// it did not start, here a kfake cluster of its own with the settings
// kafka.New asks of a real one (kafka.StartListening: a low
// group.min.session.timeout.ms, as a broker setting New can read). The
// target creates its topics under its own prefix, and a misconfiguration
// is caught there as on the embedded cluster (or one of kfake's known
// divergences shows first).
func TestPropertyKafkaByAddress(t *testing.T) {
	cluster, err := kafka.StartListening("127.0.0.1:0", nil, 0, t.Logf)
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	target := func() (model.Target, error) {
		return kafka.New(kafka.Config{Brokers: cluster.ListenAddrs(), Topics: workload.Topics,
			RebalanceTimeout: 20 * time.Millisecond, Logf: func(string, ...any) {}})
	}
	sc := scenario(t, "fresh-id-per-start")
	out, err := workload.Explore(workload.Options{Scenario: sc, Target: target, TxnVersion: 2, Known: kafka.KnownFindings()},
		workload.Budget{Checks: 20, Steps: 20, Seed: 1, ShrinkTime: kfakeShrinkTime}, nil)
	require.NoError(t, err)
	require.NotNil(t, out.Failure, "no counterexample in %d checks", out.Checks)
	defer out.Discard()
	h, report, _, _ := out.Failure.Found()
	require.True(t, breaksOneOf(report, sc.Breaks), "caught by %v, not by one of %v", report.Signatures(), sc.Breaks)
	t.Logf("caught by %v in %d checks, shrunk to %d operations", report.Violated(), out.Checks, len(h.Ops))

	topics := clusterTopics(t, cluster.ListenAddrs())
	require.NotEmpty(t, topics)
	for _, topic := range topics {
		require.True(t, strings.HasPrefix(topic, "fencecheck-"), "topic %s is not fencecheck's", topic)
	}
}

// clusterTopics lists the topics of the cluster at addrs.
func clusterTopics(t *testing.T, addrs []string) []string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer cl.Close()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(t.Context(), cl)
	require.NoError(t, err)
	var topics []string
	for _, topic := range resp.Topics {
		topics = append(topics, *topic.Topic)
	}
	return topics
}
