package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/kafka"
)

// started runs a long-running command until the test ends, and returns
// the first line it prints and a function that stops it and gives its
// exit status.
func started(t *testing.T, args ...string) (first string, stop func() int) {
	lines, stop := startedLines(t, 1, args...)
	return lines[0], stop
}

// startedLines is started, for a command whose first n lines matter; what
// it prints after them is in the stop's output.
func startedLines(t *testing.T, n int, args ...string) (lines []string, stop func() int) {
	t.Helper()
	lines, _, stop = startedLogging(t, n, args...)
	return lines, stop
}

// startedLogging is startedLines, with what the command has written to
// stderr so far.
func startedLogging(t *testing.T, n int, args ...string) (lines []string, stderr func() string, stop func() int) {
	t.Helper()
	var errMu sync.Mutex
	var errOut strings.Builder
	stderr = func() string {
		errMu.Lock()
		defer errMu.Unlock()
		return errOut.String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	old := untilStopped
	untilStopped = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	r, w := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(args, w, lockedWriter{&errOut, &errMu})
		w.CloseWithError(io.EOF)
	}()
	out := bufio.NewReader(r)
	for range n {
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		lines = append(lines, strings.TrimSpace(line))
	}
	untilStopped = old
	go io.Copy(io.Discard, out)
	var stopped bool
	stop = func() int {
		if !stopped {
			stopped = true
			cancel()
		}
		return <-code
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return lines, stderr, stop
}

// The README's try-it-with-nothing-installed path: fencecheck broker,
// fencecheck proxy in front of it, a transactional client through the
// proxy; both commands stop cleanly when interrupted.
func TestBrokerAndProxyCommands(t *testing.T) {
	line, stopBroker := started(t, "broker", "--listen", "127.0.0.1:0")
	brokers, ok := strings.CutPrefix(line, "fencecheck broker: listening on ")
	require.True(t, ok, line)
	require.Len(t, strings.Split(brokers, ","), kafka.ListenBrokers)

	line, stopProxy := started(t, "proxy", "--upstream", brokers, "--listen", "127.0.0.1:0", "--control", "")
	addr, ok := strings.CutPrefix(line, "fencecheck proxy: listening on ")
	require.True(t, ok, line)
	addr, _, _ = strings.Cut(addr, " ")

	commitAndReadBack(t, addr)

	require.Equal(t, exitHeld, stopProxy())
	require.Equal(t, exitHeld, stopBroker())
}

func TestProxyAndBrokerFlagErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"proxy"}, "--upstream host:port,... is required"},
		{[]string{"proxy", "--upstream", "nowhere"}, `upstream "nowhere" is not host:port`},
		{[]string{"proxy", "--upstream", "a:1", "extra"}, "unexpected arguments"},
		{[]string{"proxy", "--upstream", "a:1", "--keys-from", "trips"}, "give --history FILE too"},
		{[]string{"proxy", "--upstream", "a:1", "--history", "/nonexistent/dir/h.json"}, "no such file or directory"},
		{[]string{"proxy", "--upstream", "a:1", "--control", "nowhere", "--listen", "127.0.0.1:0"}, "the control API"},
		{[]string{"proxy", "--upstream", "a:1", "--faults", "stall"}, "--faults: \"stall\": give KIND=EVERY"},
		{[]string{"proxy", "--upstream", "a:1", "--faults", "stall=1s", "--fault-length", "0s"}, "--fault-length 0s: give a duration from 1ms to 1h"},
		{[]string{"proxy", "--upstream", "a:1", "--faults", "stall=1s", "--fault-procs", "("}, "--fault-procs: error parsing regexp"},
		{[]string{"proxy", "--upstream", "a:1", "--broker-ports", "19093-70000"}, `--broker-ports: "19093-70000": port "70000" is not a number from 1 to 65535`},
		{[]string{"proxy", "--upstream", "a:1", "--broker-ports", "19095-19093"}, "a range goes from its lower port to its higher"},
		{[]string{"proxy", "--upstream", "a:1", "--listen", "127.0.0.1:0", "--control", "", "--broker-ports", takenPort}, "a broker's listener on 127.0.0.1:" + takenPort},
		{[]string{"broker", "--listen", "localhost"}, `--listen "localhost" is not host:port`},
		{[]string{"broker", "--listen", "localhost:70000"}, "the port must be 0 to 65532"},
		{[]string{"broker", "--time-scale", "0"}, "--time-scale must be above 0 and at most 1, got 0"},
	} {
		code, _, errOut := runCLI(tc.args...)
		require.Equal(t, exitUsage, code, "%v", tc.args)
		require.Contains(t, errOut, tc.says, "%v", tc.args)
	}
}

// recordedRun is fencecheck broker, and fencecheck proxy in front of it
// recording into a history whose trips are the keys produced to trips.
type recordedRun struct {
	t                     *testing.T
	addr, control, path   string
	stderr                func() string // the proxy's, so far
	stopProxy, stopBroker func() int
}

