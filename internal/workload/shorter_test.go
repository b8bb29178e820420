package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

const shorterSeed = 8

// TestShorterCounts: while a counterexample is looked for again, only one
// with fewer operations counts.
func TestShorterCounts(t *testing.T) {
	h, err := histories.LoadFile("../../histories/canonical/fresh-id-per-start.json")
	require.NoError(t, err)
	require.True(t, (&run{}).counts(h), "with nothing to beat, every counterexample counts")
	require.True(t, (&run{shorterThan: len(h.Ops) + 1}).counts(h))
	require.False(t, (&run{shorterThan: len(h.Ops)}).counts(h), "as long: no better")
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

	first, err := explore(opts, b, nil, BatchProgress{})
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

// Explorations in one directory each keep their own fail file, even
// within one second (rapid names them by the second), and none replays
// another's (rapid replays the fail files it finds under its name).
func TestExplorationsKeepTheirOwnFailFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	sc, err := ScenarioNamed("fresh-id-per-start")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 2, Target: func() (model.Target, error) {
		return model.NewBroker(model.Options{TxnVersion: 2}), nil
	}}
	b := Budget{Checks: 1000, Steps: 30, Seed: 1, ShrinkTime: DefaultShrinkTime}
	var files []string
	for range 3 {
		out, err := explore(opts, b, nil, BatchProgress{})
		require.NoError(t, err)
		require.NotNil(t, out.Failure)
		require.FileExists(t, out.FailFile, out.Log)
		require.NotContains(t, out.Log, "failed after 0 tests", "replayed an earlier exploration's fail file")
		files = append(files, out.FailFile)
	}
	require.Len(t, files, 3)
	require.NotEqual(t, files[0], files[1])
	require.NotEqual(t, files[1], files[2])
	for _, f := range files {
		require.FileExists(t, f)
	}
}

// TestLongRunsEndWhileLookingForShorter: while a shorter counterexample is
// looked for, a run whose history holds every check and is as long as the
// one to beat is decided (nothing it could still break would count), and
// its actions left do nothing; a run that breaks a check is decided too.
func TestLongRunsEndWhileLookingForShorter(t *testing.T) {
	h, err := histories.LoadFile("../../histories/canonical/seed-000-zombie-fenced.json")
	require.NoError(t, err)
	judged := func(shorterThan int) *run {
		r := &run{h: h, answers: 1, shorterThan: shorterThan}
		r.checkSoFar()
		return r
	}
	require.False(t, judged(0).decided(), "nothing to beat: every run goes to its end")
	require.False(t, judged(len(h.Ops)+1).decided(), "shorter than the one to beat: a check may still break in time")
	long := judged(len(h.Ops))
	require.True(t, long.decided())
	require.Nil(t, long.broken)
	ran := false
	long.untilDecided(map[string]func(*rapid.T){"A": func(*rapid.T) { ran = true }})["A"](nil)
	require.False(t, ran, "an action of a decided run did something")

	bad, err := histories.LoadFile("../../histories/canonical/fresh-id-per-start.json")
	require.NoError(t, err)
	broken := &run{h: bad, answers: 1}
	broken.checkSoFar()
	require.True(t, broken.decided())
	require.NotNil(t, broken.broken)
}

// TestQuietPhaseStopsOnceTooLong: while a shorter counterexample is looked
// for, the quiet phase stops once the history is as long as the one to
// beat (no check that breaks later could give a shorter one), within a
// round of every process; left alone it runs every process to its end.
func TestQuietPhaseStopsOnceTooLong(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	longest := func(shorterThan int) int {
		most := 0
		opts := Options{Scenario: sc, TxnVersion: 2, shorterThan: shorterThan, Target: func() (model.Target, error) {
			return impl.New(impl.Config{TxnVersion: 2}), nil
		}, Observe: func(h histories.History) { most = max(most, len(h.Ops)) }}
		out, err := explore(opts, Budget{Checks: 200, Steps: 5, Seed: 3}, nil, BatchProgress{})
		require.NoError(t, err)
		require.Nil(t, out.Failure, "a history cut short is not judged for progress")
		return most
	}
	const bound, aRound = 6, 8
	require.Greater(t, longest(0), bound+aRound, "the quiet phase alone makes long histories")
	require.LessOrEqual(t, longest(bound), bound+aRound)
}

