package checker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Signature is how a history breaks a check, in terms that stay the same
// from one run to the next (never operation ids): the check, the type of
// the operation that breaks it, the model's rule that refuses its answer
// (empty for the invariants), and the class of that answer.
type Signature struct {
	Check  string      `json:"check"`
	Type   model.Kind  `json:"type"`
	Rule   string      `json:"rule,omitempty"`
	Answer model.Class `json:"answer"`
}

func (s Signature) String() string {
	rule := ""
	if s.Rule != "" {
		rule = " by rule " + s.Rule
	}
	return fmt.Sprintf("%s at %s answered %s%s", s.Check, s.Type, s.Answer, rule)
}

// Signatures are the ways the report's history breaks its checks: one per
// violated check, from its first violation.
func (r Report) Signatures() []Signature {
	byID := opsByID(r.History)
	var sigs []Signature
	for _, v := range r.Verdicts {
		if v.Status != Violated {
			continue
		}
		sigs = append(sigs, signatureOf(v, byID))
	}
	return sigs
}

// signatureOf is the signature of a violated verdict: its first
// violation's.
func signatureOf(v Verdict, byID opIndex) Signature {
	first := v.Violations[0]
	sig := Signature{Check: v.Check, Rule: first.Rule}
	if op, ok := byID[first.Op]; ok {
		sig.Type, sig.Answer = op.Kind, model.ClassOf(op.Kind, op.Result.Err)
		if op.Result.Undecided() {
			sig.Answer = model.Undecided
		}
	}
	return sig
}

// Finding is a known way a broker breaks a check: its name, one line
// about it, where it is written up, the signatures it shows, and the
// saved histories that show it.
type Finding struct {
	Name    string      `json:"name"`
	About   string      `json:"about"`
	WriteUp string      `json:"write_up,omitempty"`
	Match   []Signature `json:"match"`
	// Allows names the deviation from Kafka the finding is (model's
	// Deviation), when the model has one for it: a history whose
	// violation it explains is the finding's consequence (Explains).
	Allows    string   `json:"allows,omitempty"`
	Histories []string `json:"histories,omitempty"`
	// Consequences are saved histories that break checks under other
	// signatures, which the finding's deviation explains.
	Consequences []string `json:"consequences,omitempty"`
}

// Known is a list of known findings (format fencecheck/known/v1,
// docs/known-format.md), so that exploration counts what it meets again
// and goes on looking for what is new.
type Known struct {
	Findings []Finding
}

// KnownFormat names the known-findings format.
const KnownFormat = "fencecheck/known/v1"