func startRecordedRun(t *testing.T) *recordedRun {
	line, stopBroker := started(t, "broker", "--listen", "127.0.0.1:0")
	brokers, ok := strings.CutPrefix(line, "fencecheck broker: listening on ")
	require.True(t, ok, line)
	path := filepath.Join(t.TempDir(), "recorded.json")
	lines, stderr, stopProxy := startedLogging(t, 2, "proxy", "--upstream", brokers, "--listen", "127.0.0.1:0",
		"--control", "127.0.0.1:0", "--history", path, "--keys-from", "trips")
	addr, ok := strings.CutPrefix(lines[0], "fencecheck proxy: listening on ")
	require.True(t, ok, lines[0])
	addr, _, _ = strings.Cut(addr, " ")
	control, ok := strings.CutPrefix(lines[1], "fencecheck proxy: control API on ")
	require.True(t, ok, lines[1])
	return &recordedRun{t: t, addr: addr, control: control, path: path, stderr: stderr, stopProxy: stopProxy, stopBroker: stopBroker}
}

// produceTrips writes trip-0 ... trip-(n-1) to trips, as client
// trip-source.
func (r *recordedRun) produceTrips(ctx context.Context, n int) {
	src, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.ClientID("trip-source"), kgo.DefaultProduceTopic("trips"))
	require.NoError(r.t, err)
	defer src.Close()
	for i := range n {
		require.NoError(r.t, src.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Value: []byte("a trip")}).FirstErr())
	}
}

// check stops the proxy and the broker and checks the history, with
// fencecheck check's flags args.
func (r *recordedRun) check(args ...string) (code int, verdicts string) {
	require.Equal(r.t, exitHeld, r.stopProxy())
	require.Equal(r.t, exitHeld, r.stopBroker())
	code, out, errOut := runCLI(append(append([]string{"check"}, args...), r.path)...)
	require.Empty(r.t, errOut)
	return code, out
}

// fareWorker is franz-go's exactly-once loop (GroupTransactSession) on
// trips, writing a fare per trip to fares: through its transaction, or,
// misconfigured, with a producer of its own outside it. It aborts its
// first transaction, whose trips it then processes again.
func fareWorker(t *testing.T, ctx context.Context, addr string, trips int, outsideTxn bool) {
	gts, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.ClientID("fare-worker-1"), kgo.TransactionalID("fare-worker-1"),
		kgo.ConsumerGroup("fare-workers"), kgo.ConsumeTopics("trips"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets())
	require.NoError(t, err)
	defer gts.Close()
	produce := gts.ProduceSync
	if outsideTxn {
		plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("fare-writer-outside"))
		require.NoError(t, err)
		defer plain.Close()
		produce = plain.ProduceSync
	}
	for done, aborted := 0, false; done < trips; {
		fetches := gts.PollRecords(ctx, 5)
		require.NoError(t, ctx.Err())
		if fetches.Empty() {
			continue
		}
		require.NoError(t, gts.Begin())
		fetches.EachRecord(func(r *kgo.Record) {
			require.NoError(t, produce(ctx, &kgo.Record{Topic: "fares", Key: r.Key, Value: []byte("a fare")}).FirstErr())
		})
		commit := kgo.TryCommit
		if !aborted {
			commit, aborted = kgo.TryAbort, true
		}
		committed, err := gts.End(ctx, commit)
		require.NoError(t, err)
		if committed {
			done += fetches.NumRecords()
		}
	}
}

// A pipeline run through the proxy, recorded there: franz-go's own
// exactly-once loop on a correct broker keeps every promise, each check
// says ok; the same loop writing its fares outside its transaction is
// caught by exactly-once (the aborted round's fares stay, and its trips
// are processed again).
func TestProxyRecordsAPipelineForCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		outsideTxn bool
		want       []string
	}{
		{"in its transaction", false, []string{"linearizable: ok", "one-live-producer: ok", "exactly-once: ok",
			"no-aborted-read: ok", "offsets-monotonic: ok", "progress: ok", "error-codes: ok"}},
		{"outside its transaction", true, []string{"exactly-once: VIOLATED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := startRecordedRun(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			run.produceTrips(ctx, 20)
			fareWorker(t, ctx, run.addr, 20, tc.outsideTxn)
			require.NotContains(t, run.stderr(), "warning:")
			code, verdicts := run.check()
			for _, line := range tc.want {
				require.Contains(t, verdicts, line)
			}
			if tc.outsideTxn {
				require.Equal(t, exitViolated, code, verdicts)
			} else {
				require.Equal(t, exitHeld, code, verdicts)
			}
		})
	}
}

// The by-address journey: 'fencecheck broker' prints the run command that
// explores it, and that command holds on a correct configuration, kfake's
// known divergences from Kafka counted. It runs at five times the default
// --time-scale: a cluster by address runs its timers on the wall clock, and
// at the default a worker starved for a few hundred milliseconds, beside
// other test suites on two cores, let the broker time out a transaction
// that the model kept open.
func TestRunExploresTheBrokerCommand(t *testing.T) {
	lines, _ := startedLines(t, 2, "broker", "--listen", "127.0.0.1:0", "--time-scale", "0.05")
	command, ok := strings.CutPrefix(lines[1], "fencecheck broker: explore it with: fencecheck ")
	require.True(t, ok, lines[1])
	require.Contains(t, command, "--time-scale 0.05")
	args := append(strings.Fields(command), "--checks", "10", "--seed", "5", "--shrink-time", "10s")
	require.Contains(t, args, "kfake")
	code, out, errOut := runCLI(args...)
	require.Equal(t, exitHeld, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "no violation of safety or progress over 10 interleavings")
	require.Contains(t, out, "known finding ")
	require.NotContains(t, out, "broker restarts")
}
