package kafka

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// Observer is told of requests a client library sends on its own, as
// operations of the history format; histories.Recorder is one. end is
// called with the answer, or unanswered when the connection closed first,
// and never for a request the broker did not take up (misrouted).
type Observer interface {
	Observe(proc string, kind model.Kind, req model.Request) (end func(model.Result))
}

// wiretap records a kgo client's requests: the client dials through it,
// and it reads the request and response frames going by. kgo's own hooks
// see a request's key and size, never its fields; the frames hold
// everything the history needs.
//
// A client has several requests in flight at once (a produce, a commit,
// a join waiting for the group), and a process's operations must not
// overlap; so each operation takes a lane, the process's name for the
// first and name.2, name.3, ... for those in flight beside it.
type wiretap struct {
	t       *Target
	observe Observer
	proc    string

	mu      sync.Mutex
	lanes   []bool              // busy
	joins   map[string]*pending // member id -> its join_group, open until its SyncGroup answers
	members map[string]bool     // those whose join_group answered, who may leave
	conns   map[*tappedConn]bool
	faults  wireFaults
}

// newWiretap taps a client of process proc; a nil observe records nothing
// (the faults still apply).
func (t *Target) newWiretap(observe Observer, proc string) *wiretap {
	if observe == nil {
		observe = noObserver{}
	}
	return &wiretap{t: t, observe: observe, proc: proc, joins: map[string]*pending{},
		members: map[string]bool{}, conns: map[*tappedConn]bool{}}
}

// dial is the client's kgo.Dialer; a dead client dials nowhere.
func (w *wiretap) dial(ctx context.Context, network, host string) (net.Conn, error) {
	if err := w.gate(ctx.Done()); err != nil {
		return nil, err
	}
	dial := (&net.Dialer{}).DialContext
	if w.t.embedded != nil {
		dial = pipes.dial // the embedded cluster's network
	}
	conn, err := dial(ctx, network, host)
	if err != nil {
		return nil, err
	}
	c := &tappedConn{Conn: conn, w: w, inflight: map[int32]inflight{}, closed: make(chan struct{})}
	w.mu.Lock()
	w.conns[c] = true
	w.mu.Unlock()
	return c, nil
}

// connList is the open connections; the caller holds w.mu.
func (w *wiretap) connList() []*tappedConn {
	conns := make([]*tappedConn, 0, len(w.conns))
	for c := range w.conns {
		conns = append(conns, c)
	}
	return conns
}

// close ends what is still in flight unanswered: the client is gone. A
// join whose JoinGroup answered ends there, with no assignment (its
// member never learned one); a member's rejoin never answered is
// unanswered; a new member's join that only learned its member id never
// joined, and is left out.
func (w *wiretap) close() {
	w.mu.Lock()
	conns := w.connList()
	joins := w.joins
	w.joins = map[string]*pending{}
	w.mu.Unlock()
	for _, c := range conns {
		c.lost()
	}
	for _, p := range joins {
		switch {
		case p.joined:
			w.finish(p, model.OK(p.resp))
		case p.req.MemberID != "":
			w.finish(p, model.NoAnswer())
		default:
			w.free(p)
		}
	}
}

// leaves reports whether member joined (its JoinGroup answered), and
// forgets it: a member that never joined leaves nothing the history
// knows of.
func (w *wiretap) leaves(member string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	joined := w.members[member] || w.joins[member] != nil && w.joins[member].joined
	delete(w.members, member)
	return joined
}

// pending is one operation in flight.
type pending struct {
	lane int
	kind model.Kind
	req  model.Request
	resp model.Response // a join_group's member and generation, before its SyncGroup
	// joined: a join_group's JoinGroup answered; it waits for its
	// SyncGroup.
	joined bool
	end    func(model.Result)
}

// begin records an operation's call on a free lane.
func (w *wiretap) begin(kind model.Kind, req model.Request) *pending {
	w.mu.Lock()
	lane := slices.Index(w.lanes, false)
	if lane < 0 {
		lane = len(w.lanes)
		w.lanes = append(w.lanes, false)
	}
	w.lanes[lane] = true
	w.mu.Unlock()
	return &pending{lane: lane, kind: kind, req: req, resp: model.NewResponse(), end: w.observe.Observe(laneName(w.proc, lane), kind, req)}
}

func laneName(proc string, lane int) string {
	if lane == 0 {
		return proc
	}
	return proc + "." + strconv.Itoa(lane+1)
}

// finish records an operation's result and frees its lane. A member whose
// join_group succeeded may leave.
func (w *wiretap) finish(p *pending, res model.Result) {
	if p.kind == model.JoinGroup && res.Succeeded() {
		w.mu.Lock()
		w.members[res.Resp.MemberID] = true
		w.mu.Unlock()
	}
	p.end(res)
	w.free(p)
}

