package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/internal/workload"
)

// exploreInto runs one exploration of a seeded bug into a fresh directory
// and returns it with the counterexample's history, byte for byte.
func exploreInto(t *testing.T, args ...string) (dir string, history []byte) {
	t.Helper()
	dir = t.TempDir()
	base := []string{"run", "--scenario", "stable-id", "--mutant", "no-epoch-check", "--seed", "4", "--checks", "200", "--known", "none", "--out", dir}
	code, out, errOut := runCLI(append(base, args...)...)
	require.Equal(t, exitViolated, code, "%s\n%s", out, errOut)
	history, err := os.ReadFile(filepath.Join(dir, "history.json"))
	require.NoError(t, err)
	return dir, history
}

// The same seed and flags find the same counterexample, byte for byte,
// whether the batches run in this process or in worker processes, and
// whichever shard's job runs them.
func TestParallelAndShardsAreDeterministic(t *testing.T) {
	_, alone := exploreInto(t, "--parallel", "1")
	_, together := exploreInto(t, "--parallel", "3")
	require.Equal(t, string(alone), string(together))

	dir, second := exploreInto(t, "--parallel", "1", "--shard", "2/2")
	_, secondParallel := exploreInto(t, "--parallel", "2", "--shard", "2/2")
	require.Equal(t, string(second), string(secondParallel))
	run, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	require.Contains(t, string(run), `"batch": 1,`, "shard 2/2 starts at the second batch")
}

// fencecheck report merges the shards' outputs into what one job running
// every batch reports: the lowest failing batch's counterexample.
func TestReportMergesShards(t *testing.T) {
	_, whole := exploreInto(t, "--parallel", "1")
	first, _ := exploreInto(t, "--parallel", "1", "--shard", "1/2")
	second, _ := exploreInto(t, "--parallel", "1", "--shard", "2/2")
	code, out, errOut := runCLI("report", second, first)
	require.Equal(t, exitViolated, code, errOut)
	require.Contains(t, out, "2 of 2 shards")
	require.Contains(t, out, "VIOLATION in batch 0 (shard 1/2)")
	require.Contains(t, out, "bug report: "+first)
	merged, err := os.ReadFile(filepath.Join(first, "history.json"))
	require.NoError(t, err)
	require.Equal(t, string(whole), string(merged))

	code, out, _ = runCLI("report", second)
	require.Equal(t, exitViolated, code)
	require.Contains(t, out, "missing shards: 1/2")

	code, _, errOut = runCLI("report", second, second)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "shard 2/2 twice")

	code, _, errOut = runCLI("report", t.TempDir())
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "summary.json")
}

// --scenario takes names, correct and all, each scenario once.
func TestScenarioLists(t *testing.T) {
	names := func(list string) []string {
		scs, err := scenariosNamed(list)
		require.NoError(t, err)
		var out []string
		for _, sc := range scs {
			out = append(out, sc.Name)
		}
		return out
	}
	require.Equal(t, []string{"stable-id", "adversary", "at-least-once-beside", "static-members", "kip848-consumers"}, names("correct"))
	require.Equal(t, []string{"shared-id", "stable-id", "adversary", "at-least-once-beside", "static-members", "kip848-consumers"}, names("shared-id,correct,stable-id"))
	require.Len(t, names("all,correct"), 11)
	_, err := scenariosNamed("stable-id,nope")
	require.ErrorContains(t, err, `unknown scenario "nope"`)
}

// A worker process that dies is reported with its exit status and the
// end of its stderr, and the campaign names the batch and its seed.
func TestWorkerDeathIsReported(t *testing.T) {
	var stderr strings.Builder
	dying := newProcessRunner([]string{"run", "--steps", "0"}, &stderr) // the worker refuses its flags and exits 2
	campaign := workload.Campaign{Name: "stable-id", Budget: workload.Budget{Checks: 1, Steps: 30, Seed: 7}}
	_, err := campaign.Run([]workload.Runner{dying}, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "batch 0 (seed 7)")
	require.Contains(t, err.Error(), "died: it ended without a result; exit status 2")
	require.Contains(t, err.Error(), "--steps must be at least 1")
}
