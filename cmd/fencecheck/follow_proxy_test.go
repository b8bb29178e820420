package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/histories"
)

// runningCommand runs a long-running command until the test stops it,
// its stdout kept line by line with the time of each.
type runningCommand struct {
	stdout, stderr *timedLines
	cancel         context.CancelFunc
	code           chan int
	once           sync.Once
	exit           int
}

// startTimed starts a long-running command, and waits for its first n
// lines on stdout.
func startTimed(t *testing.T, n int, args ...string) *runningCommand {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &runningCommand{stdout: &timedLines{}, stderr: &timedLines{}, cancel: cancel, code: make(chan int, 1)}
	old := untilStopped
	untilStopped = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	go func() { c.code <- run(args, c.stdout, c.stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.lines()) < n {
		require.True(t, time.Now().Before(deadline), "%v printed %q; stderr %s", args, c.lines(), c.stderr)
		time.Sleep(10 * time.Millisecond)
	}
	untilStopped = old
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *runningCommand) lines() []string {
	c.stdout.mu.Lock()
	defer c.stdout.mu.Unlock()
	return append([]string(nil), c.stdout.lines...)
}

// stop interrupts the command, and gives its exit status.
func (c *runningCommand) stop() int {
	c.once.Do(func() {
		c.cancel()
		c.exit = <-c.code
	})
	return c.exit
}

// soakClient is the soak test's client (internal/proxy/soak_test.go): a
// transactional producer that commits one record per transaction, as
// fast as it goes, for length; its keys are trip-0, trip-1 and so on.
// With replayAt, that far into the run it produces trip-0 again in a
// transaction that commits: a trip committed twice to one topic, which
// exactly-once reports at that commit.
func soakClient(t *testing.T, addr string, length, replayAt time.Duration) (transactions int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("soak"), kgo.TransactionalID("soak-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), length+30*time.Second)
	defer cancel()
	replayed := replayAt <= 0
	for start := time.Now(); time.Since(start) < length; transactions++ {
		key := fmt.Sprintf("trip-%d", transactions)
		if !replayed && time.Since(start) >= replayAt {
			key, replayed = "trip-0", true
		}
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("a trip")}).FirstErr())
		committed := cl.EndTransaction(ctx, kgo.TryCommit)
		require.NoError(t, committed)
		time.Sleep(time.Millisecond)
	}
	return transactions
}

// liveRun is fencecheck broker, fencecheck proxy --check in front of it,
// and check --follow on the proxy's history beside them.
type liveRun struct {
	t              *testing.T
	addr, path     string
	broker, proxy  *runningCommand
	follow         *timedLines
	followStderr   *timedLines
	stopFollowing  func(time.Duration) int
	proxyCode      int
	followCode     int
	history        histories.History
	stoppedRunning time.Time
}

func startLiveRun(t *testing.T) *liveRun {
	broker := startTimed(t, 1, "broker", "--listen", "127.0.0.1:0")
	brokers, ok := strings.CutPrefix(broker.lines()[0], "fencecheck broker: listening on ")
	require.True(t, ok, broker.lines())
	path := filepath.Join(t.TempDir(), "recorded.json")
	proxy := startTimed(t, 1, "proxy", "--upstream", brokers, "--listen", "127.0.0.1:0", "--control", "",
		"--history", path, "--check")
	addr, ok := strings.CutPrefix(proxy.lines()[0], "fencecheck proxy: listening on ")
	require.True(t, ok, proxy.lines())
	addr, _, _ = strings.Cut(addr, " ")
	follow, followStderr, stopFollowing := following(t, path)
	return &liveRun{t: t, addr: addr, path: path, broker: broker, proxy: proxy,
		follow: follow, followStderr: followStderr, stopFollowing: stopFollowing}
}

// stop stops the proxy and the broker, waits for check --follow to end
// with the document, and loads the history.
func (r *liveRun) stop() {
	r.stoppedRunning = time.Now()
	r.proxyCode = r.proxy.stop()
	require.Equal(r.t, exitHeld, r.broker.stop())
	r.followCode = r.stopFollowing(30 * time.Second)
	var err error
	r.history, err = histories.LoadFile(r.path)
	require.NoError(r.t, err)
}

