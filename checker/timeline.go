package checker

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
)

// WriteTimeline writes h as a Markdown table in the seeds' shape (Clock |
// Who | Does | Result), one row per operation in call order, and below it
// the verdict lines. A row of an operation that breaks a check starts with
// "⚠" and names the checks it breaks. A recording's times, in
// milliseconds, are written as seconds after its first call, with a line
// before the table that says when that was (Clock).
func WriteTimeline(w io.Writer, h histories.History, verdicts []Verdict) error {
	var b strings.Builder
	rows := Timeline(h, verdicts)
	clock := ClockOf(rows, h.WallClock)
	if legend := clock.Legend(); legend != "" {
		b.WriteString(legend + "\n\n")
	}
	b.WriteString("| Clock | Who | Does | Result |\n|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row.markdown(clock))
	}
	b.WriteString("\n")
	for _, v := range verdicts {
		fmt.Fprintf(&b, "- %s\n", v)
		if v.Check == Linearizable && v.Status == Violated && len(v.Violations[0].Related) > 0 {
			fmt.Fprintf(&b, "  - the longest order the model accepts: ops %s\n", joinIDs(v.Violations[0].Related))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TimelineRow is one operation's row of the timeline.
type TimelineRow struct {
	Op histories.Op
	// Does and Result are in a client's words; Does puts the calls in
	// backticks, as the seeds do.
	Does, Result string
	Breaks       []string // the checks the operation breaks, in the order of Checks
}

// Timeline is h's rows in call order, each with the checks its operation
// breaks.
func Timeline(h histories.History, verdicts []Verdict) []TimelineRow {
	breaks := checksBrokenBy(verdicts)
	rows := make([]TimelineRow, 0, len(h.Ops))
	for _, op := range inCallOrder(h.Ops) {
		does, result := describe(op)
		rows = append(rows, TimelineRow{Op: op, Does: does, Result: result, Breaks: breaks[op.ID]})
	}
	return rows
}

// markdown is the row in a Markdown table, its time as c writes it.
func (row TimelineRow) markdown(c Clock) string {
	op, result := row.Op, row.Result
	clock := fmt.Sprintf("%s (op %d)", c.At(op.Call), op.ID)
	if len(row.Breaks) > 0 {
		clock = "⚠ " + clock
		result += " — **breaks " + strings.Join(row.Breaks, ", ") + "**"
	}
	return fmt.Sprintf("| %s | %s | %s | %s |\n", cell(clock), cell(op.Proc), cell(row.Does), cell(strings.TrimPrefix(result, " ")))
}

// checksBrokenBy maps each operation that breaks a check to the checks it
// breaks, in the order of the verdicts.
func checksBrokenBy(verdicts []Verdict) map[int][]string {
	breaks := map[int][]string{}
	for _, v := range verdicts {
		if v.Status != Violated {
			continue
		}
		for _, viol := range v.Violations {
			if !slices.Contains(breaks[viol.Op], v.Check) {
				breaks[viol.Op] = append(breaks[viol.Op], v.Check)
			}
		}
	}
	for _, checks := range breaks {
		sort.SliceStable(checks, func(i, j int) bool { return slices.Index(Checks, checks[i]) < slices.Index(Checks, checks[j]) })
	}
	return breaks
}

func joinIDs(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
