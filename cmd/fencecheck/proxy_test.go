package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// started runs a long-running command until the test ends, and returns
// the first line it prints and a function that stops it and gives its
// exit status.
func started(t *testing.T, args ...string) (first string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := untilStopped
	untilStopped = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	r, w := io.Pipe()
	code := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		code <- run(args, w, &errOut)
		w.CloseWithError(io.EOF)
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	untilStopped = old
	require.NoError(t, err)
	go io.Copy(io.Discard, r)
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
	return strings.TrimSpace(line), stop
}

// The README's try-it-with-nothing-installed path: fencecheck broker,
// fencecheck proxy in front of it, a transactional client through the
// proxy; both commands stop cleanly when interrupted.
func TestBrokerAndProxyCommands(t *testing.T) {
	line, stopBroker := started(t, "broker", "--listen", "127.0.0.1:0")
	brokers, ok := strings.CutPrefix(line, "fencecheck broker: listening on ")
	require.True(t, ok, line)
	require.Len(t, strings.Split(brokers, ","), brokerCount)

	line, stopProxy := started(t, "proxy", "--upstream", brokers, "--listen", "127.0.0.1:0")
	addr, ok := strings.CutPrefix(line, "fencecheck proxy: listening on ")
	require.True(t, ok, line)
	addr, _, _ = strings.Cut(addr, " ")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("fare-writer-0"), kgo.DefaultProduceTopic("fares"),
		kgo.ConsumeTopics("fares"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("trip-101")).FirstErr())
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	fetches := cl.PollFetches(ctx)
	require.NoError(t, ctx.Err())
	require.Equal(t, "trip-101", string(fetches.Records()[0].Value))
	cl.Close()

	require.Equal(t, exitHeld, stopProxy())
	require.Equal(t, exitHeld, stopBroker())
}

func TestProxyAndBrokerFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"proxy"}, "--upstream host:port,... is required"},
		{[]string{"proxy", "--upstream", "nowhere"}, `upstream "nowhere" is not host:port`},
		{[]string{"proxy", "--upstream", "a:1", "extra"}, "unexpected arguments"},
		{[]string{"broker", "--listen", "localhost"}, `--listen "localhost" is not host:port`},
		{[]string{"broker", "--listen", "localhost:70000"}, "the port must be 0 to 65532"},
	} {
		code, _, errOut := runCLI(tc.args...)
		require.Equal(t, exitUsage, code, "%v", tc.args)
		require.Contains(t, errOut, tc.says, "%v", tc.args)
	}
}
