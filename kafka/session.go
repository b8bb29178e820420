package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/internal/proxy"
	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SessionConfig is a consume-transform-produce worker built on franz-go's
// own exactly-once loop, kgo.GroupTransactSession: it reads trips from
// Input, read_committed, in the consumer group Group, and writes the fare
// of each to Output in a transaction that also commits the input offsets
// (KIP-447). Topic and group names are the model's; the session uses the
// target's names for them on the cluster.
//
// With Record set, its requests are recorded as they go over the wire
// (package recorder): its producer ids, epochs, sequences and generations,
// which the checks judge with the rest of the history.
type SessionConfig struct {
	Group, TransactionalID string
	Input, Output          string
	// InstanceID, when set, is the worker's group.instance.id: a static
	// member (KIP-345). A restart with the same InstanceID takes the
	// member's place without a rebalance, and the process it replaced is
	// fenced (FENCED_INSTANCE_ID).
	InstanceID string
	// ConsumerProtocol joins the group by KIP-848's consumer protocol
	// (ConsumerGroupHeartbeat, Kafka 4) instead of the classic one. Its
	// session timeout and heartbeat interval are then the cluster's
	// (kfakeConsumerSession); SessionTimeout is not sent.
	ConsumerProtocol bool
	// SessionTimeout, RebalanceTimeout and TransactionTimeout are real
	// time; 0 is 1 s, 1 s and 3 s.
	SessionTimeout, RebalanceTimeout, TransactionTimeout time.Duration
	// Record, when not nil, is given the session's requests as
	// operations of process Proc.
	Record recorder.Observer
	Proc   string
	// Proxy, when set, is the fencecheck proxy the session reaches the
	// cluster through (Target.NewProxy): it is recorded there, under its
	// client.id Proc, and faulted there, as any client is; Record is not
	// used.
	Proxy *proxy.Proxy

	// outsideTxn makes the worker write its output with a producer of
	// its own, outside the transaction: a misconfiguration the
	// properties must catch (an aborted transaction's output stays, and
	// its input is processed again).
	outsideTxn bool
}

// Session is one running worker process. Its faults are those the
// workload imposes on its own processes, at the client's connections
// (package recorder): Stall and Wake (a pause: nothing goes out or comes in,
// heartbeats included), Crash (its connections dropped with nothing
// said), LoseResponse; a restart is a new Session with the same config.
type Session struct {
	gts    *kgo.GroupTransactSession
	output string
	// produce writes the output: the session's transactional producer,
	// or the plain one of a misconfigured worker (outsideTxn).
	produce func(context.Context, ...*kgo.Record) kgo.ProduceResults
	plain   *kgo.Client
	tap     *recorder.Client
	// sharedTap: tap is the proxy's process (SessionConfig.Proxy), which
	// the session's restart uses again. A crashed session's wind-down then
	// must not close it, because that would end the restart's requests
	// in flight as unanswered.
	sharedTap bool
	// Run is the loop's bookkeeping: what it committed, the error that
	// ended it, and when it ended.
	clients.Run

	stopOnce sync.Once // Crash or Close, whichever comes first
}

