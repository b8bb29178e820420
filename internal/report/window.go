package report

import (
	"fmt"

	"github.com/fencecheck/fencecheck/checker"
)

// window is the run of timeline rows a page draws, [From, To), and what it
// leaves out.
type window struct {
	From, To, Total int
	Focus           int // the id of the first violating operation, -1 when none
}

// Before and After count the operations left out on either side.
func (w window) Before() int   { return w.From }
func (w window) After() int    { return w.Total - w.To }
func (w window) Partial() bool { return w.Before() > 0 || w.After() > 0 }

// windowAround is size rows around the first row that breaks a check, or
// the first size rows when none does: a large history is read from its
// first violation.
func windowAround(rows []checker.TimelineRow, size int) window {
	at, focus := 0, -1
	for i, row := range rows {
		if len(row.Breaks) > 0 {
			at, focus = i, row.Op.ID
			break
		}
	}
	from := max(0, at-size/2)
	to := min(len(rows), from+size)
	from = max(0, to-size)
	return window{From: from, To: to, Total: len(rows), Focus: focus}
}

// Sentence says what the page draws and what it leaves out.
func (w window) Sentence() string {
	around := "from the start"
	if w.Focus >= 0 {
		around = fmt.Sprintf("around the first violation, op %d", w.Focus)
	}
	return fmt.Sprintf("This page draws %d of the history's %d operations (rows %d to %d in call order), %s: %d before and %d after are left out. The logs are worked out from the whole history.",
		w.To-w.From, w.Total, w.From+1, w.To, around, w.Before(), w.After())
}
