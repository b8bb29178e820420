package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logs collects what a proxy logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func startCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "trips", "fares"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	return cluster
}

func startProxy(t *testing.T, upstream []string) (*Proxy, *logs) {
	t.Helper()
	l := &logs{}
	p, err := New(Config{Upstream: upstream, Logf: l.logf})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p, l
}

// dialRecorder is a kgo dialer that notes every address the client dials.
type dialRecorder struct {
	mu    sync.Mutex
	addrs map[string]bool
}

func (d *dialRecorder) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs[host] = true
	d.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, host)
}

// A transactional consume-transform-produce round through the proxy works
// as it does against the cluster, and the client only ever dials the
// proxy: every broker address it learned (metadata, coordinators) was
// rewritten to one of the proxy's listeners, one per broker.
func TestClientsStayOnTheProxy(t *testing.T) {
	cluster := startCluster(t)
	p, l := startProxy(t, cluster.ListenAddrs())
	dials := &dialRecorder{addrs: map[string]bool{}}
	ctx := context.Background()

	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.Dialer(dials.dial), kgo.TransactionalID("fare-writer-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	defer producer.Close()
	require.NoError(t, producer.BeginTransaction())
	for i := range 6 {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "trip-%d", i), Partition: int32(i % 3)}).FirstErr())
	}
	require.NoError(t, producer.EndTransaction(ctx, kgo.TryCommit))

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.Dialer(dials.dial), kgo.ConsumeTopics("trips"),
		kgo.ConsumerGroup("fares"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer consumer.Close()
	var values []string
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for len(values) < 6 {
		fetches := consumer.PollFetches(deadline)
		require.NoError(t, deadline.Err(), "read %v", values)
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	require.ElementsMatch(t, []string{"trip-0", "trip-1", "trip-2", "trip-3", "trip-4", "trip-5"}, values)
	require.NoError(t, consumer.CommitUncommittedOffsets(ctx))

	p.mu.Lock()
	listeners := map[string]bool{p.bootstrap.addr: true}
	for _, b := range p.brokers {
		listeners[b.addr] = true
	}
	p.mu.Unlock()
	require.Len(t, listeners, 1+3, "a listener per broker")
	dials.mu.Lock()
	dialed := maps.Clone(dials.addrs)
	dials.mu.Unlock()
	for addr := range dialed {
		require.True(t, listeners[addr], "the client dialed %s, past the proxy (%v)", addr, listeners)
	}
	require.NotContains(t, l.all(), "not understood")
}

// fakeBroker answers each frame it reads with reply(frame) (nothing when
// it returns nil), and keeps the bytes it read.
func fakeBroker(t *testing.T, reply func(frame []byte) []byte) (addr string, got func() []byte) {
	return listenUpstream(t, func(c net.Conn, keep func([]byte)) {
		for {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, frame); err != nil {
				return
			}
			keep(append(size[:], frame...))
			if out := reply(frame); out != nil {
				c.Write(frameOf(out))
			}
		}
	})
}

// rawBroker keeps every byte it reads, and answers nothing.
func rawBroker(t *testing.T) (addr string, got func() []byte) {
	return listenUpstream(t, func(c net.Conn, keep func([]byte)) {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			keep(buf[:n])
			if err != nil {
				return
			}
		}
	})
}

// listenUpstream is an upstream broker that serves each connection with
// serve, which keeps what it read; got is all it kept.
func listenUpstream(t *testing.T, serve func(c net.Conn, keep func([]byte))) (addr string, got func() []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var read []byte
	keep := func(b []byte) {
		mu.Lock()
		read = append(read, b...)
		mu.Unlock()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, keep)
			}()
		}
	}()
	return ln.Addr().String(), func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return append([]byte(nil), read...)
	}
}

