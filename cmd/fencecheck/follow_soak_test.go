//go:build soak

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/fencecheck/fencecheck/histories"
)

// TestSoakFollowReportsAnInjectedViolation is
// TestFollowReportsAnInjectedViolationWhileTheRunGoesOn for FENCECHECK_SOAK
// (default 1m): the soak test's client through fencecheck proxy --check,
// check --follow beside it, trip-0 committed again a third of the run (at
// least 20 s) before its end.
// exactly-once is judged on the cut of every operation so far, again and
// again, so its delay grows with the recording: it logs the delay, and
// requires only that the violation be reported while the run goes on. It
// runs only with -tags soak, and .ci/run does not run it:
//
//	FENCECHECK_SOAK=5m go test -tags soak -run SoakFollow -v -timeout 1h ./cmd/fencecheck/
func TestSoakFollowReportsAnInjectedViolation(t *testing.T) {
	length := soakLength(t)
	r := startLiveRun(t)
	n := soakClient(t, r.addr, length, length-max(20*time.Second, length/3))
	r.stop()
	followed, checked := r.reported(r.follow, "exactly-once"), r.reported(r.proxy.stdout, "exactly-once")
	t.Logf("%v: %d transactions, %d operations; reported %v (check --follow) and %v (proxy --check) after the operation",
		length, n, len(r.history.Ops), followed.Round(time.Millisecond), checked.Round(time.Millisecond))
	t.Logf("check --follow's progress:\n%s", r.followStderr)
}

// TestSoakFollowReportsAnOffsetRegression: the soak test's client, as in
// TestSoakFollowReportsAnInjectedViolation, and beside it a consumer group
// whose offset is committed backwards a third of the run (at least 20 s)
// before its end. offsets-monotonic is a fold that names a backward commit
// as soon as it is handed on, so its delay does not grow with the
// recording. It logs the delay:
//
//	FENCECHECK_SOAK=2m go test -tags soak -run SoakFollowReportsAnOffset -v -timeout 1h ./cmd/fencecheck/
func TestSoakFollowReportsAnOffsetRegression(t *testing.T) {
	length := soakLength(t)
	r := startLiveRun(t)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		time.Sleep(length - max(20*time.Second, length/3))
		// OffsetCommit before v10, which names topics by id.
		cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.ClientID("offsets"), kgo.MaxVersions(kversion.V3_9_0()))
		if !assert(t, err) {
			return
		}
		defer cl.Close()
		// The proxy reads a partition's name from the metadata its
		// clients fetch.
		meta := kmsg.NewPtrMetadataRequest()
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("trips")
		meta.Topics = append(meta.Topics, topic)
		if _, err := meta.RequestWith(context.Background(), cl); !assert(t, err) {
			return
		}
		for i, offset := range []int64{10, 5} {
			if i > 0 {
				// The clock counts milliseconds: the second is called
				// after the first returned only on a later one.
				time.Sleep(10 * time.Millisecond)
			}
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = "soak-offsets", -1
			topic := kmsg.NewOffsetCommitRequestTopic()
			topic.Topic = "trips"
			part := kmsg.NewOffsetCommitRequestTopicPartition()
			part.Partition, part.Offset = 0, offset
			topic.Partitions = append(topic.Partitions, part)
			req.Topics = append(req.Topics, topic)
			resp, err := req.RequestWith(context.Background(), cl)
			if !assert(t, err) {
				return
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Errorf("offset %d committed with error code %d", offset, code)
				return
			}
		}
	}()
	n := soakClient(t, r.addr, length, 0)
	<-committed
	r.stop()
	followed, checked := r.reported(r.follow, "offsets-monotonic"), r.reported(r.proxy.stdout, "offsets-monotonic")
	t.Logf("%v: %d transactions, %d operations; reported %v (check --follow) and %v (proxy --check) after the operation",
		length, n, len(r.history.Ops), followed.Round(time.Millisecond), checked.Round(time.Millisecond))
	t.Logf("check --follow's progress:\n%s", r.followStderr)
}

