package report

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// maxCells is how many cells a strip draws: a log of thousands of offsets
// is drawn around the offsets that matter, with a count of the rest.
const maxCells = 60

// strip is one partition's log as a row of cells.
type strip struct {
	Partition string
	Cells     []cell
	Left      string // what the strip leaves out, when it is cut
	HW, LSO   int64
	Fetched   int // the fetch whose answer gave HW and LSO, -1 when none
}

// cell is one offset, or a run of like records, or a run nobody saw, or
// the place of the last stable offset or the high watermark.
type cell struct {
	Class    string // committed, aborted, open, marker commit, marker abort, gap, bound
	From, To int64
	Top, Sub string // the offsets, and what is there
	Marker   string // COMMIT or ABORT, for a marker
	Epoch    int16
	Op       int // the operation to link to, -1 for none
	Title    string
	Breaks   bool // an operation that shows it breaks a check
}

func strips(logs []checker.PartitionLog, verdicts []checker.Verdict) []strip {
	breaking := breakingOps(verdicts)
	out := make([]strip, 0, len(logs))
	for _, l := range logs {
		s := strip{Partition: string(l.Partition), HW: l.HighWatermark, LSO: l.LastStableOffset, Fetched: l.FetchedBy}
		cells := withBounds(runs(l.Entries, breaking), l)
		s.Cells, s.Left = cut(cells, focusCell(cells))
		out = append(out, s)
	}
	return out
}

func breakingOps(verdicts []checker.Verdict) map[int]bool {
	ops := map[int]bool{}
	for _, v := range verdicts {
		for _, viol := range v.Violations {
			ops[viol.Op] = true
		}
	}
	return ops
}

// runs turns entries into cells: consecutive records of one produce with
// one status share a cell, markers and conflicts stand alone, and the
// offsets nothing showed are a gap.
func runs(entries []checker.LogEntry, breaking map[int]bool) []cell {
	var cells []cell
	next := int64(0)
	for _, e := range entries {
		if e.Offset > next {
			cells = append(cells, gap(next, e.Offset-1))
		}
		next = e.Offset + 1
		c := entryCell(e, breaking)
		if n := len(cells); n > 0 && joins(cells[n-1], c) {
			cells[n-1] = extend(cells[n-1], c)
			continue
		}
		cells = append(cells, c)
	}
	return cells
}

func gap(from, to int64) cell {
	return cell{Class: "gap", From: from, To: to, Top: span(from, to), Sub: "unseen", Op: -1, Title: "no operation showed what offsets " + span(from, to) + " hold"}
}

func span(from, to int64) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d–%d", from, to)
}

func entryCell(e checker.LogEntry, breaking map[int]bool) cell {
	c := cell{From: e.Offset, To: e.Offset, Top: fmt.Sprint(e.Offset), Op: -1, Epoch: e.Epoch}
	if len(e.Ops) > 0 {
		c.Op = e.Ops[0]
	}
	for _, id := range e.Ops {
		c.Breaks = c.Breaks || breaking[id]
	}
	if e.Marker {
		c.Marker = "ABORT"
		if e.Commit {
			c.Marker = "COMMIT"
		}
		c.Class = "marker " + strings.ToLower(c.Marker)
		c.Sub = fmt.Sprintf("%s e%d", c.Marker, e.Epoch)
		c.Title = fmt.Sprintf("%s marker of producer %d at epoch %d, written when op %d ended its transaction (inferred: no operation shows markers)", c.Marker, e.ProducerID, e.Epoch, c.Op)
		return c
	}
	c.Class, c.Sub = e.Status, e.Key
	c.Title = fmt.Sprintf("%s at %d, %s (producer %d%s), shown by %s", e.Key, e.Offset, e.Status, e.ProducerID, epochWords(e.Epoch), opList(e.Ops))
	if e.Conflict {
		c.Class += " conflict"
		c.Title = "two different records shown at one offset: " + c.Title
	}
	return c
}

func epochWords(epoch int16) string {
	if epoch == model.NoEpoch {
		return ""
	}
	return fmt.Sprintf(", epoch %d", epoch)
}

