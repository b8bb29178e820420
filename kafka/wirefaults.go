package kafka

import (
	"net"

	"github.com/fencecheck/fencecheck/model"
)

// The faults a harness imposes on a real client, at its connections, as
// the workload imposes them on its own processes: a stall holds what the
// process sends and receives until it wakes (a garbage collection pause:
// its heartbeats stop too), a crash drops its connections with nothing
// said (no LeaveGroup), and a lost response is a request that went out on
// a connection that closed before the answer came back.

// wireFaults is a tapped client's fault state; wiretap.mu guards it.
type wireFaults struct {
	paused   chan struct{} // closed on wake; nil while running
	dead     bool
	loseNext bool
}

// pause stalls the client: nothing it sends goes out, nothing it
// receives reaches it, until resume.
func (w *wiretap) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.faults.paused == nil {
		w.faults.paused = make(chan struct{})
	}
}

// resume wakes a paused client: what it held goes out.
func (w *wiretap) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.faults.paused != nil {
		close(w.faults.paused)
		w.faults.paused = nil
	}
}

// kill drops the client's connections and refuses new ones: whatever it
// says next (a LeaveGroup as it closes) never reaches the broker.
func (w *wiretap) kill() {
	w.mu.Lock()
	w.faults.dead = true
	conns := w.connList()
	w.mu.Unlock()
	w.resume()
	for _, c := range conns {
		_ = c.Close()
	}
}

// loseNextAnswer drops the answer to the next recorded request: its
// connection closes once it went out, and the client asks again.
func (w *wiretap) loseNextAnswer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults.loseNext = true
}

// takeLoss reports whether the request that made ops is the one whose
// answer is lost.
func (w *wiretap) takeLoss(ops []observed) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	lose := w.faults.loseNext && len(ops) > 0
	if lose {
		w.faults.loseNext = false
	}
	return lose
}

// gate waits while the client is paused; it fails once the client is
// dead or the connection closed.
func (w *wiretap) gate(closed <-chan struct{}) error {
	for {
		w.mu.Lock()
		dead, paused := w.faults.dead, w.faults.paused
		w.mu.Unlock()
		switch {
		case dead:
			return net.ErrClosed
		case paused == nil:
			return nil
		}
		select {
		case <-paused:
		case <-closed:
			return net.ErrClosed
		}
	}
}

// noObserver is the observer of a client whose requests are not recorded.
type noObserver struct{}

func (noObserver) Observe(string, model.Kind, model.Request) func(model.Result) {
	return func(model.Result) {}
}