// StartSession starts a worker on the target's cluster.
func (t *Target) StartSession(cfg SessionConfig) (*Session, error) {
	tap, common := t.sessionClient(cfg)
	gts, err := kgo.NewGroupTransactSession(append(common, t.sessionOpts(cfg)...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: starting a transact session: %w", err)
	}
	s := &Session{gts: gts, output: t.names.topic(cfg.Output), produce: gts.ProduceSync, tap: tap, sharedTap: cfg.Proxy != nil}
	if cfg.outsideTxn {
		if s.plain, err = kgo.NewClient(common...); err != nil {
			gts.Close()
			return nil, fmt.Errorf("kafka: starting a producer: %w", err)
		}
		s.produce = s.plain.ProduceSync
	}
	s.Go(s.loop)
	return s, nil
}

// sessionClient is where a session's clients are recorded and faulted,
// and how they reach the cluster: dialing through a recorder of their
// own, or through cfg.Proxy, where a session restarted after a crash is
// let through again.
func (t *Target) sessionClient(cfg SessionConfig) (*recorder.Client, []kgo.Opt) {
	if cfg.Proxy == nil {
		tap := recorder.New(cfg.Proc, recorder.Config{Observer: cfg.Record, Cluster: clusterOf{t}, Logf: t.cfg.Logf})
		return tap, append(t.clientOpts(), kgo.Dialer(tap.Dial(t.dial)))
	}
	tap := cfg.Proxy.Process(cfg.Proc)
	tap.Restart()
	return tap, append(t.clientOpts(), kgo.SeedBrokers(cfg.Proxy.Addr()), kgo.Dialer(t.dial), kgo.ClientID(cfg.Proc))
}

// clientOpts are what every client of the target's cluster is given.
func (t *Target) clientOpts() []kgo.Opt {
	seeds := t.cfg.Brokers
	if t.embedded != nil {
		seeds = t.embedded.addrs
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.MaxVersions(t.versions),
		// The target reads uncompressed batches only, so that what it
		// returns is exactly what the broker stored.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if t.embedded != nil {
		opts = append(opts, kgo.Dialer(pipes.dial))
	}
	return opts
}

// sessionOpts are what a session's client is given besides clientOpts.
func (t *Target) sessionOpts(cfg SessionConfig) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.TransactionalID(t.names.txnID(cfg.TransactionalID)),
		kgo.TransactionTimeout(orDefault(cfg.TransactionTimeout, 3*time.Second)),
		kgo.ConsumerGroup(t.names.group(cfg.Group)),
		kgo.ConsumeTopics(t.names.topic(cfg.Input)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(orDefault(cfg.SessionTimeout, time.Second)),
		kgo.RebalanceTimeout(orDefault(cfg.RebalanceTimeout, time.Second)),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.ConsumerProtocol {
		// kgo speaks KIP-848 only with a range or sticky balancer, and
		// falls back to the classic protocol otherwise
		// (groupConsumer.should848); cooperative-sticky asks the
		// broker's uniform assignor.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	}
	return opts
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// recordsPerTransaction keeps transactions small, so that faults find
// some open.
const recordsPerTransaction = 2

// loop is the exactly-once loop of franz-go's documentation: poll, begin,
// produce the transformed records, end (committing the input offsets with
// the group's metadata, or aborting if the group rebalanced meanwhile).
func (s *Session) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		fetches := s.gts.PollRecords(ctx, recordsPerTransaction)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		if fetches.Empty() {
			continue
		}
		if err := s.transact(ctx, fetches); err != nil {
			return err
		}
	}
	return nil
}

// transact processes one poll's records in one transaction.
func (s *Session) transact(ctx context.Context, fetches kgo.Fetches) error {
	if err := s.gts.Begin(); err != nil {
		return err
	}
	var produced []*kgo.Record
	fetches.EachRecord(func(in *kgo.Record) {
		produced = append(produced, &kgo.Record{Topic: s.output, Partition: in.Partition, Key: in.Key,
			Value: []byte("fare of " + string(in.Key))})
	})
	produceErr := s.produce(ctx, produced...).FirstErr()
	committed, err := s.gts.End(ctx, kgo.TransactionEndTry(produceErr == nil))
	if ctx.Err() != nil {
		return nil // crashed mid-transaction
	}
	if err != nil {
		return err
	}
	if committed {
		s.Commit()
	}
	return nil
}

// Stall pauses the worker, as a garbage collection pause does: what it
// sends waits, what it receives reaches it later, and its heartbeats stop,
// so the group may drop it and its transaction may time out.
func (s *Session) Stall() { s.tap.Stall() }

// Wake ends the pause: the worker goes on as if nothing happened, a
// zombie if it was replaced meanwhile.
func (s *Session) Wake() { s.tap.Wake() }

// LoseResponse drops the answer to the worker's next request of the
// history's kinds: its connection closes once the request went out, and
// the client asks again.
func (s *Session) LoseResponse() { s.tap.LoseNextAnswer() }

// Crash stops the worker abruptly: whatever transaction is open stays
// unfinished, for the next owner of its transactional id (or the
// transaction timeout) to abort.
//
// Its requests in flight end unanswered at once; its client winds down in
// the background, since nothing it says reaches the broker any more (it
// would retry its LeaveGroup for kgo's retry timeout).
func (s *Session) Crash() {
	s.stopOnce.Do(func() {
		s.tap.Crash()
		s.tap.Close()
		s.Cancel()
		go func() {
			<-s.Done()
			s.gts.Client().Close()
			if s.plain != nil {
				s.plain.Close()
			}
			if !s.sharedTap {
				s.tap.Close()
			}
		}()
	})
}

// closeRest closes the misconfigured worker's producer, and ends the
// recorded requests the closed clients left unanswered.
func (s *Session) closeRest() {
	if s.plain != nil {
		s.plain.Close()
	}
	s.tap.Close()
}

// Close stops the worker after its current transaction and leaves the
// group (after a Crash, it does nothing more); it returns the error that
// stopped the worker, if any.
func (s *Session) Close() error {
	s.stopOnce.Do(func() {
		s.Cancel()
		s.Wake()
		<-s.Done()
		s.gts.Close()
		s.closeRest()
	})
	return s.Err()
}
