//go:build soak

package proxy

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestSoakRecordingLosesNothing records a busy client through the proxy
// for FENCECHECK_SOAK (a duration, default 1m): a transactional producer
// committing a record per transaction as fast as it goes, at most
// one transaction every FENCECHECK_SOAK_EVERY (default 1ms: some 4,000
// operations). The streamed history must then load, and hold every
// produce the client saw acknowledged; the peak heap and the rate are
// logged. It takes its whole duration, so it runs only with -tags soak
// (.ci/run gives it 30 s; an hour of it is the figure in docs/performance.md):
//
//	FENCECHECK_SOAK=1h go test -tags soak -run Soak -v -timeout 2h ./proxy/
func TestSoakRecordingLosesNothing(t *testing.T) {
	length, err := time.ParseDuration(envOr("FENCECHECK_SOAK", "1m"))
	require.NoError(t, err)
	rate, err := time.ParseDuration(envOr("FENCECHECK_SOAK_EVERY", "1ms"))
	require.NoError(t, err)
	cluster := startCluster(t)
	path := filepath.Join(t.TempDir(), "soak.json")
	file, err := os.Create(path)
	require.NoError(t, err)
	w, err := histories.NewWriter(file, histories.History{WallClock: true})
	require.NoError(t, err)
	rec := histories.NewRecorder(nil, wallClock)
	rec.Stream(w)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("soak"), kgo.TransactionalID("soak-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	ctx := context.Background()
	acked, peak := 0, uint64(0)
	start := time.Now()
	tick := time.NewTicker(rate)
	defer tick.Stop()
	for time.Since(start) < length {
		<-tick.C
		require.NoError(t, cl.BeginTransaction())
		if cl.ProduceSync(ctx, kgo.StringRecord("trip")).FirstErr() == nil {
			acked++
		}
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
		if acked%1000 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}
	elapsed := time.Since(start)
	cl.Close()
	require.NoError(t, p.Close())
	require.NoError(t, w.Close(histories.History{}))
	require.NoError(t, file.Close())

	h, err := histories.LoadFile(path)
	require.NoError(t, err)
	produced := 0
	for _, op := range h.Ops {
		if op.Kind == model.Produce && op.Result.Succeeded() {
			produced++
		}
	}
	info, err := os.Stat(path)
	require.NoError(t, err)
	t.Logf("%v: %d transactions acknowledged, %d operations recorded (%.0f a second), %d MB of history, peak heap in use %d MB",
		elapsed.Round(time.Second), acked, len(h.Ops), float64(len(h.Ops))/elapsed.Seconds(), info.Size()>>20, peak>>20)
	require.Equal(t, acked, produced, "every acknowledged produce is in the history")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