// frameOf is a frame: its size, then its bytes.
func frameOf(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// Requests and responses that name no broker cross the proxy byte for
// byte, whatever they hold: an unknown API key, a version past the
// decoder's, a request cut shorter than its header. The proxy notes each
// as not understood, and keeps serving.
func TestFramesItCannotReadAreForwardedUntouched(t *testing.T) {
	echo := func(frame []byte) []byte {
		if len(frame) < 8 {
			return nil
		}
		return append(append([]byte(nil), frame[4:8]...), "answer"...) // correlation id, then anything
	}
	upstream, got := fakeBroker(t, echo)
	p, l := startProxy(t, []string{upstream})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()

	unknownKey := frameOf([]byte{0x27, 0x0f, 0, 1, 0, 0, 0, 7, 0xff, 0xff, 1, 2, 3}) // key 9999
	futureVersion := frameOf([]byte{0, 0, 0x7f, 0, 0, 0, 0, 8, 0xff, 0xff, 9, 9})    // produce v32512
	short := frameOf([]byte{0, 3, 0})
	empty := frameOf(nil)
	for _, frame := range [][]byte{unknownKey, futureVersion, short, empty} {
		_, err := c.Write(frame)
		require.NoError(t, err)
	}
	for _, corr := range []byte{7, 8} {
		answer := make([]byte, 4+4+len("answer"))
		_, err := io.ReadFull(c, answer)
		require.NoError(t, err)
		require.Equal(t, frameOf(append([]byte{0, 0, 0, corr}, "answer"...)), answer)
	}
	require.Eventually(t, func() bool { return len(got()) == len(unknownKey)+len(futureVersion)+len(short)+len(empty) }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, append(append(append(append([]byte(nil), unknownKey...), futureVersion...), short...), empty...), got())
	log := l.all()
	require.Contains(t, log, "not understood: request key 9999 version 1")
	require.Contains(t, log, "not understood: request key 0 version 32512")
	require.Contains(t, log, "not understood: a request of 3 bytes")
	require.Contains(t, log, "not understood: a request of 0 bytes")
}

// A frame whose connection ends before its last byte reaches the broker
// as far as it came, and no further.
func TestAFrameCutShortIsForwardedAsFarAsItCame(t *testing.T) {
	upstream, got := rawBroker(t)
	p, _ := startProxy(t, []string{upstream})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	request := frameOf([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0})
	_, err = c.Write(request[:9])
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return len(got()) == 9 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, request[:9], got())
}

// A connection closed before it sent a byte carries no request, and is
// no process (franz-go drops a connection it opened when the client
// closes; recorded, it showed as a stray "connection-1").
func TestAConnectionThatSendsNothingIsNoProcess(t *testing.T) {
	upstream, _ := rawBroker(t)
	p, _ := startProxy(t, []string{upstream})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Never(t, func() bool { return len(p.Processes()) > 0 }, 300*time.Millisecond, 10*time.Millisecond)
}

// A size prefix no Kafka frame has (negative, or past the largest request
// a broker takes) ends the framing: the connection is copied on as raw
// bytes, untouched, and the proxy goes on serving other clients.
func TestABrokenFrameTurnsTheConnectionRaw(t *testing.T) {
	upstream, got := rawBroker(t)
	p, l := startProxy(t, []string{upstream})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	request := frameOf([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0}) // ApiVersions v3
	garbage := []byte{0xff, 0xff, 0xff, 0xf0, 'n', 'o', 't', ' ', 'k', 'a', 'f', 'k', 'a'}
	more := frameOf([]byte{0, 3, 0, 1, 0, 0, 0, 2, 0xff, 0xff})
	for _, b := range [][]byte{request, garbage, more} {
		_, err = c.Write(b)
		require.NoError(t, err)
	}
	want := append(append(append([]byte(nil), request...), garbage...), more...)
	require.Eventually(t, func() bool { return len(got()) == len(want) }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, want, got())
	require.Contains(t, l.all(), "not understood: a frame of -16 bytes")

	other, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "the proxy stopped listening")
	defer other.Close()
	_, err = other.Write(more)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(got()) == len(want)+len(more) }, 5*time.Second, 10*time.Millisecond)
}

