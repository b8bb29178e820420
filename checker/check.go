package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// DefaultTimeout bounds the linearizability search when Options says nothing:
// porcupine is NP-complete in the worst case, and a check that never ends is
// worse than one that says "unknown".
const DefaultTimeout = 30 * time.Second

// Options tune a check.
type Options struct {
	// Timeout bounds the linearizability search of each 100,000
	// operations (the search takes time in proportion to the history);
	// 0 is DefaultTimeout.
	Timeout time.Duration
	// Visualize keeps what WriteHTML needs (porcupine's partial
	// linearizations), which costs a second search on a legal history.
	Visualize bool
	// Progress, when set, is told now and then how far the check has got
	// (a long history takes a while): the phase, and the operations it
	// has gone through. The phase is Linearizable for the linearizability
	// search (done counts the operations placed for good), then
	// PhaseInvariants for the invariants' one pass over the history,
	// which counts from 0 again. It is called once a block of
	// operations, never once an operation, and with 0 when a pass
	// begins.
	Progress func(phase string, done int)
	// Slower, when set, is told why CheckFile checks the file again
	// whole, holding every operation, rather than as a stream (for
	// example a streamed search that found no order), so that a long
	// check that turns slow and large says why.
	Slower func(why string)
	// Allow are the deviations from Kafka linearizable accepts (none by
	// default): known findings', for telling their consequences from a
	// new finding (Known.Explains, Known.Allowed).
	Allow model.Deviation
	// AllowCodes are wrong codes taken as right: a refusal whose
	// error-codes signature is one of them is no violation, and does not
	// keep an order from explaining every answer exactly (known
	// findings' wrong codes, Known.Allowed). Without it, one known wrong
	// code makes error-codes judge the others on whichever order explains
	// the effects, where a refusal may sit before the event that made its
	// code right.
	AllowCodes []Signature
	// only, when set, is the one of linearizable and error-codes whose
	// verdict is wanted: the other's search, and the explanation of a
	// violation, are skipped (Known.Explains asks only held or not).
	only string
}

// Report is the outcome of every check on one history.
type Report struct {
	History  histories.History
	Verdicts []Verdict // in the order of Checks
	// Allow and AllowCodes are what the checks allowed (Options): a
	// report judged with known findings allowed shows only what goes
	// beyond them.
	Allow      model.Deviation
	AllowCodes []Signature
	lin        linearizability
}

// Check runs every check on h.
func Check(h histories.History, opts Options) Report {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Progress != nil {
		opts.Progress(Linearizable, 0)
	}
	lin := checkLinearizable(h, opts)
	verdicts := []Verdict{lin.verdict}
	verdicts = append(verdicts, judgeInvariants(h, newPassProgress(opts.Progress))...)
	verdicts = append(verdicts, lin.codes)
	return Report{History: h, Verdicts: verdicts, Allow: opts.Allow, AllowCodes: opts.AllowCodes, lin: lin}
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
// break it, and its lanes named after the processes. The report must come
// from Check with Options.Visualize.
func (r Report) WriteHTML(w io.Writer) error {
	if r.lin.info.PartialLinearizations() == nil && r.lin.judged > 0 {
		return fmt.Errorf("the report was made without Options.Visualize")
	}
	info := r.lin.info
	info.AddAnnotations(r.annotations())
	var page bytes.Buffer
	if err := porcupine.Visualize(r.lin.model, info, &page); err != nil {
		return err
	}
	named, err := r.withLaneNames(page.String())
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, named)
	return err
}

// laneNamesScript renames porcupine's lanes. Porcupine (v1.3) labels each
// lane with its client id and has no way to name it, so the page's own
// labels are rewritten once it has drawn them; the lane labels are the text
// of the canvas's background group. A name wider than the number it
// replaces would run off the left edge: the canvas moves right to fit.
const laneNamesScript = `<script>
(function () {
  const names = %s;
  const labels = document.querySelectorAll('#canvas svg > g:first-child > text');
  let overflow = 0;
  for (const label of labels) {
    if (Object.hasOwn(names, label.textContent)) {
      label.textContent = names[label.textContent];
      overflow = Math.max(overflow, -label.getBBox().x);
    }
  }
  const svg = document.querySelector('#canvas svg');
  if (svg && overflow > 0) {
    svg.style.overflow = 'visible';
    svg.style.marginLeft = Math.ceil(overflow + 4) + 'px';
  }
})();
</script>
`

// withLaneNames adds laneNamesScript to porcupine's page, before </body>.
func (r Report) withLaneNames(page string) (string, error) {
	names := map[string]string{}
	for proc, client := range r.porcupineClients() {
		names[fmt.Sprint(client)] = proc
	}
	js, err := json.Marshal(names)
	if err != nil {
		return "", err
	}
	at := strings.LastIndex(page, "</body>")
	if at < 0 {
		at = len(page)
	}
	return page[:at] + fmt.Sprintf(laneNamesScript, js) + page[at:], nil
}

// porcupineClients maps each process to porcupine's client id for it.
func (r Report) porcupineClients() map[string]int {
	clients := map[string]int{}
	for _, o := range r.lin.ops {
		clients[o.Input.(*histories.Op).Proc] = o.ClientId
	}
	return clients
}

// WriteTimeline writes the history as a Markdown table in the seeds' shape
// (Clock | Who | Does | Result), violating rows marked.
// A report that allowed known findings says so below its verdicts.
func (r Report) WriteTimeline(w io.Writer) error {
	if err := WriteTimeline(w, r.History, r.Verdicts); err != nil || (r.Allow == 0 && len(r.AllowCodes) == 0) {
		return err
	}
	_, err := fmt.Fprintf(w, "- judged with the known findings allowed, as fencecheck check --known judges (deviations: %s; wrong codes: %d signatures)\n",
		orNone(r.Allow.String()), len(r.AllowCodes))
	return err
}

// Options are the options that judge a history as r was judged.
func (r Report) Options() Options { return Options{Allow: r.Allow, AllowCodes: r.AllowCodes} }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (r Report) annotations() []porcupine.Annotation {
	clients := r.porcupineClients()
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
