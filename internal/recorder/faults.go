package recorder

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/model"
)

// faults is a client's fault state; Client.mu guards it.
type faults struct {
	stalled  chan struct{} // closed on wake; nil while running
	dead     bool
	loseNext bool
	// delayNext: the next recorded request is held back this long (0:
	// none).
	delayNext time.Duration
	// stallAt: the client stalls as it sends its next request of this
	// kind ("": none).
	stallAt model.Kind
}

// Stall holds the client: nothing it sends goes out, nothing it receives
// reaches it, until Wake.
func (c *Client) Stall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.stalled == nil {
		c.faults.stalled = make(chan struct{})
	}
}

// Wake lets a stalled client go on: what it held goes out.
func (c *Client) Wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.stalled != nil {
		close(c.faults.stalled)
		c.faults.stalled = nil
	}
}

// Crash drops the client's connections and refuses new ones: whatever it
// says next (a LeaveGroup as it closes) never reaches the broker.
func (c *Client) Crash() {
	c.mu.Lock()
	c.faults.dead = true
	conns := c.connList()
	c.mu.Unlock()
	c.Wake()
	for _, tapped := range conns {
		_ = tapped.Close()
	}
}

// Restart lets a crashed client's connections through again: the
// application was started anew (its state is its own business).
func (c *Client) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.dead = false
}

// State is "crashed", "stalled" or "running".
func (c *Client) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.faults.dead:
		return "crashed"
	case c.faults.stalled != nil:
		return "stalled"
	}
	return "running"
}

// DelayNext holds back the client's next recorded request: its
// connection is cut as the request goes out, so the client gives up on it
// and asks again (or moves on), and the request reaches the broker d
// later, on a connection of its own, its answer unread. So a late EndTxn
// lands after its producer has gone on (KAFKA-17754). Only connections
// made by Dial can be delayed (the held copy needs a connection of its
// own); on one from Tap, the request goes out as usual.
func (c *Client) DelayNext(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.delayNext = d
}

// takeDelay is how long the request that made ops is held back, 0 when
// it is not.
func (c *Client) takeDelay(ops []observed) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.faults.delayNext
	if d == 0 || len(ops) == 0 {
		return 0
	}
	c.faults.delayNext = 0
	return d
}

// deliverLate sends frame (a whole request, its size first) to address on
// a connection of its own after d, reads its answer and drops it.
func deliverLate(dial DialFunc, address string, frame []byte, d time.Duration, logf func(string, ...any)) {
	time.Sleep(d)
	ctx, cancel := context.WithTimeout(context.Background(), lateDeliveryTimeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", address)
	if err != nil {
		logf("recorder: the delayed request to %s was not delivered: %v", address, err)
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(lateDeliveryTimeout))
	if _, err := conn.Write(frame); err != nil {
		logf("recorder: the delayed request to %s was not delivered: %v", address, err)
		return
	}
	var answer [4096]byte
	_, _ = conn.Read(answer[:]) // the broker took it up; what it says goes nowhere
}

// lateDeliveryTimeout bounds a delayed request's delivery.
const lateDeliveryTimeout = 10 * time.Second

// StallAtNext stalls the client as it sends its next request of kind,
// which waits with everything else until Wake: a pause that strikes at
// a chosen point of the client's work (at a produce, mid-transaction,
// with what it read in hand).
func (c *Client) StallAtNext(kind model.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.stallAt = kind
}

// armed reports whether a fault waits for the client's next request of
// some kind (StallAtNext, LoseNextAnswer, DelayNext).
func (c *Client) armed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults.stallAt != "" || c.faults.loseNext || c.faults.delayNext > 0
}

// takeStall stalls the client when ops hold the request it is to stall
// at.
func (c *Client) takeStall(ops []observed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.stallAt == "" || !slices.ContainsFunc(ops, func(o observed) bool { return o.op.kind == c.faults.stallAt }) {
		return
	}
	c.faults.stallAt = ""
	if c.faults.stalled == nil {
		c.faults.stalled = make(chan struct{})
	}
}

// LoseNextAnswer drops the answer to the client's next recorded request:
// its connection closes once the request went out, and the client asks
// again.
func (c *Client) LoseNextAnswer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.loseNext = true
}

// takeLoss reports whether the request that made ops is the one whose
// answer is lost.
func (c *Client) takeLoss(ops []observed) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lose := c.faults.loseNext && len(ops) > 0
	if lose {
		c.faults.loseNext = false
	}
	return lose
}

// gate waits while the client is stalled; it fails once the client
// crashed or the connection closed.
func (c *Client) gate(closed <-chan struct{}) error {
	for {
		c.mu.Lock()
		dead, stalled := c.faults.dead, c.faults.stalled
		c.mu.Unlock()
		switch {
		case dead:
			return net.ErrClosed
		case stalled == nil:
			return nil
		}
		select {
		case <-stalled:
		case <-closed:
			return net.ErrClosed
		}
	}
}