// A Metadata response read and written again keeps every field: the
// proxy changes the brokers' addresses and nothing else.
func TestRewritingChangesOnlyAddresses(t *testing.T) {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	resp.ClusterID = kmsg.StringPtr("cluster")
	resp.ControllerID = 2
	for id := range int32(3) {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = id, "broker.example", 9092+id, kmsg.StringPtr("rack")
		resp.Brokers = append(resp.Brokers, b)
	}
	topic := kmsg.NewMetadataResponseTopic()
	topic.Topic = kmsg.StringPtr("trips")
	topic.Partitions = []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}
	resp.Topics = append(resp.Topics, topic)
	frame := resp.AppendTo([]byte{0, 0, 0, 42, 0}) // correlation id, no tags

	opened := map[string]bool{}
	p := &Proxy{host: "127.0.0.1", brokers: map[string]*listener{}, cfg: Config{Listener: func(_, _ string) (net.Listener, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			opened[ln.Addr().String()] = true
		}
		return ln, err
	}, Logf: func(string, ...any) {}}}
	defer p.Close()
	out, err := p.rewrite(apiVersion{key: kmsg.Metadata.Int16(), version: 12}, frame)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 42, 0}, out[:5])

	back := kmsg.NewPtrMetadataResponse()
	back.SetVersion(12)
	require.NoError(t, back.ReadFrom(out[5:]))
	for i, b := range back.Brokers {
		require.True(t, opened[net.JoinHostPort(b.Host, fmt.Sprint(b.Port))], "broker %d at %s:%d", b.NodeID, b.Host, b.Port)
		back.Brokers[i].Host, back.Brokers[i].Port = resp.Brokers[i].Host, resp.Brokers[i].Port
	}
	require.Len(t, opened, 3)
	require.Equal(t, resp, back)
}

func TestConfigErrors(t *testing.T) {
	_, err := New(Config{})
	require.ErrorContains(t, err, "no upstream address")
	_, err = New(Config{Upstream: []string{"localhost"}})
	require.ErrorContains(t, err, `upstream "localhost" is not host:port`)
	_, err = New(Config{Upstream: []string{"localhost:9092"}, Listen: "nowhere"})
	require.ErrorContains(t, err, `listen address "nowhere" is not host:port`)
}

// A produce with acks 0 is never answered: the proxy does not wait for
// its response, so no produce stays in flight. The test waits until the
// cluster has read the three produces, which the proxy noted before it
// forwarded them; other requests the client sends meanwhile on other
// connections (ApiVersions, GetTelemetrySubscriptions) may be in flight.
func TestProduceWithoutAcksIsNotAwaited(t *testing.T) {
	cluster := startCluster(t)
	const produces = 3
	arrived := make(chan struct{}, produces)
	cluster.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		arrived <- struct{}{}
		return nil, nil, false // kfake handles it as ever
	})
	p, l := startProxy(t, cluster.ListenAddrs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.DefaultProduceTopic("trips"),
		kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range produces {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("trip")).FirstErr())
	}
	for range produces {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("the cluster did not get the three produces")
		}
	}
	require.Zero(t, awaited(p, kmsg.Produce.Int16()), "produces left waiting for an answer")
	require.NotContains(t, l.all(), "not understood")
}

// awaited is how many requests of API key key the proxy's connections
// wait to see answered.
func awaited(p *Proxy, key int16) int {
	p.mu.Lock()
	listeners := append(slices.Collect(maps.Values(p.brokers)), p.bootstrap)
	p.mu.Unlock()
	n := 0
	for _, ln := range listeners {
		ln.mu.Lock()
		for c := range ln.conns {
			c.mu.Lock()
			for _, av := range c.inflight {
				if av.key == key {
					n++
				}
			}
			c.mu.Unlock()
		}
		ln.mu.Unlock()
	}
	return n
}

// wallClock is a history's clock in milliseconds of wall time.
func wallClock() int64 { return time.Now().UnixMilli() }

