//go:build confluent

package confluent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// worker is the loop confluent-kafka-go teaches. The transactional calls
// and their error handling follow the library's kafka/kafka.go
// ("Transactional producer API": retry what IsRetriable, abort what
// TxnRequiresAbort, treat anything else as fatal) and the docs of the
// calls in kafka/producer.go; the consumer and the rewind after an abort
// follow its transactions example (examples/transactions_example,
// processor.go and txnhelpers.go: a rebalance callback that assigns and
// unassigns, Poll, and after an abort, consumer.Committed and a seek to
// it). Unlike that example, which keeps a producer per input partition
// (its note: "required ... prior to KIP-447 being supported"), the worker
// has the one producer KIP-447 allows, under the job's transactional id.
//
// The loop polls a few messages, then in one transaction produces their
// fares, sends their offsets with the group metadata and commits. No
// transaction is open while it polls, so a rebalance has nothing to abort.
type worker struct {
	clients.Run
	job      clients.Job
	consumer *kafka.Consumer
	producer *kafka.Producer
	metadata groupMetadata
	log      *logger

	// batch is what the loop read since its last transaction; a revoke
	// drops it (rebalanced).
	batch []*kafka.Message

	crashed atomic.Bool
	// fatal: the consumer reported a fatal error, after which its Close
	// never returns (closeClients).
	fatal atomic.Bool
	// closing: the consumer is closing, and a rebalance it still delivers
	// is unassigned (see rebalanced).
	closing   atomic.Bool
	logsDone  chan struct{}
	quietOnce sync.Once
}

// groupMetadata is the consumer group metadata a transaction's offsets
// are sent with.
type groupMetadata func(c *kafka.Consumer, group string) (*kafka.ConsumerGroupMetadata, error)

// consumerMetadata is the consumer's own: member id and generation.
func consumerMetadata(c *kafka.Consumer, _ string) (*kafka.ConsumerGroupMetadata, error) {
	return c.GetConsumerGroupMetadata()
}

// groupIDOnly names the group only: generation -1, no member id, which
// the broker takes without fencing.
func groupIDOnly(_ *kafka.Consumer, group string) (*kafka.ConsumerGroupMetadata, error) {
	return kafka.NewTestConsumerGroupMetadata(group)
}

func start(job clients.Job, metadata groupMetadata) (clients.Worker, error) {
	logs := make(chan kafka.LogEvent, logBuffer)
	producer, err := kafka.NewProducer(producerConfig(job, logs))
	if err != nil {
		return nil, fmt.Errorf("confluent: creating the transactional producer: %w", err)
	}
	consumer, err := kafka.NewConsumer(consumerConfig(job, logs))
	if err != nil {
		producer.Close()
		return nil, fmt.Errorf("confluent: creating the consumer: %w", err)
	}
	w := &worker{job: job, consumer: consumer, producer: producer, metadata: metadata,
		log: &logger{logf: job.Log()}, logsDone: make(chan struct{})}
	go w.log.forward(job.ClientID, logs, w.logsDone)
	go w.deliveries()
	w.Go(w.run)
	return w, nil
}

// logBuffer is how many librdkafka log lines wait for the worker's log.
const logBuffer = 100

// run is the worker's loop. It owns the clients, and closes them when it
// ends: no call of the library is made from two goroutines.
func (w *worker) run(ctx context.Context) error {
	defer w.closeClients()
	if err := w.call(w.producer.InitTransactions); err != nil {
		return fmt.Errorf("confluent: initializing transactions: %w", err)
	}
	if err := w.consumer.Subscribe(w.job.Input, w.rebalanced); err != nil {
		return fmt.Errorf("confluent: subscribing to %s: %w", w.job.Input, err)
	}
	for ctx.Err() == nil {
		batch, err := w.poll(ctx)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			continue
		}
		if err := w.transact(batch); err != nil {
			return err
		}
	}
	return nil
}

// recordsPerTransaction keeps transactions small, so that faults find
// some open.
const recordsPerTransaction = 2

// pollTimeout is how long a poll waits for a first message.
const pollTimeout = 100 * time.Millisecond

