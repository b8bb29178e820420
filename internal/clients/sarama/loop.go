package sarama

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// worker is the loop sarama's documentation teaches: a consumer group
// whose handler, for each claim, reads a few messages, produces their
// fares with the worker's one transactional producer and commits the
// input offsets in the same transaction. The claims of a session share
// the producer, one transaction at a time.
//
// After an abort the handler returns, which ends the session: sarama
// rejoins the group and the next session's claims start from the
// committed offsets, so what the aborted transaction consumed is read
// again. A producer sarama marks fatal (fenced by a newer instance of
// the transactional id) ends the worker, and so does a static member's
// FENCED_INSTANCE_ID (a newer process took its instance id).
type worker struct {
	clients.Run
	job      clients.Job
	group    sarama.ConsumerGroup
	producer sarama.SyncProducer
	addOffsets
	txn sync.Mutex // one transaction at a time over the session's claims

	fatalMu sync.Mutex
	fatal   error
}

// addOffsets adds a transaction's input offsets to it: with the session's
// group metadata, or with the group id only.
type addOffsets func(p sarama.SyncProducer, s sarama.ConsumerGroupSession, group string, instance *string, offsets map[string][]*sarama.PartitionOffsetMetadata) error

// withSessionMetadata sends the session's member id and generation, and
// the static member's instance id, which TxnOffsetCommit v3 carries and
// the group coordinator checks too (nil for a dynamic member).
func withSessionMetadata(p sarama.SyncProducer, s sarama.ConsumerGroupSession, group string, instance *string, offsets map[string][]*sarama.PartitionOffsetMetadata) error {
	return p.AddOffsetsToTxnWithGroupMetadata(offsets, sarama.NewConsumerGroupMetadataFromSession(s, group, instance))
}

func withGroupID(p sarama.SyncProducer, _ sarama.ConsumerGroupSession, group string, _ *string, offsets map[string][]*sarama.PartitionOffsetMetadata) error {
	return p.AddOffsetsToTxn(offsets, group)
}

// instanceOf is the job's instance id as sarama's group metadata takes
// it: nil for a dynamic member.
func instanceOf(job clients.Job) *string {
	if job.InstanceID == "" {
		return nil
	}
	return &job.InstanceID
}

func start(job clients.Job, add addOffsets) (clients.Worker, error) {
	ccfg, err := consumerConfig(job)
	if err != nil {
		return nil, err
	}
	pcfg, err := producerConfig(job, job.TransactionalID)
	if err != nil {
		return nil, err
	}
	producer, err := sarama.NewSyncProducer(job.Brokers, pcfg)
	if err != nil {
		return nil, fmt.Errorf("sarama: starting the transactional producer: %w", err)
	}
	group, err := sarama.NewConsumerGroup(job.Brokers, job.Group, ccfg)
	if err != nil {
		_ = producer.Close()
		return nil, fmt.Errorf("sarama: starting the consumer group: %w", err)
	}
	w := &worker{job: job, group: group, producer: producer, addOffsets: add}
	w.Go(w.consume)
	return w, nil
}

// consume is the outer loop of sarama's consumer group: a session per
// generation, until the worker stops.
func (w *worker) consume(ctx context.Context) error {
	for {
		err := w.group.Consume(ctx, []string{w.job.Input}, w)
		switch {
		case ctx.Err() != nil:
			return nil
		case w.fatalErr() != nil:
			return w.fatalErr()
		case errors.Is(err, sarama.ErrClosedConsumerGroup):
			return err
		case errors.Is(err, sarama.ErrFencedInstancedId):
			// Another process holds the worker's instance id (KIP-345):
			// sarama would rejoin under the member id it lost, and be
			// fenced again at once, for ever. Kafka's Java consumer
			// takes it as fatal (FencedInstanceIdException), and so
			// does the worker.
			return fmt.Errorf("sarama: fenced by another process with instance id %s: %w", w.job.InstanceID, err)
		case err != nil:
			w.job.Log()("sarama worker %s: consume: %v", w.job.ClientID, err)
		}
	}
}