// What a franz-go client does through the proxy is recorded under its
// client.id, read off its frames: the transactional producer's init,
// produce (one operation per partition, its records decoded from kgo's
// default snappy compression; under transactions v2 a partition joins
// the transaction with its first produce) and end_txn; the
// consumer's join_group, its sync_group with its assignment, and its
// offset_fetch.
func TestClientsAreRecordedUnderTheirClientID(t *testing.T) {
	cluster := startCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	ctx := context.Background()

	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"), kgo.TransactionalID("fare-writer-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	require.NoError(t, producer.BeginTransaction())
	for i := range 2 {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Value: []byte("from the airport"), Partition: int32(i)}).FirstErr())
	}
	require.NoError(t, producer.EndTransaction(ctx, kgo.TryCommit))
	producer.Close()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-reader"), kgo.ConsumeTopics("trips"),
		kgo.ConsumerGroup("fare-readers"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for read := 0; read < 2; {
		fetches := consumer.PollFetches(deadline)
		require.NoError(t, deadline.Err())
		read += fetches.NumRecords()
	}
	consumer.Close()
	require.NoError(t, p.Close())

	h := rec.History()
	byProc := map[string][]model.Kind{}
	var produced []model.Record
	for _, op := range h.Ops {
		proc, _, _ := strings.Cut(op.Proc, ".") // lanes of one process
		byProc[proc] = append(byProc[proc], op.Kind)
		if op.Kind == model.Produce {
			require.Equal(t, "fare-writer-0", op.Req.TransactionalID)
			require.True(t, op.Result.Succeeded(), "%+v", op)
			produced = append(produced, op.Req.Records...)
		}
		if op.Kind == model.JoinGroup {
			require.Equal(t, "fare-readers", op.Req.Group)
			require.True(t, op.Req.JoinOnly, "its SyncGroup is an op of its own")
		}
		if op.Kind == model.SyncGroup && op.Result.Succeeded() {
			require.Equal(t, "fare-readers", op.Req.Group)
			require.ElementsMatch(t, []model.Partition{"trips-0", "trips-1", "trips-2"}, op.Result.Resp.Assignment)
		}
	}
	require.Equal(t, []string{"fare-reader", "fare-writer"}, p.Processes())
	require.Subset(t, byProc["fare-writer"], []model.Kind{model.InitProducerID, model.Produce, model.EndTxn})
	require.Subset(t, byProc["fare-reader"], []model.Kind{model.JoinGroup, model.SyncGroup, model.OffsetFetch})
	require.ElementsMatch(t, []model.Record{{Key: "trip-0", Value: "from the airport"}, {Key: "trip-1", Value: "from the airport"}}, produced)

	var saved bytes.Buffer
	require.NoError(t, histories.Save(&saved, h), "the recording is a valid history")

	// Every request carries the version the client spoke, and the saved
	// history keeps it.
	loaded, err := histories.Load(&saved)
	require.NoError(t, err)
	for i, op := range h.Ops {
		if !op.Kind.IsRequest() {
			continue
		}
		n, known := op.APIVersion.Number()
		require.True(t, known, "op %d (%s) carries no api_version", op.ID, op.Kind)
		require.NoError(t, model.CheckVersion(op.Kind, op.APIVersion))
		require.Equal(t, op.APIVersion, loaded.Ops[i].APIVersion, "op %d: v%d saved and loaded", op.ID, n)
	}
}

// A stalled process's traffic is held both ways until it wakes: its
// request goes out, and is answered, only then.
func TestAStalledProcessIsHeldUntilItWakes(t *testing.T) {
	cluster := startCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"), kgo.TransactionalID("fare-writer-0"),
		kgo.DefaultProduceTopic("trips"))
	require.NoError(t, err)
	defer producer.Close()
	require.NoError(t, producer.BeginTransaction())
	require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte("trip-0")}).FirstErr())

	require.Contains(t, p.Processes(), "fare-writer")
	proc := p.Process("fare-writer")
	proc.Stall()
	ended := make(chan error, 1)
	go func() { ended <- producer.EndTransaction(ctx, kgo.TryCommit) }()
	requireHeld(t, ended, "the stalled producer's commit")
	proc.Wake()
	require.NoError(t, <-ended)
}

