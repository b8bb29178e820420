package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// Geometry of the lanes, in pixels. The time axis is scaled to the
// operations: every distinct call or return time is one step, however far
// apart the clock puts them, so a 40-second stall is as wide as its two
// ends and ten operations fit on one screen.
const (
	laneLabelWidth = 56
	laneHeight     = 46
	laneTop        = 14 // room above the lanes for the axis
	boxTop         = 14 // the box's offset in its lane, below the epoch notes
	boxHeight      = 20
	lanesWidth     = 1320 // what a 1400-pixel window leaves after the margins
	minStep        = 16
	charWidth      = 6.2 // of the 11-pixel label font, to shorten labels that would overlap
)

// lanes is the SVG of the processes' lanes.
type lanes struct {
	Width, Height int
	Lanes         []lane
	Boxes         []box
	Marks         []mark
	Notes         []note
	Bands         []band
}

type lane struct {
	Proc string
	Y    int
}

// box is one request, from its call to its return.
type box struct {
	Op           int
	X, Y, W      float64
	Class        string
	Label, Title string
}

// mark is a fault at an instant: a stall, wake, crash, restart, tick.
type mark struct {
	Op      int
	X, Y    float64
	Class   string
	Label   string
	Title   string
	Breaks  bool
	Related bool
}

// note is a change of a process's epoch or generation, written above its lane.
type note struct {
	X, Y float64
	Text string
}

// band is a stretch of a lane where the process was stalled or down.
type band struct {
	X, Y, W float64
	Class   string
}

func drawLanes(rows []checker.TimelineRow, verdicts []checker.Verdict) lanes {
	axis := newAxis(rows)
	d := lanes{Width: int(axis.x(axis.end)) + lastLabelRoom}
	y := map[string]float64{}
	for _, proc := range procsOf(rows) {
		y[proc] = float64(laneTop + len(d.Lanes)*laneHeight)
		d.Lanes = append(d.Lanes, lane{Proc: proc, Y: int(y[proc])})
	}
	d.Height = laneTop + len(d.Lanes)*laneHeight + 4
	related := relatedOps(verdicts)
	for i, row := range rows {
		op := row.Op
		if op.Kind.IsFault() {
			d.Marks = append(d.Marks, faultMark(row, axis, y[op.Proc], nextCallInLane(rows, i, axis), related[op.ID]))
			continue
		}
		d.Boxes = append(d.Boxes, requestBox(row, axis, y[op.Proc], nextCallInLane(rows, i, axis), related[op.ID]))
	}
	d.Notes = sessionNotes(rows, axis, y)
	d.Bands = outages(rows, axis, y)
	return d
}

// procsOf lists the processes in order of their first operation.
func procsOf(rows []checker.TimelineRow) []string {
	var procs []string
	for _, row := range rows {
		if !slices.Contains(procs, row.Op.Proc) {
			procs = append(procs, row.Op.Proc)
		}
	}
	return procs
}

// axis maps clock times to x: one step per distinct time, and one more for
// "never returned". A time at which only answers arrive is two steps after
// the one before it, so that a request's box is wider than the space
// between it and the next call, and its label fits.
type axis struct {
	rank  map[int64]int
	pos   []float64 // each rank's distance from the start, in steps
	step  float64
	end   int // the rank of "never"
	right float64
}

// lastLabelRoom keeps the axis's end clear of the right edge, so that the
// last operation's label fits on the page.
const lastLabelRoom = 110

