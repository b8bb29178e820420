package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// A followed file is read as fencecheck writes a history: the header, an
// operation on each line, then the end of the document. The operations
// read so far are judged up to the latest instant before which the file
// holds every operation called: its "complete_before" mark
// (docs/history-format.md). That part is a cut of the history
// (checker.Cut), so what it shows violated, the whole history does too.
const (
	// followPoll is how often a followed file is read for what is new.
	followPoll = 100 * time.Millisecond
	// followEvery is how often, at most, the part of it that is whole is
	// judged again. It is judged again only once it has grown, and not
	// before as long again as the last judgement took, so that judging
	// takes at most half of the time.
	followEvery = 500 * time.Millisecond
	// followReport is how often progress is reported on stderr.
	followReport = 10 * time.Second
)

// followed is a history file being written, as read so far.
type followed struct {
	path   string
	file   *os.File
	buf    []byte // read, not yet taken as lines
	taken  int    // bytes of buf's first line taken already (an operation read before its line ended)
	line   int    // the lines taken
	header []byte // the document up to its ops, once read whole
	lines  []byte // the header's lines until then
	head   histories.History
	closed bool // the ops' closing bracket was read

	ops            []histories.Op
	completeBefore int64
	marked         bool
	chunk          []byte // the read buffer
}

// followFile judges the history at path while it is written: the first
// violation of each check as soon as the part of the file that is whole
// shows it (on stdout), progress on stderr, then, once the document is
// ended (its writer stopped) or ctx is done, the verdicts, as check
// prints them. The exit status is check's.
func followFile(ctx context.Context, path string, f checkFlags, stdout, stderr io.Writer) int {
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: --follow: %v\n", err)
		return exitUsage
	}
	defer file.Close()
	fw := &followed{path: path, file: file}
	j := &judge{opts: f.allowed, path: path, stdout: stdout, stderr: stderr, reported: map[string]bool{}}
	j.opts.Timeout = f.timeout
	start, warned := time.Now(), false
	for {
		if err := fw.read(); err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: --follow: %v\n", path, err)
			j.finish()
			return exitUsage
		}
		if fw.closed {
			break
		}
		j.collect(false)
		if fw.marked && fw.completeBefore > j.at && j.ready() {
			j.start(fw.history(), fw.completeBefore, len(fw.ops))
		}
		if !fw.marked && !warned && len(fw.ops) > 0 && time.Since(start) > followReport {
			warned = true
			fmt.Fprintf(stderr, "fencecheck check: %s: following: the file has no complete_before marks, so it is judged only once it is ended\n", path)
		}
		select {
		case <-ctx.Done():
			return j.stopped(fw)
		case <-time.After(followPoll):
		}
	}
	// The document is ended: the whole of it is judged, as check judges
	// it, once its end is written whole.
	j.finish()
	fw.ops = nil // check reads them again
	for !bytes.HasSuffix(bytes.TrimSpace(fw.buf), []byte("}")) && ctx.Err() == nil {
		time.Sleep(followPoll)
		if err := fw.readRest(); err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: --follow: %v\n", path, err)
			return exitUsage
		}
	}
	return checkFile(path, f, false, stdout, stderr)
}

// judge judges the cuts of a followed file, one at a time, beside the
// reading of it.
type judge struct {
	opts           checker.Options
	path           string
	stdout, stderr io.Writer
	reported       map[string]bool // the checks whose first violation is printed

	running    chan judged // the judgement under way, nil when none is
	at         int64       // the cut last judged, or being judged
	last       *judged     // the last judgement done
	ended      time.Time   // when it was done
	lastReport time.Time
}

// judged is one cut's report.
type judged struct {
	report checker.Report
	at     int64
	ops    int // the operations read when it began
	took   time.Duration
}

// ready reports whether another judgement may begin: none is under way,
// and the last one ended at least followEvery ago, and as long ago as it
// took.
func (j *judge) ready() bool {
	return j.running == nil && (j.last == nil || time.Since(j.ended) >= max(followEvery, j.last.took))
}

// start judges h's cut at at beside the caller.
func (j *judge) start(h histories.History, at int64, ops int) {
	j.at = at
	done := make(chan judged, 1)
	j.running = done
	go func() {
		began := time.Now()
		rep := checker.CheckCut(h, at, j.opts)
		done <- judged{report: rep, at: at, ops: ops, took: time.Since(began)}
	}()
}

// collect prints what the judgement under way found, once it is done, or
// at once when wait is set.
func (j *judge) collect(wait bool) {
	if j.running == nil {
		return
	}
	var r judged
	if wait {
		r = <-j.running
	} else {
		select {
		case r = <-j.running:
		default:
			return
		}
	}
	j.running, j.last, j.ended = nil, &r, time.Now()
	for _, v := range r.report.Verdicts {
		if v.Status == checker.Violated && !j.reported[v.Check] {
			j.reported[v.Check] = true
			fmt.Fprintf(j.stdout, "while following: %s\n", v)
		}
	}
	if time.Since(j.lastReport) >= followReport {
		j.lastReport = time.Now()
		fmt.Fprintf(j.stderr, "fencecheck check: %s: following: %d operations read, those called before %d judged in %v\n",
			j.path, r.ops, r.at, r.took.Round(time.Millisecond))
	}
}

