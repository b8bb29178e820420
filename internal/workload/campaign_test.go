package workload

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
)

// fakeRunner "finds" a counterexample in the batches of failing, taking a
// random while over each batch, so that batches end out of order.
type fakeRunner struct {
	failing map[int]bool
	mu      *sync.Mutex // the runners', over ran
	ran     *[]int
	rng     *rand.Rand
}

func (f *fakeRunner) Run(ctx context.Context, b Batch, progress func(BatchProgress)) (BatchResult, error) {
	f.mu.Lock()
	wait := time.Duration(f.rng.IntN(3000)) * time.Microsecond // rng is this runner's own
	*f.ran = append(*f.ran, b.Index)
	f.mu.Unlock()
	select {
	case <-ctx.Done():
		return BatchResult{}, ctx.Err()
	case <-time.After(wait):
	}
	progress(BatchProgress{Checks: b.Checks, Shrinking: f.failing[b.Index]})
	res := BatchResult{Batch: b, Outcome: Outcome{Seed: b.Seed, Checks: b.Checks}, Sequences: []uint64{uint64(b.Index)}}
	if f.failing[b.Index] {
		res.Outcome.Failure = &Failure{}
	}
	return res, nil
}

func (f *fakeRunner) Close() error { return nil }

func fakeRunners(n int, failing map[int]bool, seed uint64) ([]Runner, *[]int) {
	ran, mu := &[]int{}, &sync.Mutex{}
	var runners []Runner
	for i := range n {
		runners = append(runners, &fakeRunner{failing: failing, ran: ran, mu: mu, rng: rand.New(rand.NewPCG(seed, uint64(i)))})
	}
	return runners, ran
}

// Whatever the number of runners and the order batches end in, the
// campaign's counterexample is the lowest failing batch's.
func TestCampaignFindsTheFirstFailingBatchWhateverTheScheduling(t *testing.T) {
	failing := map[int]bool{7: true, 9: true, 23: true}
	for parallel := 1; parallel <= 6; parallel++ {
		for try := range 5 {
			runners, _ := fakeRunners(parallel, failing, uint64(try))
			out, err := Campaign{Budget: Budget{Seed: 42, Checks: 3000}}.Run(runners, nil)
			require.NoError(t, err)
			require.NotNil(t, out.Failure, "parallel %d", parallel)
			require.Equal(t, Batch{Index: 7, Seed: BatchSeed(42, 7), Checks: DefaultBatchChecks}, out.FailedBatch, "parallel %d try %d", parallel, try)
			require.GreaterOrEqual(t, out.Batches, 8, "every batch below the failure ended")
		}
	}
}

