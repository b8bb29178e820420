package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/files"
	"github.com/fencecheck/fencecheck/internal/workload"
)

// A run with --out writes summary.json beside its bug reports: what each
// exploration covered and found, so that 'fencecheck report' can merge the
// outputs of the jobs that explored one seed's shards.
const (
	summaryFile   = "summary.json"
	summaryFormat = "fencecheck/summary/v1"
)

type summary struct {
	Format       string        `json:"format"`
	Explorations []exploration `json:"explorations"`
}

// exploration is one scenario (and mutant) explored by one job.
type exploration struct {
	Run           workload.Run `json:"run"` // what was explored; Batch is the violation's
	Shard         string       `json:"shard"`
	Interleavings int          `json:"interleavings"`
	ShrinkRuns    int          `json:"shrink_runs,omitempty"` // runs spent shrinking the counterexample
	Operations    int          `json:"operations"`
	Sequences     int          `json:"distinct_action_sequences"`
	OutOfTime     bool         `json:"out_of_time,omitempty"`
	// Violation is the first failing batch's bug report, relative to the
	// summary's directory.
	Violation *violation `json:"violation,omitempty"`
	Sightings []sighting `json:"sightings,omitempty"`
	dir       string     // the directory the summary was read from
}

type violation struct {
	Batch      int    `json:"batch"`
	Operations int    `json:"operations"`
	Bundle     string `json:"bundle"`
	Panic      string `json:"panic,omitempty"` // the target's, when it panicked
	// ClockLost: no verdict; the target's clock lost step (Panic says how).
	ClockLost bool `json:"clock_lost,omitempty"`
}

type sighting struct {
	Signature string `json:"signature"`
	Known     string `json:"known,omitempty"`
	Runs      int    `json:"runs"`
	History   string `json:"history,omitempty"` // an error-code difference's, relative
}

func summarize(run workload.Run, f runFlags, out workload.CampaignOutcome, bundle string, all []workload.Sighting, saved map[int]string) exploration {
	ex := exploration{Run: run, Shard: f.shard.String(), Interleavings: out.Checks, ShrinkRuns: out.Shrinks, Operations: out.Ops,
		Sequences: out.Sequences, OutOfTime: out.OutOfTime}
	if out.Failure != nil && bundle != "" {
		h, _, _, _ := out.Failure.Outcome.Failure.Found()
		ex.Violation = &violation{Batch: out.FailedBatch.Index, Operations: len(h.Ops), Bundle: bundle}
		if p := out.Failure.Outcome.Failure.Panic(); p != nil {
			ex.Violation.Panic, ex.Violation.ClockLost = p.String(), p.ClockLost
		}
	}
	for i, sg := range all {
		ex.Sightings = append(ex.Sightings, sighting{Signature: sg.Signature.String(), Known: sg.Known, Runs: sg.Runs, History: saved[i]})
	}
	return ex
}

// add keeps ex, its paths relative to dir.
func (s *summary) add(ex exploration, dir string) {
	rel := func(path string) string {
		if r, err := filepath.Rel(dir, path); err == nil && dir != "" && path != "" {
			return r
		}
		return path
	}
	if ex.Violation != nil {
		ex.Violation.Bundle = rel(ex.Violation.Bundle)
	}
	for i := range ex.Sightings {
		ex.Sightings[i].History = rel(ex.Sightings[i].History)
	}
	s.Explorations = append(s.Explorations, ex)
}

func (s summary) write(dir string) error {
	s.Format = summaryFormat
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, summaryFile), append(data, '\n'), 0o644)
}

func readSummary(dir string) (summary, error) {
	var s summary
	if err := files.ReadJSON(filepath.Join(dir, summaryFile), &s); err != nil {
		return s, err
	}
	if s.Format != summaryFormat {
		return s, fmt.Errorf("%s: format %q, want %q", filepath.Join(dir, summaryFile), s.Format, summaryFormat)
	}
	for i := range s.Explorations {
		s.Explorations[i].dir = dir
	}
	return s, nil
}

// explorationDir names one exploration's directory under --out when a run
// makes several.
func explorationDir(scenario string, mutants map[string]bool) string {
	if len(mutants) == 0 {
		return scenario
	}
	return scenario + "-" + mutantList(mutants)
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("report", "Merges the outputs of 'fencecheck run --out DIR' (each holds summary.json),\n"+
		"typically the jobs of a CI matrix that explored the shards of one seed\n"+
		"(--shard I/N): per exploration, the interleavings all shards ran, the\n"+
		"first violation (the lowest batch that failed, the one a single job\n"+
		"would have reported) with its bug report, and what was met and gone past.\n"+
		"Exit status: 1 a violation or an unlisted error-code difference, 0 none,\n"+
		"2 unusable input.\n", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "fencecheck report: give one or more directories written by fencecheck run --out")
		return exitUsage
	}
	groups := map[string][]exploration{}
	for _, dir := range fs.Args() {
		s, err := readSummary(dir)
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck report: %v\n", err)
			return exitUsage
		}
		for _, ex := range s.Explorations {
			key := explorationKey(ex.Run)
			groups[key] = append(groups[key], ex)
		}
	}
	exit := exitHeld
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		code, err := reportGroup(key, groups[key], stdout)
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck report: %v\n", err)
			return exitUsage
		}
		exit = max(exit, code)
	}
	return exit
}