// finish waits for the judgement under way, and prints what it found.
func (j *judge) finish() { j.collect(true) }

// stopped prints the verdicts of the part of a file still being written
// that was judged last, when following stops before the file's end: at
// once, so that Ctrl-C is answered without a wait. The file is not a
// whole history, so the exit status is check's for a history cut short.
func (j *judge) stopped(fw *followed) int {
	j.collect(false)
	if j.last == nil && j.running != nil {
		j.finish() // the first judgement, of the file's start
	}
	if j.last == nil {
		if !fw.marked {
			fmt.Fprintf(j.stderr, "fencecheck check: %s: stopped before the document ended, with no operation known to be whole\n", fw.path)
			return exitUsage
		}
		j.start(fw.history(), fw.completeBefore, len(fw.ops))
		j.finish()
	}
	r := j.last
	fmt.Fprintf(j.stderr, "fencecheck check: %s: stopped before the document ended: these are the verdicts of the %d operations called before %d; the file is unusable, so the exit status is %d\n",
		fw.path, len(r.report.History.Ops), r.at, exitUsage)
	for _, v := range r.report.Verdicts {
		fmt.Fprintln(j.stdout, v)
	}
	return exitUsage
}

// history is the operations read so far, with the file's header.
func (fw *followed) history() histories.History {
	h := fw.head
	h.Ops = fw.ops
	return h
}

// readRest reads what has been written since the last read.
func (fw *followed) readRest() error {
	if fw.chunk == nil {
		fw.chunk = make([]byte, 256<<10)
	}
	for {
		n, err := fw.file.Read(fw.chunk)
		fw.buf = append(fw.buf, fw.chunk[:n]...)
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// read takes what has been written since the last read.
func (fw *followed) read() error {
	if err := fw.readRest(); err != nil {
		return err
	}
	var lines [][]byte
	for !fw.closed {
		end := bytes.IndexByte(fw.buf, '\n')
		if end < 0 {
			break
		}
		line := fw.buf[fw.taken:end]
		fw.buf, fw.taken = fw.buf[end+1:], 0
		fw.line++
		op, err := fw.takeLine(line)
		if err != nil {
			return err
		}
		if op != nil {
			lines = append(lines, op)
		}
	}
	// An operation is whole once its closing brace is written, before
	// the line ends (the line's comma comes with the next operation).
	if op := bytes.TrimSpace(fw.buf[fw.taken:]); fw.header != nil && !fw.closed && len(op) > 0 && op[0] == '{' && op[len(op)-1] == '}' && json.Valid(op) {
		lines = append(lines, op)
		fw.taken = len(fw.buf)
	}
	return fw.decode(lines)
}

// takeLine reads one line of the document: the header's, an operation
// (which it returns), or the end of the ops.
func (fw *followed) takeLine(line []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(line)
	if fw.header == nil {
		fw.lines = append(append(fw.lines, line...), '\n')
		switch {
		case bytes.HasSuffix(trimmed, []byte(`"ops": [`)):
			return nil, fw.readHeader()
		case bytes.HasSuffix(trimmed, []byte(`"ops": []`)), bytes.HasSuffix(trimmed, []byte(`"ops": [],`)):
			fw.closed = true
		}
		return nil, nil
	}
	trimmed = bytes.TrimSuffix(trimmed, []byte(","))
	switch {
	case len(trimmed) == 0:
		return nil, nil // the rest of an operation taken before its line ended
	case trimmed[0] == '{' && json.Valid(trimmed):
		return trimmed, nil
	case trimmed[0] == ']':
		fw.closed = true
		return nil, nil
	}
	return nil, fmt.Errorf("line %d is not an operation on a line of its own (--follow reads the layout fencecheck writes: the header, one operation a line, then the end): %.80q", fw.line, line)
}

// readHeader reads the header, once its ops begin.
func (fw *followed) readHeader() error {
	h, err := histories.Load(bytes.NewReader(append(bytes.Clone(fw.lines), "]}"...)))
	if err != nil {
		return fmt.Errorf("the header: %w", err)
	}
	fw.header, fw.head, fw.lines = fw.lines, h, nil
	return nil
}

// decode reads operation lines, as a document of the file's header and
// them, and takes the latest mark.
func (fw *followed) decode(lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	doc := bytes.Clone(fw.header)
	for i, l := range lines {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, '\n')
		doc = append(doc, l...)
	}
	doc = append(doc, "\n]}"...)
	h, err := histories.Load(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("the operations after the first %d: %w", len(fw.ops), err)
	}
	fw.ops = append(fw.ops, h.Ops...)
	for _, l := range lines {
		if at, ok := completeBefore(l); ok && (!fw.marked || at > fw.completeBefore) {
			fw.completeBefore, fw.marked = at, true
		}
	}
	return nil
}

// completeBefore is an operation's mark, written last.
func completeBefore(op []byte) (int64, bool) {
	const key = `"complete_before": `
	at := bytes.LastIndex(op, []byte(key))
	if at < 0 || !bytes.HasSuffix(op, []byte("}")) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(op[at+len(key):len(op)-1]), 10, 64)
	return n, err == nil
}
