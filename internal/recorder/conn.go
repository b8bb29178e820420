package recorder

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// inflight is a request on one connection waiting for its response.
type inflight struct {
	req kmsg.Request
	ops []observed
}

// conn is one tapped connection of a client.
type conn struct {
	net.Conn
	c *Client
	// dial and address reach the same broker again, for a delayed
	// request (nil for a connection from Tap).
	dial    DialFunc
	address string

	mu       sync.Mutex
	sent     []byte // the start of a request frame not yet whole
	received []byte // likewise, of a response frame
	inflight map[int32]inflight
	fetches  fetchSessions
	// unread are responses passed on but not yet read
	// (Config.AnswersAfterForwarding), copied, in the order they came.
	unread [][]byte

	closeOnce sync.Once
	closed    chan struct{}
}

// Write reads the requests it carries before they go out: an operation
// is called when it is sent. Only a produce's records are read after it
// went on (produce). A stalled client's requests wait.
func (t *conn) Write(b []byte) (int, error) {
	if err := t.c.gate(t.closed); err != nil {
		return 0, err
	}
	// A request the client sends after an answer came back is read
	// after that answer, on whichever connection it came: the answer
	// frees the request's lane, or began the join it goes on with.
	t.c.readUnread()
	t.mu.Lock()
	// Frames that begin and end in this write can be held back; one begun
	// in an earlier write is partly on the wire already.
	whole := len(t.sent) == 0
	var frames [][]byte
	t.sent, frames = splitFrames(t.sent, b)
	whole = whole && len(t.sent) == 0
	lose, out := false, b
	var held []byte
	var delay time.Duration
	at := 0 // where the frame begins in b, when whole
	for _, f := range frames {
		ops := t.request(f)
		t.c.takeStall(ops)
		lose = t.c.takeLoss(ops) || lose
		if whole && held == nil && t.dial != nil {
			if delay = t.c.takeDelay(ops); delay > 0 {
				held, out = append([]byte(nil), b[at:at+4+len(f)]...), b[:at]
			}
		}
		at += 4 + len(f)
	}
	t.mu.Unlock()
	if err := t.c.gate(t.closed); err != nil { // a stall struck at one of these requests
		return 0, err
	}
	n, err := t.Conn.Write(out)
	if held != nil {
		_ = t.Conn.Close() // the client never hears back
		go deliverLate(t.dial, t.address, held, delay, t.c.cfg.Logf)
		return len(b), err
	}
	if lose {
		_ = t.Conn.Close() // the answer never comes back; the client asks again
	}
	return n, err
}

// Read reads the responses it carries as they arrive; a stalled client
// sees them when it wakes.
func (t *conn) Read(b []byte) (int, error) {
	t.readUnread() // passed on since the last Read
	n, err := t.Conn.Read(b)
	if gateErr := t.c.gate(t.closed); gateErr != nil {
		return 0, gateErr
	}
	if n > 0 {
		t.mu.Lock()
		var frames [][]byte
		t.received, frames = splitFrames(t.received, b[:n])
		for _, f := range frames {
			if t.c.cfg.AnswersAfterForwarding {
				t.unread = append(t.unread, append([]byte(nil), f...)) // b is the reader's again
				continue
			}
			t.response(f)
		}
		t.mu.Unlock()
	}
	return n, err
}

// readUnread reads the responses passed on unread.
func (t *conn) readUnread() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.unread {
		t.response(f)
	}
	t.unread = nil
}

// readUnread reads the responses passed on unread, on every connection
// of the client.
func (c *Client) readUnread() {
	if !c.cfg.AnswersAfterForwarding {
		return
	}
	c.mu.Lock()
	conns := c.connList()
	c.mu.Unlock()
	for _, tapped := range conns {
		tapped.readUnread()
	}
}

// Close ends what is in flight on the connection unanswered.
func (t *conn) Close() error {
	t.closeOnce.Do(func() { close(t.closed) })
	t.lost()
	t.c.mu.Lock()
	delete(t.c.conns, t)
	t.c.mu.Unlock()
	return t.Conn.Close()
}

func (t *conn) lost() {
	t.readUnread() // answers the client had are answers
	t.mu.Lock()
	lost := t.inflight
	t.inflight = map[int32]inflight{}
	t.mu.Unlock()
	for _, in := range lost {
		for _, o := range in.ops {
			if member := o.op.member(); member != "" {
				t.c.awaitRejoin(member, o.op) // the member asks again on another connection
				continue
			}
			t.c.finish(o.op, model.NoAnswer())
		}
	}
}

// splitFrames splits what was held back and then b into whole frames
// (each a 4-byte size, then that many bytes) and the start of the next.
// The frames are read before b is given back, so they are copied only
// when a frame began in an earlier b.
func splitFrames(held, b []byte) (rest []byte, frames [][]byte) {
	buf, owned := b, len(held) > 0
	if owned {
		buf = append(held, b...)
	}
	for len(buf) >= 4 {
		size := int(binary.BigEndian.Uint32(buf))
		if len(buf) < 4+size {
			break
		}
		frames = append(frames, buf[4:4+size])
		buf = buf[4+size:]
	}
	if owned && len(frames) == 0 {
		return buf, nil // a long frame still coming: no copy of all of it at each read
	}
	return append([]byte(nil), buf...), frames
}

// request reads one request frame: a header (key, version, correlation
// id, client id, and tags when flexible), then the body. Its operations
// are in flight until the response; none when the history has no type
// for the request.
func (t *conn) request(frame []byte) []observed {
	r := kbin.Reader{Src: frame}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	if !readsRequest(key) {
		return nil
	}
	if key == kmsg.Produce.Int16() && !t.c.recording && !t.c.armed() {
		// Its records are most of what a client sends, and without a
		// recording only an armed fault needs its operations. A
		// produce leaves nothing behind for later requests to need.
		return nil
	}
	r.NullableString()
	req := requestForKey(key, version)
	if req == nil {
		return nil
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || req.ReadFrom(r.Src) != nil {
		return nil // not a request the history could hold
	}
	ops := t.c.sent(req, &t.fetches)
	if len(ops) > 0 {
		t.inflight[corr] = inflight{req: req, ops: ops}
	}
	return ops
}

// response reads one response frame: the correlation id, tags when
// flexible (never for ApiVersions), then the body.
func (t *conn) response(frame []byte) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	in, ok := t.inflight[corr]
	if !ok {
		return
	}
	delete(t.inflight, corr)
	resp := in.req.ResponseKind()
	if resp.IsFlexible() && in.req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || resp.ReadFrom(r.Src) != nil {
		for _, o := range in.ops {
			t.c.finish(o.op, t.c.undecided(o.op.kind, "a response that does not parse"))
		}
		return
	}
	t.c.answered(in.ops, resp)
}
