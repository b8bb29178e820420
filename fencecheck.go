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
	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
	"github.com/fencecheck/fencecheck/workload"
)

// Options say how hard Test looks, and at what.
type Options struct {
	// Scenarios are the configurations explored, by name (see
	// 'fencecheck run --help'); default the correct ones, stable-id and
	// adversary. A correct scenario fails the test with any violation; a
	// misconfiguration fails it when none of the checks it is known to
	// break broke: the broker let the test show nothing.
	Scenarios []string
	// TxnVersion is the transaction protocol the clients speak, 1 or 2
	// (the default).
	TxnVersion int
	// Time bounds each scenario's exploring (10 s if 0 and Checks is 0);
	// Checks, when set, is a number of interleavings instead.
	Time   time.Duration
	Checks int
	// Seed is the exploration's seed; 0 picks one, logged.
	Seed uint64
	// ShrinkTime bounds shrinking a counterexample, and looking for a
	// shorter one (2 minutes if 0, as 'fencecheck run' does): a job that
	// only needs to know whether the broker fails can give less.
	ShrinkTime time.Duration
	// Known are findings that do not fail the test (checker.LoadKnownFile
	// reads a fencecheck/known/v1 file); they are logged.
	Known checker.Known
	// Out is where bug reports go; default a new directory under the
	// system's temporary one, which outlives the test.
	Out string
}

// Test explores target's broker the way 'fencecheck run' does, the
// scenarios in turn, and fails tb with each counterexample's timeline and
// the path of its bug report. An error-code difference that Known does
// not list fails it too, with its history.
func Test(tb testing.TB, target model.NewTarget, opts Options) {
	tb.Helper()
	names := opts.Scenarios
	if len(names) == 0 {
		names = []string{"stable-id", "adversary"}
	}
	if opts.TxnVersion == 0 {
		opts.TxnVersion = 2
	}
	if opts.Time == 0 {
		opts.Time = 10 * time.Second
	}
	budget := opts.budget(opts.Seed)
	var scenarios []workload.Scenario
	var campaigns []workload.Campaign
	var runners [][]workload.Runner
	for _, name := range names {
		sc, err := workload.ScenarioNamed(name)
		if err != nil {
			tb.Fatalf("fencecheck: %v", err)
		}
		scenarios = append(scenarios, sc)
		campaigns = append(campaigns, workload.Campaign{Name: sc.Name, Budget: budget, Time: opts.Time})
		runners = append(runners, []workload.Runner{workload.InProcess(opts.workload(sc, target), budget.Steps, budget.ShrinkTime)})
	}
	workload.InTurn(campaigns, runners, nil, func(i int, out workload.CampaignOutcome, err error) {
		tb.Helper()
		if err != nil {
			tb.Errorf("fencecheck: %s: %v", scenarios[i].Name, err)
			return
		}
		judge(tb, target, scenarios[i], opts, out)
	})
}

// Brokers is a target for Test: a Kafka cluster by its bootstrap
// addresses (fencecheck's topics are created there when missing).
func Brokers(addrs ...string) model.NewTarget {
	return func() (model.Target, error) {
		return kafka.New(kafka.Config{Brokers: addrs, Topics: workload.Topics, Logf: func(string, ...any) {}})
	}
}

func (opts Options) workload(sc workload.Scenario, target model.NewTarget) workload.Options {
	return workload.Options{Scenario: sc, Target: target, TxnVersion: opts.TxnVersion, Known: opts.Known, Swarm: true}
}

// budget is the exploration's from seed (a ShrinkTime of 0 is workload's
// default).
func (opts Options) budget(seed uint64) workload.Budget {
	return workload.Budget{Checks: opts.Checks, Steps: 30, Seed: seed, ShrinkTime: opts.ShrinkTime}
}

// judge fails tb with what exploring sc found.
func judge(tb testing.TB, target model.NewTarget, sc workload.Scenario, opts Options, out workload.CampaignOutcome) {
	tb.Helper()
	version := opts.TxnVersion
	tb.Logf("fencecheck: %s (transactions v%d), seed %d: %d interleavings, %d operations", sc.Name, version, out.Seed, out.Checks, out.Ops)
	failed := out.Failure != nil
	if failed {
		reportFailure(tb, sc, version, out, opts.Out)
	}
	all := out.Sightings.All()
	if !failed {
		// beside a violation, each keeps the shortest history seen
		all = workload.ShrinkAll(opts.workload(sc, target), opts.budget(out.Seed), all)
	}
	for _, sg := range all {
		if sg.Known != "" {
			tb.Logf("fencecheck: %s: known finding %s met in %d interleavings", sc.Name, sg.Known, sg.Runs)
			continue
		}
		path, err := save(opts.Out, sc.Name+"-error-code.json", func(path string) error { return histories.SaveFile(path, sg.History) })
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