func opList(ids []int) string {
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = fmt.Sprintf("op %d", id)
	}
	return strings.Join(words, ", ")
}

// joins reports whether c continues the run of records last: the same
// writer, the same fate, the next offset. A record an operation that
// breaks a check shows stands alone.
func joins(last, c cell) bool {
	return !strings.Contains(last.Class, "marker") && last.Class == c.Class && last.Class != "gap" &&
		!strings.Contains(c.Class, "conflict") && last.Op == c.Op && c.Op >= 0 && last.To+1 == c.From &&
		!last.Breaks && !c.Breaks
}

func extend(run, c cell) cell {
	run.To = c.To
	run.Top = span(run.From, run.To)
	n := run.To - run.From + 1
	run.Sub = fmt.Sprintf("%d records", n)
	run.Title = fmt.Sprintf("offsets %s: %d records, %s, written by op %d", run.Top, n, c.Class, c.Op)
	return run
}

// withBounds puts the last stable offset and the high watermark between
// the cells, where they fall: as the last fetch answered them, or, when
// records landed past that answer, as the log shows them.
func withBounds(cells []cell, l checker.PartitionLog) []cell {
	lso, hw, source := boundsOf(l)
	if hw == model.NoOffset {
		return cells
	}
	var out []cell
	for _, c := range cells {
		out = appendBounds(out, c.From, &lso, &hw, source)
		out = append(out, c)
	}
	return appendBounds(out, 1<<62, &lso, &hw, source)
}

// boundsOf is the partition's last stable offset and high watermark, and
// where they come from.
func boundsOf(l checker.PartitionLog) (lso, hw int64, source string) {
	lso, hw = l.LastStableOffset, l.HighWatermark
	source = fmt.Sprintf("as op %d's fetch answered", l.FetchedBy)
	if n := len(l.Entries); n > 0 && l.Entries[n-1].Offset >= hw {
		hw, lso = l.Entries[n-1].Offset+1, model.NoOffset
		for _, e := range l.Entries {
			if !e.Marker && e.Status == checker.RecordOpen {
				lso = e.Offset
				break
			}
		}
		if lso == model.NoOffset {
			lso = hw
		}
		source = "worked out from the log: no fetch came after its last records"
	}
	return lso, hw, source
}

// appendBounds appends the bounds at or before offset that are still to
// place, once each.
func appendBounds(out []cell, offset int64, lso, hw *int64, source string) []cell {
	switch {
	case *lso != model.NoOffset && *lso == *hw && *hw <= offset:
		out = append(out, bound("lso=hw", *hw, source))
		*lso, *hw = model.NoOffset, model.NoOffset
	case *lso != model.NoOffset && *lso <= offset:
		out = append(out, bound("lso", *lso, source))
		*lso = model.NoOffset
		return appendBounds(out, offset, lso, hw, source)
	case *hw != model.NoOffset && *hw <= offset:
		out = append(out, bound("hw", *hw, source))
		*hw = model.NoOffset
	}
	return out
}

func bound(name string, at int64, source string) cell {
	return cell{Class: "bound", From: at, To: at, Top: fmt.Sprint(at), Sub: name, Op: -1,
		Title: fmt.Sprintf("%s %d, %s", name, at, source)}
}

// focusCell is the cell a cut strip is drawn around: the first one an
// operation that breaks a check shows, else the last.
func focusCell(cells []cell) int {
	for i, c := range cells {
		if c.Breaks {
			return i
		}
	}
	return len(cells) - 1
}

// cut keeps maxCells cells around focus and says what it left out.
func cut(cells []cell, focus int) ([]cell, string) {
	if len(cells) <= maxCells {
		return cells, ""
	}
	from := max(0, focus-maxCells/2)
	to := min(len(cells), from+maxCells)
	from = max(0, to-maxCells)
	var left []string
	if from > 0 {
		left = append(left, fmt.Sprintf("%d cells before offset %d", from, cells[from].From))
	}
	if to < len(cells) {
		left = append(left, fmt.Sprintf("%d cells after offset %d", len(cells)-to, cells[to-1].To))
	}
	return cells[from:to], "left out: " + strings.Join(left, " and ")
}
