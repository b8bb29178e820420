package workload

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
)

// Budget is how hard an exploration looks.
type Budget struct {
	Checks int    // interleavings to try (rapid's checks)
	Steps  int    // average actions per interleaving (rapid's steps)
	Seed   uint64 // 0: a random seed, reported in the outcome
	// ShrinkTime bounds rapid's shrinking of a counterexample, and the
	// search for a shorter one (see Explore); 0 is DefaultShrinkTime.
	ShrinkTime time.Duration
	// Replay is a rapid fail file to replay instead of exploring.
	Replay string
}

// DefaultShrinkTime is how long rapid may shrink a counterexample: four
// times rapid's own default, which a rare interleaving (a late EndTxn
// landing on the next transaction) often runs out of with its
// counterexample still three times as long as it shrinks to.
const DefaultShrinkTime = 2 * time.Minute

// Outcome is what an exploration found.
type Outcome struct {
	Seed   uint64
	Checks int // how many interleavings were explored, up to the first that failed
	// Shrinks is how many runs shrinking a counterexample took, rapid's
	// and the search for a shorter one's.
	Shrinks int
	Ops     int      // how many operations the runs that reached their end sent, shrinking's included
	Failure *Failure // nil when every check held
	// FailFile is rapid's record of the shrunk counterexample, which
	// replays it (Budget.Replay).
	FailFile string
	Log      string // rapid's own report
}

// BatchProgress is how far an exploration has got: interleavings
// explored, runs shrinking a counterexample took (rapid's shrinking, or
// the search for a shorter one), the operations all of them sent, and
// whether it is shrinking.
type BatchProgress struct {
	Checks    int  `json:"checks"`
	Shrinks   int  `json:"shrinks,omitempty"`
	Ops       int  `json:"ops"`
	Shrinking bool `json:"shrinking,omitempty"`
}

// Explore runs the property outside go test: rapid's Check takes an
// interface, and this is the CLI's. progress, when not nil, is told after
// each interleaving how far it has got.
//
// A counterexample longer than readableOps is then looked for again,
// shorter: rapid shrinks the draws, which is not the same as the timeline
// (a run with no action at all can hold a long quiet phase, and rapid's
// shrinking ends in a local minimum). Further explorations, each from a
// seed derived from the first, count only a violation (of any check)
// whose timeline is shorter than the last counterexample's, so that rapid
// shrinks nothing else; a run in them ends as soon as its history, every
// check holding, is as long as that (see checkSoFar and outgrown), so
// they try a few times as many runs a second. Up to shortenRounds of
// them, the nth with n times shortenEffort times the first's checks (a
// bug the first met late may take longer to meet again), and none
// started once the search has taken the budget's ShrinkTime (see
// shortening). Explore runs them one after another; a campaign runs them
// side by side on its runners, to the same end.
func Explore(opts Options, b Budget, progress func(BatchProgress)) (Outcome, error) {
	if b.Seed == 0 && b.Replay == "" {
		b.Seed = uint64(time.Now().UnixNano())
	}
	out, err := explore(opts, b, progress, BatchProgress{})
	if err != nil || b.Replay != "" {
		return out, err
	}
	search := newShortening(out, b.Checks, b.shrinkTime())
	for r, ok := search.start(); ok; r, ok = search.start() {
		best := search.best
		again, err := explore(opts.shortening(r), b.shortening(r), progress, BatchProgress{Checks: best.Checks, Shrinks: best.Shrinks, Ops: best.Ops, Shrinking: true})
		if err != nil {
			return best, err
		}
		search.end(r, again, nil) // opts.Sightings has them already
	}
	return search.outcome(out), nil
}

func (b Budget) shrinkTime() time.Duration {
	if b.ShrinkTime <= 0 {
		return DefaultShrinkTime
	}
	return b.ShrinkTime
}

// readableOps is how long a timeline a person reads at a glance: a
// counterexample longer than that, once rapid's shrinking has settled
// (see settled), is looked for again, shorter.
const readableOps = 12

// shortenRounds bounds the explorations looking for a shorter
// counterexample, and shortenEffort sets their budgets (see Explore).
const (
	shortenRounds = 20
	shortenEffort = 3
)

// longerThan reports whether the outcome holds a counterexample of more
// than ops operations.
func (o Outcome) longerThan(ops int) bool {
	if o.Failure == nil {
		return false
	}
	h, _, _, _ := o.Failure.Found()
	return len(h.Ops) > ops
}