// TestShrinkingIsNotExploring: an outcome's Checks are the interleavings
// explored up to the first that failed, and the runs shrinking it are
// counted apart: exploring one interleaving fewer from the same seed finds
// nothing.
func TestShrinkingIsNotExploring(t *testing.T) {
	t.Chdir(t.TempDir())
	sc, err := ScenarioNamed("fresh-id-per-start")
	require.NoError(t, err)
	opts := Options{Scenario: sc, TxnVersion: 2, Target: func() (model.Target, error) {
		return model.NewBroker(model.Options{TxnVersion: 2}), nil
	}}
	b := Budget{Checks: 1000, Steps: 30, Seed: 1, ShrinkTime: time.Second}
	out, err := Explore(opts, b, nil)
	require.NoError(t, err)
	require.NotNil(t, out.Failure)
	out.Discard()
	require.Positive(t, out.Shrinks, "no run shrank the counterexample")
	require.Less(t, out.Checks, b.Checks)
	require.Greater(t, out.Checks, 1, "the seed's first interleaving fails: nothing to compare")

	b.Checks = out.Checks - 1
	before, err := Explore(opts, b, nil)
	require.NoError(t, err)
	require.Nil(t, before.Failure, "a failure before the first one")
	require.Equal(t, b.Checks, before.Checks)
	require.Zero(t, before.Shrinks)
}

// TestShrinkingSettles: rapid's shrinking ends once settleRuns of its runs
// have not made the counterexample shorter, however long it is (one
// longer than readableOps is then looked for again by Explore); the run
// after one that failed, rapid's recording of a case it keeps, always
// runs.
func TestShrinkingSettles(t *testing.T) {
	of := func(n int) histories.History { return histories.History{Ops: make([]histories.Op, n)} }
	runsUntilSettled := func(f *Failure, most int) int {
		for run := 1; run <= most; run++ {
			if f.settled() {
				return run
			}
		}
		return -1
	}
	var f Failure
	require.False(t, f.settled(), "nothing found yet: exploring")
	f.set(&brokenRun{cut: of(readableOps), whole: of(20)})
	require.Equal(t, settleRuns+1, runsUntilSettled(&f, 10*settleRuns))

	f.set(&brokenRun{cut: of(readableOps - 1), whole: of(20)})
	require.False(t, f.settled(), "the run after a failure records its case")
	require.Equal(t, settleRuns, runsUntilSettled(&f, 10*settleRuns), "a shorter counterexample starts the count again")

	f.set(&brokenRun{cut: of(readableOps), whole: of(20)})
	f.settled()
	f.set(&brokenRun{cut: of(readableOps - 1), whole: of(20)})
	require.False(t, f.settled(), "the run after a failure records its case")
	require.True(t, f.settled(), "a case no shorter than the shortest before starts nothing again")

	var long Failure
	long.set(&brokenRun{cut: of(readableOps + 1), whole: of(20)})
	require.Equal(t, settleRuns+1, runsUntilSettled(&long, 10*settleRuns), "too long to read settles too: Explore looks for a shorter one afresh")
}

// TestShrinkingKeepsNothingLonger: once a counterexample is found, a run
// fails the property only with one no longer than the shortest so far
// (rapid's shrinking would keep a longer one, from smaller draws), and
// never with one that a search for a shorter one does not take.
func TestShrinkingKeepsNothingLonger(t *testing.T) {
	of := func(n int) histories.History { return histories.History{Ops: make([]histories.Op, n)} }
	var nothing *Failure
	require.Zero(t, nothing.bound(0), "no failure kept: any counterexample counts")
	var f Failure
	require.Zero(t, f.bound(0), "none found yet: any counterexample counts")
	require.Equal(t, 15, f.bound(15))
	f.set(&brokenRun{cut: of(9), whole: of(20)})
	require.Equal(t, 10, f.bound(0), "as short as the shortest, rapid's last run, still fails")
	require.Equal(t, 10, f.bound(15))
	require.Equal(t, 8, f.bound(8), "a search for one shorter than 8 takes no 9")
	f.set(&brokenRun{cut: of(7), whole: of(20)})
	require.Equal(t, 8, f.bound(0))
}
