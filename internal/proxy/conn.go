package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFrame bounds a frame the proxy reads whole: Kafka's own default for
// socket.request.max.bytes. A longer size prefix is not a Kafka frame, and
// the connection is copied on as raw bytes from there.
const maxFrame = 100 << 20

// keptFrame bounds the buffer a connection keeps between frames, so that
// one large frame does not hold its memory for the connection's life.
const keptFrame = 1 << 20

// conn is one client connection and its upstream connection.
type conn struct {
	l        *listener
	client   net.Conn
	upstream net.Conn

	mu       sync.Mutex
	inflight map[int32]apiVersion // by correlation id: the requests not yet answered
	raw      bool                 // framing was lost: copy bytes, read nothing
	cutOnce  sync.Once
	done     chan struct{} // closed when cut
}

// apiVersion is a request's API key and version, which say how its
// response reads.
type apiVersion struct{ key, version int16 }

func (c *conn) serve() {
	client := bufio.NewReaderSize(c.client, 64<<10)
	if _, err := client.Peek(1); err != nil {
		// Closed before it sent a byte (a client opens a connection it
		// then drops on its own close): no request, so no process.
		c.client.Close()
		return
	}
	// Kafka clients speak first; the first request's header names the
	// client, whose process the connection is part of.
	dial := c.l.p.process(clientIDOf(client)).Dial(c.l.p.cfg.Dial)
	// A stalled process's dial waits until it wakes, or the connection
	// is cut (Close).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	up, err := c.l.dialUpstream(ctx, dial)
	if err != nil {
		c.l.p.cfg.Logf("%v; closing the client's connection from %s", err, c.client.RemoteAddr())
		c.client.Close()
		return
	}
	c.mu.Lock()
	c.upstream, c.inflight = up, map[int32]apiVersion{}
	c.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { c.copyFrames(client, c.upstream, "the client", c.request); done <- struct{}{} }()
	go func() { c.copyFrames(c.upstream, c.client, "the broker", c.response); done <- struct{}{} }()
	<-done
	c.cut()
	<-done
}

// clientIDOf is the client id in the header of the first request waiting
// in r, read without consuming it; "" when the client sent none, or
// nothing that reads as a request header.
func clientIDOf(r *bufio.Reader) string {
	// size, key, version, correlation id, then the id's int16 length
	const idAt = 4 + 2 + 2 + 4
	head, err := r.Peek(idAt + 2)
	if err != nil {
		return ""
	}
	n := int(int16(binary.BigEndian.Uint16(head[idAt:])))
	if n <= 0 || n > r.Size()-idAt-2 {
		return ""
	}
	whole, err := r.Peek(idAt + 2 + n)
	if err != nil {
		return ""
	}
	return string(whole[idAt+2:])
}

// cut closes both sides.
func (c *conn) cut() {
	c.cutOnce.Do(func() {
		close(c.done)
		c.client.Close()
		c.mu.Lock()
		up := c.upstream
		c.mu.Unlock()
		if up != nil {
			up.Close()
		}
	})
}

// copyFrames forwards frames from src to dst, each as handle returns it,
// until either side closes. A size prefix that cannot be a Kafka frame
// turns the connection raw: from there, bytes are copied as they come.
func (c *conn) copyFrames(src io.Reader, dst net.Conn, from string, handle func(frame []byte) []byte) {
	r := bufio.NewReaderSize(src, 64<<10)
	var size [4]byte
	var kept []byte // the last frame's buffer, for the next
	for {
		if c.isRaw() {
			io.Copy(dst, r)
			return
		}
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || n > maxFrame {
			c.notUnderstood("a frame of %d bytes from %s (%s); copying the connection on as raw bytes", n, from, c.client.RemoteAddr())
			c.setRaw()
			if _, err := dst.Write(size[:]); err != nil {
				return
			}
			continue
		}
		// The frame is read after room for its size, so that one that
		// goes on unchanged (all but those naming brokers) is written
		// as it was read, in one write. Nothing holds on to a frame once
		// it is written (the recorder copies what it keeps), so its
		// buffer serves the next one, up to keptFrame bytes.
		whole := kept
		if cap(whole) < 4+int(n) {
			whole = make([]byte, 4+n)
			if len(whole) <= keptFrame {
				kept = whole
			}
		}
		whole = whole[:4+n]
		copy(whole, size[:])
		frame := whole[4:]
		if got, err := io.ReadFull(r, frame); err != nil {
			dst.Write(whole[:4+got]) // what came, as it came
			return
		}
		out := handle(frame)
		c.l.p.pause.wait(c.done)
		if len(out) != len(frame) || len(out) > 0 && &out[0] != &frame[0] {
			whole = binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(out)), uint32(len(out)))
			whole = append(whole, out...)
		}
		if _, err := dst.Write(whole); err != nil {
			return
		}
	}
}

func (c *conn) isRaw() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw
}

func (c *conn) setRaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = true
}

func (c *conn) notUnderstood(format string, args ...any) {
	c.l.p.cfg.Logf("not understood: "+format, args...)
}

