package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
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
//
// No request starts a new history: the proxy records one for as long as
// it runs, judged from an empty cluster (see the package doc).
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
		states = append(states, processState{name, p.Process(name).State()})
	}
	answer(w, http.StatusOK, states)
}

func (p *Proxy) faultProcess(w http.ResponseWriter, r *http.Request) {
	var d time.Duration
	if r.PathValue("fault") == "delay" {
		var ok bool
		if d, ok = duration(w, r); !ok {
			return
		}
	}
	err := p.Fault(r.PathValue("name"), r.PathValue("fault"), d)
	var noProcess noProcessError
	switch {
	case errors.As(err, &noProcess):
		answerError(w, http.StatusNotFound, "%v", err)
	case err != nil:
		answerError(w, http.StatusBadRequest, "%v", err)
	default:
		answer(w, http.StatusOK, map[string]bool{"ok": true})
	}
}

func (p *Proxy) pauseUpstream(w http.ResponseWriter, r *http.Request) {
	d, ok := duration(w, r)
	if !ok {
		return
	}
	if err := p.PauseUpstream(d); err != nil {
		answerError(w, http.StatusConflict, "%v", err)
		return
	}
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
