// Package proxy is a Kafka-protocol proxy that real clients connect to
// unchanged: any client library, in any language, talks to the proxy as
// it would to the cluster, and the proxy talks to the cluster.
//
// It opens a listener for the bootstrap address and one for each broker
// the cluster names (on a free port, or on the next of Config.BrokerPorts),
// and rewrites every broker address a client learns
// (Metadata, FindCoordinator, DescribeCluster) to the listener's, so that
// the client never leaves the proxy. Every other frame is forwarded byte
// for byte, at whatever version the client and the broker negotiate
// (ApiVersions passes through untouched). A frame the proxy cannot read
// (a malformed header, an unknown API key, a version its decoder does not
// know) is forwarded untouched too, and noted as not understood.
//
// A process is a client instance, named by the client.id its requests
// carry (so give each instance its own), or, for a client that sends
// none, by its connection. With Config.Record set, the proxy records what
// every process does as operations of the history format (package
// recorder reads the frames). The faults of package recorder apply to a
// process by its name (Proxy.Process, and the control API of Control).
// To name a topic id that none of the Metadata answers it forwarded
// named, the proxy asks the cluster on a client of its own, which is no
// process.
//
// One proxy records one history, for as long as it runs. A history is
// judged from an empty cluster: a second run through the same proxy
// joins the first run's history, where its records count twice. For
// another history, close the proxy, start the cluster afresh (or use new
// topics, groups and transactional ids), and start a new proxy.
//
// Plain TCP only: TLS and SASL to the upstream are not supported yet.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/fencecheck/fencecheck/model"
)

// Config says where the cluster is and where the proxy listens.
type Config struct {
	// Upstream are the cluster's bootstrap addresses, host:port; the
	// bootstrap listener connects to the first that answers.
	Upstream []string
	// Listen is the bootstrap listener's address, host:port (port 0 picks
	// one). The brokers' listeners bind the same host, on ports of their
	// own. Default 127.0.0.1:0.
	Listen string
	// BrokerPorts pins the brokers' listeners, so that a firewall can let
	// them through: the first broker the cluster names is given the
	// first port, the next the second, and so on. They are bound by New,
	// so a port taken is New's error. A broker named beyond them cannot
	// be reached through the proxy: its address goes to the client as it
	// came, and the proxy logs why. Empty: any free ports.
	BrokerPorts []int
	// Dial connects to the upstream; default a net.Dialer.
	Dial recorder.DialFunc
	// Listener opens the proxy's listeners; default net.Listen.
	Listener func(network, address string) (net.Listener, error)
	// Logf is told what the proxy did not understand, and why a
	// connection ended; default nothing.
	Logf func(format string, args ...any)
	// Record, when set, is given every client's requests as operations
	// of the history format, and the faults of the control API.
	Record Recorder
	// Cluster names what Record records; default the cluster's names as
	// they are, the topics learned from the Metadata the proxy forwards
	// (a topic id none named is asked of the cluster, on a client of the
	// proxy's own), and timeouts in the clients' milliseconds.
	Cluster recorder.Cluster
}

// Recorder records a history; histories.Recorder is one.
type Recorder interface {
	recorder.Observer
	// Fault records a fault of proc (stall, wake, crash, restart) now.
	Fault(proc string, kind model.Kind, req model.Request)
}

// Proxy is a running proxy. Close stops it.
type Proxy struct {
	cfg       Config
	host      string
	bootstrap *listener

	mu      sync.Mutex
	brokers map[string]*listener // upstream host:port -> its listener
	spare   []net.Listener       // bound at BrokerPorts, for brokers not yet named
	procs   map[string]*recorder.Client
	closed  bool
	wg      sync.WaitGroup

	topics    topics
	lookup    *kgo.Client // the proxy's own, for askTopics; nil until then
	pause     pause
	faultMu   sync.Mutex   // orders a pause's stall before its wake
	anonymous atomic.Int64 // connections of clients that sent no client.id
}

// New starts a proxy in front of cfg.Upstream.
func New(cfg Config) (*Proxy, error) {
	if len(cfg.Upstream) == 0 {
		return nil, errors.New("proxy: no upstream address")
	}
	for _, addr := range cfg.Upstream {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("proxy: upstream %q is not host:port: %w", addr, err)
		}
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	host, listenPort, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen address %q is not host:port: %w", cfg.Listen, err)
	}
	if err := checkPorts(cfg.BrokerPorts); err != nil {
		return nil, fmt.Errorf("proxy: broker ports: %w", err)
	}
	if slices.Contains(cfg.BrokerPorts, atoi(listenPort)) {
		return nil, fmt.Errorf("proxy: broker port %s is the listen address's port too", listenPort)
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	if cfg.Listener == nil {
		cfg.Listener = net.Listen
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	p := &Proxy{cfg: cfg, host: host, brokers: map[string]*listener{}, procs: map[string]*recorder.Client{}}
	p.topics.ask = p.askTopics
	if p.cfg.Cluster == nil {
		p.cfg.Cluster = &p.topics
	}
	if p.spare, err = p.bindBrokerPorts(host, cfg.BrokerPorts); err != nil {
		return nil, err
	}
	p.bootstrap, err = p.listen(cfg.Listen, cfg.Upstream)
	if err != nil {
		p.closeSpare()
		return nil, err
	}
	return p, nil
}

// Addr is the bootstrap address clients are given.
func (p *Proxy) Addr() string { return p.bootstrap.addr }

// Close stops listening, cuts every connection, and waits for their
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.lookup != nil {
		p.lookup.Close()
	}
	var all []*listener
	if p.bootstrap != nil {
		all = append(all, p.bootstrap)
	}
	for _, l := range p.brokers {
		all = append(all, l)
	}
	p.mu.Unlock()
	p.closeSpare()
	for _, l := range all {
		l.close()
	}
	p.wg.Wait()
	p.mu.Lock()
	procs := slices.Collect(maps.Values(p.procs))
	p.mu.Unlock()
	for _, proc := range procs {
		proc.Close() // what was in flight never returned
	}
	return nil
}