// request notes what a request is, so that its response can be read, and
// forwards it as it came.
func (c *conn) request(frame []byte) []byte {
	if len(frame) < 8 {
		c.notUnderstood("a request of %d bytes, shorter than a request header", len(frame))
		return frame
	}
	av := apiVersion{key: int16(binary.BigEndian.Uint16(frame)), version: int16(binary.BigEndian.Uint16(frame[2:]))}
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	if !knownVersion(av) {
		c.notUnderstood("request key %d version %d (correlation id %d)", av.key, av.version, corr)
	}
	if produceWithoutAcks(av, frame) {
		return frame // no response will come
	}
	c.mu.Lock()
	c.inflight[corr] = av
	c.mu.Unlock()
	return frame
}

// response rewrites the broker addresses in a response that names
// brokers, and forwards every other response as it came.
func (c *conn) response(frame []byte) []byte {
	if len(frame) < 4 {
		c.notUnderstood("a response of %d bytes, shorter than a response header", len(frame))
		return frame
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	c.mu.Lock()
	av, ok := c.inflight[corr]
	delete(c.inflight, corr)
	c.mu.Unlock()
	if !ok {
		c.notUnderstood("a response to correlation id %d, which no request carried", corr)
		return frame
	}
	if !namesBrokers(av.key) {
		return frame
	}
	out, err := c.l.p.rewrite(av, frame)
	if err != nil {
		c.notUnderstood("response key %d version %d: %v; forwarded as it came", av.key, av.version, err)
		return frame
	}
	return out
}

// maxVersions is the newest version of each request key kmsg reads, -1
// for a key it does not know. It is made once, so that a request is
// checked without making a kmsg request of its key.
var maxVersions = func() (out [kmsg.MaxKey + 1]int16) {
	for key := range out {
		out[key] = -1
		if req := kmsg.RequestForKey(int16(key)); req != nil {
			out[key] = req.MaxVersion()
		}
	}
	return out
}()

// knownVersion reports whether kmsg reads requests of av's key and
// version.
func knownVersion(av apiVersion) bool {
	return av.key >= 0 && int(av.key) < len(maxVersions) && av.version >= 0 && av.version <= maxVersions[av.key]
}

// produceWithoutAcks reports whether the frame is a produce request with
// acks 0, which the broker never answers: its acks follow the header and,
// from version 3, the transactional id.
func produceWithoutAcks(av apiVersion, frame []byte) bool {
	if av.key != kmsg.Produce.Int16() {
		return false
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(av.version)
	r, err := requestBody(req, frame)
	if err != nil {
		return false
	}
	if av.version >= 3 {
		if req.IsFlexible() {
			r.CompactNullableString()
		} else {
			r.NullableString()
		}
	}
	acks := r.Int16()
	return r.Complete() == nil && acks == 0
}

// requestBody reads a request frame's header (key, version, correlation
// id, client id, and under flexible versions tagged fields) and is left
// at its body, as kgo's wire does.
func requestBody(req kmsg.Request, frame []byte) (*kbin.Reader, error) {
	r := &kbin.Reader{Src: frame}
	r.Int16()
	r.Int16()
	r.Int32()
	r.NullableString()
	if req.IsFlexible() {
		kmsg.SkipTags(r)
	}
	return r, r.Complete()
}

// responseBody is a response frame's body, after its header: the
// correlation id, and under flexible versions tagged fields (never for
// ApiVersions, whose response header is always version 0).
func responseBody(resp kmsg.Response, av apiVersion, frame []byte) (header, body []byte, err error) {
	r := kbin.Reader{Src: frame}
	r.Int32()
	if resp.IsFlexible() && av.key != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return nil, nil, err
	}
	n := len(frame) - len(r.Src)
	return frame[:n], frame[n:], nil
}

// namesBrokers reports whether a response of this key carries broker
// addresses, which the proxy rewrites to its own.
func namesBrokers(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster:
		return true
	}
	return false
}

// rewrite is a response naming brokers, with each broker's address
// replaced by the proxy's listener for it.
func (p *Proxy) rewrite(av apiVersion, frame []byte) ([]byte, error) {
	resp := kmsg.ResponseForKey(av.key)
	if av.version < 0 || av.version > resp.MaxVersion() {
		return nil, fmt.Errorf("version above %d, the newest this proxy reads", resp.MaxVersion())
	}
	resp.SetVersion(av.version)
	header, body, err := responseBody(resp, av, frame)
	if err != nil {
		return nil, err
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	if err := p.rewriteAddrs(resp); err != nil {
		return nil, err
	}
	return resp.AppendTo(append([]byte(nil), header...)), nil
}

func (p *Proxy) rewriteAddrs(resp kmsg.Response) error {
	var errs []error
	at := func(host *string, port *int32) {
		if *host == "" { // no coordinator (an error answer): nothing to map
			return
		}
		h, n, err := p.brokerAddr(*host, *port)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*host, *port = h, n
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		p.topics.learn(r)
		for i := range r.Brokers {
			at(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		at(&r.Host, &r.Port)
		for i := range r.Coordinators {
			at(&r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			at(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	}
	return errors.Join(errs...)
}
