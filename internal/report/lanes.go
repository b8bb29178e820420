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
	laneHeight = 46
	laneTop    = 14 // room above the lanes for the axis
	boxTop     = 14 // the box's offset in its lane, below the epoch notes
	boxHeight  = 20
	lanesWidth = 1320 // what a 1400-pixel window leaves after the margins
	minStep    = 16
	charWidth  = 6.2 // of the 11-pixel label font, to shorten labels that would overlap
)

// The column of the lanes' names is as wide as the longest name needs,
// between these bounds; a longer name is shortened with an ellipsis, and
// its lane's tooltip gives it whole.
const (
	laneNameInset     = 8 // the name's distance from the left edge, page.html's x
	laneNameGap       = 10
	laneNameSize      = 15 // the font's size, page.css's .lane-name
	noteSize          = 10 // page.css's .session
	minLaneNameColumn = 64
	maxLaneNameColumn = 220
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
	Proc  string
	Label string  // Proc, shortened to fit its column
	Room  float64 // the pixels Label may take
	Y     int
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

func drawLanes(rows []checker.TimelineRow, verdicts []checker.Verdict, c checker.Clock) lanes {
	procs := procsOf(rows)
	column := laneNameColumn(procs)
	axis := newAxis(rows, column)
	d := lanes{Width: int(axis.x(axis.end)) + lastLabelRoom}
	y := map[string]float64{}
	room := column - laneNameInset - laneNameGap
	for _, proc := range procs {
		y[proc] = float64(laneTop + len(d.Lanes)*laneHeight)
		d.Lanes = append(d.Lanes, lane{Proc: proc, Label: shortenBold(proc, room, laneNameSize), Room: room, Y: int(y[proc])})
	}
	d.Height = laneTop + len(d.Lanes)*laneHeight + 4
	related := relatedOps(verdicts)
	for i, row := range rows {
		op := row.Op
		if op.Kind.IsFault() {
			d.Marks = append(d.Marks, faultMark(row, axis, y[op.Proc], nextCallInLane(rows, i, axis), related[op.ID], c))
			continue
		}
		d.Boxes = append(d.Boxes, requestBox(row, axis, y[op.Proc], nextCallInLane(rows, i, axis), related[op.ID], c))
	}
	d.Notes = sessionNotes(rows, axis, y)
	d.Bands = outages(rows, axis, y)
	return d
}

// laneNameColumn is the width of the column of lane names: enough for the
// longest name, within its bounds.
func laneNameColumn(procs []string) float64 {
	longest := 0.0
	for _, proc := range procs {
		longest = max(longest, boldWidth(proc, laneNameSize))
	}
	return min(max(laneNameInset+longest+laneNameGap, minLaneNameColumn), maxLaneNameColumn)
}

// boldWidth is how wide text is drawn in the page's bold font at size
// pixels, at most: each character's class is given the width of its
// widest member in DejaVu Sans Bold (the font where system-ui is DejaVu,
// as in Debian's Chromium), which is wider than the other common
// sans-serif fonts.
func boldWidth(text string, size float64) float64 {
	w := 0.0
	for _, r := range text {
		w += boldCharWidth(r)
	}
	return w * size / 15
}

// boldCharWidth is a character's width at 15 pixels.
func boldCharWidth(r rune) float64 {
	switch {
	case strings.ContainsRune("fijlrtIJ!'()[],-./:;\\|_` ", r):
		return 7.5
	case strings.ContainsRune("mwMW%@…", r):
		return 16.5
	case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		return 10.7
	}
	return 12.8 // capitals, the wider signs, and any other character
}

// shortenBold is text cut to fit room pixels in the bold font at size
// pixels, an ellipsis standing for what is cut.
func shortenBold(text string, room, size float64) string {
	if boldWidth(text, size) <= room {
		return text
	}
	var b strings.Builder
	w := boldWidth("…", size)
	for _, r := range text {
		if w += boldWidth(string(r), size); w > room {
			break
		}
		b.WriteRune(r)
	}
	return b.String() + "…"
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
	left  float64 // where the axis starts: after the column of lane names
	rank  map[int64]int
	pos   []float64 // each rank's distance from the start, in steps
	step  float64
	end   int // the rank of "never"
	right float64
}

// lastLabelRoom keeps the axis's end clear of the right edge, so that the
// last operation's label fits on the page.
const lastLabelRoom = 110

func newAxis(rows []checker.TimelineRow, left float64) axis {
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
	a := axis{left: left, rank: map[int64]int{}, end: len(times)}
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
	a.step = max(minStep, (lanesWidth-left-lastLabelRoom)/total)
	return a
}

func gapBefore(isCall bool) float64 {
	if isCall {
		return 1
	}
	return 2
}

func (a axis) x(rank int) float64 { return a.left + a.pos[rank]*a.step }

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

func requestBox(row checker.TimelineRow, a axis, laneY, limit float64, related bool, c checker.Clock) box {
	x0, x1 := a.at(row.Op.Call), a.returnX(row)
	w := max(x1-x0, a.step*0.6)
	b := box{Op: row.Op.ID, X: x0, Y: laneY + boxTop, W: w, Class: outcomeClass(row, related), Title: title(row, c)}
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
	case isFenced(row.Op.Kind, res.Err):
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

func isFenced(k model.Kind, code model.Code) bool {
	class := model.ClassOf(k, code)
	return code != "" && (class == model.FencedProducer || class == model.FencedConsumer)
}

// title is a box's tooltip: the operation in full, with when it was called.
func title(row checker.TimelineRow, c checker.Clock) string {
	t := fmt.Sprintf("op %d at %s, %s: %s → %s", row.Op.ID, c.At(row.Op.Call), row.Op.Proc, strings.ReplaceAll(row.Does, "`", ""), row.Result)
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

func faultMark(row checker.TimelineRow, a axis, laneY, limit float64, related bool, c checker.Clock) mark {
	op := row.Op
	x := a.at(op.Call)
	return mark{Op: op.ID, X: x, Y: laneY + boxTop, Class: string(op.Kind), Label: fit(faultLabel(row), limit-x-10), Title: title(row, c), Breaks: len(row.Breaks) > 0, Related: related}
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
// one in its lane, and the lane's last note short of the right edge.
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
	right := a.x(a.end) + lastLabelRoom
	for _, i := range last {
		notes[i].Text = shortenBold(notes[i].Text, right-notes[i].X, noteSize)
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
