package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

const shorterSeed = 3

// TestShorterCounts: while a counterexample is looked for again, only one
// with fewer operations that breaks a check the last one broke counts.
func TestShorterCounts(t *testing.T) {
	h, err := histories.LoadFile("../histories/canonical/fresh-id-per-start.json")
	require.NoError(t, err)
	report := checker.Check(h, checker.Options{})
	require.Equal(t, []string{checker.ExactlyOnce}, report.Violated())

	var none *shorter
	require.True(t, none.counts(h, report), "with nothing to beat, every counterexample counts")
	require.True(t, (&shorter{ops: len(h.Ops) + 1, checks: []string{checker.ExactlyOnce}}).counts(h, report))
	require.False(t, (&shorter{ops: len(h.Ops), checks: []string{checker.ExactlyOnce}}).counts(h, report), "as long: no better")
	require.False(t, (&shorter{ops: len(h.Ops) + 1, checks: []string{checker.Progress}}).counts(h, report), "another check broken")
	require.True(t, (&shorter{checks: []string{checker.ExactlyOnce}}).counts(h, report), "no bound: any length")
}

// TestExploreLooksForAShorterCounterexample: from this seed, rapid shrinks
// the counterexample to read-committed-ignores-aborts to a long quiet
// phase (two workers, a rebalance, an abort); Explore looks again and
// keeps a shorter one that breaks a check the first broke.
func TestExploreLooksForAShorterCounterexample(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 2, Target: func() (model.Target, error) {
		return impl.New(impl.Config{TxnVersion: 2, Mutants: map[string]bool{"read-committed-ignores-aborts": true}}), nil
	}}
	b := Budget{Checks: 3000, Steps: 30, Seed: shorterSeed, ShrinkTime: DefaultShrinkTime}

	first, err := explore(opts, b, nil)
	require.NoError(t, err)
	defer first.Discard()
	long, _, _, _ := first.Failure.Found()
	require.Greater(t, len(long.Ops), readableOps, "the seed no longer shrinks to a long counterexample: pick another")

	out, err := Explore(opts, b, nil)
	require.NoError(t, err)
	defer out.Discard()
	h, _, _, _ := out.Failure.Found()
	require.LessOrEqual(t, len(h.Ops), readableOps)
	t.Logf("%d operations, then %d", len(long.Ops), len(h.Ops))
}

// Two explorations in one directory: each takes its own fail file, never
// the other process's, however new.
func TestNewestFailFileIsThisProcesss(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join("testdata", "rapid", "fencecheck-x")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ours := filepath.Join(dir, fmt.Sprintf("fencecheck-x-20261129000000-%d.fail", os.Getpid()))
	theirs := filepath.Join(dir, fmt.Sprintf("fencecheck-x-20261129000001-%d.fail", os.Getpid()+1))
	require.NoError(t, os.WriteFile(ours, nil, 0o644))
	require.NoError(t, os.WriteFile(theirs, nil, 0o644))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(theirs, later, later))
	require.Equal(t, ours, newestFailFile("fencecheck-x"))
}
