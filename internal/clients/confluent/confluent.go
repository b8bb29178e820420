//go:build confluent

package confluent

import (
	"os"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// library names the library in the loops.
const library = "confluent-kafka-go"

// Loops are the ways to write the job on confluent-kafka-go.
var Loops = []clients.Loop{
	{Library: library, Name: "kip447", Fenced: true, DialsItself: true, ConsumerProtocol: true, Static: true, Start: func(job clients.Job) (clients.Worker, error) {
		return start(job, consumerMetadata)
	}},
	{Library: library, Name: "group-id-only", Fenced: false, DialsItself: true, Start: func(job clients.Job) (clients.Worker, error) {
		return start(job, groupIDOnly)
	}},
}

// config is what every client of a worker is given: the cluster's
// addresses (TCP: librdkafka dials them itself), the worker's client.id,
// and its logs, which go to logs rather than to stderr.
func config(job clients.Job, logs chan kafka.LogEvent) kafka.ConfigMap {
	cfg := kafka.ConfigMap{
		"bootstrap.servers":      strings.Join(job.Brokers, ","),
		"client.id":              job.ClientID,
		"go.logs.channel.enable": true,
		"go.logs.channel":        logs,
	}
	if debug := os.Getenv(debugEnv); debug != "" {
		cfg["debug"] = debug
	}
	return cfg
}

// debugEnv names librdkafka's debug contexts for a replay
// (FENCECHECK_LIBRDKAFKA_DEBUG=cgrp,fetch,eos): its log lines go to the
// worker's log.
const debugEnv = "FENCECHECK_LIBRDKAFKA_DEBUG"

// consumerConfig is the consumer's: in the job's group, read_committed,
// from the earliest offset when the group has none, no automatic commits
// (the transaction commits the offsets), the job's timeouts and its
// instance id.
// librdkafka's rebalance timeout is max.poll.interval.ms, which also
// bounds the time between two polls; it may not be shorter than the
// session timeout.
func consumerConfig(job clients.Job, logs chan kafka.LogEvent) *kafka.ConfigMap {
	cfg := config(job, logs)
	session := orDefault(job.SessionTimeout, time.Second)
	cfg["group.id"] = job.Group
	cfg["isolation.level"] = "read_committed"
	cfg["auto.offset.reset"] = "earliest"
	cfg["enable.auto.commit"] = false
	cfg["max.poll.interval.ms"] = millis(max(orDefault(job.RebalanceTimeout, time.Second), session))
	cfg["fetch.wait.max.ms"] = millis(fetchMaxWait)
	if job.InstanceID != "" {
		// KIP-345: a static member. librdkafka sends it with the
		// group's requests and in GetConsumerGroupMetadata, and takes
		// FENCED_INSTANCE_ID as a fatal error of the consumer.
		cfg["group.instance.id"] = job.InstanceID
	}
	if job.ConsumerProtocol {
		// KIP-848: the cluster sets the session timeout and the
		// heartbeat interval, and librdkafka refuses a consumer that
		// sets them (rd_kafka_conf_finalize, "not supported for
		// group.protocol=consumer").
		cfg["group.protocol"] = "consumer"
		return &cfg
	}
	cfg["session.timeout.ms"] = millis(session)
	cfg["heartbeat.interval.ms"] = millis(heartbeatInterval)
	return &cfg
}

// producerConfig is the transactional producer's (librdkafka makes it
// idempotent, with acks from all replicas).
func producerConfig(job clients.Job, logs chan kafka.LogEvent) *kafka.ConfigMap {
	cfg := config(job, logs)
	cfg["transactional.id"] = job.TransactionalID
	cfg["transaction.timeout.ms"] = millis(transactionTimeout(job))
	return &cfg
}

func transactionTimeout(job clients.Job) time.Duration {
	return orDefault(job.TransactionTimeout, 3*time.Second)
}

// The job's pace, as the franz-go session's: quick heartbeats and fetches,
// so that a short run sees many rebalances and transactions.
const (
	heartbeatInterval = 100 * time.Millisecond
	fetchMaxWait      = 100 * time.Millisecond
)

func millis(d time.Duration) int { return int(d.Milliseconds()) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// logger is a worker's Job.Log that falls silent once the worker is
// stopped: librdkafka's threads and a crashed loop may still talk after
// Crash returned, when the test that logs may be over.
type logger struct {
	mu    sync.Mutex
	logf  func(format string, args ...any)
	quiet bool
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.quiet {
		l.logf(format, args...)
	}
}

func (l *logger) silence() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.quiet = true
}

// forward passes librdkafka's warnings and errors on, until done is
// closed.
func (l *logger) forward(name string, logs <-chan kafka.LogEvent, done <-chan struct{}) {
	for {
		select {
		case e := <-logs:
			if e.Level <= logWarning || os.Getenv(debugEnv) != "" {
				l.printf("confluent worker %s: librdkafka %s %s: %s", name, e.Name, e.Tag, e.Message)
			}
		case <-done:
			return
		}
	}
}

// logWarning is syslog's warning level, librdkafka's log levels' scale.
const logWarning = 4