// LoadKnown reads a known-findings document. The error names the finding
// and the field that is wrong.
func LoadKnown(r io.Reader) (Known, error) {
	var doc struct {
		Format   string    `json:"format"`
		Findings []Finding `json:"findings"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return Known{}, fmt.Errorf("not a known-findings document: %w", err)
	}
	if doc.Format != KnownFormat {
		return Known{}, fmt.Errorf("format must be %q, got %q", KnownFormat, doc.Format)
	}
	for i, f := range doc.Findings {
		if err := f.valid(); err != nil {
			return Known{}, fmt.Errorf("findings[%d] (%q): %w", i, f.Name, err)
		}
	}
	return Known{Findings: doc.Findings}, nil
}

// LoadKnownFile reads the known-findings document at path.
func LoadKnownFile(path string) (Known, error) {
	f, err := os.Open(path)
	if err != nil {
		return Known{}, err
	}
	defer f.Close()
	k, err := LoadKnown(f)
	if err != nil {
		return Known{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

func (f Finding) valid() error {
	if f.Name == "" {
		return errors.New("name is required")
	}
	if len(f.Match) == 0 && f.Allows == "" {
		return errors.New("match needs at least one signature, or allows a deviation")
	}
	if f.Allows != "" {
		if _, err := model.ParseDeviation(f.Allows); err != nil {
			return fmt.Errorf("allows: %w", err)
		}
	}
	for j, s := range f.Match {
		switch {
		case !slices.Contains(Checks, s.Check):
			return fmt.Errorf("match[%d].check: %q is not one of %v", j, s.Check, Checks)
		case !slices.Contains(model.Kinds, s.Type):
			return fmt.Errorf("match[%d].type: %q is not an operation type", j, s.Type)
		case !knownClass(s.Answer):
			return fmt.Errorf("match[%d].answer: %q is not an answer class", j, s.Answer)
		}
	}
	return nil
}

func knownClass(c model.Class) bool {
	if c == model.Success || c == model.Undecided {
		return true
	}
	for _, k := range model.Kinds {
		for _, code := range model.CodesFor(k) {
			if model.ClassOf(k, code) == c {
				return true
			}
		}
	}
	return false
}

// Match is the known finding that shows sig, if any.
func (k Known) Match(sig Signature) (Finding, bool) {
	for _, f := range k.Findings {
		if slices.Contains(f.Match, sig) {
			return f, true
		}
	}
	return Finding{}, false
}

// Identify names the known finding that a violation of sig.Check on h,
// with signature sig, is: the finding whose signatures include sig, or
// else the findings whose deviations explain it (Explains).
func (k Known) Identify(h histories.History, sig Signature) (string, bool) {
	if f, ok := k.Match(sig); ok {
		return f.Name, true
	}
	return k.Explains(h, sig.Check)
}

// Allowed are the options that judge a history with every known finding
// allowed: their deviations, and their wrong codes taken as right. What
// the history breaks then goes beyond them.
func (k Known) Allowed() Options {
	var opts Options
	for _, f := range k.Findings {
		if d, err := model.ParseDeviation(f.Allows); f.Allows != "" && err == nil {
			opts.Allow |= d
		}
		for _, sig := range f.Match {
			if sig.Check == ErrorCodes {
				opts.AllowCodes = append(opts.AllowCodes, sig)
			}
		}
	}
	return opts
}

// Unknown are the signatures of the report that no known finding shows.
func (k Known) Unknown(r Report) []Signature {
	var fresh []Signature
	for _, sig := range r.Signatures() {
		if _, known := k.Match(sig); !known {
			fresh = append(fresh, sig)
		}
	}
	return fresh
}

// Explains names the known findings whose deviations (Finding.Allows)
// explain check's violation on h: the check holds on h once the model
// allows one finding's deviation, or failing that those of a few together
// (all, less each one the rest explain without; their names joined by
// "+"). A known divergence has consequences later in the same history,
// under other signatures than its own (a transaction the broker forgot
// writes no marker, and the next record lands an offset early); this
// tells them from a new finding. Only linearizable and error-codes judge
// by the model, so only their violations can be explained.
func (k Known) Explains(h histories.History, check string) (string, bool) {
	if check != Linearizable && check != ErrorCodes {
		return "", false
	}
	type allowing struct {
		name string
		d    model.Deviation
	}
	var candidates []allowing
	var all model.Deviation
	for _, f := range k.Findings {
		if d, err := model.ParseDeviation(f.Allows); f.Allows != "" && err == nil {
			candidates, all = append(candidates, allowing{f.Name, d}), all|d
		}
	}
	// All together first: a violation no deviation explains, a new
	// finding, costs one search, not one per finding.
	holds := holdsWithin(h, check, time.Now().Add(explainBudget))
	if len(candidates) == 0 || !holds(all) {
		return "", false
	}
	for _, c := range candidates {
		if holds(c.d) {
			return c.name, true
		}
	}
	var names []string
	for _, c := range candidates {
		if holds(all &^ c.d) {
			all &^= c.d
			continue
		}
		names = append(names, c.name)
	}
	return strings.Join(names, "+"), true
}

// Explains searches h again, up to once per finding and more to reduce a
// combination: explainBudget bounds them all, and explainSearch each. A
// history whose search runs long would otherwise hold an exploration up
// for as many long searches as there are findings (met on kfake: a worker
// spent ten minutes on one violation). What is not explained within them
// counts as new. A search takes milliseconds on an interleaving's history
// alone, and many times that on a machine busy with every worker; a
// budget near that would call known consequences new.
const (
	explainBudget = 2 * time.Minute
	explainSearch = DefaultTimeout / 2
)

// holdsWithin is whether check holds on h when the model allows a
// deviation, searched until deadline at the latest: not within it is no.
func holdsWithin(h histories.History, check string, deadline time.Time) func(model.Deviation) bool {
	return func(d model.Deviation) bool {
		timeout := min(explainSearch, time.Until(deadline))
		if timeout <= 0 {
			return false
		}
		lin := checkLinearizable(h, Options{Timeout: timeout, Allow: d, only: check})
		if check == ErrorCodes {
			return lin.codes.Held()
		}
		return lin.verdict.Held()
	}
}
