package fencecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
)

// Options say how hard Test looks, and at what. Each zero value is the
// default 'fencecheck run' has too (one exploration states each once).
//
// Budget. Test explores each scenario for Time, or Checks interleavings,
// then shrinks what it found for up to ShrinkTime. On the in-memory
// targets an interleaving takes about a millisecond. On a Kafka cluster
// (Brokers, or kafka.NewKfake) it takes 50 to 500 ms, and batches of 10
// interleavings run to their end: a time
// budget then ends within a batch's time of Time. go test's default
// -timeout is 10 minutes for the whole package: with the two default
// scenarios, a Time of 10 s on a cluster takes about half a minute when
// nothing is found, and a counterexample adds up to ShrinkTime (2
// minutes by default) per scenario that found one. A test that must stay
// within a minute on a cluster gives Checks of about 20 and a ShrinkTime
// of some 10 s.
type Options struct {
	// Scenarios are the configurations explored, by name (see
	// 'fencecheck run --help'); default the correct ones, stable-id and
	// adversary. A correct scenario fails the test with any violation; a
	// misconfiguration fails it when none of the checks it is known to
	// break broke: the broker let the test show nothing.
	Scenarios []string
	// TxnVersion is the transaction protocol the clients speak, 1 or 2
	// (0 is the default, 2).
	TxnVersion int
	// Time bounds each scenario's exploring (10 s,
	// if 0 and Checks is 0); Checks, when set, is a number of
	// interleavings instead.
	Time   time.Duration
	Checks int
	// Seed is the exploration's seed; 0 picks one, logged.
	Seed uint64
	// ShrinkTime bounds shrinking a counterexample, and looking for a
	// shorter one (2 minutes if 0): a job
	// that only needs to know whether the broker fails can give less.
	ShrinkTime time.Duration
	// Known are findings that do not fail the test; they are logged.
	// kafka.KnownFindings() are kfake's own (what 'fencecheck run --known
	// kfake' goes past), for a kfake cluster by address; kafka.KnownNamed
	// reads a fencecheck/known/v1 file.
	Known checker.Known
	// Out is where bug reports go; default a new directory under the
	// system's temporary one, which outlives the test.
	Out string
}

// Test explores target's broker the way 'fencecheck run' does (the same
// exploration), the scenarios in turn, and fails tb with each
// counterexample's timeline and the path of its bug report. An
// error-code difference that Known does not list fails it too, with its
// history. A target that cannot be made (an unreachable or misconfigured
// cluster) fails it at once.
//
// A Kafka target's clock can lose step with the broker's. That happens
// when the machine is too busy for the time scale, because the broker
// then fires a timer where no tick of the model's can place it. The
// exploration then stops with NO VERDICT, and nothing is judged. Test
// explores such a scenario once more, with the same seed. It logs the
// first NO VERDICT with its bug report, and says that it explored again.
// A second NO VERDICT fails the test. So a pass after a retry shows in
// the test's log (go test -v), not in its result.
func Test(tb testing.TB, target model.NewTarget, opts Options) {
	tb.Helper()
	var scenarios []workload.Scenario
	for _, name := range opts.Scenarios {
		sc, err := workload.ScenarioNamed(name)
		if err != nil {
			tb.Fatalf("fencecheck: %v", err)
		}
		scenarios = append(scenarios, sc)
	}
	ex := workload.Exploration{Scenarios: scenarios, Target: target, TxnVersion: opts.TxnVersion, Known: opts.Known, Swarm: true,
		Checks: opts.Checks, Time: opts.Time, Seed: opts.Seed, ShrinkTime: opts.ShrinkTime}
	// Judged once all have ended, here, so that tb places each line at
	// the caller's call of Test rather than inside the exploration.
	var all []workload.Explored
	if err := ex.Run(func(explored workload.Explored) { all = append(all, explored) }); err != nil {
		tb.Fatalf("fencecheck: %v", err)
	}
	for i, explored := range all {
		if again, ok := exploreAgain(tb, ex, explored, opts.Out); ok {
			all[i] = again
		}
	}
	for _, explored := range all {
		judge(tb, explored, ex.Options(explored.Scenario).TxnVersion, opts.Out)
	}
}

// exploreAgain explores once more, with the same seed, a scenario whose
// exploration ended in NO VERDICT because the target's clock lost step:
// the machine was too busy for the time scale, so the broker fired a
// timer where no tick of the model's could place it, and nothing was
// judged. It logs the first exploration's answer, with its bug report,
// and that it explored again; the second exploration is judged as any
// other, so a second NO VERDICT fails the test. ok is false when the
// first did not lose step.
func exploreAgain(tb testing.TB, ex workload.Exploration, explored workload.Explored, dir string) (again workload.Explored, ok bool) {
	tb.Helper()
	out := explored.Outcome
	if explored.Err != nil || out.Failure == nil {
		return explored, false
	}
	found := out.Failure.Outcome
	panicked := found.Failure.Panic()
	if panicked == nil || !panicked.ClockLost {
		return explored, false
	}
	sc := explored.Scenario
	run := workload.Run{Scenario: sc.Name, Target: "test", TxnVersion: ex.Options(sc).TxnVersion, Seed: out.Seed, Batch: out.FailedBatch.Index, Swarm: true}
	bundle, err := save(dir, sc.Name+"-lost-step", func(path string) error {
		_, err := workload.WriteBundle(path, run, found.Failure, found.FailFile)
		return err
	})
	found.Discard()
	tb.Logf("fencecheck: %s: NO VERDICT, because the target's clock lost step; bug report: %s%s\n\n%s\n\nfencecheck: %s: exploring it once more, with seed %d",
		sc.Name, bundle, errorNote(err), panicked.Value, sc.Name, out.Seed)
	ex.Scenarios, ex.Seed = []workload.Scenario{sc}, out.Seed
	var all []workload.Explored
	if err := ex.Run(func(explored workload.Explored) { all = append(all, explored) }); err != nil || len(all) != 1 {
		explored.Outcome.Failure = nil
		explored.Err = fmt.Errorf("exploring it once more after a NO VERDICT: %v (%d explorations)", err, len(all))
		return explored, true
	}
	return all[0], true
}

