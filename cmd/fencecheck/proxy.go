package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/internal/proxy"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
)

// untilStopped is the context the long-running commands (proxy, broker)
// run under: done at SIGINT or SIGTERM.
var untilStopped = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("proxy", "A Kafka-protocol proxy for any client, in any language: point the client at\n"+
		"--listen instead of the cluster. Every broker address the client learns is\n"+
		"rewritten to one of the proxy's listeners (one per broker, on --listen's\n"+
		"host), and every other frame is forwarded byte for byte. Frames it cannot\n"+
		"read are forwarded untouched and logged on stderr as not understood.\n"+
		"Plain TCP only (no TLS or SASL to the upstream yet).\n\n"+
		"The brokers' listeners take any free ports, or, with --broker-ports, the\n"+
		"ports given, bound at start (for a firewall rule): the first broker the\n"+
		"cluster names gets the first port, and so on. Give as many ports as the\n"+
		"cluster has brokers, as --broker-ports 19093-19095 for three. A broker\n"+
		"named beyond them is logged and cannot be reached through the proxy.\n\n"+
		"With --history, what every client does is written to FILE as a history\n"+
		"(docs/history-format.md) as the run goes, each client a process named by\n"+
		"its client.id; "+
		"'fencecheck check FILE' judges it. --control serves the HTTP control API that\n"+
		"faults a process by name (stall, wake, crash, restart, lose-response, delay)\n"+
		"or pauses the upstream; --faults runs a seeded schedule of the same faults\n"+
		"unattended. It prints its addresses on stdout and runs until\n"+
		"interrupted; the history is a whole document once it stops.\n\n"+
		"With --check, the proxy judges the history as it writes it, as\n"+
		"'fencecheck check --follow FILE' does beside it: each check's first\n"+
		"violation is printed on stdout as 'while following: ...' while the run goes\n"+
		"on, and the verdicts once it stops. The exit status is then check's.\n\n"+
		"One proxy session records one history, and a history is judged from an\n"+
		"empty cluster. For another run, stop the proxy and start the cluster\n"+
		"afresh (or use new topics, groups and transactional ids), then start the\n"+
		"proxy again. A second run through one session joins the first's history:\n"+
		"its trips count twice, and exactly-once reports a violation no run made.\n"+
		"The proxy warns on stderr when it sees a trip produced again, or a\n"+
		"partition's first produce land past offset 0.\n", stderr)
	upstream := fs.String("upstream", "", "the cluster's bootstrap addresses, `host:port,...`")
	listen := fs.String("listen", "127.0.0.1:19092", "the proxy's bootstrap address, `host:port` (port 0 picks one)")
	brokerPorts := fs.String("broker-ports", "", "pin the brokers' listeners to these `ports`, one per broker, as 19093-19095 or 19093,19094,19095 (default any free ports)")
	historyPath := fs.String("history", "", "write the clients' history to `FILE` as the run goes")
	check := fs.Bool("check", false, "with --history: judge the history while it is written, print each check's first violation as soon as it shows, and the verdicts at the end (exit status as check's)")
	keysFrom := fs.String("keys-from", "", "with --history: the keys produced to `TOPIC` are the trips every other topic must see committed exactly once")
	control := fs.String("control", "127.0.0.1:19080", "serve the control API on `host:port` (\"\": none)")
	faults := fs.String("faults", "", "a seeded schedule of faults, `KIND=EVERY,...`: each KIND (stall, crash, lose-response, delay, pause) once every EVERY on average, as stall=30s,crash=2m")
	faultLength := fs.Duration("fault-length", 10*time.Second, "with --faults: how long a stall, crash, delay or pause lasts")
	faultProcs := fs.String("fault-procs", "", "with --faults: a `regexp` the names of the processes faults strike match (default every process)")
	seed := fs.Uint64("seed", 1, "with --faults: the seed the schedule is drawn from")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "fencecheck proxy: "+format+"\n", args...)
		return exitUsage
	}
	switch {
	case *upstream == "":
		return fail("--upstream host:port,... is required")
	case *keysFrom != "" && *historyPath == "":
		return fail("--keys-from names the trips of a history: give --history FILE too")
	case *check && *historyPath == "":
		return fail("--check judges the history being written: give --history FILE too")
	}
	schedule, err := parseSchedule(*faults, *faultLength, *faultProcs, *seed)
	if err != nil {
		return fail("%v", err)
	}
	var ports []int
	if *brokerPorts != "" {
		if ports, err = proxy.ParsePorts(*brokerPorts); err != nil {
			return fail("--broker-ports: %v", err)
		}
	}
	logf := linesTo(stderr, "fencecheck proxy: ")
	cfg := proxy.Config{Upstream: strings.Split(*upstream, ","), Listen: *listen, BrokerPorts: ports, Logf: logf}
	var rec *recording
	if *historyPath != "" {
		var err error
		if rec, err = startRecording(*historyPath, *keysFrom, logf); err != nil {
			return fail("%v", err)
		}
		cfg.Record = rec
	}
	stdout = lockedWriter{stdout, &sync.Mutex{}}
	judge := startJudging(*check, *historyPath, stdout, stderr)
	code := serveProxy(cfg, *control, schedule, stdout, logf)
	if code != exitHeld {
		judge.cancel() // the proxy never ran
	}
	if rec != nil {
		if err := rec.close(); err != nil {
			judge.cancel()
			return fail("%v", err)
		}
		fmt.Fprintf(stdout, "fencecheck proxy: history written to %s\n", *historyPath)
	}
	// The document is ended, so the judge reads its end, and judges it
	// whole.
	return max(code, judge.wait())
}

