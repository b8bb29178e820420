package proxy

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// freePorts is n ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// brokersSeen is the ports of the brokers a client learns through p.
func brokersSeen(t *testing.T, p *Proxy) []int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	var ports []int
	for _, b := range resp.Brokers {
		ports = append(ports, int(b.Port))
	}
	return ports
}

// With BrokerPorts, the brokers a client learns are on those ports,
// whichever the cluster names first.
func TestBrokerPortsArePinned(t *testing.T) {
	cluster := startCluster(t)
	ports := freePorts(t, 3)
	l := &logs{}
	p, err := New(Config{Upstream: cluster.ListenAddrs(), BrokerPorts: ports, Logf: l.logf})
	require.NoError(t, err)
	defer p.Close()
	require.ElementsMatch(t, ports, brokersSeen(t, p))
	require.NotContains(t, l.all(), "not understood")
}

// A broker named beyond the pinned ports is logged by name, and its
// address reaches the client as it came.
func TestABrokerBeyondThePinnedPortsIsLogged(t *testing.T) {
	cluster := startCluster(t)
	ports := freePorts(t, 2)
	l := &logs{}
	p, err := New(Config{Upstream: cluster.ListenAddrs(), BrokerPorts: ports, Logf: l.logf})
	require.NoError(t, err)
	defer p.Close()
	seen := brokersSeen(t, p)
	require.Len(t, seen, 3)
	require.Contains(t, l.all(), "beyond the 2 pinned broker ports")
}

// A pinned port that is taken, out of range or named twice is New's
// error, naming the port.
func TestBrokerPortErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	free := freePorts(t, 1)[0]
	for _, tc := range []struct {
		ports []int
		says  string
	}{
		{[]int{free, takenPort}, "a broker's listener on 127.0.0.1:" + strconv.Itoa(takenPort)},
		{[]int{70000}, "port 70000 is out of range: give 1 to 65535"},
		{[]int{0}, "port 0 is out of range"},
		{[]int{free, free}, "is named twice"},
		{[]int{19092}, "broker port 19092 is the listen address's port too"},
	} {
		_, err := New(Config{Upstream: []string{"127.0.0.1:9"}, Listen: "127.0.0.1:19092", BrokerPorts: tc.ports})
		require.ErrorContains(t, err, tc.says, "%v", tc.ports)
	}
	// The failed New left the free port free.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(free)))
	require.NoError(t, err)
	ln.Close()
}

func TestParsePorts(t *testing.T) {
	for spec, want := range map[string][]int{
		"19093":              {19093},
		"19093-19095":        {19093, 19094, 19095},
		"19093,19095, 19094": {19093, 19095, 19094},
		"1-2,65535":          {1, 2, 65535},
	} {
		got, err := ParsePorts(spec)
		require.NoError(t, err, spec)
		require.Equal(t, want, got, spec)
	}
	for spec, says := range map[string]string{
		"":            `port "" is not a number from 1 to 65535`,
		"70000":       `"70000": port "70000" is not a number from 1 to 65535`,
		"0":           `port "0" is not a number`,
		"19095-19093": "a range goes from its lower port to its higher",
		"19093-x":     `port "x" is not a number`,
		"1,1":         "port 1 is named twice",
		"1-3,2":       "port 2 is named twice",
	} {
		_, err := ParsePorts(spec)
		require.ErrorContains(t, err, says, spec)
	}
}