func (w *worker) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (w *worker) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim processes a claim's messages, a few to a transaction,
// until the claim ends or a transaction does not commit.
func (w *worker) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		batch := take(session, claim, recordsPerTransaction)
		if len(batch) == 0 {
			return nil
		}
		if err := w.transact(session, batch); err != nil {
			return err // ends the session: the next one starts from the committed offsets
		}
	}
}

// recordsPerTransaction keeps transactions small, so that faults find
// some open.
const recordsPerTransaction = 2

// take waits for a claim's next message and takes up to n that are
// there; none when the claim or its session ended.
func take(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim, n int) []*sarama.ConsumerMessage {
	var batch []*sarama.ConsumerMessage
	select {
	case m, ok := <-claim.Messages():
		if !ok {
			return nil
		}
		batch = append(batch, m)
	case <-session.Context().Done():
		return nil
	}
	for len(batch) < n {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return batch
			}
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// transact processes batch in one transaction. An error says the
// transaction did not commit (it was aborted, or the producer is done
// for).
func (w *worker) transact(session sarama.ConsumerGroupSession, batch []*sarama.ConsumerMessage) error {
	w.txn.Lock()
	defer w.txn.Unlock()
	if err := w.producer.BeginTxn(); err != nil {
		return w.recover(err)
	}
	fares := make([]*sarama.ProducerMessage, len(batch))
	for i, m := range batch {
		fares[i] = &sarama.ProducerMessage{Topic: w.job.Output, Key: sarama.ByteEncoder(m.Key),
			Value: sarama.ByteEncoder(clients.Fare(m.Key))}
	}
	if err := w.producer.SendMessages(fares); err != nil {
		return w.recover(err)
	}
	if err := w.addOffsets(w.producer, session, w.job.Group, instanceOf(w.job), nextOffsets(batch)); err != nil {
		return w.recover(err)
	}
	if err := w.producer.CommitTxn(); err != nil {
		return w.recover(err)
	}
	w.Commit()
	return nil
}

// nextOffsets are the offsets a transaction that processed batch commits:
// past the last message of each partition.
func nextOffsets(batch []*sarama.ConsumerMessage) map[string][]*sarama.PartitionOffsetMetadata {
	last := map[int32]*sarama.ConsumerMessage{}
	for _, m := range batch {
		last[m.Partition] = m
	}
	offsets := map[string][]*sarama.PartitionOffsetMetadata{}
	for _, m := range last {
		offsets[m.Topic] = append(offsets[m.Topic], &sarama.PartitionOffsetMetadata{Partition: m.Partition, Offset: m.Offset + 1})
	}
	return offsets
}

// recover handles a transaction that failed with err, as sarama's
// documentation says to: abort it when the error is abortable; a fatal
// one ends the worker.
func (w *worker) recover(err error) error {
	status := w.producer.TxnStatus()
	switch {
	case status&sarama.ProducerTxnFlagFatalError != 0:
		w.setFatal(fmt.Errorf("sarama: the transactional producer failed: %w", err))
	case status&sarama.ProducerTxnFlagInTransaction != 0 || status&sarama.ProducerTxnFlagAbortableError != 0:
		if abortErr := w.producer.AbortTxn(); abortErr != nil {
			w.setFatal(fmt.Errorf("sarama: aborting after %v: %w", err, abortErr))
		}
	}
	return err
}

func (w *worker) setFatal(err error) {
	w.fatalMu.Lock()
	defer w.fatalMu.Unlock()
	if w.fatal == nil {
		w.fatal = err
	}
}

func (w *worker) fatalErr() error {
	w.fatalMu.Lock()
	defer w.fatalMu.Unlock()
	return w.fatal
}

// Close stops the loop after its transaction and leaves the group; after
// a crash, it waits for the crashed clients to wind down.
func (w *worker) Close() error {
	if w.Abandoned() {
		w.WoundDown()
		return w.Err()
	}
	w.Stop()
	_ = w.group.Close()
	_ = w.producer.Close()
	return w.Err()
}

// Crash stops the loop and leaves the clients to close in the
// background, with nothing reaching the cluster (the proxy has cut the
// worker off).
func (w *worker) Crash() {
	w.Abandon(crashWindDown, func() {
		_ = w.group.Close()
		_ = w.producer.Close()
		<-w.Done()
	})
}