// poll waits for the next message and takes up to recordsPerTransaction
// that are there. A rebalance, which the consumer delivers as it polls,
// may drop them. The consumer's errors are "generally just
// informational" (the example), but for a fatal one, which ends the
// worker.
func (w *worker) poll(ctx context.Context) ([]*kafka.Message, error) {
	w.batch = nil
	for len(w.batch) < recordsPerTransaction && ctx.Err() == nil {
		timeout := pollTimeout
		if len(w.batch) > 0 {
			timeout = 0 // take only what is there
		}
		switch e := w.consumer.Poll(millis(timeout)).(type) {
		case nil:
			if len(w.batch) > 0 {
				return w.batch, nil
			}
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				w.log.printf("confluent worker %s: consume: %v", w.job.ClientID, e.TopicPartition.Error)
				continue
			}
			w.batch = append(w.batch, e)
		case kafka.Error:
			if e.IsFatal() {
				w.fatal.Store(true)
				return nil, fmt.Errorf("confluent: the consumer failed: %w", e)
			}
			w.log.printf("confluent worker %s: consumer: %v", w.job.ClientID, e)
		}
	}
	return w.batch, nil
}

// rebalanced is the consumer's rebalance callback, as the example's
// (groupRebalance): it assigns what the group gives (from the committed
// offsets) and unassigns what it takes. What the loop read and did not
// process is dropped on a revoke: the partitions' next owner reads it
// again from the committed offsets, and offsets this worker no longer
// owns must not go into its next transaction.
//
// Under KIP-848's consumer protocol the rebalance protocol is cooperative:
// a rebalance gives or takes some partitions and the rest stay, so the
// callback assigns and unassigns incrementally, as the library's own
// rebalance handling does (Consumer.handleRebalanceEvent, by
// GetRebalanceProtocol), and a revoke drops only what was read of the
// partitions it takes.
func (w *worker) rebalanced(c *kafka.Consumer, ev kafka.Event) error {
	var err error
	cooperative := c.GetRebalanceProtocol() == "COOPERATIVE"
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		switch {
		case w.closing.Load() && cooperative:
			err = c.IncrementalAssign(nil)
		case w.closing.Load():
			// Close polls the consumer until it has left its group, and
			// may deliver an assignment on the way out; assigning it
			// then waited for ever on the closing consumer
			// (rd_kafka_assign inside rd_kafka_consumer_close: a long
			// exploration hung 7 minutes there). Nothing is read any
			// more, so the worker takes nothing: not calling Assign at
			// all would have the library assign in its place.
			err = c.Unassign()
		case cooperative:
			err = c.IncrementalAssign(e.Partitions)
		default:
			err = c.Assign(e.Partitions)
		}
	case kafka.RevokedPartitions:
		if !cooperative {
			w.batch = nil
			err = c.Unassign()
			break
		}
		w.batch = slices.DeleteFunc(w.batch, func(m *kafka.Message) bool {
			return slices.ContainsFunc(e.Partitions, func(p kafka.TopicPartition) bool {
				return *p.Topic == *m.TopicPartition.Topic && p.Partition == m.TopicPartition.Partition
			})
		})
		err = c.IncrementalUnassign(e.Partitions)
	}
	if err != nil {
		w.log.printf("confluent worker %s: rebalance %v: %v", w.job.ClientID, ev, err)
	}
	return err
}

// transact processes batch in one transaction. An error ends the worker:
// a transaction that was aborted is not one (the input is rewound).
func (w *worker) transact(batch []*kafka.Message) error {
	if err := w.producer.BeginTransaction(); err != nil {
		return fmt.Errorf("confluent: beginning a transaction: %w", err) // fatal, or misuse
	}
	for _, m := range batch {
		fare := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &w.job.Output, Partition: kafka.PartitionAny},
			Key:            m.Key, Value: clients.Fare(m.Key),
		}
		if err := w.producer.Produce(fare, nil); err != nil {
			return w.abort(err, batch) // processing failed
		}
	}
	metadata, err := w.metadata(w.consumer, w.job.Group)
	if err != nil {
		return w.abort(err, batch)
	}
	offsets := nextOffsets(batch)
	if err := w.call(func(ctx context.Context) error {
		return w.producer.SendOffsetsToTransaction(ctx, offsets, metadata)
	}); err != nil {
		return w.failed(err, batch)
	}
	if err := w.call(w.producer.CommitTransaction); err != nil {
		return w.failed(err, batch)
	}
	w.Commit()
	return nil
}

