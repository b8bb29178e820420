package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// A BatchResult crosses from a worker process to the one that runs the
// campaign as JSON: histories in their own v1 format, rapid's fail file by
// its contents (the worker's copy goes with the worker), and reports left
// out, since checking the history again gives them back.
type wireResult struct {
	Batch     Batch          `json:"batch"`
	Seed      uint64         `json:"seed"`
	Checks    int            `json:"checks"`
	Shrinks   int            `json:"shrinks,omitempty"`
	Ops       int            `json:"ops"`
	Log       string         `json:"log,omitempty"`
	Failure   *wireFailure   `json:"failure,omitempty"`
	Sightings []wireSighting `json:"sightings,omitempty"`
	Sequences []uint64       `json:"sequences,omitempty"`
}

type wireFailure struct {
	History  json.RawMessage `json:"history"`
	Allowed  wireAllowed     `json:"allowed"`
	Whole    json.RawMessage `json:"whole_history"`
	Steps    []string        `json:"steps"`
	Panic    *TargetPanic    `json:"panic,omitempty"`
	FailFile []byte          `json:"rapid_fail,omitempty"`
}

// wireAllowed is what a report allowed (checker.Report.Options), so that
// checking the history again judges it the same way.
type wireAllowed struct {
	Deviations model.Deviation     `json:"deviations,omitempty"`
	Codes      []checker.Signature `json:"codes,omitempty"`
}

func allowedOf(r checker.Report) wireAllowed {
	return wireAllowed{Deviations: r.Allow, Codes: r.AllowCodes}
}

func (a wireAllowed) options() checker.Options {
	return checker.Options{Allow: a.Deviations, AllowCodes: a.Codes}
}

type wireSighting struct {
	Signature checker.Signature `json:"signature"`
	Known     string            `json:"known,omitempty"`
	Allowed   wireAllowed       `json:"allowed"`
	Runs      int               `json:"runs"`
	History   json.RawMessage   `json:"history"`
}

// MarshalJSON writes the result as a worker sends it.
func (r BatchResult) MarshalJSON() ([]byte, error) {
	w := wireResult{Batch: r.Batch, Seed: r.Outcome.Seed, Checks: r.Outcome.Checks, Shrinks: r.Outcome.Shrinks, Ops: r.Outcome.Ops,
		Log: r.Outcome.Log, Sequences: r.Sequences}
	if r.Outcome.Failure != nil {
		cut, report, steps, _ := r.Outcome.Failure.Found()
		f := &wireFailure{History: historyJSON(cut), Allowed: allowedOf(report), Whole: historyJSON(r.Outcome.Failure.wholeHistory()), Steps: steps,
			Panic: r.Outcome.Failure.Panic()}
		if r.Outcome.FailFile != "" {
			var err error
			if f.FailFile, err = os.ReadFile(r.Outcome.FailFile); err != nil {
				return nil, err
			}
		}
		w.Failure = f
	}
	for _, sg := range r.Sightings {
		w.Sightings = append(w.Sightings, wireSighting{Signature: sg.Signature, Known: sg.Known, Allowed: allowedOf(sg.Report), Runs: sg.Runs, History: historyJSON(sg.History)})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a worker's result. A failure's fail file is written
// to a fresh temporary directory, which Outcome.Discard removes.
func (r *BatchResult) UnmarshalJSON(data []byte) error {
	var w wireResult
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = BatchResult{Batch: w.Batch, Sequences: w.Sequences,
		Outcome: Outcome{Seed: w.Seed, Checks: w.Checks, Shrinks: w.Shrinks, Ops: w.Ops, Log: w.Log}}
	for _, sg := range w.Sightings {
		h, err := historyOf(sg.History)
		if err != nil {
			return fmt.Errorf("sighting %s: %w", sg.Signature, err)
		}
		r.Sightings = append(r.Sightings, Sighting{Signature: sg.Signature, Known: sg.Known, Runs: sg.Runs,
			History: h, Report: checker.Check(h, sg.Allowed.options())})
	}
	if w.Failure == nil {
		return nil
	}
	cut, err := historyOf(w.Failure.History)
	if err != nil {
		return fmt.Errorf("the counterexample: %w", err)
	}
	whole, err := historyOf(w.Failure.Whole)
	if err != nil {
		return fmt.Errorf("the counterexample's whole run: %w", err)
	}
	r.Outcome.Failure = &Failure{}
	r.Outcome.Failure.set(&brokenRun{cut: cut, whole: whole, report: checker.Check(cut, w.Failure.Allowed.options()),
		steps: w.Failure.Steps, panicked: w.Failure.Panic})
	if len(w.Failure.FailFile) > 0 {
		dir, err := os.MkdirTemp("", "fencecheck-batch-")
		if err != nil {
			return err
		}
		r.Outcome.FailFile = filepath.Join(dir, BundleFailFile)
		return os.WriteFile(r.Outcome.FailFile, w.Failure.FailFile, 0o644)
	}
	return nil
}

func historyJSON(h histories.History) json.RawMessage {
	var b bytes.Buffer
	_ = histories.Save(&b, h) // a bytes.Buffer does not fail
	return b.Bytes()
}

func historyOf(raw json.RawMessage) (histories.History, error) {
	return histories.Load(bytes.NewReader(raw))
}
