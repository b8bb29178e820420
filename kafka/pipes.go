package kafka

import (
	"context"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// The embedded cluster's network. A kfake cluster and its clients live in
// one process, so they speak over in-memory pipes (net.Pipe) instead of
// loopback TCP: the same Kafka protocol, byte for byte, on connections
// that open, carry and close as TCP's do, without a system call for each
// read and write or a socket for each dial (which, on loopback, took
// about a third of an exploration's CPU). The listeners are the
// cluster's (kfake.ListenFn), registered under the host:port it asks
// for, so that a restart comes back on the same addresses; the clients
// dial them through kgo.Dialer.

// pipes is the process's in-memory network.
var pipes = &pipeNet{listeners: map[string]*pipeListener{}, next: firstPipePort}

// firstPipePort is the first port given to a listener that asks for any:
// the ports are names only, never bound.
const firstPipePort = 20000

type pipeNet struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
	next      int
}

// listen is kfake's ListenFn: a listener at address, or at a free port of
// its host when the port is 0.
func (n *pipeNet) listen(network, address string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == "0" {
		for {
			port = strconv.Itoa(n.next)
			n.next++
			if n.listeners[net.JoinHostPort(host, port)] == nil {
				break
			}
		}
	}
	addr := net.JoinHostPort(host, port)
	if n.listeners[addr] != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: pipeAddr(addr), Err: syscall.EADDRINUSE}
	}
	l := &pipeListener{n: n, addr: pipeAddr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// dial is the clients' kgo.Dialer. A dial where nothing listens fails as
// a refused TCP dial does, so that the request counts as never sent.
func (n *pipeNet) dial(ctx context.Context, network, address string) (net.Conn, error) {
	refused := &net.OpError{Op: "dial", Net: network, Addr: pipeAddr(address), Err: syscall.ECONNREFUSED}
	n.mu.Lock()
	l := n.listeners[address]
	n.mu.Unlock()
	if l == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
		refused.Err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, refused
}

// listening reports whether a listener of the in-memory network is at
// address: a client that can dial through Go reaches it there, others
// need TCP.
func (n *pipeNet) listening(address string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listeners[address] != nil
}

type pipeListener struct {
	n     *pipeNet
	addr  pipeAddr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		defer l.n.mu.Unlock()
		if l.n.listeners[string(l.addr)] == l {
			delete(l.n.listeners, string(l.addr))
		}
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

// pipeAddr is a listener's host:port.
type pipeAddr string

func (a pipeAddr) Network() string { return "tcp" }
func (a pipeAddr) String() string  { return string(a) }