func newAxis(rows []checker.TimelineRow) axis {
	calls := map[int64]bool{}
	var times []int64
	for _, row := range rows {
		times = append(times, row.Op.Call)
		calls[row.Op.Call] = true
		if row.Op.Returned {
			times = append(times, row.Op.Return)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	a := axis{rank: map[int64]int{}, end: len(times)}
	total := 0.0
	for i, t := range times {
		if i > 0 {
			total += gapBefore(calls[t])
		}
		a.rank[t] = i
		a.pos = append(a.pos, total)
	}
	total++
	a.pos = append(a.pos, total) // "never"
	a.step = max(minStep, float64(lanesWidth-laneLabelWidth-lastLabelRoom)/total)
	return a
}

func gapBefore(isCall bool) float64 {
	if isCall {
		return 1
	}
	return 2
}

func (a axis) x(rank int) float64 { return laneLabelWidth + 8 + a.pos[rank]*a.step }

func (a axis) at(t int64) float64 { return a.x(a.rank[t]) }

// returnX is where an operation's box ends: its return, or the axis's end
// for one that never returned.
func (a axis) returnX(row checker.TimelineRow) float64 {
	if !row.Op.Returned {
		return a.x(a.end)
	}
	return a.at(row.Op.Return)
}

// nextCallInLane is where the process's next operation starts, which a
// label must not run into.
func nextCallInLane(rows []checker.TimelineRow, i int, a axis) float64 {
	for _, row := range rows[i+1:] {
		if row.Op.Proc == rows[i].Op.Proc {
			return a.at(row.Op.Call)
		}
	}
	return a.x(a.end) + a.step
}

func requestBox(row checker.TimelineRow, a axis, laneY, limit float64, related bool) box {
	x0, x1 := a.at(row.Op.Call), a.returnX(row)
	w := max(x1-x0, a.step*0.6)
	b := box{Op: row.Op.ID, X: x0, Y: laneY + boxTop, W: w, Class: outcomeClass(row, related), Title: title(row)}
	b.Label = fit(shortLabel(row), max(limit-x0, w)-6)
	return b
}

// outcomeClass colours a box: what the answer was, and whether it breaks
// a check or is one a violation is judged against.
func outcomeClass(row checker.TimelineRow, related bool) string {
	res := row.Op.Result
	class := "ok"
	switch {
	case res.Undecided():
		class = "undecided"
	case isFenced(res.Err):
		class = "fenced"
	case res.Err != "":
		class = "refused"
	}
	if len(row.Breaks) > 0 {
		class += " breaks"
	} else if related {
		class += " related"
	}
	return class
}

func isFenced(code model.Code) bool {
	class := model.ClassOf(code)
	return code != "" && (class == model.FencedProducer || class == model.FencedConsumer)
}

func title(row checker.TimelineRow) string {
	t := fmt.Sprintf("op %d, %s: %s → %s", row.Op.ID, row.Op.Proc, strings.ReplaceAll(row.Does, "`", ""), row.Result)
	if len(row.Breaks) > 0 {
		t += " — breaks " + strings.Join(row.Breaks, ", ")
	}
	return t
}

// fit shortens a label to width pixels.
func fit(label string, width float64) string {
	chars := int(width / charWidth)
	runes := []rune(label)
	switch {
	case len(runes) <= chars:
		return label
	case chars < 2:
		return ""
	}
	return string(runes[:chars-1]) + "…"
}

func faultMark(row checker.TimelineRow, a axis, laneY, limit float64, related bool) mark {
	op := row.Op
	x := a.at(op.Call)
	return mark{Op: op.ID, X: x, Y: laneY + boxTop, Class: string(op.Kind), Label: fit(faultLabel(row), limit-x-10), Title: title(row), Breaks: len(row.Breaks) > 0, Related: related}
}

func faultLabel(row checker.TimelineRow) string {
	op := row.Op
	switch op.Kind {
	case model.Tick:
		return fmt.Sprintf("+%d ms", op.Req.Ms)
	case model.TimeoutAbort:
		return fmt.Sprintf("timeout: e%d", op.Result.Resp.Epoch)
	case model.BrokerRestart:
		return "broker restart"
	}
	return string(op.Kind)
}

// relatedOps are the operations some violation is judged against.
// Linearizable's are the longest order the model accepts, which the page
// lists on its own rather than outline nine boxes of ten.
func relatedOps(verdicts []checker.Verdict) map[int]bool {
	related := map[int]bool{}
	for _, v := range verdicts {
		if v.Check == checker.Linearizable {
			continue
		}
		for _, viol := range v.Violations {
			for _, id := range viol.Related {
				related[id] = true
			}
		}
	}
	return related
}

// sessionNotes write above each lane the epoch a process holds and the
// generation it joined, where they change; a note stops short of the next
// one in its lane.
func sessionNotes(rows []checker.TimelineRow, a axis, y map[string]float64) []note {
	held := map[string]string{}
	var notes []note
	last := map[string]int{} // each lane's last note
	for _, row := range rows {
		op := row.Op
		text := sessionOf(row)
		if text == "" || held[op.Proc] == text {
			continue
		}
		held[op.Proc] = text
		x := a.returnX(row)
		if i, ok := last[op.Proc]; ok {
			notes[i].Text = fit(notes[i].Text, (x-notes[i].X)*1.1)
		}
		last[op.Proc] = len(notes)
		notes = append(notes, note{X: x, Y: y[op.Proc] + boxTop - 3, Text: text})
	}
	return notes
}

// sessionOf is what an answer hands its process: a producer id and epoch,
// or a group generation.
func sessionOf(row checker.TimelineRow) string {
	op, resp := row.Op, row.Op.Result.Resp
	if !op.Result.Succeeded() {
		return ""
	}
	switch {
	case op.Kind == model.InitProducerID, op.Kind == model.EndTxn && resp.ProducerID != model.NoProducerID:
		return fmt.Sprintf("epoch %d (pid %d)", resp.Epoch, resp.ProducerID)
	case op.Kind == model.JoinGroup:
		return fmt.Sprintf("gen %d", resp.GenerationID)
	}
	return ""
}

// outages are the stretches from a stall to its wake, and from a crash to
// its restart.
func outages(rows []checker.TimelineRow, a axis, y map[string]float64) []band {
	since := map[string]checker.TimelineRow{}
	var bands []band
	for _, row := range rows {
		op := row.Op
		switch op.Kind {
		case model.Stall, model.Crash:
			since[op.Proc] = row
		case model.Wake, model.Restart:
			if start, ok := since[op.Proc]; ok {
				delete(since, op.Proc)
				bands = append(bands, outageBand(start, a.at(op.Call), a, y))
			}
		}
	}
	for _, proc := range slices.Sorted(maps.Keys(since)) {
		bands = append(bands, outageBand(since[proc], a.x(a.end), a, y))
	}
	return bands
}

func outageBand(start checker.TimelineRow, until float64, a axis, y map[string]float64) band {
	x := a.at(start.Op.Call)
	return band{X: x, Y: y[start.Op.Proc] + boxTop - 2, W: until - x, Class: string(start.Op.Kind)}
}
