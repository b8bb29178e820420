package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// Config says which cluster to check and how to speak to it.
type Config struct {
	// Brokers are the bootstrap addresses (host:port) of a real cluster.
	// NewKfake ignores them.
	Brokers []string
	// Topics are the model's topics and their partition counts: seeded
	// on kfake, created (under TopicPrefix) on a real cluster when
	// missing. A request naming another topic is not sent.
	Topics map[string]int32
	// TopicPrefix starts every name this target uses on the cluster
	// (topics, transactional ids, groups); "" is "fencecheck-".
	TopicPrefix string
	// RunID follows the prefix, so that runs on one cluster never meet.
	// New picks a random one when it is empty; NewKfake, whose cluster is
	// the run's own, uses none.
	RunID string
	// KafkaVersion caps the request versions, as "3.9" or "4.0"; "" is
	// the newest franz-go knows. Below 4.0 transactions speak protocol v1;
	// from 4.0, where the broker supports it, v2 (KIP-890).
	KafkaVersion string
	// TimeScale is how many real milliseconds one model millisecond
	// lasts; 0 is DefaultTimeScale. See the package documentation.
	TimeScale float64
	// RebalanceTimeout is how long (real time) a join waits for the
	// group's other members to rejoin before the coordinator drops
	// them; 0 is 50 ms. A live member's heartbeats rejoin it within
	// milliseconds; only a stalled or crashed one is waited for in full,
	// on kfake's clock and not the model's, so the wait stays under the
	// 95 ms a tick leaves a transaction the model keeps (nearDue): at
	// 200 ms, such waits ran out transactions the model kept
	// (FINDINGS.md, round 9).
	RebalanceTimeout time.Duration
	// RequestTimeout bounds each request, retries included; 0 is 10 s.
	RequestTimeout time.Duration
	// DataDir is where a kfake cluster keeps its logs, so that Restart
	// finds them; "" is a temporary directory removed on Close, in
	// shared memory (/dev/shm) where there is one.
	DataDir string
	// Logf receives why an answer was taken as undecided; nil is
	// log.Printf.
	Logf func(format string, args ...any)
	// ConsumerGroups says that the run's workers speak KIP-848's
	// consumer group protocol (ConsumerGroupHeartbeat). New then also
	// requires the cluster's group.consumer.session.timeout.ms to be
	// the scaled 45 s the model takes; a run of classic groups alone,
	// or on a 3.9 cluster, does not need it.
	ConsumerGroups bool
	// SessionWorkers starts kfake (NewKfake) for the session workers of
	// StartSession and StartWorker, whose clocks are real: a KIP-848
	// member's session and heartbeat interval are then a classic
	// worker's (1 s and 100 ms), not the model's scaled defaults, which
	// the Target's own requests need.
	SessionWorkers bool
}

// DefaultTimeScale is Config.TimeScale's default: a model millisecond
// lasts 10 real microseconds, so that a 60 s transaction timeout is 600 ms.
const DefaultTimeScale = 0.01

