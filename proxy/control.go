package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/model"
	"github.com/fencecheck/fencecheck/recorder"
)

// Control is the proxy's control API, over HTTP and JSON, in the manner of
// Toxiproxy, so that a test suite in any language can script the faults
// it needs:
//
//	GET  /processes                       [{"name": "fare-writer-1", "state": "running"}, ...]
//	POST /processes/{name}/stall          hold its traffic both ways, heartbeats too
//	POST /processes/{name}/wake           let it go on (a zombie, if it was replaced)
//	POST /processes/{name}/crash          cut its connections with nothing said, refuse new ones
//	POST /processes/{name}/restart        let a crashed process connect again
//	POST /processes/{name}/lose-response  cut the connection of its next request before the answer
//	POST /processes/{name}/delay?for=2s   deliver its next request that late, on a connection of its own
//	POST /upstream/pause?for=2s           hold every connection's traffic, both ways, that long
//
// Every answer is a JSON object: {"ok": true}, or {"error": "..."} with
// status 404 (no such process), 400 (a fault or duration it does not
// know) or 409 (a pause while one is on). Stall, wake, crash and restart are recorded in the history as
// faults of the process; a pause of the upstream as a stall and a wake of
// process "upstream". A lost response or a delayed request shows as the
// operation that never returned.
func (p *Proxy) Control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /processes", p.listProcesses)
	mux.HandleFunc("POST /processes/{name}/{fault}", p.faultProcess)
	mux.HandleFunc("POST /upstream/pause", p.pauseUpstream)
	return mux
}

// processState is one process as GET /processes lists it.
type processState struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

func (p *Proxy) listProcesses(w http.ResponseWriter, _ *http.Request) {
	states := []processState{}
	for _, name := range p.Processes() {
		proc, _ := p.Process(name)
		states = append(states, processState{name, proc.State()})
	}
	answer(w, http.StatusOK, states)
}

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

func (p *Proxy) faultProcess(w http.ResponseWriter, r *http.Request) {
	name, faultName := r.PathValue("name"), r.PathValue("fault")
	fault, ok := processFaults[faultName]
	if !ok {
		answerError(w, http.StatusBadRequest, "no fault %q; the faults are stall, wake, crash, restart, lose-response and delay", faultName)
		return
	}
	proc, ok := p.Process(name)
	if !ok {
		answerError(w, http.StatusNotFound, "no process %q has connected; the processes are [%s]", name, strings.Join(p.Processes(), ", "))
		return
	}
	var d time.Duration
	if faultName == "delay" {
		if d, ok = duration(w, r); !ok {
			return
		}
	}
	if fault.kind != "" && p.cfg.Record != nil {
		p.cfg.Record.Fault(name, fault.kind, model.NewRequest())
	}
	fault.apply(proc, d)
	answer(w, http.StatusOK, map[string]bool{"ok": true})
}

// upstreamProc is the process a pause of the whole upstream is recorded
// under.
const upstreamProc = "upstream"

func (p *Proxy) pauseUpstream(w http.ResponseWriter, r *http.Request) {
	d, ok := duration(w, r)
	if !ok {
		return
	}
	record := func(kind model.Kind) {
		if p.cfg.Record != nil {
			p.cfg.Record.Fault(upstreamProc, kind, model.NewRequest())
		}
	}
	p.mu.Lock() // the stall goes in the history before the wake can
	defer p.mu.Unlock()
	woken := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		record(model.Wake)
	}
	if !p.pause.hold(d, woken) {
		answerError(w, http.StatusConflict, "the upstream is paused already")
		return
	}
	record(model.Stall)
	answer(w, http.StatusOK, map[string]bool{"ok": true})
}

// maxFaultDuration bounds a delay or a pause.
const maxFaultDuration = time.Hour

// duration is the request's "for" parameter, a Go duration from 1 ms to
// an hour; a missing or bad one is answered with an error.
func duration(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	text := r.URL.Query().Get("for")
	d, err := time.ParseDuration(text)
	if err != nil || d < time.Millisecond || d > maxFaultDuration {
		answerError(w, http.StatusBadRequest, "for=%q: give a duration from 1ms to 1h, as 500ms or 2s", text)
		return 0, false
	}
	return d, true
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func answerError(w http.ResponseWriter, status int, format string, args ...any) {
	answer(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
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