// explorationKey is what the shards of one exploration share.
func explorationKey(r workload.Run) string {
	mutants := ""
	if len(r.Mutants) > 0 {
		mutants = " with mutant " + strings.Join(r.Mutants, ", ")
	}
	version := ""
	if r.KafkaVersion != "" {
		version = " Kafka " + r.KafkaVersion
	}
	return fmt.Sprintf("%s on %s%s%s (transactions v%d), seed %d", r.Scenario, r.Target, version, mutants, r.TxnVersion, r.Seed)
}

// reportGroup prints one exploration, merged over its shards.
func reportGroup(key string, shards []exploration, stdout io.Writer) (int, error) {
	var of int
	seen := map[string]string{}
	var first *exploration
	total := exploration{}
	runs := map[string]*sighting{}
	for i, ex := range shards {
		sh, err := workload.ParseShard(ex.Shard)
		if err != nil {
			return 0, fmt.Errorf("%s: shard: %w", ex.dir, err)
		}
		n := sh.Of
		if of != 0 && n != of {
			return 0, fmt.Errorf("%s: shards of %d and of %d jobs mixed (%s is %s)", key, of, n, ex.dir, ex.Shard)
		}
		of = n
		if dup, ok := seen[ex.Shard]; ok {
			return 0, fmt.Errorf("%s: shard %s twice (%s and %s)", key, ex.Shard, dup, ex.dir)
		}
		seen[ex.Shard] = ex.dir
		total.Interleavings += ex.Interleavings
		total.Operations += ex.Operations
		total.Sequences += ex.Sequences
		if ex.Violation != nil && (first == nil || ex.Violation.Batch < first.Violation.Batch) {
			first = &shards[i]
		}
		for _, sg := range ex.Sightings {
			if old := runs[sg.Signature]; old != nil {
				old.Runs += sg.Runs
				continue
			}
			copied := sg
			copied.History = joinRel(ex.dir, sg.History)
			runs[sg.Signature] = &copied
		}
	}
	fmt.Fprintf(stdout, "== %s: %d of %d shards\n", key, len(shards), of)
	if len(shards) < of {
		fmt.Fprintf(stdout, "missing shards: %s\n", strings.Join(missingShards(seen, of), ", "))
	}
	fmt.Fprintf(stdout, "%d interleavings, %d operations, up to %d distinct action sequences\n", total.Interleavings, total.Operations, total.Sequences)
	exit := exitHeld
	if first != nil {
		exit = exitViolated
		bundle := joinRel(first.dir, first.Violation.Bundle)
		heading := "VIOLATION in batch %d (shard %s), shrunk to %d operations:\n\n"
		if first.Violation.ClockLost {
			heading = "NO VERDICT in batch %d (shard %s), after %d operations:\n\n"
		}
		fmt.Fprintf(stdout, heading, first.Violation.Batch, first.Shard, first.Violation.Operations)
		if first.Violation.Panic != "" {
			fmt.Fprintf(stdout, "%s\n\n", first.Violation.Panic)
		}
		if timeline, err := os.ReadFile(filepath.Join(bundle, workload.BundleTimeline)); err == nil {
			stdout.Write(timeline)
		}
		fmt.Fprintf(stdout, "\nbug report: %s\n", bundle)
	} else {
		fmt.Fprintln(stdout, "no violation of safety or progress")
	}
	for _, sig := range slices.Sorted(maps.Keys(runs)) {
		sg := runs[sig]
		if sg.Known != "" {
			fmt.Fprintf(stdout, "known finding %s: met in %d interleavings (%s)\n", sg.Known, sg.Runs, sig)
			continue
		}
		exit = exitViolated
		fmt.Fprintf(stdout, "ERROR CODE %s: in %d interleavings; history: %s\n", sig, sg.Runs, sg.History)
	}
	return exit, nil
}

func joinRel(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

func missingShards(seen map[string]string, of int) []string {
	var missing []string
	for i := 1; i <= of; i++ {
		if _, ok := seen[fmt.Sprintf("%d/%d", i, of)]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, of))
		}
	}
	return missing
}