// free frees an operation's lane; one never finished is left out.
func (w *wiretap) free(p *pending) {
	w.mu.Lock()
	w.lanes[p.lane] = false
	w.mu.Unlock()
}

// member is the member a join_group is for, "" for another operation or a
// new member that has not learned its id.
func (p *pending) member() string {
	if p.kind != model.JoinGroup {
		return ""
	}
	if p.resp.MemberID != "" {
		return p.resp.MemberID
	}
	return p.req.MemberID
}

// awaitSync keeps a member's join_group open between its JoinGroup's
// answer and its SyncGroup (or its next JoinGroup).
func (w *wiretap) awaitSync(member string, p *pending) {
	w.mu.Lock()
	w.joins[member] = p
	w.mu.Unlock()
}

// takeJoin is the open join_group of member, if any.
func (w *wiretap) takeJoin(member string) *pending {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.joins[member]
	delete(w.joins, member)
	return p
}

// inflight is a request on one connection waiting for its response.
type inflight struct {
	req kmsg.Request
	ops []observed
}

// tappedConn is one connection of a tapped client.
type tappedConn struct {
	net.Conn
	w *wiretap

	mu       sync.Mutex
	sent     []byte // the start of a request frame not yet whole
	received []byte // likewise, of a response frame
	inflight map[int32]inflight

	closeOnce sync.Once
	closed    chan struct{}
}

// Write reads the requests it carries before they go out: an operation
// is called when it is sent. A paused client's requests wait.
func (c *tappedConn) Write(b []byte) (int, error) {
	if err := c.w.gate(c.closed); err != nil {
		return 0, err
	}
	c.mu.Lock()
	var frames [][]byte
	lose := false
	c.sent, frames = splitFrames(append(c.sent, b...))
	for _, f := range frames {
		lose = c.request(f) || lose
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(b)
	if lose {
		_ = c.Conn.Close() // the answer never comes back; the client asks again
	}
	return n, err
}

// Read reads the responses it carries as they arrive; a paused client
// sees them when it wakes.
func (c *tappedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if gateErr := c.w.gate(c.closed); gateErr != nil {
		return 0, gateErr
	}
	if n > 0 {
		c.mu.Lock()
		var frames [][]byte
		c.received, frames = splitFrames(append(c.received, b[:n]...))
		for _, f := range frames {
			c.response(f)
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close ends what is in flight on the connection unanswered.
func (c *tappedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.lost()
	c.w.mu.Lock()
	delete(c.w.conns, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}

func (c *tappedConn) lost() {
	c.mu.Lock()
	lost := c.inflight
	c.inflight = map[int32]inflight{}
	c.mu.Unlock()
	for _, in := range lost {
		for _, o := range in.ops {
			if member := o.op.member(); member != "" {
				c.w.awaitSync(member, o.op) // the member asks again on another connection
				continue
			}
			c.w.finish(o.op, model.NoAnswer())
		}
	}
}

// splitFrames splits buf into whole frames (each a 4-byte size, then that
// many bytes) and the start of the next.
func splitFrames(buf []byte) (rest []byte, frames [][]byte) {
	for len(buf) >= 4 {
		size := int(binary.BigEndian.Uint32(buf))
		if len(buf) < 4+size {
			break
		}
		frames = append(frames, buf[4:4+size])
		buf = buf[4+size:]
	}
	return append([]byte(nil), buf...), frames
}

// request reads one request frame: a header (key, version, correlation
// id, client id, and tags when flexible), then the body. It reports
// whether the request's answer is to be lost.
func (c *tappedConn) request(frame []byte) (lose bool) {
	r := kbin.Reader{Src: frame}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	r.NullableString()
	req := kmsg.RequestForKey(key)
	if req == nil {
		return false
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || req.ReadFrom(r.Src) != nil {
		return false // not a request the history could hold
	}
	ops := c.w.sent(req)
	if len(ops) > 0 {
		c.inflight[corr] = inflight{req: req, ops: ops}
	}
	return c.w.takeLoss(ops)
}

// response reads one response frame: the correlation id, tags when
// flexible (never for ApiVersions), then the body.
func (c *tappedConn) response(frame []byte) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	in, ok := c.inflight[corr]
	if !ok {
		return
	}
	delete(c.inflight, corr)
	resp := in.req.ResponseKind()
	if resp.IsFlexible() && in.req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || resp.ReadFrom(r.Src) != nil {
		for _, o := range in.ops {
			c.w.finish(o.op, c.w.t.undecided(o.op.kind, "a response that does not parse"))
		}
		return
	}
	c.w.answered(in.ops, resp)
}
