package recorder

import "net"

// faults is a client's fault state; Client.mu guards it.
type faults struct {
	stalled  chan struct{} // closed on wake; nil while running
	dead     bool
	loseNext bool
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
