// Package sarama is the job of package clients written on IBM/sarama, in
// each way sarama's API offers for committing a transaction's input
// offsets:
//
//   - kip447: the fenced path. AddOffsetsToTxnWithGroupMetadata with the
//     group metadata of the live session (NewConsumerGroupMetadataFromSession):
//     TxnOffsetCommit v3 carries the member id and generation (sarama
//     sends v3 only when Config.Version is at least 2.5), so the group
//     coordinator refuses a zombie's commit.
//   - group-id-only: AddOffsetsToTxn(offsets, groupId), whose metadata has
//     generation -1, which "tells the broker to skip that fencing"
//     (transaction_manager.go, publishOffsetsToTxn): a zombie consumer's
//     commit is taken (seed 002).
//   - shipped-example: sarama's examples/exactly_once, as it is written: a
//     transactional producer per input partition, one transaction per
//     message, the group metadata taken once per claim, and after an
//     abort, session.ResetOffset.
package sarama

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// library names the library in the loops.
const library = "sarama"

// Loops are the ways to write the job on sarama.
var Loops = []clients.Loop{
	{Library: library, Name: "kip447", Fenced: true, Static: true, Start: func(job clients.Job) (clients.Worker, error) {
		return start(job, withSessionMetadata)
	}},
	{Library: library, Name: "group-id-only", Fenced: false, Start: func(job clients.Job) (clients.Worker, error) {
		return start(job, withGroupID)
	}},
	{Library: library, Name: "shipped-example", Fenced: true, Start: startExample},
}

// config is what every sarama client of the job is given: how to reach
// the cluster, under the worker's client.id, speaking the cluster's
// version (sarama picks its request versions from it).
func config(job clients.Job) (*sarama.Config, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = job.ClientID
	v, err := version(job.KafkaVersion)
	if err != nil {
		return nil, err
	}
	cfg.Version = v
	if job.Dial != nil {
		cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, dialer(job.Dial)
	}
	return cfg, nil
}

// version is the job's Kafka version as sarama names it.
func version(kafkaVersion string) (sarama.KafkaVersion, error) {
	if kafkaVersion == "" {
		return sarama.MaxVersion, nil
	}
	if strings.Count(kafkaVersion, ".") == 1 {
		kafkaVersion += ".0"
	}
	return sarama.ParseKafkaVersion(kafkaVersion)
}

// dialer is a clients.Job's Dial as sarama's Net.Proxy.Dialer.
type dialer func(ctx context.Context, network, address string) (net.Conn, error)

func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return d(ctx, network, address)
}

// dialTimeout is sarama's own default, Net.DialTimeout.
const dialTimeout = 30 * time.Second

// consumerConfig is the consumer group's config: read_committed (which
// also makes sarama's offset fetches require stable offsets), from the
// oldest offset, no automatic commits (the transaction commits them), and
// the job's timeouts and instance id.
func consumerConfig(job clients.Job) (*sarama.Config, error) {
	cfg, err := config(job)
	if err != nil {
		return nil, err
	}
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = orDefault(job.SessionTimeout, time.Second)
	cfg.Consumer.Group.Rebalance.Timeout = orDefault(job.RebalanceTimeout, time.Second)
	cfg.Consumer.Group.Heartbeat.Interval = heartbeatInterval
	cfg.Consumer.MaxWaitTime = fetchMaxWait
	// KIP-345: a static member. sarama sends it on JoinGroup, SyncGroup
	// and Heartbeat (v3 on, Kafka 2.3), and does not leave the group
	// when it closes.
	cfg.Consumer.Group.InstanceId = job.InstanceID
	return cfg, nil
}

// producerConfig is a transactional producer's config, as sarama requires
// it (idempotent, acks from all replicas, one request in flight).
func producerConfig(job clients.Job, transactionalID string) (*sarama.Config, error) {
	cfg, err := config(job)
	if err != nil {
		return nil, err
	}
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = transactionalID
	cfg.Producer.Transaction.Timeout = orDefault(job.TransactionTimeout, 3*time.Second)
	cfg.Producer.Return.Successes = true
	return cfg, nil
}

// The job's pace, as the franz-go session's: quick heartbeats and fetches,
// so that a short run sees many rebalances and transactions.
const (
	heartbeatInterval = 100 * time.Millisecond
	fetchMaxWait      = 100 * time.Millisecond
)

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// crashWindDown is how long a crashed worker is given to stop: sarama
// retries a transaction's requests for Transaction.Retry (50 times 100 ms)
// before it gives up, and none of them reach the cluster.
const crashWindDown = 10 * time.Second
