package fencecheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/workload"
)

// TestPropertyMisconfigurationsAreCaught: each misconfiguration of the seeds
// is found within the budget, and the counterexample breaks the check the
// seed predicts.
func TestPropertyMisconfigurationsAreCaught(t *testing.T) {
	for _, sc := range workload.Scenarios {
		if sc.Correct() {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			out, err := workload.Explore(workload.Options{Scenario: sc, Target: modelTarget(2), TxnVersion: 2},
				workload.Budget{Checks: 300, Steps: 30}, nil)
			require.NoError(t, err)
			require.NotNil(t, out.Failure, "no counterexample in %d checks (seed %d)", out.Checks, out.Seed)
			h, report, steps, _ := out.Failure.Found()
			broken := false
			for _, check := range sc.Breaks {
				broken = broken || report.Verdict(check).Status == checker.Violated
			}
			require.True(t, broken, "expected %v to break; verdicts %v", sc.Breaks, report.Verdicts)
			t.Logf("seed %d: %d checks; shrunk to %d operations after %d actions: %v", out.Seed, out.Checks, len(h.Ops), len(steps), steps)
		})
	}
}