// process is the process of a connection whose client sent clientID.
func (p *Proxy) process(clientID string) *recorder.Client {
	if clientID == "" {
		return p.Process(fmt.Sprintf("connection-%d", p.anonymous.Add(1)))
	}
	return p.Process(clientID)
}

// Process is the process name, to fault it; one no client by that name
// has connected yet is made now, and a fault applied to it meets the
// client when it connects.
func (p *Proxy) Process(name string) *recorder.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc, ok := p.procs[name]
	if !ok {
		var observer recorder.Observer
		if p.cfg.Record != nil {
			observer = p.cfg.Record
		}
		// Each connection's reader reads on as soon as it has passed a
		// response on, so a response can be recorded after it went on.
		proc = recorder.New(name, recorder.Config{Observer: observer, Cluster: p.cfg.Cluster, Logf: p.cfg.Logf,
			AnswersAfterForwarding: true})
		p.procs[name] = proc
	}
	return proc
}

// Processes is the names of the processes, sorted: those that connected,
// and those Process made.
func (p *Proxy) Processes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.procs))
}

// brokerAddr is the proxy's address for the upstream broker at host:port,
// opening a listener for it the first time it is named.
func (p *Proxy) brokerAddr(host string, port int32) (string, int32, error) {
	upstream := net.JoinHostPort(host, strconv.Itoa(int(port)))
	l, err := p.brokerListener(upstream)
	if err != nil {
		return "", 0, err
	}
	h, portText, _ := net.SplitHostPort(l.addr)
	return h, int32(atoi(portText)), nil
}

// brokerListener is the listener for the upstream broker at address
// upstream, opened (or taken from the spare ones) when first asked for.
func (p *Proxy) brokerListener(upstream string) (*listener, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.brokers[upstream]; ok {
		return l, nil
	}
	if p.closed {
		return nil, errors.New("proxy: closed")
	}
	var ln net.Listener
	switch {
	case len(p.spare) > 0:
		ln, p.spare = p.spare[0], p.spare[1:]
	case len(p.cfg.BrokerPorts) > 0:
		return nil, fmt.Errorf("proxy: the cluster names a broker at %s beyond the %d pinned broker ports %v: give one more port",
			upstream, len(p.cfg.BrokerPorts), p.cfg.BrokerPorts)
	default:
		var err error
		addr := net.JoinHostPort(p.host, "0")
		if ln, err = p.cfg.Listener("tcp", addr); err != nil {
			return nil, fmt.Errorf("proxy: listen on %s: %w", addr, err)
		}
	}
	l := p.serve(ln, []string{upstream})
	p.brokers[upstream] = l
	return l, nil
}

// closeSpare closes the listeners bound for brokers never named.
func (p *Proxy) closeSpare() {
	p.mu.Lock()
	spare := p.spare
	p.spare = nil
	p.mu.Unlock()
	for _, ln := range spare {
		ln.Close()
	}
}

func atoi(text string) int {
	n, _ := strconv.Atoi(text)
	return n
}

// listener accepts clients for one upstream address (or, for the
// bootstrap, the first of several that answers).
type listener struct {
	p        *Proxy
	ln       net.Listener
	addr     string
	upstream []string

	mu    sync.Mutex
	conns map[*conn]bool
}

func (p *Proxy) listen(addr string, upstream []string) (*listener, error) {
	ln, err := p.cfg.Listener("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen on %s: %w", addr, err)
	}
	return p.serve(ln, upstream), nil
}

// serve accepts clients on ln for upstream.
func (p *Proxy) serve(ln net.Listener, upstream []string) *listener {
	l := &listener{p: p, ln: ln, addr: ln.Addr().String(), upstream: upstream, conns: map[*conn]bool{}}
	p.wg.Add(1)
	go l.accept()
	return l
}

func (l *listener) accept() {
	defer l.p.wg.Done()
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{l: l, client: client, done: make(chan struct{})}
		l.mu.Lock()
		l.conns[c] = true
		l.mu.Unlock()
		l.p.wg.Add(1)
		go func() {
			defer l.p.wg.Done()
			c.serve()
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
		}()
	}
}

func (l *listener) close() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.cut()
	}
}

// dialUpstream connects to the first of the listener's upstream addresses
// that answers.
func (l *listener) dialUpstream(ctx context.Context, dial recorder.DialFunc) (net.Conn, error) {
	var errs []error
	for _, addr := range l.upstream {
		up, err := dial(ctx, "tcp", addr)
		if err == nil {
			return up, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("proxy: no upstream of %v answered: %w", l.upstream, errors.Join(errs...))
}
