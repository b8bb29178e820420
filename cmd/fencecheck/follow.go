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
// operation on each line, then the end of the document. Each operation
// read is given to a checker.Follower, and each "complete_before" mark
// too (docs/history-format.md). The follower judges the operations called
// before the mark, once each, in call order, and says what each check
// finds as soon as it is final. So what is held is what the streamed
// check (checker.CheckFile) holds, and a violation shows within a poll or
// two of the mark that passes its operation.
const (
	// followPoll is how often a followed file is read for what is new,
	// once the last read found no more.
	followPoll = 100 * time.Millisecond
	// followUnmarked is how many operations a file without marks may
	// show before it is left to be judged once ended.
	followUnmarked = 100_000
	// followReport is how often progress is reported on stderr.
	followReport = 10 * time.Second
	// followChunk is how much of the file one read takes at most, so
	// that a long file already written is not read whole at once.
	followChunk = 1 << 20
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
	closed bool   // the ops' closing bracket was read
	tail   []byte // the line of that bracket
	more   bool   // the last read filled its chunk: the file may hold more

	ops            int // the operations read
	completeBefore int64
	marked         bool
	chunk          []byte // the read buffer
}

// followFile judges the history at path while it is written: the first
// violation of each check as soon as the follower finds it (on stdout),
// progress on stderr, then, once the document is ended (its writer
// stopped) or ctx is done, the verdicts, as check prints them. The exit
// status is check's.
func followFile(ctx context.Context, path string, f checkFlags, stdout, stderr io.Writer) int {
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: --follow: %v\n", err)
		return exitUsage
	}
	defer file.Close()
	fw := &followed{path: path, file: file}
	opts := f.allowed
	opts.Timeout = f.timeout
	var follower *checker.Follower
	abandoned := false // the file has no marks: it is judged once ended
	reported := map[string]bool{}
	start, lastReport := time.Now(), time.Now()
	for {
		ops, err := fw.read()
		if err == nil && follower == nil && !abandoned && fw.header != nil {
			follower = checker.NewFollower(path, fw.head, opts)
		}
		for i := 0; err == nil && follower != nil && i < len(ops); i++ {
			err = follower.Add(ops[i])
		}
		if err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: --follow: %v\n", path, err)
			return exitUsage
		}
		if fw.closed {
			break
		}
		if follower != nil && fw.marked {
			for _, v := range follower.Judge(fw.completeBefore) {
				if !reported[v.Check] {
					reported[v.Check] = true
					fmt.Fprintf(stdout, "while following: %s\n", v)
				}
			}
		}
		if follower != nil && time.Since(lastReport) >= followReport {
			lastReport = time.Now()
			handed, mark, waiting := follower.Followed()
			fmt.Fprintf(stderr, "fencecheck check: %s: following: %d operations read, the %d called before %d judged, %d waiting for a later mark\n",
				path, fw.ops, handed, mark, waiting)
		}
		if follower != nil && !fw.marked && fw.ops > 0 && (time.Since(start) > followReport || fw.ops > followUnmarked) {
			// Without marks every operation would wait: none is held,
			// and the whole file is judged once it is ended.
			follower, abandoned = nil, true
			fmt.Fprintf(stderr, "fencecheck check: %s: following: the file has no complete_before marks, so it is judged only once it is ended\n", path)
		}
		if fw.more {
			if ctx.Err() != nil {
				return stopped(fw, follower, stdout, stderr)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return stopped(fw, follower, stdout, stderr)
		case <-time.After(followPoll):
		}
	}
	// The document is ended: it is judged once its end is written whole,
	// with the members written after the ops.
	for !bytes.HasSuffix(bytes.TrimSpace(fw.buf), []byte("}")) && ctx.Err() == nil {
		time.Sleep(followPoll)
		if err := fw.readRest(); err != nil {
			fmt.Fprintf(stderr, "fencecheck check: %s: --follow: %v\n", path, err)
			return exitUsage
		}
	}
	if follower == nil {
		return checkFile(path, f, false, stdout, stderr)
	}
	end, err := fw.end()
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: %s: --follow: %v\n", path, err)
		return exitUsage
	}
	report, err := follower.Finish(&end)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: %v\n", err)
		return exitUsage
	}
	for _, v := range report.Verdicts {
		fmt.Fprintln(stdout, v)
	}
	if !report.Held() {
		return exitViolated
	}
	return exitHeld
}

// stopped prints the verdicts of the operations read, when following
// stops before the file's end: the history the recorder would have
// written had it been killed then, judged as check judges a file cut
// short. The file is not a whole history, so the exit status is check's
// for one cut short.
func stopped(fw *followed, follower *checker.Follower, stdout, stderr io.Writer) int {
	if follower == nil {
		if fw.header != nil {
			// A file without marks: judged as check judges it.
			checkFile(fw.path, checkFlags{timeout: checker.DefaultTimeout}, false, stdout, stderr)
			return exitUsage
		}
		fmt.Fprintf(stderr, "fencecheck check: %s: stopped before the document ended, with no operation known to be whole\n", fw.path)
		return exitUsage
	}
	report, err := follower.Finish(nil)
	var broken *histories.BrokenError
	if err != nil && (!errors.As(err, &broken) || report.Verdicts == nil) {
		fmt.Fprintf(stderr, "fencecheck check: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "fencecheck check: %s: stopped before the document ended: these are the verdicts of the %d operations read; the file is unusable, so the exit status is %d\n",
		fw.path, fw.ops, exitUsage)
	for _, v := range report.Verdicts {
		fmt.Fprintln(stdout, v)
	}
	return exitUsage
}

// end is the document's header with the members written after the ops,
// once the document is ended.
func (fw *followed) end() (histories.History, error) {
	doc := append(bytes.Clone(fw.header), fw.tail...)
	doc = append(append(doc, '\n'), fw.buf...)
	h, err := histories.Load(bytes.NewReader(doc))
	if err != nil {
		return h, fmt.Errorf("the end of the document: %w", err)
	}
	return h, nil
}

// readRest reads what has been written since the last read, one chunk
// at most, and notes whether the file may hold more.
func (fw *followed) readRest() error {
	if fw.chunk == nil {
		fw.chunk = make([]byte, followChunk)
	}
	n, err := io.ReadFull(fw.file, fw.chunk)
	fw.buf = append(fw.buf, fw.chunk[:n]...)
	fw.more = n == len(fw.chunk)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// read takes what has been written since the last read, and returns the
// operations it holds.
func (fw *followed) read() ([]histories.Op, error) {
	if err := fw.readRest(); err != nil {
		return nil, err
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
			return nil, err
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
		fw.closed, fw.tail = true, bytes.Clone(line)
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
func (fw *followed) decode(lines [][]byte) ([]histories.Op, error) {
	if len(lines) == 0 {
		return nil, nil
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
		return nil, fmt.Errorf("the operations after the first %d: %w", fw.ops, err)
	}
	fw.ops += len(h.Ops)
	for _, l := range lines {
		if at, ok := completeBefore(l); ok && (!fw.marked || at > fw.completeBefore) {
			fw.completeBefore, fw.marked = at, true
		}
	}
	return h.Ops, nil
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