var violationLine = regexp.MustCompile(`^while following: ([a-z-]+): VIOLATED op ([0-9]+) `)

// reported is when out reported the first violation of check, and how
// long after the operation that made it, which must have ended before
// the run stopped.
func (r *liveRun) reported(out *timedLines, check string) time.Duration {
	line, at, ok := out.first("while following: " + check + ": VIOLATED")
	require.True(r.t, ok, "%s is not reported while following: %s", check, out)
	r.t.Log(line)
	require.True(r.t, at.Before(r.stoppedRunning), "reported while the run goes on")
	id, err := strconv.Atoi(violationLine.FindStringSubmatch(line)[2])
	require.NoError(r.t, err)
	for _, op := range r.history.Ops {
		if op.ID == id {
			require.True(r.t, op.Returned, "op %d", id)
			return at.Sub(time.UnixMilli(op.Return))
		}
	}
	r.t.Fatalf("op %d is not in the history", id)
	return 0
}

// The soak test's client, recorded by fencecheck proxy --check with
// check --follow beside it, commits trip-0 a second time two seconds into
// its run and goes on for three more: both report the violation while
// the run goes on (reported), and the verdicts at the end say the same.
// How long after the commit each report came is logged, not asserted: a
// latency is a measurement, not a test's pass mark.
func TestFollowReportsAnInjectedViolationWhileTheRunGoesOn(t *testing.T) {
	r := startLiveRun(t)
	n := soakClient(t, r.addr, 5*time.Second, 2*time.Second)
	r.stop()
	followed, checked := r.reported(r.follow, "exactly-once"), r.reported(r.proxy.stdout, "exactly-once")
	t.Logf("%d transactions, %d operations; reported %v (check --follow) and %v (proxy --check) after the operation",
		n, len(r.history.Ops), followed.Round(time.Millisecond), checked.Round(time.Millisecond))
	require.Equal(t, exitViolated, r.followCode, r.follow.String())
	require.Equal(t, exitViolated, r.proxyCode, r.proxy.stdout.String())
	for _, out := range []*timedLines{r.follow, r.proxy.stdout} {
		require.Contains(t, out.String(), "\nexactly-once: VIOLATED", "the verdicts at the end")
		require.Contains(t, out.String(), "\nlinearizable: ok")
	}
}

// The same client with no violation, followed live: nothing is reported
// while following, and every check holds at the end.
func TestFollowReportsNothingOnACorrectRecording(t *testing.T) {
	r := startLiveRun(t)
	soakClient(t, r.addr, 3*time.Second, 0)
	r.stop()
	for _, out := range []*timedLines{r.follow, r.proxy.stdout} {
		require.NotContains(t, out.String(), "while following", out.String())
		for _, check := range []string{"linearizable", "one-live-producer", "exactly-once", "no-aborted-read", "offsets-monotonic", "error-codes"} {
			require.Contains(t, "\n"+out.String(), "\n"+check+": ok", out.String())
		}
	}
	require.Equal(t, exitHeld, r.followCode, r.followStderr.String())
	require.Equal(t, exitHeld, r.proxyCode, r.proxy.stderr.String())
	require.Greater(t, len(r.history.Ops), 100)
}

// proxy --check needs --history; a proxy that cannot start says why,
// and its judge says nothing.
func TestProxyCheckFlagErrors(t *testing.T) {
	code, _, errOut := runCLI("proxy", "--upstream", "a:1", "--check")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--check judges the history being written: give --history FILE too")

	code, out, errOut := runCLI("proxy", "--upstream", "a:1", "--check", "--history", filepath.Join(t.TempDir(), "h.json"),
		"--control", "nowhere", "--listen", "127.0.0.1:0")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "the control API")
	require.NotContains(t, out, "linearizable")
	require.NotContains(t, errOut, "fencecheck check")
}
