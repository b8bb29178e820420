package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// guardLogs collects what a guard logs.
type guardLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *guardLogs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *guardLogs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// startGuardedKfake is a one-broker kfake cluster on loopback TCP, its
// listener guarded when logf is not nil.
func startGuardedKfake(t testing.TB, logf func(string, ...any)) *kfake.Cluster {
	t.Helper()
	listen := net.Listen
	if logf != nil {
		listen = func(network, address string) (net.Listener, error) {
			ln, err := net.Listen(network, address)
			if err != nil {
				return nil, err
			}
			return GuardListener(ln, logf), nil
		}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "trips"), kfake.ListenFn(listen))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	return cluster
}

// requestFrame is a request frame of API key key, version 0, correlation
// id 1, no client id, and body.
func requestFrame(key int16, body []byte) []byte {
	header := binary.BigEndian.AppendUint16(nil, uint16(key))
	header = binary.BigEndian.AppendUint16(header, 0)
	header = binary.BigEndian.AppendUint32(header, 1)
	header = binary.BigEndian.AppendUint16(header, 0xffff) // null client id
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(header)+len(body)))
	return append(append(frame, header...), body...)
}

// sizePrefix is a frame's size prefix alone, claiming n bytes.
func sizePrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// Each frame kfake would crash on, or allocate for, closes its own
// connection with one log line naming the client and the frame; the
// cluster answers the next client as before. Without the guard, the
// unknown key alone ends this test's process (finding 26).
func TestGuardClosesABadFrameAndTheClusterGoesOn(t *testing.T) {
	logs := &guardLogs{}
	cluster := startGuardedKfake(t, logs.logf)
	addr := cluster.ListenAddrs()[0]
	for _, tc := range []struct {
		name  string
		frame []byte
		says  string
	}{
		{"unknown API key", requestFrame(200, nil), "a request of unknown API key 200"},
		{"negative API key", requestFrame(-3, nil), "a request of unknown API key -3"},
		{"oversized prefix", sizePrefix(MaxRequestBytes + 1), fmt.Sprintf("a frame of %d bytes", MaxRequestBytes+1)},
		{"negative prefix", sizePrefix(-1), "a frame of -1 bytes"},
		{"prefix shorter than a header", append(sizePrefix(2), 0, 3), "a frame of 2 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write(tc.frame)
			require.NoError(t, err)
			// Until the guard closes it (a reset, if it closed with bytes
			// unread); the deadline only keeps a broken guard from hanging.
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = io.ReadAll(conn)
			var netErr net.Error
			require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the connection stayed open")
			lines := logs.all()
			require.NotEmpty(t, lines)
			last := lines[len(lines)-1]
			require.Contains(t, last, conn.LocalAddr().String())
			require.Contains(t, last, tc.says)
		})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
}

// A frame sent in pieces, and a frame followed at once by the next in one
// write, pass whole and in order: the guard splits nothing kfake reads.
func TestGuardPassesFramesWhateverTheirWrites(t *testing.T) {
	logs := &guardLogs{}
	cluster := startGuardedKfake(t, logs.logf)
	conn, err := net.Dial("tcp", cluster.ListenAddrs()[0])
	require.NoError(t, err)
	defer conn.Close()
	apiVersions := requestFrame(kmsg.ApiVersions.Int16(), nil)
	both := append(append([]byte(nil), apiVersions...), apiVersions...)
	for _, b := range both[:5] { // a prefix and a byte of the key, one by one
		_, err := conn.Write([]byte{b})
		require.NoError(t, err)
	}
	_, err = conn.Write(both[5:])
	require.NoError(t, err)
	for range 2 {
		var size [4]byte
		_, err := io.ReadFull(conn, size[:])
		require.NoError(t, err)
		resp := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err = io.ReadFull(conn, resp)
		require.NoError(t, err)
		require.Equal(t, int32(1), int32(binary.BigEndian.Uint32(resp)), "the correlation id")
	}
	require.Empty(t, logs.all())
}

// BenchmarkGuard is a produce round trip (one 1 KiB record, acks all)
// to kfake, directly and through the guard:
//
//	go test ./kafka/ -run '^$' -bench Guard -count 5
func BenchmarkGuard(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		name := "direct"
		var logf func(string, ...any)
		if guarded {
			name, logf = "guarded", b.Logf
		}
		b.Run(name, func(b *testing.B) {
			cluster := startGuardedKfake(b, logf)
			cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("trips"))
			require.NoError(b, err)
			defer cl.Close()
			ctx := context.Background()
			value := []byte(strings.Repeat("x", 1024))
			require.NoError(b, cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()) // connected
			b.ResetTimer()
			for range b.N {
				require.NoError(b, cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr())
			}
		})
	}
}
