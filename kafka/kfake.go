package kafka

import (
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/fencecheck/fencecheck/model"
)

// WaitingFactor is how many explorations `fencecheck run` runs side by side
// per core on kfake or a cluster (its --parallel default): an interleaving
// there spends most of its time waiting for the broker's timers, which run
// on the wall clock (a Tick that fires a session waits out its scaled
// timeout), and the clusters wait side by side: one exploration keeps a
// core about 6% busy, nearly all of its time spent in ticks. Throughput
// grows with the number side by side (on 2 cores, 160 interleavings a
// worker: 1,735 checked operations a second at 8, 2,577 at 12, 3,231 at
// 16). At 32 at once on two cores the requests slowed down enough for a
// wall-clock timeout to fire where the model's clock had not moved (a
// finding no slower run shows); a busier machine wants fewer.
const WaitingFactor = 6

const (
	kfakeBrokers = 3
	// kfakeMinSession lets scaled session timeouts through: kfake, like
	// Kafka, refuses any below 6 s unless told otherwise.
	kfakeMinSession = time.Millisecond
	// kfakeConsumerHeartbeat is the consumer protocol's heartbeat
	// interval on kfake, a classic worker's (sessionOpts).
	kfakeConsumerHeartbeat = 100 * time.Millisecond
)

// kfakeConsumerSession is the consumer protocol's session timeout
// on an embedded kfake cluster (group.consumer.session.timeout.ms): a
// classic worker's default (SessionConfig.SessionTimeout).
const kfakeConsumerSession = time.Second

// NewKfake starts an in-process kfake cluster of three brokers with the
// topics of cfg.Topics and returns a target on it; Close stops it. Its logs
// are kept in cfg.DataDir (a temporary directory when empty), so that
// Restart can reopen the cluster on them.
func NewKfake(cfg Config) (*Target, error) {
	cfg = cfg.withDefaults()
	e, err := startEmbedded(cfg)
	if err != nil {
		return nil, err
	}
	t, err := connect(cfg, e)
	if err != nil {
		e.close()
		return nil, err
	}
	return t, nil
}

// embedded is a kfake cluster that can be stopped and started again on the
// same data directory and ports.
type embedded struct {
	opts    []kfake.Opt
	addrs   []string
	dir     string
	ownsDir bool // a temporary directory, removed on close

	mu      sync.Mutex
	cluster *kfake.Cluster
}

func startEmbedded(cfg Config) (*embedded, error) {
	e := &embedded{dir: cfg.DataDir}
	if e.dir == "" {
		dir, err := os.MkdirTemp(tempRoot(), "fencecheck-kfake-")
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		e.dir, e.ownsDir = dir, true
	}
	opts, err := kfakeOpts(cfg, e.dir)
	if err != nil {
		e.removeDir()
		return nil, err
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		e.removeDir()
		return nil, fmt.Errorf("kafka: starting kfake: %w", err)
	}
	e.cluster, e.addrs = cluster, cluster.ListenAddrs()
	// A restart must come back on the same ports, where the client looks.
	ports, err := portsOf(e.addrs)
	if err != nil {
		e.close()
		return nil, err
	}
	e.opts = append(opts, kfake.Ports(ports...))
	return e, nil
}

// memoryDirs are where a kfake cluster's logs go when the caller names no
// directory, the first that takes a new directory: shared memory, where
// they are written as fast as kfake writes them (on a disk, starting,
// stopping and restarting a cluster, which syncs its files, took 10 to 40
// ms each, about as long as all the requests of an interleaving), else
// the system's temporary directory.
var memoryDirs = []string{"/dev/shm"}

// tempRoot is the directory new data directories go under.
func tempRoot() string {
	tempRootOnce.Do(func() {
		for _, dir := range memoryDirs {
			probe, err := os.MkdirTemp(dir, "fencecheck-probe-")
			if err == nil {
				os.Remove(probe)
				tempRootDir = dir
				return
			}
		}
	})
	return tempRootDir
}

var (
	tempRootOnce sync.Once
	tempRootDir  string // "" is os.TempDir
)