// Close ends a stalled process's connections, the one that is waiting to
// be let through to the cluster too.
func TestCloseCutsAStalledProcessesNewConnection(t *testing.T) {
	cluster := startCluster(t)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: histories.NewRecorder(nil, wallClock), Logf: t.Logf})
	require.NoError(t, err)
	first, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"))
	require.NoError(t, err)
	defer first.Close()
	require.NoError(t, first.Ping(context.Background()))
	p.Process("fare-writer").Stall()

	second, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"))
	require.NoError(t, err)
	defer second.Close()
	pinged := make(chan error, 1)
	go func() { pinged <- second.Ping(context.Background()) }()
	requireHeld(t, pinged, "the stalled process's new connection")

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for ever on the stalled process's new connection")
	}
}

// requireHeld fails when what, whose end comes on ended, ends within
// 300 ms: a fault holds it.
func requireHeld(t *testing.T, ended <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ended:
		t.Fatalf("%s ended (%v)", what, err)
	case <-time.After(300 * time.Millisecond):
	}
}

// An at-least-once consumer's own commit through the proxy is recorded
// as an offset_commit: the member id and generation its join was
// answered, and the next offset of each partition it read. franz-go
// sends OffsetCommit v10 to kfake, which names topics by id. An admin's
// OffsetFetch of all partitions (topics null, as kadm's FetchOffsets
// sends it) is then recorded as one offset_fetch that lists the commit.
func TestPlainOffsetCommitsAreRecorded(t *testing.T) {
	cluster := startCluster(t)
	rec := histories.NewRecorder(nil, wallClock)
	p, err := New(Config{Upstream: cluster.ListenAddrs(), Record: rec, Logf: t.Logf})
	require.NoError(t, err)
	ctx := context.Background()

	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-writer"), kgo.DefaultProduceTopic("trips"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	for i := range 2 {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "trip-%d", i), Partition: 0}).FirstErr())
	}
	producer.Close()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-auditor"), kgo.ConsumeTopics("trips"),
		kgo.ConsumerGroup("fare-auditors"), kgo.DisableAutoCommit())
	require.NoError(t, err)
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for read := 0; read < 2; {
		fetches := consumer.PollFetches(deadline)
		require.NoError(t, deadline.Err())
		read += fetches.NumRecords()
	}
	require.NoError(t, consumer.CommitUncommittedOffsets(ctx))
	consumer.Close()

	admin, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ClientID("fare-admin"))
	require.NoError(t, err)
	fetchAll := kmsg.NewPtrOffsetFetchRequest()
	group := kmsg.NewOffsetFetchRequestGroup()
	group.Group = "fare-auditors"
	fetchAll.Groups = []kmsg.OffsetFetchRequestGroup{group}
	_, err = fetchAll.RequestWith(ctx, admin)
	require.NoError(t, err)
	admin.Close()
	require.NoError(t, p.Close())

	var join, commit, fetched *histories.Op
	for _, op := range rec.History().Ops {
		switch op.Kind {
		case model.JoinGroup:
			join = &op
		case model.OffsetCommit:
			commit = &op
		case model.OffsetFetch:
			if op.Req.AllPartitions {
				fetched = &op
			}
		}
	}
	require.NotNil(t, fetched, "the admin's fetch of all partitions is recorded")
	require.True(t, fetched.Result.Succeeded(), "%+v", fetched.Result)
	require.Equal(t, map[model.Partition]int64{"trips-0": 2}, fetched.Result.Resp.FetchedOffsets, "at %s", fetched.APIVersion)
	require.NotNil(t, join, "the consumer joined")
	require.NotNil(t, commit, "the consumer's commit is recorded")
	require.Equal(t, "fare-auditors", commit.Req.Group)
	require.Equal(t, join.Result.Resp.MemberID, commit.Req.MemberID)
	require.Equal(t, join.Result.Resp.GenerationID, commit.Req.GenerationID)
	require.Equal(t, map[model.Partition]int64{"trips-0": 2}, commit.Req.Offsets, "at %s", commit.APIVersion)
	require.True(t, commit.Result.Succeeded(), "%+v", commit.Result)

	var saved bytes.Buffer
	require.NoError(t, histories.Save(&saved, rec.History()), "the recording is a valid history")
	_, err = histories.Load(&saved)
	require.NoError(t, err)
}