// Brokers is a target for Test: a Kafka cluster by its bootstrap
// addresses (fencecheck's topics are created there when missing). The
// cluster must be set up as kafka.New documents; a setting it can read
// that does not fit fails the test at once, naming the setting.
func Brokers(addrs ...string) model.NewTarget {
	return func() (model.Target, error) {
		// The correct scenarios include KIP-848 consumers.
		return kafka.New(kafka.Config{Brokers: addrs, Topics: workload.Topics, Logf: func(string, ...any) {}, ConsumerGroups: true})
	}
}

// judge fails tb with what exploring a scenario found.
func judge(tb testing.TB, ex workload.Explored, version int, dir string) {
	tb.Helper()
	sc, out := ex.Scenario, ex.Outcome
	tb.Logf("fencecheck: %s (transactions v%d), seed %d: %d interleavings, %d operations", sc.Name, version, out.Seed, out.Checks, out.Ops)
	if ex.Err != nil {
		tb.Errorf("fencecheck: %s (seed %d): the exploration could not finish: %v", sc.Name, out.Seed, ex.Err)
		return
	}
	failed := out.Failure != nil
	if failed {
		reportFailure(tb, sc, version, out, dir)
	}
	for _, sg := range ex.Sightings {
		if sg.Known != "" {
			tb.Logf("fencecheck: %s: known finding %s met in %d interleavings", sc.Name, sg.Known, sg.Runs)
			continue
		}
		path, err := save(dir, sc.Name+"-error-code.json", func(path string) error { return histories.SaveFile(path, sg.History) })
		tb.Errorf("fencecheck: %s: error-code difference %s in %d interleavings (the refusal is right, its code is not Kafka's); history: %s%s",
			sc.Name, sg.Signature, sg.Runs, path, errorNote(err))
	}
	if !sc.Correct() && !failed {
		tb.Errorf("fencecheck: %s is a misconfiguration that breaks %s, and no check broke over %d interleavings: the exploration showed nothing",
			sc.Name, strings.Join(sc.Breaks, " or "), out.Checks)
	}
}

// reportFailure writes the counterexample's bug report and fails tb with
// its timeline; a misconfiguration's expected violation is only logged.
func reportFailure(tb testing.TB, sc workload.Scenario, version int, out workload.CampaignOutcome, dir string) {
	tb.Helper()
	found := out.Failure.Outcome
	h, report, _, _ := found.Failure.Found()
	var timeline strings.Builder
	panicked := found.Failure.Panic()
	if panicked != nil {
		timeline.WriteString(panicked.String() + "\n\n")
	}
	_ = report.WriteTimeline(&timeline)
	if panicked != nil {
		timeline.WriteString("\n" + panicked.Stack)
	}
	run := workload.Run{Scenario: sc.Name, Target: "test", TxnVersion: version, Seed: out.Seed, Batch: out.FailedBatch.Index, Swarm: true}
	bundle, err := save(dir, sc.Name, func(path string) error {
		_, err := workload.WriteBundle(path, run, found.Failure, found.FailFile)
		return err
	})
	found.Discard()
	msg := fmt.Sprintf("fencecheck: %s: VIOLATION, shrunk to %d operations; bug report: %s%s\n\n%s", sc.Name, len(h.Ops), bundle, errorNote(err), timeline.String())
	if panicked != nil && panicked.ClockLost {
		// No verdict: the run stopped where the target's clock lost step.
		msg = fmt.Sprintf("fencecheck: %s: NO VERDICT after %d operations, because the target's clock lost step; bug report: %s%s\n\n%s", sc.Name, len(h.Ops), bundle, errorNote(err), timeline.String())
	}
	if !sc.Correct() && brokeExpected(sc, report) {
		tb.Log(msg)
		return
	}
	tb.Error(msg)
}

func brokeExpected(sc workload.Scenario, report checker.Report) bool {
	for _, check := range sc.Breaks {
		if report.Verdict(check).Status == checker.Violated {
			return true
		}
	}
	return false
}

// save writes through write at dir/name, dir made when missing ("" a new
// temporary directory).
func save(dir, name string, write func(path string) error) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "fencecheck-"); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return path, err
	}
	return path, write(path)
}

func errorNote(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (writing it: %v)", err)
}
