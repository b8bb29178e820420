package checker

import (
	"fmt"
	"io"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
)

// DefaultTimeout bounds the linearizability search when Options says nothing:
// porcupine is NP-complete in the worst case, and a check that never ends is
// worse than one that says "unknown".
const DefaultTimeout = 30 * time.Second

// Options tune a check.
type Options struct {
	// Timeout bounds the linearizability search; 0 is DefaultTimeout.
	Timeout time.Duration
	// Visualize keeps what WriteHTML needs (porcupine's partial
	// linearizations), which costs a second search on a legal history.
	Visualize bool
}

// Report is the outcome of every check on one history.
type Report struct {
	History  histories.History
	Verdicts []Verdict // in the order of Checks
	lin      linearizability
}

// Check runs every check on h.
func Check(h histories.History, opts Options) Report {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	lin := checkLinearizable(h, opts.Timeout, opts.Visualize)
	verdicts := []Verdict{lin.verdict}
	a := analyze(h) // what every invariant needs, worked out once
	for _, check := range invariantChecks() {
		verdicts = append(verdicts, check(a))
	}
	verdicts = append(verdicts, lin.codes)
	return Report{History: h, Verdicts: verdicts, lin: lin}
}

// Held reports whether every check holds; an unknown verdict does not.
func (r Report) Held() bool {
	for _, v := range r.Verdicts {
		if !v.Held() {
			return false
		}
	}
	return true
}

// Violated lists the checks the history violates, in the order of Checks.
func (r Report) Violated() []string {
	var checks []string
	for _, v := range r.Verdicts {
		if v.Status == Violated {
			checks = append(checks, v.Check)
		}
	}
	return checks
}

// Verdict is the verdict of the named check.
func (r Report) Verdict(check string) Verdict {
	for _, v := range r.Verdicts {
		if v.Check == check {
			return v
		}
	}
	return Verdict{Check: check, Status: Unknown, Reason: "not run"}
}

// WriteHTML writes porcupine's visualization of the history, operations in
// Kafka's words, with every violation an annotation on the operations that
// break it. The report must come from Check with Options.Visualize.
func (r Report) WriteHTML(w io.Writer) error {
	if r.lin.info.PartialLinearizations() == nil && len(r.lin.ops) > 0 {
		return fmt.Errorf("the report was made without Options.Visualize")
	}
	info := r.lin.info
	info.AddAnnotations(r.annotations())
	return porcupine.Visualize(r.lin.model, info, w)
}

// WriteTimeline writes the history as a Markdown table in the seeds' shape
// (Clock | Who | Does | Result), violating rows marked.
func (r Report) WriteTimeline(w io.Writer) error {
	return WriteTimeline(w, r.History, r.Verdicts)
}

func (r Report) annotations() []porcupine.Annotation {
	clients := map[string]int{}
	for _, o := range r.lin.ops {
		op := o.Input.(*histories.Op)
		clients[op.Proc] = o.ClientId
	}
	byID := opsByID(r.History)
	var notes []porcupine.Annotation
	for _, v := range r.Verdicts {
		for _, viol := range v.Violations {
			op, ok := byID[viol.Op]
			if !ok {
				continue
			}
			end := op.Call
			if op.Returned {
				end = op.Return
			}
			notes = append(notes, porcupine.Annotation{
				ClientId:        clients[op.Proc],
				Start:           op.Call,
				End:             end,
				Description:     "breaks " + v.Check,
				Details:         fmt.Sprintf("op %d: %s", viol.Op, viol.Reason),
				BackgroundColor: "#ffb3b3",
			})
		}
	}
	return notes
}
