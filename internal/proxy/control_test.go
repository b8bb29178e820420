package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/histories"
)

// control is the control API of a recording proxy in front of a kfake
// cluster, and the franz-go producer fare-writer through it.
type control struct {
	t        *testing.T
	p        *Proxy
	api      *httptest.Server
	rec      *histories.Recorder
	producer *kgo.Client
}

func startControl(t *testing.T) *control {
	cluster := startCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	api := httptest.NewServer(p.Control())
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"), kgo.TransactionalID("fare-writer-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	t.Cleanup(func() { producer.Close(); api.Close(); p.Close() })
	return &control{t: t, p: p, api: api, rec: rec, producer: producer}
}

// call sends method path to the API and decodes its JSON answer.
func (c *control) call(method, path string) (status int, body any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.api.URL+path, nil)
	require.NoError(c.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.NoError(c.t, json.Unmarshal(raw, &body), "%s", raw)
	return resp.StatusCode, body
}

// state is what GET /processes says of the process name.
func (c *control) state(name string) any {
	_, list := c.call("GET", "/processes")
	for _, p := range list.([]any) {
		if p.(map[string]any)["name"] == name {
			return p.(map[string]any)["state"]
		}
	}
	return nil
}

// committed begins a transaction, produces a trip and commits it, in
// the background; the channel gets the commit's error.
func (c *control) committed() <-chan error {
	ended := make(chan error, 1)
	ctx := context.Background()
	require.NoError(c.t, c.producer.BeginTransaction())
	require.NoError(c.t, c.producer.ProduceSync(ctx, &kgo.Record{Value: []byte("trip-0")}).FirstErr())
	go func() { ended <- c.producer.EndTransaction(ctx, kgo.TryCommit) }()
	return ended
}

func (c *control) faults() []string {
	var out []string
	for _, op := range c.rec.History().Ops {
		if op.Kind.IsFault() {
			out = append(out, op.Proc+" "+string(op.Kind))
		}
	}
	return out
}

// A test suite stalls a process by name through the API, and wakes it:
// its commit waits meanwhile, and both faults are in the history.
func TestControlStallsAndWakesAProcess(t *testing.T) {
	c := startControl(t)
	require.NoError(t, c.producer.Ping(context.Background()))
	status, list := c.call("GET", "/processes")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{map[string]any{"name": "fare-writer", "state": "running"}}, list)

	require.NoError(t, c.producer.BeginTransaction())
	status, _ = c.call("POST", "/processes/fare-writer/stall")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "stalled", c.state("fare-writer"))
	commit := make(chan error, 1)
	go func() {
		commit <- c.producer.ProduceSync(context.Background(), &kgo.Record{Value: []byte("trip-0")}).FirstErr()
	}()
	requireHeld(t, commit, "a stalled process's produce")
	status, _ = c.call("POST", "/processes/fare-writer/wake")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, <-commit)
	require.NoError(t, c.producer.EndTransaction(context.Background(), kgo.TryCommit))
	require.Equal(t, []string{"fare-writer stall", "fare-writer wake"}, c.faults())
}

// A pause of the whole upstream holds every process for its duration, and
// is recorded as a stall and a wake of process "upstream".
func TestControlPausesTheUpstream(t *testing.T) {
	c := startControl(t)
	require.NoError(t, c.producer.Ping(context.Background()))
	status, _ := c.call("POST", "/upstream/pause?for=400ms")
	require.Equal(t, http.StatusOK, status)
	status, body := c.call("POST", "/upstream/pause?for=400ms")
	require.Equal(t, http.StatusConflict, status, "%v", body)
	start := time.Now()
	require.NoError(t, <-c.committed())
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "held by the pause")
	require.Eventually(t, func() bool { return len(c.faults()) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"upstream stall", "upstream wake"}, c.faults())
}

// What the API cannot do is answered with an error that says why, and
// nothing is recorded.
func TestControlErrors(t *testing.T) {
	c := startControl(t)
	require.NoError(t, c.producer.Ping(context.Background()))
	for _, tc := range []struct {
		path   string
		status int
		says   string
	}{
		{"/processes/fare-writer/explode", http.StatusBadRequest, `no fault "explode"`},
		{"/processes/nobody/stall", http.StatusNotFound, `no process "nobody" has connected; the processes are [fare-writer]`},
		{"/processes/fare-writer/delay", http.StatusBadRequest, `for="": give a duration`},
		{"/processes/fare-writer/delay?for=2h", http.StatusBadRequest, `for="2h"`},
		{"/upstream/pause?for=soon", http.StatusBadRequest, `for="soon"`},
	} {
		status, body := c.call("POST", tc.path)
		require.Equal(t, tc.status, status, tc.path)
		require.Contains(t, body.(map[string]any)["error"], tc.says, tc.path)
	}
	require.Empty(t, c.faults())
}

// A crashed process is cut off until it restarts: its requests meanwhile
// go nowhere, and after the restart its client reconnects by itself.
func TestControlCrashesAndRestartsAProcess(t *testing.T) {
	c := startControl(t)
	ctx := context.Background()
	require.NoError(t, c.producer.BeginTransaction())
	require.NoError(t, c.producer.ProduceSync(ctx, &kgo.Record{Value: []byte("trip-0")}).FirstErr())
	status, _ := c.call("POST", "/processes/fare-writer/crash")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "crashed", c.state("fare-writer"))
	produced := make(chan error, 1)
	go func() { produced <- c.producer.ProduceSync(ctx, &kgo.Record{Value: []byte("trip-1")}).FirstErr() }()
	requireHeld(t, produced, "a crashed process's produce")

	status, _ = c.call("POST", "/processes/fare-writer/restart")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "running", c.state("fare-writer"))
	require.NoError(t, <-produced, "its client retried, and got through")
	require.Equal(t, []string{"fare-writer crash", "fare-writer restart"}, c.faults())
}
