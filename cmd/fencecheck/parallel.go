package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
)

// --parallel runs batches in worker processes: rapid keeps its settings
// process-wide, so two batches at once need two processes. A worker is
// this same executable, started with the run's own flags and workerEnv
// set; it reads batches from stdin, one JSON object a line, and answers
// each with progress lines and then its result on stdout.
const workerEnv = "FENCECHECK_BATCH_WORKER"

// workerMessage is one line a worker writes.
type workerMessage struct {
	Progress *workload.BatchProgress `json:"progress,omitempty"`
	Result   *workload.BatchResult   `json:"result,omitempty"`
	Error    string                  `json:"error,omitempty"`
}

// serveBatches is a worker's whole life: run every batch read from in,
// until in ends.
func serveBatches(runner workload.Runner, in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var b workload.Batch
		if err := json.Unmarshal(lines.Bytes(), &b); err != nil {
			_ = enc.Encode(workerMessage{Error: fmt.Sprintf("reading a batch: %v", err)})
			return exitUsage
		}
		res, err := runner.Run(context.Background(), b, func(p workload.BatchProgress) {
			_ = enc.Encode(workerMessage{Progress: &p})
		})
		msg := workerMessage{Result: &res}
		if err != nil {
			msg = workerMessage{Error: err.Error()}
		}
		if err := enc.Encode(msg); err != nil {
			return exitUsage
		}
		res.Outcome.Discard() // sent: the worker's copy of the fail file goes
	}
	return exitHeld
}

// processRunner runs batches in a worker process, started on its first
// batch and again after a batch it was told to give up.
type processRunner struct {
	args   []string // the worker's command line, after the executable
	stderr io.Writer

	mu    sync.Mutex
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	dir   string // the worker's working directory, where rapid writes
	errMu *sync.Mutex
	// lastWords keeps the end of the worker's stderr, to say why it died.
	lastWords *tail
	// killed is set when a cancelled batch killed the worker: the next
	// batch needs a fresh one.
	killed bool
}

func newProcessRunner(args []string, stderr io.Writer) *processRunner {
	return &processRunner{args: args, stderr: stderr, errMu: &sync.Mutex{}}
}

func (p *processRunner) start() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this executable to start a worker: %w", err)
	}
	if p.dir, err = os.MkdirTemp("", "fencecheck-worker-"); err != nil {
		return err
	}
	p.cmd = exec.Command(exe, p.args...)
	p.cmd.Dir = p.dir
	p.cmd.Env = append(os.Environ(), workerEnv+"=1")
	p.lastWords = &tail{max: lastWordsSize}
	p.cmd.Stderr = io.MultiWriter(lockedWriter{p.stderr, p.errMu}, p.lastWords)
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(nil, 1<<30) // a result holds whole histories
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting a worker: %w", err)
	}
	return nil
}

func (p *processRunner) Run(ctx context.Context, b workload.Batch, progress func(workload.BatchProgress)) (workload.BatchResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		p.stop()
	}
	if p.cmd == nil {
		if err := p.start(); err != nil {
			return workload.BatchResult{}, err
		}
	}
	line, _ := json.Marshal(b)
	if _, err := fmt.Fprintf(p.in, "%s\n", line); err != nil {
		return workload.BatchResult{}, p.died(fmt.Sprintf("sending it batch %d: %v", b.Index, err))
	}
	stopKilling := p.killOnCancel(ctx)
	defer stopKilling()
	for p.out.Scan() {
		var msg workerMessage
		if err := json.Unmarshal(p.out.Bytes(), &msg); err != nil {
			return workload.BatchResult{}, p.failed(fmt.Errorf("batch %d: the worker sent %.80q: %w", b.Index, p.out.Text(), err))
		}
		switch {
		case msg.Progress != nil:
			progress(*msg.Progress)
		case msg.Error != "":
			return workload.BatchResult{}, p.failed(errors.New(msg.Error))
		case msg.Result != nil:
			return *msg.Result, nil
		}
	}
	if ctx.Err() != nil {
		return workload.BatchResult{}, p.failed(ctx.Err())
	}
	how := "it ended without a result"
	if err := p.out.Err(); err != nil {
		how = fmt.Sprintf("reading its answer: %v", err)
	}
	return workload.BatchResult{}, p.died(how)
}

// killOnCancel kills the worker when ctx is cancelled while its batch
// runs; the function it returns ends that watch. The campaign cancels a
// batch's context once the batch has ended too: the kill and the watch's
// end exclude each other, so that a worker that has answered is never
// killed, and one that was killed is replaced before its next batch.
func (p *processRunner) killOnCancel(ctx context.Context) (stop func()) {
	var mu sync.Mutex
	ended, killedIt := false, false
	worker := p.cmd.Process
	stopWatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			killedIt = true
			_ = worker.Kill() // the read in Run ends
		}
	})
	return func() {
		stopWatch()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		p.killed = p.killed || killedIt
	}
}

// died stops a worker that stopped answering, and says why it died: its
// exit status and the end of its stderr (a panic's message and stack).
func (p *processRunner) died(how string) error {
	pid := p.cmd.Process.Pid
	_ = p.in.Close()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var status string
	select {
	case err := <-waited:
		status = exitStatus(err)
	case <-time.After(workerExitWait):
		_ = p.cmd.Process.Kill()
		status = exitStatus(<-waited) + " (killed: it did not exit once its stdin closed)"
	}
	words := p.lastWords.String()
	_ = os.RemoveAll(p.dir)
	p.cmd = nil
	msg := fmt.Sprintf("its worker process %d died: %s; %s", pid, how, status)
	if words != "" {
		msg += "; the end of its stderr:\n" + indent(words)
	}
	return errors.New(msg)
}

// workerExitWait is how long a worker that stopped answering is given to
// exit, so that its exit status can be told.
const workerExitWait = 5 * time.Second

// exitStatus says how a worker's process ended, from its Wait.
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error() // "exit status 2", "signal: killed"
}

func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return "    " + strings.Join(lines, "\n    ")
}

// lastWordsSize is how much of a worker's stderr is kept to say why it
// died: a panic's message and the top of its stack.
const lastWordsSize = 4 << 10

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// failed stops the worker, so that the next batch gets a fresh one.
func (p *processRunner) failed(err error) error {
	p.stop()
	return err
}

func (p *processRunner) stop() {
	p.killed = false
	if p.cmd == nil {
		return
	}
	_ = p.in.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = os.RemoveAll(p.dir)
	p.cmd = nil
}

// Close ends the worker: its stdin closes and it exits.
func (p *processRunner) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	_ = p.in.Close()
	err := p.cmd.Wait()
	_ = os.RemoveAll(p.dir)
	p.cmd = nil
	return err
}

// lockedWriter lets the workers share the run's stderr a write at a time.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// workerArgs is the command line of a worker for one exploration: the
// run's own flags, then what pins this exploration (later flags win).
func workerArgs(args []string, f runFlags, scenario string) ([]string, error) {
	out := append([]string{"run"}, args...)
	out = append(out, "--scenario", scenario, "--mutant", mutantList(f.mutants), "--parallel", "1")
	if f.knownFile != "" && f.knownFile != kafka.NoKnown && f.knownFile != kafka.KfakeKnown {
		abs, err := filepath.Abs(f.knownFile)
		if err != nil {
			return nil, err
		}
		out = append(out, "--known", abs)
	}
	return out, nil
}

// mutantList is a --mutant value for the set.
func mutantList(set map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(set)), ",")
}