// judging is proxy --check's judge of the history being written, as
// check --follow judges it.
type judging struct {
	stop   context.CancelFunc
	judged chan int
	out    *muted
}

// startJudging starts the judge when check is set.
func startJudging(check bool, path string, stdout, stderr io.Writer) *judging {
	if !check {
		return &judging{}
	}
	ctx, stop := context.WithCancel(context.Background())
	j := &judging{stop: stop, judged: make(chan int, 1), out: &muted{}}
	go func() {
		j.judged <- followFile(ctx, path, checkFlags{timeout: checker.DefaultTimeout}, j.out.to(stdout), j.out.to(stderr))
	}()
	return j
}

// cancel stops the judge, which then says nothing more.
func (j *judging) cancel() {
	if j.stop == nil {
		return
	}
	j.out.mute()
	j.stop()
}

// wait is the judge's exit status once it is done: check's for the whole
// history, or exitHeld when there is no judge or it was cancelled.
func (j *judging) wait() int {
	if j.stop == nil {
		return exitHeld
	}
	code := <-j.judged
	if j.out.isMuted() {
		return exitHeld
	}
	return code
}

// muted silences writers once muted.
type muted struct {
	mu    sync.Mutex
	quiet bool
}

func (m *muted) mute() {
	m.mu.Lock()
	m.quiet = true
	m.mu.Unlock()
}

func (m *muted) isMuted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.quiet
}

func (m *muted) to(w io.Writer) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.quiet {
			return len(b), nil
		}
		return w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// linesTo is a log function writing a line to w, after prefix, a line at
// a time: connections log from goroutines of their own.
func linesTo(w io.Writer, prefix string) func(format string, args ...any) {
	locked := lockedWriter{w, &sync.Mutex{}}
	return func(format string, args ...any) { fmt.Fprintf(locked, prefix+format+"\n", args...) }
}

// parseSchedule is the --faults schedule, nil without one.
func parseSchedule(faults string, length time.Duration, procs string, seed uint64) (*proxy.Schedule, error) {
	if faults == "" {
		return nil, nil
	}
	every, err := proxy.ParseFaults(faults)
	if err != nil {
		return nil, fmt.Errorf("--faults: %w", err)
	}
	if length < time.Millisecond || length > time.Hour {
		return nil, fmt.Errorf("--fault-length %v: give a duration from 1ms to 1h", length)
	}
	s := &proxy.Schedule{Every: every, Length: length, Seed: seed}
	if procs != "" {
		if s.Procs, err = regexp.Compile(procs); err != nil {
			return nil, fmt.Errorf("--fault-procs: %w", err)
		}
	}
	return s, nil
}

