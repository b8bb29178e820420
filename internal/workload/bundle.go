package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/files"
	"github.com/fencecheck/fencecheck/internal/report"
)

// Run names what was explored, so that a bundle can be replayed.
type Run struct {
	Scenario   string `json:"scenario"`
	Target     string `json:"target"`
	TxnVersion int    `json:"transactions_version"`
	Seed       uint64 `json:"seed,omitempty"`
	// Swarm says each run drew which faults it offered (Options.Swarm):
	// a fail file replays its interleaving only with the same setting.
	Swarm bool `json:"swarm,omitempty"`
	// Batch is the campaign's batch that found it (see Campaign), whose
	// seed is BatchSeed(Seed, Batch).
	Batch int `json:"batch,omitempty"`
	// KafkaVersion and Brokers say which Kafka target it was.
	KafkaVersion string `json:"kafka_version,omitempty"`
	Brokers      string `json:"brokers,omitempty"`
	// Mutants are the seeded bugs switched on in the optimised broker.
	Mutants []string `json:"mutants,omitempty"`
	// Known is the --known findings file the run went past ("" the
	// target's default, "none" none).
	Known string `json:"known,omitempty"`
	// Workload names the workload that drew the interleaving (WriteBundle
	// fills it in): rapid's fail file is a list of draws, which replay
	// the same interleaving only under the same workload.
	Workload string `json:"workload,omitempty"`
}

// drawsVersion numbers the workload's draws. Bump it whenever an action,
// what an action draws, what a run draws to set up its world, or how the
// quiet phase moves the processes changes: saved fail files then stop
// replaying, and say why.
const drawsVersion = 12

// workloadOf is drawsVersion with the names of every action the scenario
// offers (on a target with an exact clock; a Kafka target offers fewer,
// and a bundle names its target).
func workloadOf(scenario string) string {
	sc, err := ScenarioNamed(scenario)
	if err != nil {
		return ""
	}
	names := slices.Sorted(maps.Keys((&run{sc: sc}).actionsOn(true)))
	return fmt.Sprintf("draws v%d: %s", drawsVersion, strings.Join(names, " "))
}

// Replayable says whether this build can replay the bundle's fail file: it
// must have been drawn by the same workload. Its history can always be
// judged again with fencecheck check.
func (r Run) Replayable() error {
	want := workloadOf(r.Scenario)
	switch {
	case r.Workload == "":
		return fmt.Errorf("the bundle does not say which workload drew it, so its %s may not replay the same interleaving; judge its %s with fencecheck check", BundleFailFile, BundleHistory)
	case r.Workload != want:
		return fmt.Errorf("the bundle was drawn by workload %q, this build runs %q: its %s would replay another interleaving; judge its %s with fencecheck check", r.Workload, want, BundleFailFile, BundleHistory)
	}
	return nil
}

// Files of a bundle.
const (
	BundleHistory = "history.json"
	// BundleWholeHistory is the whole run the history was cut from.
	BundleWholeHistory = "whole-history.json"
	BundleTimeline     = "timeline.md"
	// BundleHTML is the counterexample's page (package report), which
	// links to porcupine's view, BundlePorcupine.
	BundleHTML      = "report.html"
	BundlePorcupine = "porcupine.html"
	BundleRun       = "run.json"
	BundleFailFile  = "rapid.fail"
	bundleReadme    = "README.md"
)

// WriteBundle writes a counterexample as a bug report into dir (created if
// missing; "" makes a fresh directory under the system's temporary one):
// the history (docs/history-format.md), the timeline, the page that draws it,
// porcupine's HTML, the
// actions rapid shrank it to, and how to replay it. It returns the
// directory.
func WriteBundle(dir string, run Run, f *Failure, failFile string) (string, error) {
	h, verdicts, steps, ok := f.Found()
	if !ok {
		return "", fmt.Errorf("no counterexample to write")
	}
	run.Workload = workloadOf(run.Scenario)
	dir, err := bundleDir(dir, run.Scenario)
	if err != nil {
		return "", err
	}
	opts := verdicts.Options()
	opts.Visualize = true
	visual := checker.Check(h, opts)
	writes := map[string]func(io.Writer) error{
		BundleHistory:      func(w io.Writer) error { return histories.Save(w, h) },
		BundleWholeHistory: func(w io.Writer) error { return histories.Save(w, f.wholeHistory()) },
		BundleTimeline:     verdicts.WriteTimeline,
		BundleHTML: func(w io.Writer) error {
			return report.Write(w, visual, report.Options{Porcupine: BundlePorcupine})
		},
		BundlePorcupine: visual.WriteHTML,
		BundleRun:       func(w io.Writer) error { return writeJSON(w, run) },
		bundleReadme:    func(w io.Writer) error { return writeReadme(w, run, verdicts, steps, f.Panic(), dir) },
	}
	for name, write := range writes {
		if err := files.Write(filepath.Join(dir, name), write); err != nil {
			return dir, err
		}
	}
	if failFile != "" {
		if err := copyFile(failFile, filepath.Join(dir, BundleFailFile)); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

func bundleDir(dir, scenario string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "fencecheck-"+scenario+"-")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// installCommand installs the fencecheck command a bug report's README
// replays with.
const installCommand = "go install github.com/fencecheck/fencecheck/cmd/fencecheck@latest"

func writeReadme(w io.Writer, run Run, report checker.Report, steps []string, panicked *TargetPanic, dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Counterexample: %s on %s\n\n", run.Scenario, run.Target)
	switch {
	case panicked != nil && panicked.ClockLost:
		fmt.Fprintf(&b, "No verdict. %s.\n\nThe history ends where the target's clock lost step. No check was judged on it, because what it shows past that point is the target's clock, not the broker.\n\n", panicked)
	case panicked != nil:
		fmt.Fprintf(&b, "%s. The history ends at that request, left unanswered.\n\n", panicked)
		fmt.Fprintf(&b, "```\n%s```\n\n", panicked.Stack)
	}
	for _, v := range report.Verdicts {
		fmt.Fprintf(&b, "    %s\n", v)
	}
	fmt.Fprintf(&b, "\nOpen %s in a browser: the timeline, the processes' lanes, the partitions' logs and each violation on one page. The timeline is also in %s, porcupine's view in %s, the history in %s: the run up to the moment its first broken check broke (%s is the whole run).\n\n", BundleHTML, BundleTimeline, BundlePorcupine, BundleHistory, BundleWholeHistory)
	fmt.Fprintf(&b, "## Replay\n\n    fencecheck check %s\n", filepath.Join(dir, BundleHistory))
	fmt.Fprintf(&b, "    fencecheck replay %s\n\n", dir)
	b.WriteString("The first judges the recorded history again; the second runs the same interleaving against the target again.\n")
	fmt.Fprintf(&b, "Without fencecheck installed: `%s`.\n\n", installCommand)
	b.WriteString("## Actions, as rapid shrank them\n\n")
	for _, s := range steps {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// ReadRun reads what a bundle explored.
func ReadRun(dir string) (Run, error) {
	var run Run
	return run, files.ReadJSON(filepath.Join(dir, BundleRun), &run)
}