// soakLength is FENCECHECK_SOAK, 1m by default.
func soakLength(t *testing.T) time.Duration {
	length := time.Minute
	if v := os.Getenv("FENCECHECK_SOAK"); v != "" {
		var err error
		length, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	require.Greater(t, length, 15*time.Second, "FENCECHECK_SOAK")
	return length
}

// faultedClients runs, for length, the soak test's client, taking its
// errors in its stride (a lost answer, a delayed request), and a reader
// of what it writes, which sees records whose produce is still in
// flight.
func faultedClients(t *testing.T, addr string, length time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("soak"), kgo.TransactionalID("soak-0"),
			kgo.DefaultProduceTopic("trips"), kgo.RequestTimeoutOverhead(time.Second), kgo.TransactionTimeout(5*time.Second),
			kgo.ProduceRequestTimeout(2*time.Second), kgo.RecordDeliveryTimeout(3*time.Second))
		if !assert(t, err) {
			return
		}
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			if cl.BeginTransaction() != nil {
				continue
			}
			err := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Value: []byte("a trip")}).FirstErr()
			commit := kgo.TryCommit
			if err != nil {
				commit = kgo.TryAbort
			}
			end, endCancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = cl.EndTransaction(end, commit)
			endCancel()
		}
	}()
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("reader"), kgo.ConsumeTopics("trips"),
			kgo.FetchMaxWait(100*time.Millisecond))
		if !assert(t, err) {
			return
		}
		defer cl.Close()
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	wg.Wait()
}

func assert(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestSoakFollowUnderFaults: under the proxy's faults (answers lost,
// requests delayed) for FENCECHECK_SOAK (default 1m), with a reader of
// what the soak test's client writes, whatever is reported while
// following the whole history shows too: each check reported then is
// violated in the verdicts at the end.
//
//	FENCECHECK_SOAK=5m go test -tags soak -run SoakFollowUnderFaults -v -timeout 1h ./cmd/fencecheck/
func TestSoakFollowUnderFaults(t *testing.T) {
	length := soakLength(t)
	broker := startTimed(t, 1, "broker", "--listen", "127.0.0.1:0")
	brokers, _ := strings.CutPrefix(broker.lines()[0], "fencecheck broker: listening on ")
	path := filepath.Join(t.TempDir(), "recorded.json")
	proxy := startTimed(t, 1, "proxy", "--upstream", brokers, "--listen", "127.0.0.1:0", "--control", "",
		"--history", path, "--check", "--faults", "lose-response=300ms,delay=500ms", "--fault-length", "700ms", "--seed", "3")
	addr, _ := strings.CutPrefix(proxy.lines()[0], "fencecheck proxy: listening on ")
	addr, _, _ = strings.Cut(addr, " ")
	follow, _, stopFollowing := following(t, path)
	faultedClients(t, addr, length)
	proxyCode := proxy.stop()
	require.Equal(t, exitHeld, broker.stop())
	followCode := stopFollowing(30 * time.Second)
	h, err := histories.LoadFile(path)
	require.NoError(t, err)
	unanswered := 0
	for _, op := range h.Ops {
		if !op.Returned && op.Kind.IsRequest() {
			unanswered++
		}
	}
	t.Logf("%d operations, %d never answered; exit %d (check --follow), %d (proxy --check)\n%s", len(h.Ops), unanswered, followCode, proxyCode, follow)
	require.Positive(t, unanswered, "the faults left requests in flight")
	for _, out := range []*timedLines{follow, proxy.stdout} {
		for _, line := range strings.Split(out.String(), "\n") {
			if m := violationLine.FindStringSubmatch(line); m != nil {
				require.Contains(t, "\n"+out.String(), "\n"+m[1]+": VIOLATED", "reported while following, so violated at the end: %s", out)
			}
		}
	}
}
