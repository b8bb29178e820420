package proxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/fencecheck/fencecheck/model"
)

// processFaults are the faults a process takes, and the history's type
// of each (none: the fault shows in what it does to the process's
// requests).
var processFaults = map[string]struct {
	kind  model.Kind
	apply func(*recorder.Client, time.Duration)
}{
	"stall":         {model.Stall, func(c *recorder.Client, _ time.Duration) { c.Stall() }},
	"wake":          {model.Wake, func(c *recorder.Client, _ time.Duration) { c.Wake() }},
	"crash":         {model.Crash, func(c *recorder.Client, _ time.Duration) { c.Crash() }},
	"restart":       {model.Restart, func(c *recorder.Client, _ time.Duration) { c.Restart() }},
	"lose-response": {"", func(c *recorder.Client, _ time.Duration) { c.LoseNextAnswer() }},
	"delay":         {"", func(c *recorder.Client, d time.Duration) { c.DelayNext(d) }},
}

// noProcessError is a fault for a process that never connected.
type noProcessError struct{ name, known string }

func (e noProcessError) Error() string {
	return fmt.Sprintf("no process %q has connected; the processes are [%s]", e.name, e.known)
}

// Fault applies fault to the process name: stall, wake, crash, restart,
// lose-response, or delay (its next request arrives d late). Stall, wake,
// crash and restart are recorded as faults of the process; a lost
// response or a delayed request shows as the operation that never
// returned.
func (p *Proxy) Fault(name, fault string, d time.Duration) error {
	f, ok := processFaults[fault]
	if !ok {
		return fmt.Errorf("no fault %q; the faults are stall, wake, crash, restart, lose-response and delay", fault)
	}
	known := p.Processes()
	if !slices.Contains(known, name) {
		return noProcessError{name, strings.Join(known, ", ")}
	}
	proc := p.Process(name)
	if f.kind != "" {
		p.recordFault(name, f.kind)
	}
	f.apply(proc, d)
	return nil
}

// upstreamProc is the process a pause of the whole upstream is recorded
// under.
const upstreamProc = "upstream"

// PauseUpstream holds every connection's traffic, both ways, for d: the
// cluster answers nothing meanwhile. It is recorded as a stall and a wake
// of process "upstream"; it fails while a pause is on.
func (p *Proxy) PauseUpstream(d time.Duration) error {
	p.faultMu.Lock() // the stall goes in the history before the wake can
	defer p.faultMu.Unlock()
	woken := func() {
		p.faultMu.Lock()
		defer p.faultMu.Unlock()
		p.recordFault(upstreamProc, model.Wake)
	}
	if !p.pause.hold(d, woken) {
		return errors.New("the upstream is paused already")
	}
	p.recordFault(upstreamProc, model.Stall)
	return nil
}

func (p *Proxy) recordFault(proc string, kind model.Kind) {
	if p.cfg.Record != nil {
		p.cfg.Record.Fault(proc, kind, model.NewRequest())
	}
}

// pause holds every connection's frames, both ways, while it lasts.
type pause struct {
	mu    sync.Mutex
	until chan struct{} // closed when it ends; nil while none
}

// hold pauses for d, then calls ended; false when a pause is on already.
func (ps *pause) hold(d time.Duration, ended func()) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.until != nil {
		return false
	}
	until := make(chan struct{})
	ps.until = until
	time.AfterFunc(d, func() {
		ps.mu.Lock()
		ps.until = nil
		ps.mu.Unlock()
		close(until)
		ended()
	})
	return true
}

// wait returns when no pause is on, or when done is closed.
func (ps *pause) wait(done <-chan struct{}) {
	ps.mu.Lock()
	until := ps.until
	ps.mu.Unlock()
	if until != nil {
		select {
		case <-until:
		case <-done:
		}
	}
}
