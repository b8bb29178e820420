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

	"github.com/fencecheck/fencecheck/workload"
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
	p.cmd.Stderr = lockedWriter{p.stderr, p.errMu}
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
	if p.cmd == nil {
		if err := p.start(); err != nil {
			return workload.BatchResult{}, err
		}
	}
	line, _ := json.Marshal(b)
	if _, err := fmt.Fprintf(p.in, "%s\n", line); err != nil {
		return workload.BatchResult{}, p.failed(fmt.Errorf("sending batch %d to its worker: %w", b.Index, err))
	}
	done, worker := make(chan struct{}), p.cmd.Process
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-done: // the batch ended first: the worker goes on to the next
			default:
				_ = worker.Kill() // the read below ends
			}
		case <-done:
		}
	}()
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
	return workload.BatchResult{}, p.failed(fmt.Errorf("batch %d: its worker ended without a result (%v)", b.Index, p.out.Err()))
}

// failed stops the worker, so that the next batch gets a fresh one.
func (p *processRunner) failed(err error) error {
	p.stop()
	return err
}

func (p *processRunner) stop() {
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
	if f.knownFile != "" && f.knownFile != "none" {
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
