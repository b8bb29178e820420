// Package clients holds consume-transform-produce workers written on the
// Kafka client libraries fencecheck judges, each loop as that library's
// own documentation or shipped example teaches it. Every worker does one
// job: read trips from Input, read_committed, in consumer group Group;
// write the fare of each to Output in a transaction that also commits the
// input offsets. The job says where the cluster is and nothing about how
// a library talks to it, so a fencecheck proxy in front of the cluster
// records each worker's traffic and imposes its faults (stall, crash, lost
// answers), whatever the library.
//
// The loops are listed by their packages: clients/sarama (IBM/sarama) and
// clients/confluent (confluent-kafka-go, librdkafka; cgo, behind the
// build tag confluent). franz-go's own loop, GroupTransactSession, is the
// Kafka target's session worker (package kafka).
package clients

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Job is what a worker is given.
type Job struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// Dial connects to a broker, for the libraries that take a Go
	// dialer; nil is TCP. A library that dials on its own (librdkafka)
	// is given TCP addresses.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// ClientID names the worker's process at the proxy: every instance
	// of one worker (a restart) has the same, no two workers the same.
	ClientID string
	// Group, TransactionalID, Input and Output are the cluster's names.
	// TransactionalID is the worker's own; a loop that derives its ids
	// otherwise (per input partition) says so, and starts them with
	// Prefix, which every name of the job on the cluster starts with.
	Group, TransactionalID, Input, Output string
	Prefix                                string
	// InstanceID, when set, is the worker's group.instance.id: a static
	// member (KIP-345). Every instance of one worker (a restart) is given
	// the same, so a restart takes the member's place without a
	// rebalance, and the process it replaced is answered
	// FENCED_INSTANCE_ID. "" is a dynamic member.
	InstanceID string
	// KafkaVersion is the cluster's, "3.9" or "4.0"; "" is the newest
	// the library knows. Libraries that do not negotiate request
	// versions (sarama) are configured with it.
	KafkaVersion string
	// ConsumerProtocol: the worker joins its group by KIP-848's consumer
	// protocol (ConsumerGroupHeartbeat, Kafka 4), whose session timeout
	// and heartbeat interval the cluster sets; SessionTimeout is then
	// not the client's to send. A loop whose library does not speak it
	// says so (Loop.ConsumerProtocol).
	ConsumerProtocol bool
	// SessionTimeout, RebalanceTimeout and TransactionTimeout are the
	// group's and the producer's, in real time.
	SessionTimeout, RebalanceTimeout, TransactionTimeout time.Duration
	// Logf is told what the library says went wrong; nil is silence.
	Logf func(format string, args ...any)
}

// Log is the job's Logf, or one that says nothing.
func (j Job) Log() func(format string, args ...any) {
	if j.Logf != nil {
		return j.Logf
	}
	return func(string, ...any) {}
}

// Worker is one running instance of a loop.
type Worker interface {
	// Committed is how many transactions the worker committed.
	Committed() int
	// Stopped reports that the loop ended: it was closed, crashed, or
	// met an error it does not recover from (its orchestrator starts
	// another).
	Stopped() bool
	// Close stops the worker after its current transaction and leaves
	// the group; it returns the error that stopped the loop, if any.
	Close() error
	// Crash stops the worker where it is, as a killed process stops:
	// call it once the proxy has cut the worker's connections, so that
	// nothing the library says while it winds down reaches the cluster.
	// It returns at once, as a kill does; the library winds down in the
	// background, and Close after Crash waits for that, for at most the
	// bound the library's loop sets.
	Crash()
}

// Loop is one way a library's users write the job.
type Loop struct {
	// Library is the client library and its version; Name the loop,
	// unique within the library.
	Library, Name string
	// Fenced says whether the loop commits its offsets with its group
	// generation (KIP-447), so that the broker refuses a zombie's: a
	// loop that is not fenced is expected to break exactly-once under
	// a zombie (seed 002).
	Fenced bool
	// DialsItself says that the library opens its own connections, in
	// code that cannot take Job.Dial (librdkafka, in C): its workers
	// must be given TCP addresses, so the proxy in front of the
	// cluster listens on TCP.
	DialsItself bool
	// ConsumerProtocol says that the library speaks KIP-848's consumer
	// protocol, so the loop can be run with Job.ConsumerProtocol.
	ConsumerProtocol bool
	// Static says that the loop's transactions send their offsets with
	// Job.InstanceID (TxnOffsetCommit v3, KIP-447), so that the loop is a
	// whole static member (KIP-345); the properties run such a loop with
	// static members too. Every loop's consumer joins with the instance
	// id it is given.
	Static bool
	// Start starts an instance.
	Start func(Job) (Worker, error)
}

// Fare is the job's transformation: the fare of a trip.
func Fare(trip []byte) []byte { return append([]byte("fare of "), trip...) }

// Run is a running loop's bookkeeping, for the workers to embed: the
// transactions it committed, the error that ended it, and when it ended.
type Run struct {
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	// woundDown is closed when an abandoned run's wind-down ended or
	// ran out of time; nil until Abandon.
	woundDown chan struct{}

	mu        sync.Mutex
	committed int
	err       error
}

// Go runs loop in a goroutine of its own until it returns or ctx of the
// Run is cancelled (Stop).
func (r *Run) Go(loop func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	r.done, r.ctx, r.cancel = make(chan struct{}), ctx, cancel
	go func() {
		defer close(r.done)
		r.fail(loop(ctx))
	}()
}

// Stop cancels the loop and waits for it to return.
func (r *Run) Stop() {
	r.cancel()
	<-r.done
}

// Cancel cancels the loop without waiting.
func (r *Run) Cancel() { r.cancel() }

// Stopping reports that the loop was told to stop (Stop or Cancel), for
// the loops that would otherwise retry for ever.
func (r *Run) Stopping() bool { return r.ctx.Err() != nil }

// Done is closed when the loop has returned.
func (r *Run) Done() <-chan struct{} { return r.done }

// Commit counts a committed transaction.
func (r *Run) Commit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.committed++
}

func (r *Run) Committed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.committed
}

func (r *Run) Stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Err is the error that ended the loop, if any: cancellation is not one.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && err != nil && !errors.Is(err, context.Canceled) {
		r.err = err
	}
}

// Abandon is a crash: it cancels the loop without waiting and leaves
// windDown (the library's close) to run in the background, as a killed
// process's sockets and threads are left to the kernel. A crash must not
// cost the orchestrator the seconds a library spends retrying its
// goodbyes over connections that were cut. WoundDown waits for it, for at
// most limit. A run is abandoned once: a second Abandon does nothing.
func (r *Run) Abandon(limit time.Duration, windDown func()) {
	if r.Abandoned() {
		return
	}
	r.cancel()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		windDown()
	}()
	r.woundDown = make(chan struct{})
	go func() {
		defer close(r.woundDown)
		select {
		case <-finished:
		case <-time.After(limit):
		}
	}()
}

// Abandoned reports that the run was abandoned (a crash).
func (r *Run) Abandoned() bool { return r.woundDown != nil }

// WoundDown waits for an abandoned run's wind-down: until the library's
// close returned, or the limit given to Abandon passed.
func (r *Run) WoundDown() {
	if r.woundDown != nil {
		<-r.woundDown
	}
}
