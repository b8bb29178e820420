package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxRequestBytes is the largest request frame GuardListener lets through:
// Kafka's default socket.request.max.bytes, 100 MiB. kfake allocates the
// size a frame's prefix claims before it reads the frame, so a larger
// prefix, or a negative one (kfake reads it unsigned, up to 4 GiB), would
// be allocated whole for one connection.
const MaxRequestBytes = 100 << 20

// minRequestBytes is the shortest request a frame can carry: the header's
// API key, version and correlation id.
const minRequestBytes = 2 + 2 + 4

// GuardListener wraps a kfake cluster's listener (kfake.ListenFn) so that
// no connection can crash the cluster. kfake panics, and takes its whole
// process down, on a request whose API key kmsg does not know (FINDINGS.md,
// finding 26), and allocates whatever a frame's size prefix claims. The
// guard reads each frame's size and API key as kfake reads the connection.
// A frame that is shorter than a request header, longer than
// MaxRequestBytes, or of an API key kmsg does not know closes that
// connection before kfake sees it, with one line to logf naming the
// client and the frame; the cluster goes on. Every other byte passes
// through unchanged, in the same read, on the same connection.
func GuardListener(ln net.Listener, logf func(format string, args ...any)) net.Listener {
	return &guardedListener{Listener: ln, logf: logf}
}

type guardedListener struct {
	net.Listener
	logf func(format string, args ...any)
}

func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, r: bufio.NewReader(c), logf: l.logf}, nil
}

// guardedConn is a client's connection as kfake reads it: frame by frame,
// each checked before the first of its bytes is handed over.
type guardedConn struct {
	net.Conn
	r    *bufio.Reader
	logf func(format string, args ...any)
	left int // bytes of the current frame, prefix included, not yet read
}

// errRefused is what kfake's read of a refused frame returns: kfake then
// closes the connection, as it does on any read error.
var errRefused = errors.New("kafka: frame refused by the guard")

func (c *guardedConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		if err := c.nextFrame(); err != nil {
			return 0, err
		}
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

// nextFrame waits for the next frame's size and API key, and lets the
// frame through or refuses it and closes the connection.
func (c *guardedConn) nextFrame() error {
	head, err := c.r.Peek(4)
	if err != nil {
		return err // the client closed between frames, or within a prefix
	}
	size := int32(binary.BigEndian.Uint32(head))
	if size < minRequestBytes || size > MaxRequestBytes {
		return c.refuse("a frame of %d bytes (a request takes %d to %d)", size, minRequestBytes, MaxRequestBytes)
	}
	if head, err = c.r.Peek(4 + 2); err != nil {
		return err
	}
	if key := int16(binary.BigEndian.Uint16(head[4:])); kmsg.RequestForKey(key) == nil {
		return c.refuse("a request of unknown API key %d", key)
	}
	c.left = 4 + int(size)
	return nil
}

func (c *guardedConn) refuse(format string, args ...any) error {
	c.logf("kfake guard: closing the connection from %s: %s", c.RemoteAddr(), fmt.Sprintf(format, args...))
	c.Conn.Close()
	return errRefused
}
