package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
)

// verdictView is one check's verdict as the page shows it. Verdicts are
// drawn from whatever the report holds, so a new check just appears.
type verdictView struct {
	Check, Status, Line string
	Violations          []violationView
	// Longest is, for linearizable, the longest order the model accepts.
	Longest []int
}

type violationView struct {
	Check   string
	Op      int
	Related []int
	Reason  string
}

func verdictViews(verdicts []checker.Verdict) []verdictView {
	views := make([]verdictView, len(verdicts))
	for i, v := range verdicts {
		views[i] = verdictView{Check: v.Check, Status: statusWord(v.Status), Line: v.String()}
		for _, viol := range v.Violations {
			views[i].Violations = append(views[i].Violations, violationView{Check: v.Check, Op: viol.Op, Related: viol.Related, Reason: viol.Reason})
		}
		if v.Check == checker.Linearizable && len(v.Violations) > 0 {
			views[i].Longest = v.Violations[0].Related
		}
	}
	return views
}

// statusWord is the status as a CSS class and a word.
func statusWord(s checker.Status) string {
	switch s {
	case checker.OK:
		return "ok"
	case checker.Violated:
		return "violated"
	case checker.Unknown:
		return "unknown"
	}
	return "skipped"
}

// rowView is one row of the timeline: Clock | Who | Does | Result, and
// why it breaks what it breaks.
type rowView struct {
	ID           int
	Clock        string // the call's time, as the page's clock writes it
	Who          string
	Does, Result string
	Breaks       []string
	Reasons      []string // "check: reason", one per violation the operation breaks
}

func rowViews(rows []checker.TimelineRow, verdicts []checker.Verdict, c checker.Clock) []rowView {
	reasons := reasonsByOp(verdicts)
	views := make([]rowView, len(rows))
	for i, row := range rows {
		views[i] = rowView{ID: row.Op.ID, Clock: c.At(row.Op.Call), Who: row.Op.Proc, Does: row.Does, Result: strings.TrimSpace(row.Result), Breaks: row.Breaks, Reasons: reasons[row.Op.ID]}
	}
	return views
}

func reasonsByOp(verdicts []checker.Verdict) map[int][]string {
	reasons := map[int][]string{}
	for _, v := range verdicts {
		if v.Status != checker.Violated {
			continue
		}
		for _, viol := range v.Violations {
			reasons[viol.Op] = append(reasons[viol.Op], fmt.Sprintf("%s: %s", v.Check, viol.Reason))
		}
	}
	return reasons
}

// calls renders the timeline's words, where calls stand in backticks as
// in the seeds, with the calls as code.
func calls(s string) template.HTML {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, part := range parts {
		escaped := template.HTMLEscapeString(part)
		switch {
		case i%2 == 1 && i < len(parts)-1:
			escaped = "<code>" + escaped + "</code>"
		case i%2 == 1:
			escaped = "`" + escaped // a backtick without its pair stays as it was
		}
		b.WriteString(escaped)
	}
	return template.HTML(b.String())
}