// nextOffsets are the offsets a transaction that processed batch commits:
// past the last message of each partition.
func nextOffsets(batch []*kafka.Message) []kafka.TopicPartition {
	var offsets []kafka.TopicPartition
	last := map[int32]int{}
	for _, m := range batch {
		tp := m.TopicPartition
		next := kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition, Offset: tp.Offset + 1}
		if i, ok := last[tp.Partition]; ok {
			offsets[i] = next
			continue
		}
		last[tp.Partition] = len(offsets)
		offsets = append(offsets, next)
	}
	return offsets
}

// call runs one of the producer's transactional calls, giving it
// callTimeout, and again while it fails with an error that IsRetriable
// ("the application may retry the operation immediately or preferably
// after a shorter grace period"), unless the worker is stopping. A
// crashed worker calls nothing more.
func (w *worker) call(op func(ctx context.Context) error) error {
	for {
		if w.crashed.Load() {
			return errCrashed
		}
		ctx, cancel := context.WithTimeout(context.Background(), transactionTimeout(w.job))
		err := op(ctx)
		cancel()
		var kerr kafka.Error
		if err == nil || !errors.As(err, &kerr) || !kerr.IsRetriable() || w.Stopping() {
			return err
		}
		time.Sleep(retryPause)
	}
}

// retryPause is the grace period before a retry.
const retryPause = 100 * time.Millisecond

var errCrashed = errors.New("confluent: the worker crashed")

// failed handles a transactional call's error, as kafka.go says: one that
// TxnRequiresAbort aborts the transaction; a fatal one, or one that is
// neither retriable nor abortable ("treat all other errors as fatal
// errors"), ends the worker.
func (w *worker) failed(err error, batch []*kafka.Message) error {
	var kerr kafka.Error
	if errors.As(err, &kerr) && kerr.TxnRequiresAbort() {
		return w.abort(err, batch)
	}
	return fmt.Errorf("confluent: the transaction failed: %w", err)
}

// abort aborts the transaction that failed with cause and rewinds the
// consumer, so that the next transaction reads again what this one did.
func (w *worker) abort(cause error, batch []*kafka.Message) error {
	w.log.printf("confluent worker %s: aborting the transaction: %v", w.job.ClientID, cause)
	if err := w.call(w.producer.AbortTransaction); err != nil {
		return fmt.Errorf("confluent: aborting the transaction after %v: %w", cause, err)
	}
	return w.rewind(batch)
}

// rewind moves the consumer back to the committed offsets of the
// partitions batch read, or to their beginning when none is committed, as
// the example's rewindConsumerPosition does (with SeekPartitions, which
// the library has in place of the deprecated Seek); like the example, a
// failure ends the worker. A worker that is stopping does not rewind: the
// partitions' next owner starts from the committed offsets.
func (w *worker) rewind(batch []*kafka.Message) error {
	if w.Stopping() {
		return nil
	}
	committed, err := w.consumer.Committed(nextOffsets(batch), millis(transactionTimeout(w.job)))
	if err != nil {
		return fmt.Errorf("confluent: reading the committed offsets to rewind to: %w", err)
	}
	for i := range committed {
		if committed[i].Offset < 0 {
			committed[i].Offset, committed[i].LeaderEpoch = kafka.OffsetBeginning, nil
		}
	}
	sought, err := w.consumer.SeekPartitions(committed)
	if err == nil {
		err = partitionsError(sought)
	}
	if err != nil {
		return fmt.Errorf("confluent: rewinding to the committed offsets %v: %w", committed, err)
	}
	return nil
}

func partitionsError(tps []kafka.TopicPartition) error {
	for _, tp := range tps {
		if tp.Error != nil {
			return fmt.Errorf("%v: %w", tp, tp.Error)
		}
	}
	return nil
}

// deliveries serves the producer's events until it closes, as
// CommitTransaction and AbortTransaction require ("The application MUST
// serve the producer.Events() channel for delivery reports"). A failed
// delivery is logged; the commit fails with it. The deliveries an abort
// purged are not news.
func (w *worker) deliveries() {
	for ev := range w.producer.Events() {
		switch e := ev.(type) {
		case *kafka.Message:
			if err := e.TopicPartition.Error; err != nil && !purged(err) {
				w.log.printf("confluent worker %s: delivery: %v", w.job.ClientID, err)
			}
		case kafka.Error:
			w.log.printf("confluent worker %s: producer: %v", w.job.ClientID, e)
		}
	}
}

func purged(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && (kerr.Code() == kafka.ErrPurgeQueue || kerr.Code() == kafka.ErrPurgeInflight)
}

