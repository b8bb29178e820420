package kafka

import (
	"context"
	"net"

	"github.com/fencecheck/fencecheck/internal/proxy"
	"github.com/fencecheck/fencecheck/internal/recorder"
)

// clusterOf is the target's cluster as a recording of its sessions' own
// requests sees it: the run's names, the model's time.
type clusterOf struct{ t *Target }

var _ recorder.Cluster = clusterOf{}

func (c clusterOf) Name(cluster string) (string, bool) { return c.t.names.modelName(cluster) }
func (c clusterOf) Partitions(topic string) int32      { return c.t.cfg.Topics[topic] }
func (c clusterOf) Millis(ms int32) int64              { return c.t.modelMs(ms) }

func (c clusterOf) TopicByID(ctx context.Context, id [16]byte) (string, bool) {
	return c.t.routes.topicByID(ctx, id)
}

// dial is how a client reaches the target's cluster: the embedded
// cluster's in-memory network, or TCP.
func (t *Target) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if t.embedded != nil {
		return pipes.dial(ctx, network, address)
	}
	return (&net.Dialer{}).DialContext(ctx, network, address)
}

// NewProxy starts a fencecheck proxy in front of the target's cluster,
// recording into record with the target's names and time, so that a
// session (SessionConfig.Proxy) can be recorded there as any client is.
// On the embedded cluster it listens on the cluster's in-memory network.
func (t *Target) NewProxy(record proxy.Recorder) (*proxy.Proxy, error) {
	return t.newProxy(record, false)
}

// NewTCPProxy is NewProxy listening on TCP (127.0.0.1) whatever the
// cluster, for the clients that open their own connections
// (clients.Loop.DialsItself): on the embedded cluster the proxy still
// reaches the brokers over the in-memory network. On a real cluster it
// is NewProxy.
func (t *Target) NewTCPProxy(record proxy.Recorder) (*proxy.Proxy, error) {
	return t.newProxy(record, true)
}

func (t *Target) newProxy(record proxy.Recorder, tcp bool) (*proxy.Proxy, error) {
	cfg := proxy.Config{Upstream: t.cfg.Brokers, Dial: t.dial, Record: record, Cluster: clusterOf{t}, Logf: t.cfg.Logf}
	if t.embedded != nil {
		cfg.Upstream = t.embedded.addrs
		if !tcp {
			cfg.Listener = pipes.listen
		}
	}
	return proxy.New(cfg)
}