const (
	defaultPrefix           = "fencecheck-"
	defaultRebalanceTimeout = 50 * time.Millisecond
	defaultRequestTimeout   = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.TopicPrefix == "" {
		c.TopicPrefix = defaultPrefix
	}
	if c.TimeScale <= 0 {
		c.TimeScale = DefaultTimeScale
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = defaultRebalanceTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
	return c
}

// Target is a Kafka-protocol cluster behind model.Target. It is safe for
// concurrent use.
type Target struct {
	cfg    Config
	names  names
	routes *routes
	txnV   int
	// versions are the request versions the clients may send (versionCap).
	versions *kversion.Versions

	// embedded is the kfake cluster, nil on a real one.
	embedded *embedded
	// clock is the model's time and the requests that start broker
	// timers (clock.go).
	clock *clock

	// members are the group members this target joined, for their
	// heartbeats (heartbeat.go).
	membersMu sync.Mutex
	members   map[string]*member
	// memberOrder numbers member ids as the target first saw them, for
	// the assignment (groups.go).
	memberOrder map[string]int

	closeOnce sync.Once
	closeErr  error
}

var _ model.Target = (*Target)(nil)

// New connects to the cluster at cfg.Brokers, creating the topics of
// cfg.Topics under the target's prefix where they are missing. It
// refuses a cluster whose settings do not fit what the target sends,
// naming each (see Settings in settings.go). Its clock follows the
// broker's timers as on kfake (clock.go); its Restart only reconnects.
func New(cfg Config) (*Target, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka: no bootstrap brokers; NewKfake runs an embedded cluster")
	}
	if cfg.RunID == "" {
		cfg.RunID = randomRunID()
	}
	t, err := connect(cfg.withDefaults(), nil)
	if err != nil {
		return nil, err
	}
	if err := t.checkSettings(); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.createTopics(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// randomRunID names one run: eight hex digits and a dash.
func randomRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

// connect starts the client and learns what the cluster speaks.
func connect(cfg Config, e *embedded) (*Target, error) {
	versions, err := versionCap(cfg.KafkaVersion)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.MaxVersions(versions), kgo.DisableClientMetrics()}
	if e != nil {
		opts = append(opts, kgo.SeedBrokers(e.addrs...), kgo.Dialer(pipes.dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	t := &Target{cfg: cfg, names: names{prefix: cfg.TopicPrefix + cfg.RunID}, versions: versions, embedded: e, clock: newClock(), members: map[string]*member{}, memberOrder: map[string]int{}}
	t.routes = newRoutes(cl, t.names, cfg.Topics)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RequestTimeout)
	defer cancel()
	if t.txnV, err = transactionsVersion(ctx, cl, versions); err != nil {
		cl.Close()
		return nil, err
	}
	return t, nil
}

// TransactionsVersion is the transaction protocol requests are sent in: 1
// (KIP-98) or 2 (KIP-890), for histories.History.TransactionsVersion.
func (t *Target) TransactionsVersion() int { return t.txnV }

// Restart stops the broker and starts it again on its logs. On kfake that
// is the whole cluster, reopened on its data directory and its ports, and
// the client is replaced: the old one's connections died with the cluster,
// and a request sent on one of them would be lost without an answer. A
// request in flight during the restart gets no answer, as it would from a
// crashing broker. A real cluster's brokers are not this target's to
// restart: there Restart only reconnects.
func (t *Target) Restart() {
	// The old client is closed before the cluster comes back: closing it
	// waits for its requests in flight, and a cluster already up would
	// let its clock run meanwhile (a transaction timing out at no Tick).
	old := t.routes.client()
	opts := old.Opts()
	// kfake moves the start of every open transaction on by its outage:
	// the clock sees by how much (clock.go).
	var before map[string]openTxn
	if t.embedded != nil {
		before = t.openTxnsAround(old, "before")
	}
	old.Close()
	t.disconnectMembers()
	if t.embedded != nil {
		if err := t.embedded.restart(); err != nil {
			t.cfg.Logf("kafka: restarting the embedded cluster: %v", err)
		}
	} else {
		t.cfg.Logf("kafka: a real cluster is not restarted by fencecheck; restart its brokers yourself")
	}
	t.reconnectMembers()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.cfg.Logf("kafka: reconnecting after a restart: %v", err)
		t.routes.forgetAll()
		return
	}
	t.routes.replaceClient(cl)
	if t.embedded != nil {
		t.clock.restarted(before, t.openTxnsAround(cl, "after"), t.scaledDuration)
	}
}

// RestartsBroker reports whether Restart restarts the broker: on kfake it
// does; a real cluster's brokers are not this target's to restart, so the
// workload does not draw a restart there.
func (t *Target) RestartsBroker() bool { return t.embedded != nil }

// AsyncMarkers reports whether the broker may answer EndTxn before its
// markers land: a real cluster does (TransactionMarkerChannelManager);
// kfake writes them at once.
func (t *Target) AsyncMarkers() bool { return t.embedded == nil }

// openTxnsAround asks, just before or after a restart, which of the
// target's transactions are open and when each began.
func (t *Target) openTxnsAround(cl *kgo.Client, when string) map[string]openTxn {
	ctx, cancel := t.requestCtx(context.Background())
	defer cancel()
	txns, err := t.openTxns(ctx, cl)
	if err != nil {
		t.cfg.Logf("kafka: asking the broker for its open transactions %s a restart: %v", when, err)
		return nil // not known
	}
	return txns
}

// Close releases the client and, on kfake, the cluster and its data.
func (t *Target) Close() error {
	t.closeOnce.Do(func() {
		t.forgetMembers()
		t.routes.client().Close()
		if t.embedded != nil {
			t.closeErr = t.embedded.close()
		}
	})
	return t.closeErr
}

// realDuration is how long ms of model time lasts on the wall clock.
func (t *Target) realDuration(ms int64) time.Duration {
	return time.Duration(float64(ms) * t.cfg.TimeScale * float64(time.Millisecond))
}

// scaledMs is a model timeout as the broker gets it, never below 1 ms.
func (t *Target) scaledMs(ms int64) int32 { return scaledMs(ms, t.cfg.TimeScale) }

func scaledMs(ms int64, scale float64) int32 {
	real := float64(ms) * scale
	if real < 1 {
		return 1
	}
	if real > float64(1<<31-1) {
		return 1<<31 - 1
	}
	return int32(real)
}

// requestCtx bounds one request, retries included.
func (t *Target) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.cfg.RequestTimeout)
}

// undecided is the answer to a request whose outcome cannot be told.
func (t *Target) undecided(kind model.Kind, format string, args ...any) model.Result {
	t.cfg.Logf("kafka: %s undecided: %s", kind, fmt.Sprintf(format, args...))
	return model.Fail(model.RequestTimedOut)
}

// result is the model's result for a Kafka error code; a code the history
// format has no name for, or cannot hold for kind, is undecided, with the
// reason logged (wire.Result).
func (t *Target) result(kind model.Kind, code int16, resp model.Response) model.Result {
	res, err := wire.Result(kind, code, resp)
	if err != nil {
		return t.undecided(kind, "%v", err)
	}
	return res
}

// modelMs is a timeout the broker got, in model time.
func (t *Target) modelMs(real int32) int64 {
	return int64(float64(real) / t.cfg.TimeScale)
}