// closeClients closes the consumer, which leaves the group, and the
// producer.
func (w *worker) closeClients() {
	w.closing.Store(true)
	closed := make(chan error, 1)
	if w.fatal.Load() {
		// confluent-kafka-go v2.11.1's Close polls for ever once the
		// consumer has a fatal error: librdkafka refuses to start the
		// close, and Close drops that refusal
		// (TestConfluentCloseHangsAfterAFatalError). The consumer is
		// left behind, as a process that exits leaves it.
		w.log.printf("confluent worker %s: the consumer has a fatal error, which its Close would wait on for ever; it is left behind", w.job.ClientID)
		w.producer.Close()
		return
	}
	if w.crashed.Load() {
		// Cut off, it winds down for as long as Close lets it (Crash).
		closed <- w.consumer.Close()
	} else {
		if w.job.ConsumerProtocol {
			w.revokeAll()
		}
		go func() { closed <- w.consumer.Close() }()
	}
	select {
	case err := <-closed:
		if err != nil {
			w.log.printf("confluent worker %s: closing the consumer: %v", w.job.ClientID, err)
		}
	case <-time.After(closeBound):
		w.log.printf("confluent worker %s: the consumer did not close in %v; it is left behind", w.job.ClientID, closeBound)
	}
	w.producer.Close()
}

// closeBound is how long a worker that was not crashed waits for its
// consumer to close. Under the consumer protocol, Close did not return in
// two of about a hundred interleavings: once inside IncrementalUnassign in
// the rebalance callback (before revokeAll), once polling for
// rd_kafka_consumer_closed after it. The second kind, three times in 150
// later interleavings, was a consumer with a fatal error, which a worker
// now does not close at all (fatal). A process that hangs on its way out
// is killed; the worker leaves its consumer behind, so that the
// orchestrator goes on.
const closeBound = 5 * time.Second

// revokeAll unsubscribes and polls until the consumer's partitions are
// revoked, or revokeBound passed, so that Close has none to revoke.
// Under the consumer protocol a revoke delivered inside Close hung: its
// IncrementalUnassign, called from the rebalance callback inside
// rd_kafka_consumer_close, waited 5 minutes until the test was stopped
// (librdkafka's open #4884 is the same with rd_kafka_assign, and
// unsubscribing first is the workaround given in librdkafka #4527). In
// librdkafka 2.11.1's source a call made from the callback (an assign,
// GetRebalanceProtocol) waits for its reply with no timeout, and once the
// group has terminated rd_kafka_cgrp_op_serve destroys the ops it is
// handed without one: an op enqueued just before the termination and
// served after it is never answered (docs/client-libraries.md).
func (w *worker) revokeAll() {
	if err := w.consumer.Unsubscribe(); err != nil {
		w.log.printf("confluent worker %s: unsubscribing: %v", w.job.ClientID, err)
		return
	}
	for deadline := time.Now().Add(revokeBound); time.Now().Before(deadline); {
		if assigned, err := w.consumer.Assignment(); err != nil || len(assigned) == 0 {
			return
		}
		w.consumer.Poll(millis(pollTimeout))
	}
}

// revokeBound is how long a closing worker waits for its revoke: its
// rebalance timeout, and as long again.
const revokeBound = 2 * time.Second

// Close stops the loop after its transaction and closes the clients;
// after a crash, it waits for the loop to wind down.
func (w *worker) Close() error {
	if w.Abandoned() {
		w.WoundDown()
		if !w.Stopped() {
			w.log.printf("confluent worker %s: still winding down %v after its crash", w.job.ClientID, crashWindDown)
		}
	} else {
		w.Stop()
	}
	w.quiet()
	return w.Err()
}

// Crash stops the loop where it is: it makes no call of the library
// more, and the loop closes the clients as it returns (the proxy has cut
// the worker off, so nothing they say reaches the cluster). The loop may
// be in a call, which ends by its timeout.
func (w *worker) Crash() {
	w.crashed.Store(true)
	w.Abandon(crashWindDown, func() { <-w.Done() })
}

// crashWindDown is how long a crashed worker is given to stop: a call it
// is in ends within the transaction timeout, then the clients close.
const crashWindDown = 10 * time.Second

// quiet silences the worker's log: nothing it says after Close returned
// is told.
func (w *worker) quiet() {
	w.quietOnce.Do(func() {
		w.log.silence()
		close(w.logsDone)
	})
}