// serveProxy runs the proxy, its control API on control unless that is
// "", and the schedule of faults if any, until interrupted; the proxy is
// closed when it returns, so that what was in flight is recorded as
// never answered.
func serveProxy(cfg proxy.Config, control string, schedule *proxy.Schedule, stdout io.Writer, logf func(string, ...any)) int {
	p, err := proxy.New(cfg)
	if err != nil {
		logf("%v", err)
		return exitUsage
	}
	defer p.Close()
	ctx, stop := untilStopped()
	defer stop()
	fmt.Fprintf(stdout, "fencecheck proxy: listening on %s for %s\n", p.Addr(), strings.Join(cfg.Upstream, ","))
	if control != "" {
		ln, err := net.Listen("tcp", control)
		if err != nil {
			logf("the control API: %v", err)
			return exitUsage
		}
		server := &http.Server{Handler: p.Control(), ReadHeaderTimeout: 10 * time.Second}
		go server.Serve(ln)
		defer server.Close()
		fmt.Fprintf(stdout, "fencecheck proxy: control API on http://%s\n", ln.Addr())
	}
	if schedule != nil {
		go p.RunSchedule(ctx, *schedule)
	}
	<-ctx.Done()
	return exitHeld
}

func runBroker(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("broker", "The embedded Kafka-protocol cluster (franz-go's kfake, three brokers, with\n"+
		"fencecheck's topics), on real ports until interrupted, so that a client,\n"+
		"'fencecheck proxy' or 'fencecheck run --target kafka' can be tried with\n"+
		"nothing installed. The brokers listen on --listen's port and the two after\n"+
		"it (port 0: any free ports). The first line on stdout gives their\n"+
		"addresses, the second the 'fencecheck run' command that explores them\n"+
		"(with --known kfake: kfake's known divergences from Kafka are counted,\n"+
		"not failed). Its data lives in memory.\n\n"+
		"Each connection is guarded: a frame whose size prefix is below 8 bytes or\n"+
		"above 100 MiB (Kafka's socket.request.max.bytes), or whose API key is\n"+
		"unknown, closes that connection, with a line on stderr naming the client\n"+
		"and the frame. The cluster goes on. kfake alone would crash on the unknown\n"+
		"key, and would allocate whatever size the prefix claims.\n", stderr)
	listen := fs.String("listen", "127.0.0.1:9092", "the first broker's address, `host:port`")
	scale := fs.Float64("time-scale", kafka.DefaultTimeScale, "the --time-scale of the runs that explore it, above 0 and at most 1: the KIP-848 session (group.consumer.session.timeout.ms) is a broker setting, set to the scaled 45 s")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if *scale <= 0 || *scale > 1 {
		fmt.Fprintf(stderr, "fencecheck broker: --time-scale must be above 0 and at most 1, got %v\n", *scale)
		return exitUsage
	}
	cluster, err := kafka.StartListening(*listen, workload.Topics, *scale, linesTo(stderr, "fencecheck broker: "))
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck broker: --listen %v\n", err)
		return exitUsage
	}
	ctx, stop := untilStopped()
	defer stop()
	addrs := cluster.ListenAddrs()
	fmt.Fprintf(stdout, "fencecheck broker: listening on %s\n", strings.Join(addrs, ","))
	scaled := ""
	if *scale != kafka.DefaultTimeScale {
		scaled = fmt.Sprintf(" --time-scale %g", *scale)
	}
	fmt.Fprintf(stdout, "fencecheck broker: explore it with: fencecheck run --target kafka --brokers %s --known %s%s\n", addrs[0], kafka.KfakeKnown, scaled)
	<-ctx.Done()
	cluster.Close()
	return exitHeld
}