// A batch that starts shrinking a counterexample stops the batches after
// it at once, not when its shrinking ends, and none starts after it: the
// shrinking has the machine to itself.
func TestShrinkingStopsTheBatchesAfterIt(t *testing.T) {
	r := &shrinkingRunner{started: make(chan int, 10), stopped: make(chan int, 10)}
	var progress bytes.Buffer
	out, err := Campaign{Budget: Budget{Seed: 1, Checks: 1000}}.Run([]Runner{r, r, r}, NewProgress(&progress, false))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^fencecheck: batch 0 found a counterexample at \d+\.\d s, after 1 interleavings in all; shrinking it$`, progress.String(),
		"the moment it is found is said at once, before the shrinking")
	require.NotNil(t, out.Failure)
	require.Equal(t, 0, out.FailedBatch.Index)
	require.True(t, r.othersStopped, "batches 1 and 2 ran on while batch 0 shrank")
	close(r.started)
	var started []int
	for i := range r.started {
		started = append(started, i)
	}
	require.ElementsMatch(t, []int{1, 2}, started, "no batch starts after one that is shrinking")
}

// shrinkingRunner's batch 0 finds a counterexample once batches 1 and 2
// run, and shrinks it until both are stopped; every other batch runs
// until it is stopped.
type shrinkingRunner struct {
	started, stopped chan int
	othersStopped    bool
}

func (r *shrinkingRunner) Run(ctx context.Context, b Batch, progress func(BatchProgress)) (BatchResult, error) {
	if b.Index > 0 {
		r.started <- b.Index
		<-ctx.Done()
		r.stopped <- b.Index
		return BatchResult{}, ctx.Err()
	}
	res := BatchResult{Batch: b, Outcome: Outcome{Seed: b.Seed, Failure: &Failure{}}}
	if !receive(r.started, 2) {
		return res, nil
	}
	progress(BatchProgress{Checks: 1, Shrinking: true})
	r.othersStopped = receive(r.stopped, 2)
	return res, nil
}

func (r *shrinkingRunner) Close() error { return nil }

// receive takes n values from c (putting them back), false if they do not
// come within 10 s.
func receive(c chan int, n int) bool {
	var got []int
	defer func() {
		for _, v := range got {
			c <- v
		}
	}()
	for range n {
		select {
		case v := <-c:
			got = append(got, v)
		case <-time.After(10 * time.Second):
			return false
		}
	}
	return true
}

// A campaign with a number of checks runs exactly that many, the last
// batch partial; with none it runs until its time is up.
func TestCampaignBudgets(t *testing.T) {
	runners, ran := fakeRunners(3, nil, 1)
	out, err := Campaign{Budget: Budget{Seed: 1, Checks: 250}}.Run(runners, nil)
	require.NoError(t, err)
	require.Nil(t, out.Failure)
	require.Equal(t, 250, out.Checks)
	require.ElementsMatch(t, []int{0, 1, 2}, *ran)
	require.Equal(t, 3, out.Sequences)

	runners, _ = fakeRunners(2, nil, 1)
	start := time.Now()
	out, err = Campaign{Budget: Budget{Seed: 1}, Time: 50 * time.Millisecond}.Run(runners, nil)
	require.NoError(t, err)
	require.True(t, out.OutOfTime)
	require.Positive(t, out.Batches)
	require.Less(t, time.Since(start), 5*time.Second, "no batch starts once the time is up")
}

// A shard takes every Nth batch from its index, and the shards of one
// seed together take every batch once.
func TestShardsSplitTheBatches(t *testing.T) {
	seen := map[int]int{}
	for i := 1; i <= 3; i++ {
		sh, err := ParseShard([]string{"", "1/3", "2/3", "3/3"}[i])
		require.NoError(t, err)
		runners, ran := fakeRunners(2, nil, uint64(i))
		_, err = Campaign{Budget: Budget{Seed: 5, Checks: 400}, Shard: sh}.Run(runners, nil)
		require.NoError(t, err)
		for _, b := range *ran {
			require.Equal(t, i-1, b%3)
			seen[b]++
		}
	}
	require.Equal(t, map[int]int{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1, 11: 1}, seen)
	for _, bad := range []string{"0/3", "4/3", "1/0", "1-3", "1/3x", ""} {
		_, err := ParseShard(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, uint64(77), BatchSeed(77, 0), "a campaign's first batch explores from its own seed")
}

// A batch's result crosses a process boundary whole: its counterexample's
// histories, steps and fail file, and its sightings.
func TestBatchResultRoundTrips(t *testing.T) {
	sc, err := ScenarioNamed("stable-id")
	require.NoError(t, err)
	opts := Options{Scenario: sc, Target: wrongCodesTarget, TxnVersion: 2}
	res, err := InProcess(opts, 30, time.Minute).Run(context.Background(), Batch{Index: 0, Seed: 1, Checks: 30}, func(BatchProgress) {})
	require.NoError(t, err)
	require.NotEmpty(t, res.Sightings, "the wrong-codes broker shows error-code differences")
	data, err := res.MarshalJSON()
	require.NoError(t, err)
	var back BatchResult
	require.NoError(t, back.UnmarshalJSON(data))
	require.Equal(t, res.Batch, back.Batch)
	require.Equal(t, res.Outcome.Checks, back.Outcome.Checks)
	require.Equal(t, res.Outcome.Shrinks, back.Outcome.Shrinks)
	require.Equal(t, res.Sequences, back.Sequences)
	require.Len(t, back.Sightings, len(res.Sightings))
	for i := range res.Sightings {
		require.Equal(t, historyJSON(res.Sightings[i].History), historyJSON(back.Sightings[i].History))
		require.Equal(t, res.Sightings[i].Report.Verdicts, back.Sightings[i].Report.Verdicts)
	}
}

// Campaigns run in turn end as soon as they find a counterexample, not
// after the budgets of the campaigns before them, and each finds what it
// finds alone: its lowest failing batch.
func TestInTurnFindsALateCampaignsBugEarly(t *testing.T) {
	quiet, quietRan := fakeRunners(2, nil, 1)
	buggy, _ := fakeRunners(2, map[int]bool{5: true, 6: true}, 2)
	campaigns := []Campaign{{Name: "quiet", Budget: Budget{Seed: 1, Checks: 100 * DefaultBatchChecks}}, {Name: "buggy", Budget: Budget{Seed: 2, Checks: 100 * DefaultBatchChecks}}}
	var order []string
	var quietBatchesThen int
	var progress bytes.Buffer
	outcomes := map[string]CampaignOutcome{}
	InTurn(campaigns, [][]Runner{quiet, buggy}, NewProgress(&progress, false), func(i int, out CampaignOutcome, err error) {
		require.NoError(t, err)
		order = append(order, campaigns[i].Name)
		outcomes[campaigns[i].Name] = out
		if campaigns[i].Name == "buggy" {
			quietBatchesThen = len(*quietRan)
		}
	})
	require.Equal(t, []string{"buggy", "quiet"}, order, "the buggy campaign ends first")
	require.Equal(t, 7, quietBatchesThen, "slices of 1, 2 and 4 batches each: the buggy one fails in its third, batches 3 to 6")
	require.Equal(t, 5, outcomes["buggy"].FailedBatch.Index, "its lowest failing batch, as alone")
	require.Equal(t, 100*DefaultBatchChecks, outcomes["quiet"].Checks, "the quiet campaign still runs its whole budget")
	require.Nil(t, outcomes["quiet"].Failure)
	require.Regexp(t, `(?m)^fencecheck: buggy: batch 5 found a counterexample`, progress.String(), "the campaign is named")

	// With a time budget, each campaign spends its own; with no seed
	// given, the one picked is every campaign's, so that it replays them
	// all.
	a, _ := fakeRunners(1, nil, 3)
	b, _ := fakeRunners(1, nil, 4)
	var seeds []uint64
	InTurn([]Campaign{{Time: 300 * time.Millisecond}, {Time: 300 * time.Millisecond}}, [][]Runner{a, b}, nil, func(_ int, out CampaignOutcome, err error) {
		require.NoError(t, err)
		require.True(t, out.OutOfTime)
		seeds = append(seeds, out.Seed)
	})
	require.Len(t, seeds, 2)
	require.NotZero(t, seeds[0])
	require.Equal(t, seeds[0], seeds[1], "one seed for the run")
}

// shortensRunner's batch 0 finds a counterexample of 16 operations; round
// r of the search for a shorter one finds one of found[r] operations
// when that is shorter than the round's bound. Each takes a random while,
// so that rounds end out of order.
type shortensRunner struct {
	found map[int]int
	rng   *rand.Rand
	mu    *sync.Mutex
}

func failureOf(ops int) *Failure {
	return &Failure{found: true, history: histories.History{Ops: make([]histories.Op, ops)}}
}

func (r *shortensRunner) Run(ctx context.Context, b Batch, progress func(BatchProgress)) (BatchResult, error) {
	r.mu.Lock()
	wait := time.Duration(r.rng.IntN(2000)) * time.Microsecond
	r.mu.Unlock()
	select {
	case <-ctx.Done():
		return BatchResult{}, ctx.Err()
	case <-time.After(wait):
	}
	res := BatchResult{Batch: b, Outcome: Outcome{Seed: b.Seed, Checks: b.Checks, Shrinks: 1}}
	switch {
	case b.Round == 0 && b.Index == 0:
		res.Outcome.Failure = failureOf(16)
	case b.Round > 0 && r.found[b.Round] > 0 && r.found[b.Round] < b.ShorterThan:
		res.Outcome.Failure = failureOf(r.found[b.Round])
		res.Outcome.Log = fmt.Sprint("round ", b.Round)
	}
	return res, nil
}

func (r *shortensRunner) Close() error { return nil }

// The search for a shorter counterexample runs its rounds side by side
// and ends with what one round after another ends with: round 2 beats 16
// with 14, round 3 beats 14 with 13, round 5 beats 13 with 11, short
// enough; round 4's 15 and round 6's 8 never count.
func TestShorteningRoundsSideBySideEndAsInTurn(t *testing.T) {
	found := map[int]int{1: 20, 2: 14, 3: 13, 4: 15, 5: 11, 6: 8}
	for parallel := 1; parallel <= 5; parallel++ {
		for try := range 4 {
			var runners []Runner
			mu := &sync.Mutex{}
			for i := range parallel {
				runners = append(runners, &shortensRunner{found: found, mu: mu, rng: rand.New(rand.NewPCG(uint64(try), uint64(i)))})
			}
			out, err := Campaign{Budget: Budget{Seed: 1, Checks: DefaultBatchChecks}}.Run(runners, nil)
			require.NoError(t, err)
			require.NotNil(t, out.Failure)
			h, _, _, _ := out.Failure.Outcome.Failure.Found()
			require.Len(t, h.Ops, 11, "parallel %d try %d", parallel, try)
			require.Equal(t, "round 5", out.Failure.Outcome.Log)
			require.Equal(t, 6, out.Failure.Outcome.Shrinks, "the batch's shrinking and rounds 1 to 5, each once: parallel %d try %d", parallel, try)
		}
	}
}