// explore is one rapid.Check of the property; progress counts on from
// before.
func explore(opts Options, b Budget, progress func(BatchProgress), before BatchProgress) (Outcome, error) {
	// rapid asks testing.Short, which needs the testing flags registered
	// and parsed; in a test binary both are done already.
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	b.ShrinkTime = b.shrinkTime()
	restore, err := setRapidFlags(b)
	if err != nil {
		return Outcome{}, err
	}
	defer restore()
	tb := &explorer{name: explorationName(opts.Scenario.Name)}
	failure := &Failure{}
	var checks, shrinks, ops atomic.Int64
	observe := opts.Observe
	opts.Observe = func(h histories.History) {
		ops.Add(int64(len(h.Ops)))
		if observe != nil {
			observe(h)
		}
	}
	prop := Property(opts, failure)
	counted := func(t *rapid.T) {
		if b.Replay == "" && failure.settled() {
			// Shrinking has done enough: this run of rapid's passes at
			// no cost, and so does every one its shrinking has left,
			// which ends with the counterexample failure holds. A
			// replay's runs (rapid runs the case twice) all count.
			return
		}
		// Once one run failed, rapid's runs shrink it; the search for a
		// shorter counterexample is all shrinking.
		if _, _, _, failed := failure.Found(); failed || before.Shrinking {
			shrinks.Add(1)
		} else {
			checks.Add(1)
		}
		prop(t)
		if progress != nil {
			_, _, _, failed := failure.Found()
			progress(BatchProgress{Checks: before.Checks + int(checks.Load()), Shrinks: before.Shrinks + int(shrinks.Load()),
				Ops: before.Ops + int(ops.Load()), Shrinking: before.Shrinking || failed})
		}
	}
	rapid.Check(tb, counted)
	out := Outcome{Seed: b.Seed, Checks: int(checks.Load()), Shrinks: int(shrinks.Load()), Ops: int(ops.Load()), Log: tb.log.String()}
	if tb.failed {
		out.Failure = failure
		out.FailFile = failFile(tb.name)
	}
	return out, nil
}

// Discard removes rapid's fail file once a bundle holds a copy, so that
// exploring leaves nothing behind in the working directory.
func (o Outcome) Discard() {
	if o.FailFile == "" {
		return
	}
	_ = os.Remove(o.FailFile)
	for dir := filepath.Dir(o.FailFile); dir != "." && dir != string(filepath.Separator); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return // not empty: someone else's files
		}
	}
}

// setRapidFlags points rapid at the budget. rapid reads its settings from
// the process's flags; the CLI never parses those, so they are set here,
// and put back by restore, so that a test run after an exploration gets
// its own budget, not this one. Under go test -short rapid runs a fifth
// of its checks and half its steps, so the settings are scaled up by as
// much: a budget is the same, and so is its outcome, with or without it.
func setRapidFlags(b Budget) (restore func(), err error) {
	checks, steps := b.Checks, b.Steps
	if testing.Short() {
		checks, steps = checks*5, steps*2
	}
	settings := map[string]string{
		"rapid.checks":     fmt.Sprint(checks),
		"rapid.steps":      fmt.Sprint(steps),
		"rapid.seed":       fmt.Sprint(b.Seed),
		"rapid.failfile":   b.Replay,
		"rapid.shrinktime": b.ShrinkTime.String(),
	}
	old := map[string]string{}
	restore = func() {
		for name, value := range old {
			_ = flag.CommandLine.Set(name, value)
		}
	}
	for name, value := range settings {
		f := flag.CommandLine.Lookup(name)
		if f == nil {
			restore()
			return nil, fmt.Errorf("setting %s: no such flag", name)
		}
		old[name] = f.Value.String()
		if err := f.Value.Set(value); err != nil {
			restore()
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return restore, nil
}

// explorationName names one exploration, and so its directory of rapid
// fail files, which no other exploration shares: rapid replays every fail
// file it finds under its name before exploring (a search for a shorter
// counterexample would start from the last one), names them by the
// second (two explorations within one would write one file), and two
// processes in one directory would take each other's.
func explorationName(scenario string) string {
	return fmt.Sprintf("fencecheck-%s-%d-%d", scenario, os.Getpid(), explorations.Add(1))
}

var explorations atomic.Int64

// failFile is the fail file rapid wrote for the exploration name.
func failFile(name string) string {
	files, _ := filepath.Glob(filepath.Join("testdata", "rapid", name, name+"-*.fail"))
	if len(files) == 0 {
		return ""
	}
	return files[0]
}

// explorer is the rapid.TB of an exploration outside go test: it keeps
// rapid's report instead of failing a test.
type explorer struct {
	name   string
	failed bool
	log    strings.Builder
}

func (e *explorer) Helper()                           {}
func (e *explorer) Name() string                      { return e.name }
func (e *explorer) Logf(format string, args ...any)   { fmt.Fprintf(&e.log, format+"\n", args...) }
func (e *explorer) Log(args ...any)                   { fmt.Fprintln(&e.log, args...) }
func (e *explorer) Errorf(format string, args ...any) { e.failed = true; e.Logf(format, args...) }
func (e *explorer) Error(args ...any)                 { e.failed = true; e.Log(args...) }
func (e *explorer) Fatalf(format string, args ...any) { e.Errorf(format, args...) }
func (e *explorer) Fatal(args ...any)                 { e.Error(args...) }
func (e *explorer) FailNow()                          { e.failed = true }
func (e *explorer) Fail()                             { e.failed = true }
func (e *explorer) Failed() bool                      { return e.failed }
func (e *explorer) SkipNow()                          {}
func (e *explorer) Skip(...any)                       {}
func (e *explorer) Skipf(string, ...any)              {}