func kfakeOpts(cfg Config, dir string) ([]kfake.Opt, error) {
	opts := []kfake.Opt{
		kfake.NumBrokers(kfakeBrokers),
		kfake.DataDir(dir),
		kfake.GroupMinSessionTimeout(kfakeMinSession),
		kfake.BrokerConfigs(consumerGroupSettings(cfg.TimeScale)),
		kfake.ListenFn(pipes.listen), // pipes.go
	}
	if cfg.SessionWorkers {
		// KIP-848's consumer protocol takes its session timeout and
		// heartbeat interval from the cluster, not the member, so that a
		// consumer-protocol worker is dropped as soon as a classic
		// worker of the same config is (SessionConfig). Later
		// BrokerConfigs win over the scaled ones above.
		opts = append(opts, kfake.BrokerConfigs(map[string]string{
			"group.consumer.session.timeout.ms":    strconv.Itoa(int(kfakeConsumerSession.Milliseconds())),
			"group.consumer.heartbeat.interval.ms": strconv.Itoa(int(kfakeConsumerHeartbeat.Milliseconds())),
		}))
	}
	names := names{prefix: cfg.TopicPrefix + cfg.RunID}
	for _, topic := range slices.Sorted(maps.Keys(cfg.Topics)) {
		opts = append(opts, kfake.SeedTopics(cfg.Topics[topic], names.topic(topic)))
	}
	if cfg.KafkaVersion != "" {
		// The broker speaks the capped versions too, as that Kafka would.
		v, err := versionCap(cfg.KafkaVersion)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kfake.MaxVersions(v))
	}
	return opts, nil
}

// consumerGroupSettings are the KIP-848 group settings at a time scale:
// Kafka's default session and heartbeat interval, scaled. They are the
// broker's, not the request's, so they are set on kfake's brokers, which
// take any value (Kafka refuses a session below
// group.consumer.min.session.timeout.ms, 45 s by default).
func consumerGroupSettings(scale float64) map[string]string {
	scaled := func(ms int64) string { return strconv.Itoa(int(scaledMs(ms, scale))) }
	return map[string]string{
		"group.consumer.session.timeout.ms":    scaled(model.DefaultConsumerSessionTimeoutMs),
		"group.consumer.heartbeat.interval.ms": scaled(model.DefaultConsumerHeartbeatIntervalMs),
	}
}

func portsOf(addrs []string) ([]int, error) {
	ports := make([]int, len(addrs))
	for i, addr := range addrs {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("kafka: kfake address %q: %w", addr, err)
		}
		if ports[i], err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("kafka: kfake address %q: %w", addr, err)
		}
	}
	return ports, nil
}

// restart stops the cluster (it writes its state to the data directory)
// and starts it again from there.
func (e *embedded) restart() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cluster == nil {
		return fmt.Errorf("the cluster is closed")
	}
	e.cluster.Close()
	e.cluster = nil
	cluster, err := kfake.NewCluster(e.opts...)
	if err != nil {
		return fmt.Errorf("reopening kfake on %s: %w", e.dir, err)
	}
	e.cluster = cluster
	return nil
}

func (e *embedded) close() error {
	e.mu.Lock()
	if e.cluster != nil {
		e.cluster.Close()
		e.cluster = nil
	}
	e.mu.Unlock()
	return e.removeDir()
}

func (e *embedded) removeDir() error {
	if !e.ownsDir {
		return nil
	}
	return os.RemoveAll(e.dir)
}

// ListenBrokers is how many brokers StartListening runs: enough for
// partition leaders and coordinators to sit on different brokers, as
// NewKfake's do.
const ListenBrokers = kfakeBrokers

// StartListening starts a kfake cluster of ListenBrokers brokers on real
// ports, the first at listen and the others on the ports after it (port
// 0: any free ports), with topics seeded under their own names. It is set
// up as New needs a cluster by address to be at the time scale scale (0:
// DefaultTimeScale; see Settings), so that New(Config{Brokers:
// cluster.ListenAddrs(), TimeScale: scale}) explores it: the KIP-848
// session is a broker setting, which New holds to the scale exactly. Its
// data lives in memory. Close stops it. Each listener is guarded
// (GuardListener): a frame kfake would crash on closes its connection,
// logged to logf (nil: nowhere), and the cluster goes on.
func StartListening(listen string, topics map[string]int32, scale float64, logf func(format string, args ...any)) (*kfake.Cluster, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if scale <= 0 {
		scale = DefaultTimeScale
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("%q is not host:port: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535-ListenBrokers {
		return nil, fmt.Errorf("%q: the port must be 0 to %d", listen, 65535-ListenBrokers)
	}
	ports := make([]int, ListenBrokers)
	for i := range ports {
		if port != 0 {
			ports[i] = port + i
		}
	}
	opts := []kfake.Opt{kfake.NumBrokers(ListenBrokers), kfake.Ports(ports...),
		// A broker setting, not GroupMinSessionTimeout, so that
		// DescribeConfigs tells New the value that holds.
		kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": strconv.Itoa(int(kfakeMinSession.Milliseconds()))}),
		kfake.BrokerConfigs(consumerGroupSettings(scale)),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, _ := net.SplitHostPort(address)
			ln, err := net.Listen(network, net.JoinHostPort(host, p))
			if err != nil {
				return nil, err
			}
			return GuardListener(ln, logf), nil
		})}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		opts = append(opts, kfake.SeedTopics(topics[name], name))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: starting kfake: %w", listen, err)
	}
	return cluster, nil
}
