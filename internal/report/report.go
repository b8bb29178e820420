// Package report renders a checked history as one self-contained HTML page,
// a counterexample one can see: the timeline in the seeds' shape, the
// processes' lanes, each partition's log as a strip of offsets, each group's
// generations, and every violation beside the operations it names. The page
// loads nothing: its style and its one small script are inline. A
// recording's times (Unix milliseconds, or a "wall" clock) are written as
// seconds after its first call, and its start once; a logical clock's
// numbers as they are.
package report

import (
	"embed"
	"html/template"
	"io"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// DefaultWindow is how many operations a page draws around the first
// violation when Options says nothing: enough for any shrunk
// counterexample, few enough for a browser to draw at once.
const DefaultWindow = 200

// Options tune a page.
type Options struct {
	// Porcupine is the address of porcupine's visualization of the same
	// history, linked from the page; "" leaves the link out.
	Porcupine string
	// Window is how many operations the page draws; 0 is DefaultWindow.
	Window int
}

//go:embed page.html page.css
var assets embed.FS

var pageTemplate = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"calls": calls,
}).ParseFS(assets, "page.html"))

// Write writes r's page to w.
func Write(w io.Writer, r checker.Report, opts Options) error {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	css, err := assets.ReadFile("page.css")
	if err != nil {
		return err
	}
	return pageTemplate.Execute(w, newPage(r, opts, template.CSS(css)))
}

// page is what the template draws.
type page struct {
	Name      string
	CSS       template.CSS
	Verdicts  []verdictView
	Window    window
	Lanes     lanes
	Logs      []strip
	Groups    []groupView
	Rows      []rowView
	Clock     checker.Clock
	Porcupine string
}

func newPage(r checker.Report, opts Options, css template.CSS) page {
	rows := checker.Timeline(r.History, r.Verdicts)
	win := windowAround(rows, opts.Window)
	shown := rows[win.From:win.To]
	c := checker.ClockOf(rows, r.History.WallClock)
	return page{
		Name:      nameOf(r.History),
		CSS:       css,
		Verdicts:  verdictViews(r.Verdicts),
		Window:    win,
		Lanes:     drawLanes(shown, r.Verdicts, c),
		Logs:      strips(checker.Logs(r.History), r.Verdicts),
		Groups:    groupViews(shown),
		Rows:      rowViews(shown, r.Verdicts, c),
		Clock:     c,
		Porcupine: opts.Porcupine,
	}
}

func nameOf(h histories.History) string {
	if h.Name == "" {
		return "a history"
	}
	return h.Name
}
