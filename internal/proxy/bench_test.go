package proxy

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/histories"
)

// The proxy's cost, against a kfake cluster on loopback: a client talks to
// the cluster directly, through the proxy, and through the proxy
// recording a history (streamed, as fencecheck proxy --history writes it,
// here to nowhere). Compare the three in one run:
//
//	go test -run '^$' -bench 'RoundTrip|Throughput' -benchtime 20000x ./internal/proxy/

// clientFor is a franz-go producer of trips, directly on the cluster,
// through a bare relay, or through a proxy (recording or not), and what
// closes it.
func clientFor(b *testing.B, how string, opts ...kgo.Opt) *kgo.Client {
	cluster := startCluster(b)
	seeds := cluster.ListenAddrs()
	if how == "relay" {
		opts = append(opts, kgo.Dialer(relayDialer(b)))
	}
	if how != "direct" && how != "relay" {
		cfg := Config{Upstream: seeds}
		if how == "recorded" {
			w, err := histories.NewWriter(io.Discard, histories.History{})
			require.NoError(b, err)
			rec := histories.NewRecorder(nil, wallClock)
			rec.Stream(w)
			cfg.Record = rec
		}
		p, err := New(cfg)
		require.NoError(b, err)
		b.Cleanup(func() { p.Close() })
		seeds = []string{p.Addr()}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("bench"), kgo.DefaultProduceTopic("trips")}, opts...)...)
	require.NoError(b, err)
	b.Cleanup(cl.Close)
	require.NoError(b, cl.ProduceSync(context.Background(), kgo.StringRecord("warm-up")).FirstErr())
	return cl
}

// ways: "relay" is the floor any TCP proxy on the path pays, a goroutine
// pair per connection copying bytes both ways and reading none, which the
// client dials instead of each broker.
var ways = []string{"direct", "relay", "proxy", "recorded"}

// relayDialer dials each address through a relay of its own on loopback.
func relayDialer(b *testing.B) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() {
			defer ln.Close()
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial(network, host)
			if err != nil {
				down.Close()
				return
			}
			go func() { io.Copy(up, down); up.Close() }()
			io.Copy(down, up)
			down.Close()
		}()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
}

// reportCPU reports the process's CPU time per op since cpu. On a
// machine shared with other work, wall time is noisy, but the CPU time
// each way costs is steadier.
func reportCPU(b *testing.B, cpu time.Duration) {
	if used := processCPU() - cpu; cpu > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkRoundTrip: one produce at a time, each awaited (acks=all): the
// time per op is a request's round trip.
func BenchmarkRoundTrip(b *testing.B) {
	for _, how := range ways {
		b.Run(how, func(b *testing.B) {
			cl := clientFor(b, how)
			ctx := context.Background()
			b.ResetTimer()
			cpu := processCPU()
			for range b.N {
				if err := cl.ProduceSync(ctx, kgo.StringRecord("trip")).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkThroughput: records produced as fast as the client batches
// them; records/s is the figure.
func BenchmarkThroughput(b *testing.B) {
	for _, how := range ways {
		b.Run(how, func(b *testing.B) {
			cl := clientFor(b, how)
			b.ResetTimer()
			cpu := processCPU()
			produceAll(b, cl, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			reportCPU(b, cpu)
		})
	}
}

// The *Turns benchmarks run the four ways side by side: each takes its
// turn at a slice of the work, round after round, and its time is the
// sum of its turns. On a machine shared with other work, a busy spell
// then slows every way alike, where the benchmarks above give each way
// a spell of its own. Each reports every way's figure and the ratios
// the proxy's aims are stated in.

// BenchmarkThroughputTurns: records produced as fast as the client
// batches them, in slices of throughputTurn records a way.
func BenchmarkThroughputTurns(b *testing.B) {
	const throughputTurn = 20000
	took := inTurns(b, throughputTurn, func(cl *kgo.Client, n int) { produceAll(b, cl, n) })
	for _, how := range ways {
		b.ReportMetric(float64(b.N)/took[how].Seconds(), how+"-records/s")
		if how != "direct" {
			b.ReportMetric(took["direct"].Seconds()/took[how].Seconds(), how+"/direct")
		}
	}
}

// produceAll produces n records and waits for them all.
func produceAll(b *testing.B, cl *kgo.Client, n int) {
	ctx := context.Background()
	errs := make(chan error, 1)
	for range n {
		cl.Produce(ctx, kgo.StringRecord("trip"), func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// BenchmarkRoundTripTurns: one produce at a time, each awaited, in slices
// of roundTripTurn round trips a way. The time each way adds to a round
// trip is its time less direct's; "proxy+/relay+" is what the proxy adds
// over what a bare relay adds.
func BenchmarkRoundTripTurns(b *testing.B) {
	const roundTripTurn = 20
	ctx := context.Background()
	took := inTurns(b, roundTripTurn, func(cl *kgo.Client, n int) {
		for range n {
			if err := cl.ProduceSync(ctx, kgo.StringRecord("trip")).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
	})
	per := func(how string) float64 { return float64(took[how].Nanoseconds()) / float64(b.N) / 1e3 }
	for _, how := range ways {
		b.ReportMetric(per(how), how+"-µs/trip")
	}
	relayAdds := per("relay") - per("direct")
	b.ReportMetric(per("proxy")-per("direct"), "proxy-added-µs")
	b.ReportMetric(per("recorded")-per("direct"), "recorded-added-µs")
	b.ReportMetric(relayAdds, "relay-added-µs")
	b.ReportMetric((per("proxy")-per("direct"))/relayAdds, "proxy+/relay+")
	b.ReportMetric((per("recorded")-per("direct"))/relayAdds, "recorded+/relay+")
}

// inTurns runs work in slices of turn operations, each way taking its
// turn at every slice, until b.N operations a way are done. It returns
// each way's time, the sum of its turns.
func inTurns(b *testing.B, turn int, work func(cl *kgo.Client, n int)) map[string]time.Duration {
	clients := map[string]*kgo.Client{}
	for _, how := range ways {
		clients[how] = clientFor(b, how)
	}
	took := map[string]time.Duration{}
	b.ResetTimer()
	for done := 0; done < b.N; done += turn {
		n := min(turn, b.N-done)
		for _, how := range ways {
			start := time.Now()
			work(clients[how], n)
			took[how] += time.Since(start)
		}
	}
	return took
}
