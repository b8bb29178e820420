package workload

import (
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
)

// Parallel exploration. rapid draws its i-th interleaving (counting from
// 0) from a seed of its own, the seed of the one before plus i: seed,
// seed+1, seed+3, seed+6, ... Each interleaving is one rapid.Check of a
// single check from its seed, so they can run side by side, each on its
// own target, and they are the interleavings one rapid.Check of all of
// them runs one after another. What one rapid.Check reports is kept too:
// it stops at its first failing interleaving and shrinks that one; here
// the failing interleaving reported is the first by number, shrunk by its
// own rapid.Check exactly as it would be there, and the interleavings
// after it count for nothing (none is started once one before it failed,
// and those already running are dropped: their histories, operations and
// sightings are not reported). The histories reach Options.Observe, and
// the sightings Options.Sightings, in the order of the interleavings.
//
// The one difference: an interleaving whose draws rapid finds invalid
// (none is: no action skips) would make that rapid.Check try the next
// seed on, where one rapid.Check of all would go on with its own sequence.
//
// A worth of it: a target that waits (kfake's real time) runs as many
// interleavings a second as there are at once, up to the machine's cores.

// rapidStart serialises the start of the parallel interleavings' checks:
// rapid reads its seed from the process's flags when a check starts.
var rapidStart sync.Mutex

// interleaving is one interleaving of a parallel exploration, and what came
// of it.
type interleaving struct {
	tb        *explorer
	failure   *Failure
	ops       int
	checks    int
	observed  []histories.History
	sightings *Sightings
}

func exploreParallel(opts Options, b Budget, progress io.Writer) (Outcome, error) {
	// Each check is one interleaving; under go test -short rapid runs a
	// fifth of its checks, so there it is given five for one.
	one, n := b, b.Checks
	one.Checks = 1
	if testing.Short() {
		one.Checks, n = 5, b.Checks/5
	}
	restore, err := setRapidFlags(one)
	if err != nil {
		return Outcome{}, err
	}
	defer restore()
	seeds := make([]uint64, n)
	seed := b.Seed
	for i := range seeds {
		seed += uint64(i)
		seeds[i] = seed
	}

	var checks, ops atomic.Int64
	stop := reportProgress(progress, &checks, &ops)
	runs := make([]*interleaving, n)
	var (
		mu        sync.Mutex
		next      int
		firstFail = n // the first failing interleaving so far
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= firstFail {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for range min(b.Parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				run := runInterleaving(opts, seeds[i], &checks, &ops, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return firstFail < i
				})
				runs[i] = run
				if run.tb.failed {
					mu.Lock()
					firstFail = min(firstFail, i)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	stop()

	out := Outcome{Seed: b.Seed}
	for i, run := range runs {
		switch {
		case run == nil:
			continue
		case i > firstFail:
			// Never run by one rapid.Check of them all.
			if run.tb.failed {
				Outcome{FailFile: failFile(run.tb.name)}.Discard()
			}
			continue
		}
		out.Checks += run.checks
		out.Ops += run.ops
		for _, h := range run.observed {
			opts.Observe(h)
		}
		opts.Sightings.merge(run.sightings)
		if i == firstFail {
			out.Failure, out.FailFile, out.Log = run.failure, failFile(run.tb.name), run.tb.log.String()
		}
	}
	return out, nil
}

// runInterleaving is one rapid.Check of the interleaving drawn from seed.
// Once superseded reports true, the check's further runs (shrinking) end at
// once: an interleaving before it failed, and it will not be reported.
func runInterleaving(opts Options, seed uint64, checks, ops *atomic.Int64, superseded func() bool) *interleaving {
	run := &interleaving{tb: &explorer{name: explorationName(opts.Scenario.Name)}, failure: &Failure{}}
	observe := opts.Observe
	opts.Observe = func(h histories.History) {
		run.ops += len(h.Ops)
		ops.Add(int64(len(h.Ops)))
		if observe != nil {
			run.observed = append(run.observed, h)
		}
	}
	if opts.Sightings != nil {
		run.sightings = NewSightings()
		opts.Sightings = run.sightings
	}
	prop := Property(opts, run.failure)
	var once sync.Once
	started := func() { once.Do(rapidStart.Unlock) }
	rapidStart.Lock()
	defer started()
	if err := flag.CommandLine.Set("rapid.seed", fmt.Sprint(seed)); err != nil {
		panic(err) // setRapidFlags has set it already
	}
	rapid.Check(run.tb, func(t *rapid.T) {
		started() // rapid has read its seed
		if superseded() {
			t.Skip("an interleaving before this one failed")
		}
		run.checks++
		checks.Add(1)
		prop(t)
	})
	return run
}
