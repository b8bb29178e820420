package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
)

// targets are the brokers fencecheck can explore, by name: each makes a
// fresh broker per interleaving.
var targets = map[string]func(f runFlags) model.NewTarget{
	"model": func(f runFlags) model.NewTarget {
		return func() (model.Target, error) {
			return model.NewBroker(model.Options{TxnVersion: f.txnVersion, AsyncMarkers: true}), nil
		}
	},
	"impl": func(f runFlags) model.NewTarget {
		return func() (model.Target, error) {
			return impl.New(impl.Config{TxnVersion: f.txnVersion, Mutants: f.mutants, SegmentSize: impl.ExploringSegmentSize, AsyncMarkers: true}), nil
		}
	},
	"kfake": func(f runFlags) model.NewTarget {
		return func() (model.Target, error) { return kafka.NewKfake(f.kafkaConfig()) }
	},
	"kafka": func(f runFlags) model.NewTarget {
		return func() (model.Target, error) { return kafka.New(f.kafkaConfig()) }
	},
}

func targetNames() []string {
	var names []string
	for name := range targets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// targetName names the target, with its mutants.
func (f runFlags) targetName() string {
	if len(f.mutants) == 0 {
		return f.target
	}
	return f.target + " with mutant " + strings.Join(slices.Sorted(maps.Keys(f.mutants)), ", ")
}

func (f runFlags) kafkaConfig() kafka.Config {
	cfg := kafka.Config{Topics: workload.Topics, KafkaVersion: f.kafkaVersion, TimeScale: f.timeScale, Logf: func(string, ...any) {}}
	if scenarios, err := scenariosNamed(f.scenario); err == nil {
		cfg.ConsumerGroups = slices.ContainsFunc(scenarios, workload.Scenario.SpeaksKIP848)
	}
	if f.brokers != "" {
		cfg.Brokers = strings.Split(f.brokers, ",")
	}
	return cfg
}

type runFlags struct {
	target, scenario, out string
	brokers, kafkaVersion string
	mutant                string
	mutants               map[string]bool
	seed                  uint64
	checks, steps         int
	shrinkTime            time.Duration
	timeScale             float64
	txnVersion            int
	knownFile             string
	known                 checker.Known
	time                  time.Duration
	swarm                 bool
	parallel              int
	shardFlag             string
	shard                 workload.Shard
	args                  []string  // the command line, for --parallel's workers
	stderr                io.Writer // where the workers' own messages go
}

func runRun(args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newCommand("run", "Explores random interleavings of fare writers and consume-transform-produce\n"+
		"workers, with zombies, restarts and rebalances, against a broker, and checks\n"+
		"every history. A violation is shrunk to a short timeline, printed, and saved\n"+
		"as a bug report that 'fencecheck check' and 'fencecheck replay' replay.\n"+
		"Each scenario (and mutant) is explored for --time, or --checks\n"+
		"interleavings, the scenarios taking turns in slices that double each\n"+
		"round, in batches run side by side (--parallel) or split among\n"+
		"the jobs of a CI matrix (--shard); the same seed and flags give the same\n"+
		"counterexample whatever runs the batches.\n"+
		"Known findings (--known) and error-code differences (a rightful refusal\n"+
		"with another error code than Kafka's) do not stop exploring: each is\n"+
		"counted and reported with the shortest history that showed it.\n"+
		"Progress goes to stderr. Exit status: 0 nothing new was found, 1 a\n"+
		"violation or an error-code difference that --known does not list (a\n"+
		"misconfiguration is expected to give one), or an exploration that\n"+
		"could not finish (a worker process died: its exit status, the end of its\n"+
		"stderr and its batch's seed are printed); 2 unusable input: bad flags,\n"+
		"an unreadable --known file, a cluster that cannot be reached or is set up\n"+
		"unfit (see --brokers).\n", stderr)
	fs.StringVar(&f.target, "target", "impl", "the `TARGET` broker to explore: "+strings.Join(targetNames(), ", "))
	fs.StringVar(&f.mutant, "mutant", "", "with --target impl: switch on a seeded bug, `NAME`[,NAME...] or all, each explored on its own: "+strings.Join(mutantNames(), ", "))
	fs.StringVar(&f.scenario, "scenario", "correct", "the configurations to explore, `NAME`[,NAME...]: "+strings.Join(workload.ScenarioNames(), ", ")+"; correct (the correct ones: a broker must hold every check under them), or all")
	fs.Uint64Var(&f.seed, "seed", 0, "rapid's seed; 0 picks one and prints it (the same seed and flags replay the same interleavings)")
	fs.IntVar(&f.checks, "checks", 0, "how many interleavings to try; 0 explores for --time instead")
	fs.DurationVar(&f.time, "time", workload.DefaultTime, "how long to explore each scenario (and mutant) when --checks is 0; shrinking a counterexample comes after")
	fs.BoolVar(&f.swarm, "swarm", true, "each interleaving draws which kinds of fault it offers (swarm testing); --swarm=false offers every kind to every interleaving")
	fs.IntVar(&f.parallel, "parallel", 0, fmt.Sprintf("how many explorations run side by side, each in a worker process of its own; default the machine's cores, %d times that for kfake and kafka, whose clients mostly wait", kafka.WaitingFactor))
	fs.StringVar(&f.shardFlag, "shard", "", "explore only part `I/N` of the seed's interleavings, for N jobs of a CI matrix (same seed and flags, I from 1 to N); 'fencecheck report' merges their outputs")
	fs.IntVar(&f.steps, "steps", workload.DefaultSteps, "how many actions an interleaving takes, on average")
	fs.DurationVar(&f.shrinkTime, "shrink-time", workload.DefaultShrinkTime, "how long rapid may shrink a counterexample, and how long to look for a shorter one")
	fs.IntVar(&f.txnVersion, "txn-version", workload.DefaultTxnVersion, "the transaction protocol the clients speak: 1 (KIP-98) or 2 (KIP-890)")
	fs.StringVar(&f.brokers, "brokers", "", "with --target kafka: the cluster's bootstrap addresses, `host:port,...`. Its brokers must take fencecheck's scaled timeouts and fire their timers on time; at the default --time-scale: group.min.session.timeout.ms <= 450, group.consumer.session.timeout.ms 450 (for the KIP-848 scenarios), group.initial.rebalance.delay.ms 0, transaction.abort.timed.out.transaction.cleanup.interval.ms <= 10, transaction.max.timeout.ms >= 9000, replication factors of the internal topics within the brokers, id expirations of a day or more ('go doc github.com/fencecheck/fencecheck/kafka' lists them); a setting a broker reports that does not fit stops the run at start. 'fencecheck broker' is such a cluster")
	fs.Float64Var(&f.timeScale, "time-scale", kafka.DefaultTimeScale, "with --target kfake or kafka: how many real milliseconds one model millisecond lasts, above 0 and at most 1. A larger scale gives a busy machine or a distant cluster more room between a client's requests, so that no transaction times out on the broker while the model keeps it open; ticks then wait longer, and the broker settings of --brokers scale with it")
	fs.StringVar(&f.kafkaVersion, "kafka-version", "", "with --target kfake or kafka: cap request versions at this Kafka `RELEASE`, e.g. 3.9 (transactions v1); default the newest (v2 where the broker has it)")
	fs.StringVar(&f.knownFile, "known", "", "the known findings, `FILE` (fencecheck/known/v1), 'kfake' for kfake's own list (kafka/known.json) or 'none': violations they list are counted and reported, and exploring goes on; default 'kfake' for --target kfake, 'none' elsewhere (give 'kfake' for a 'fencecheck broker' by --brokers)")
	fs.StringVar(&f.out, "out", "", "write the bug report of a counterexample into `DIR` (default: a new directory under the system's temporary directory)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	f.args, f.stderr = args, stderr
	collectGarbageLess()
	scenarios, err := (&f).validate(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck run: %v\n", err)
		return exitUsage
	}
	if os.Getenv(workerEnv) == "1" {
		// A worker's flags pin one scenario and one set of mutants.
		f.mutants = mutantRuns(f.mutant)[0]
		ex := f.exploration(scenarios, stderr)
		return serveBatches(ex.InProcess(ex.Options(scenarios[0])), os.Stdin, stdout)
	}
	exit := exitHeld
	var sum summary
	for _, mutants := range mutantRuns(f.mutant) {
		f.mutants = mutants
		code, explored := exploreInTurn(scenarios, f, stdout, stderr)
		exit = max(exit, code)
		for _, ex := range explored {
			sum.add(ex, f.out)
		}
	}
	if f.out != "" {
		if err := sum.write(f.out); err != nil {
			fmt.Fprintf(stderr, "fencecheck run: writing the summary: %v\n", err)
			return max(exit, exitViolated)
		}
	}
	return exit
}

// mutantRuns is one set of mutants per exploration: none, or each named
// mutant on its own, so that a violation is the one bug's.
func mutantRuns(names string) []map[string]bool {
	set, _ := impl.ParseMutants(names)
	if len(set) == 0 {
		return []map[string]bool{nil}
	}
	var runs []map[string]bool
	for _, name := range mutantNames() {
		if set[name] {
			runs = append(runs, map[string]bool{name: true})
		}
	}
	return runs
}

// mutantNames are the seeded bugs, sorted, which "all" explores.
func mutantNames() []string { return slices.Sorted(maps.Keys(impl.Mutants)) }

func (f *runFlags) validate(rest []string) ([]workload.Scenario, error) {
	switch {
	case len(rest) > 0:
		return nil, fmt.Errorf("unexpected argument %q", rest[0])
	case targets[f.target] == nil:
		return nil, fmt.Errorf("unknown --target %q (known: %s)", f.target, strings.Join(targetNames(), ", "))
	case f.target == "kafka" && f.brokers == "":
		return nil, fmt.Errorf("--target kafka needs --brokers host:port,...")
	case f.target != "kafka" && f.brokers != "":
		return nil, fmt.Errorf("--brokers goes with --target kafka")
	case f.checks < 0:
		return nil, fmt.Errorf("--checks must be 0 (explore for --time) or more, got %d", f.checks)
	case f.checks == 0 && f.time <= 0:
		return nil, fmt.Errorf("--time must be positive, got %v", f.time)
	case f.parallel < 0:
		return nil, fmt.Errorf("--parallel must be at least 1, got %d", f.parallel)
	case f.steps < 1:
		return nil, fmt.Errorf("--steps must be at least 1, got %d", f.steps)
	case f.shrinkTime <= 0:
		return nil, fmt.Errorf("--shrink-time must be positive, got %v", f.shrinkTime)
	case f.txnVersion != 1 && f.txnVersion != 2:
		return nil, fmt.Errorf("--txn-version must be 1 or 2, got %d", f.txnVersion)
	case f.timeScale <= 0 || f.timeScale > 1:
		return nil, fmt.Errorf("--time-scale must be above 0 and at most 1, got %v", f.timeScale)
	case f.timeScale != kafka.DefaultTimeScale && f.target != "kfake" && f.target != "kafka":
		return nil, fmt.Errorf("--time-scale goes with --target kfake or kafka")
	case f.mutant != "" && f.target != "impl":
		return nil, fmt.Errorf("--mutant goes with --target impl")
	}
	if _, err := impl.ParseMutants(f.mutant); err != nil {
		return nil, fmt.Errorf("--mutant: %w", err)
	}
	if f.shardFlag != "" {
		var err error
		if f.shard, err = workload.ParseShard(f.shardFlag); err != nil {
			return nil, fmt.Errorf("--shard: %w", err)
		}
	}
	if f.parallel == 0 {
		f.parallel = runtime.NumCPU()
		if f.target == "kfake" || f.target == "kafka" {
			f.parallel *= kafka.WaitingFactor
		}
	}
	if err := f.settleKafkaVersion(); err != nil {
		return nil, err
	}
	if err := f.loadKnown(); err != nil {
		return nil, fmt.Errorf("--known: %w", err)
	}
	return scenariosNamed(f.scenario)
}

// grouped reports whether --scenario names a group of scenarios (correct
// or all): those the target cannot run are then left out, with a line in
// the log, rather than refused (workload.Exploration.Grouped).
func (f runFlags) grouped() bool {
	for _, name := range strings.Split(f.scenario, ",") {
		if name == "all" || name == "correct" {
			return true
		}
	}
	return false
}

// scenariosNamed reads --scenario: names, correct or all.
func scenariosNamed(names string) ([]workload.Scenario, error) {
	var scenarios []workload.Scenario
	for _, name := range strings.Split(names, ",") {
		switch name {
		case "all":
			scenarios = append(scenarios, workload.Scenarios...)
		case "correct":
			scenarios = append(scenarios, workload.CorrectScenarios()...)
		default:
			sc, err := workload.ScenarioNamed(name)
			if err != nil {
				return nil, fmt.Errorf("--scenario: %w", err)
			}
			scenarios = append(scenarios, sc)
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(scenarios, func(sc workload.Scenario) bool {
		dup := seen[sc.Name]
		seen[sc.Name] = true
		return dup
	}), nil
}

// settleKafkaVersion makes --kafka-version and --txn-version agree for a
// Kafka target: a release before 4.0 speaks transactions v1 (KIP-890 came
// with 4.0); without --kafka-version, v1 caps at 3.9.
func (f *runFlags) settleKafkaVersion() error {
	if f.target == "model" {
		if f.kafkaVersion != "" {
			return fmt.Errorf("--kafka-version goes with --target kfake or kafka")
		}
		return nil
	}
	if f.kafkaVersion == "" {
		if f.txnVersion == 1 {
			f.kafkaVersion = "3.9"
		}
		return nil
	}
	var major, minor int
	if _, err := fmt.Sscanf(f.kafkaVersion, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("--kafka-version %q is not a release like 3.9", f.kafkaVersion)
	}
	f.txnVersion = 2
	if major < 4 {
		f.txnVersion = 1
	}
	return nil
}

// loadKnown reads --known (kafka.KnownNamed): kfake's own list by
// default for --target kfake, and none elsewhere.
func (f *runFlags) loadKnown() error {
	name := f.knownFile
	if name == "" {
		name = kafka.NoKnown
		if f.target == "kfake" {
			name = kafka.KfakeKnown
		}
	}
	var err error
	f.known, err = kafka.KnownNamed(name)
	return err
}

// exploration is the run's exploration of scenarios, with f's mutants.
func (f runFlags) exploration(scenarios []workload.Scenario, stderr io.Writer) workload.Exploration {
	return workload.Exploration{Scenarios: scenarios, Grouped: f.grouped(), Target: targets[f.target](f), TxnVersion: f.txnVersion, Known: f.known, Swarm: f.swarm,
		Checks: f.checks, Time: f.time, Steps: f.steps, Seed: f.seed, ShrinkTime: f.shrinkTime, Shard: f.shard,
		Runners:  f.runners,
		Progress: workload.NewProgress(stderr, isTerminal(stderr)),
		Logf:     func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }}
}

// exploreInTurn explores the scenarios (workload.Exploration: in turn, a
// bug that only the last meets is found in its first slice, not after
// every other scenario's --time) and reports each exploration: one that
// found a violation as soon as it ends, the others once all have ended,
// in the order given.
func exploreInTurn(scenarios []workload.Scenario, f runFlags, stdout, stderr io.Writer) (int, []exploration) {
	exit := exitHeld
	var explored []exploration
	err := f.exploration(scenarios, stderr).Run(func(ex workload.Explored) {
		code, summary := f.report(ex, len(scenarios) > 1, stdout, stderr)
		exit = max(exit, code)
		if summary.Run.Scenario != "" {
			explored = append(explored, summary)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck run: %v\n", err)
		return exitUsage, nil
	}
	return exit, explored
}

// report prints what exploring a scenario found, and saves its bug
// report and histories: under --out itself, or, when several
// explorations share --out, under a directory of their own. An
// exploration that could not finish is exitViolated: it is no proof that
// every check holds.
func (f runFlags) report(ex workload.Explored, shared bool, stdout, stderr io.Writer) (int, exploration) {
	sc, out := ex.Scenario, ex.Outcome
	if ex.Err != nil {
		fmt.Fprintf(stderr, "fencecheck run: %s (seed %d): the exploration could not finish: %v\n", sc.Name, out.Seed, ex.Err)
		return exitViolated, exploration{}
	}
	if f.out != "" && (shared || len(mutantRuns(f.mutant)) > 1) {
		f.out = filepath.Join(f.out, explorationDir(sc.Name, f.mutants))
	}
	fmt.Fprintf(stdout, "== %s on %s (transactions v%d), seed %d: %s\n", sc.Name, f.targetName(), f.txnVersion, out.Seed, sc.About())
	run := workload.Run{Scenario: sc.Name, Target: f.target, TxnVersion: f.txnVersion, Seed: out.Seed, Batch: out.FailedBatch.Index, Swarm: f.swarm,
		KafkaVersion: f.kafkaVersion, Brokers: f.brokers, Mutants: slices.Sorted(maps.Keys(f.mutants)), Known: f.knownFile}
	exit, bundle := reportOutcome(out, f, run, stdout, stderr)
	code, saved := reportSightings(ex.Sightings, f.out, sc.Name, stdout, stderr)
	return max(exit, code), summarize(run, f, out, bundle, ex.Sightings, saved)
}

// runners are a scenario's: this process alone, or --parallel workers.
func (f runFlags) runners(opts workload.Options) ([]workload.Runner, error) {
	if f.parallel == 1 {
		return []workload.Runner{f.exploration(nil, f.stderr).InProcess(opts)}, nil
	}
	args, err := workerArgs(f.args, f, opts.Scenario.Name)
	if err != nil {
		return nil, err
	}
	var runners []workload.Runner
	for range f.parallel {
		runners = append(runners, newProcessRunner(args, f.stderr))
	}
	return runners, nil
}

// isTerminal reports whether w is a terminal, where a progress line can
// redraw itself.
func isTerminal(w io.Writer) bool {
	file, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := file.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// reportSightings prints what the exploration met and went past: each
// error-code difference with the shortest history that showed it (saved
// beside the bug report), then each known finding with how often. It is
// exitViolated when an error-code difference is not a known finding.
func reportSightings(all []workload.Sighting, dir, scenario string, stdout, stderr io.Writer) (int, map[int]string) {
	exit, saved := exitHeld, map[int]string{}
	for i, sg := range all {
		if sg.Known != "" {
			fmt.Fprintf(stdout, "known finding %s: met in %d interleavings (%s)\n", sg.Known, sg.Runs, sg.Signature)
			continue
		}
		exit = exitViolated
		fmt.Fprintf(stdout, "\nERROR CODE (the refusal is right, its code is not Kafka's): %s, in %d interleavings; shrunk to %d operations:\n\n",
			sg.Signature, sg.Runs, len(sg.History.Ops))
		if err := sg.Report.WriteTimeline(stdout); err != nil {
			fmt.Fprintf(stderr, "fencecheck: %v\n", err)
		}
		path, err := saveSighting(dir, fmt.Sprintf("%s-error-code-%d.json", scenario, i+1), sg.History)
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck: saving the history: %v\n", err)
			continue
		}
		saved[i] = path
		fmt.Fprintf(stdout, "\nhistory: %s\nreplay:  fencecheck check %s\n", path, path)
	}
	return exit, saved
}

// saveSighting writes a sighting's history into dir ("" makes a fresh
// directory under the system's temporary one).
func saveSighting(dir, name string, h histories.History) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "fencecheck-findings-"); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, histories.SaveFile(path, h)
}

// reportOutcome prints what an exploration found: every check held, or the
// shrunk timeline, its verdicts and where its bug report went.
func reportOutcome(out workload.CampaignOutcome, f runFlags, run workload.Run, stdout, stderr io.Writer) (int, string) {
	if out.Failure == nil {
		fmt.Fprintf(stdout, "no violation of safety or progress over %d interleavings (%d operations, %d distinct action sequences)%s\n",
			out.Checks, out.Ops, out.Sequences, f.budgetNote(out))
		return exitHeld, ""
	}
	found := out.Failure.Outcome
	h, report, steps, _ := found.Failure.Found()
	switch p := found.Failure.Panic(); {
	case p != nil && p.ClockLost:
		// No verdict: the run stopped where the target's clock lost step.
		fmt.Fprintf(stdout, "NO VERDICT in batch %d (seed %d), after %d operations and %d actions:\n\n%s\n\n", out.FailedBatch.Index, out.FailedBatch.Seed, len(h.Ops), len(steps), p)
	case p != nil:
		fmt.Fprintf(stdout, "VIOLATION in batch %d (seed %d), shrunk to %d operations after %d actions:\n\n", out.FailedBatch.Index, out.FailedBatch.Seed, len(h.Ops), len(steps))
		fmt.Fprintf(stdout, "%s (its stack is in the bug report's README.md)\n\n", p)
	default:
		fmt.Fprintf(stdout, "VIOLATION in batch %d (seed %d), shrunk to %d operations after %d actions:\n\n", out.FailedBatch.Index, out.FailedBatch.Seed, len(h.Ops), len(steps))
	}
	if err := report.WriteTimeline(stdout); err != nil {
		fmt.Fprintf(stderr, "fencecheck: %v\n", err)
	}
	printKnownInCounterexample(stdout, h, report, f.known)
	bundle, err := workload.WriteBundle(f.out, run, found.Failure, found.FailFile)
	if err == nil {
		found.Discard()
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck: writing the bug report: %v\n", err)
		return exitViolated, ""
	}
	fmt.Fprintf(stdout, "\nbug report: %s\nreplay:     fencecheck check %s\n            fencecheck replay %s\n",
		bundle, filepath.Join(bundle, workload.BundleHistory), bundle)
	return exitViolated, bundle
}

// printKnownInCounterexample says which of the counterexample's broken
// checks are known findings: the new one that stopped the run may share
// its history with a known finding's, which is no part of the bug.
func printKnownInCounterexample(stdout io.Writer, h histories.History, report checker.Report, known checker.Known) {
	for _, sig := range report.Signatures() {
		if name, ok := known.Identify(h, sig); ok {
			fmt.Fprintf(stdout, "- %s is known finding %s's (%s)\n", sig.Check, name, sig)
		}
	}
}

// budgetNote says what ended a campaign that found nothing.
func (f runFlags) budgetNote(out workload.CampaignOutcome) string {
	note := ""
	if f.shard.Of > 1 {
		note = fmt.Sprintf(", shard %s", f.shard)
	}
	if out.OutOfTime {
		note += fmt.Sprintf(", in the --time of %s", f.time)
	}
	return note
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("replay", "Runs a saved counterexample's interleaving against its target again and\n"+
		"checks the new history. Exit status: 1 it still fails, 0 it no longer does,\n"+
		"2 the bundle is unusable.\n", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "fencecheck replay: give one bundle directory")
		return exitUsage
	}
	dir := fs.Arg(0)
	run, err := workload.ReadRun(dir)
	if err == nil && targets[run.Target] == nil {
		err = fmt.Errorf("unknown target %q in %s", run.Target, workload.BundleRun)
	}
	var sc workload.Scenario
	if err == nil {
		sc, err = workload.ScenarioNamed(run.Scenario)
	}
	if err == nil {
		err = run.Replayable()
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck replay: %v\n", err)
		return exitUsage
	}
	f := runFlags{target: run.Target, txnVersion: run.TxnVersion, kafkaVersion: run.KafkaVersion, brokers: run.Brokers}
	f.mutants, err = impl.ParseMutants(strings.Join(run.Mutants, ","))
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck replay: %v\n", err)
		return exitUsage
	}
	f.knownFile = run.Known
	if err := f.loadKnown(); err != nil {
		fmt.Fprintf(stderr, "fencecheck replay: the bundle's known findings: %v\n", err)
		return exitUsage
	}
	opts := workload.Options{Scenario: sc, Target: targets[run.Target](f), TxnVersion: run.TxnVersion, Known: f.known, Swarm: run.Swarm}
	out, err := workload.Explore(opts, workload.Budget{Replay: filepath.Join(dir, workload.BundleFailFile), Steps: workload.DefaultSteps}, nil)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck replay: %v\n", err)
		return exitUsage
	}
	if out.Failure == nil {
		fmt.Fprintln(stdout, "the counterexample no longer fails: every check held")
		return exitHeld
	}
	_, report, _, _ := out.Failure.Found()
	if err := report.WriteTimeline(stdout); err != nil {
		fmt.Fprintf(stderr, "fencecheck: %v\n", err)
	}
	return exitViolated
}

// explorationGCPercent is the garbage collector's setting while exploring,
// unless GOGC says otherwise. Exploration allocates fast (every check
// builds its own view of a short history) and keeps little: at Go's
// default of 100 the collector took some 15% of the time. At 400,
// `fencecheck run --mutant late-endtxn-hits-next-txn --seed
// 4029694556671711012 --parallel 1 --scenario stable-id` took 8.3 s
// rather than 10.1 s, at a peak of 87 MB resident rather than 53 MB;
// exploring alone gains less (BenchmarkExploration: 1.11x).
const explorationGCPercent = 400

func collectGarbageLess() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(explorationGCPercent)
	}
}
