package sarama

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// example is sarama's examples/exactly_once (v1.61.1), kept as it is
// written, with the job's names and pace, and without its signal
// handling and logging: a consumer group whose handler, for each
// message, borrows the transactional producer of the message's input
// partition (transactional id "sarama-<topic>-<partition>", the same in
// every instance of the application), produces one record, adds the
// message's offset with the group metadata taken when the claim began,
// and commits. On an error it aborts if it can and calls
// session.ResetOffset(message), which moves the session's offset mark
// back and nothing else: the claim goes on with the next message.
type example struct {
	clients.Run
	job       clients.Job
	group     sarama.ConsumerGroup
	producers *producerProvider
}

func startExample(job clients.Job) (clients.Worker, error) {
	cfg, err := consumerConfig(job)
	if err != nil {
		return nil, err
	}
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	group, err := sarama.NewConsumerGroup(job.Brokers, job.Group, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama: starting the consumer group: %w", err)
	}
	e := &example{job: job, group: group, producers: newProducerProvider(job)}
	e.Go(e.consume)
	return e, nil
}

func (e *example) consume(ctx context.Context) error {
	for {
		// `Consume` should be called inside an infinite loop, when a
		// server-side rebalance happens, the consumer session will need to be
		// recreated to get the new claims
		if err := e.group.Consume(ctx, []string{e.job.Input}, e); err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return nil
			}
			return fmt.Errorf("Error from consumer: %w", err) // the example panics here
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (e *example) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (e *example) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (e *example) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	groupMetadata := sarama.NewConsumerGroupMetadataFromSession(session, e.job.Group, nil)
	for {
		select {
		case message, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			e.process(session, groupMetadata, message)
		case <-session.Context().Done():
			return nil
		}
	}
}

// process is the body of the example's message loop.
func (e *example) process(session sarama.ConsumerGroupSession, groupMetadata *sarama.ConsumerGroupMetadata, message *sarama.ConsumerMessage) {
	producer := e.producers.borrow(message.Topic, message.Partition)
	if producer == nil {
		return // the example retries for ever; the worker is closing
	}
	defer e.producers.release(message.Topic, message.Partition, producer)

	// BeginTxn must be called before any messages.
	if err := producer.BeginTxn(); err != nil {
		return
	}
	producer.Input() <- &sarama.ProducerMessage{
		Topic: e.job.Output,
		Key:   sarama.ByteEncoder(message.Key),
		Value: sarama.ByteEncoder(clients.Fare(message.Key)),
	}
	if err := producer.AddMessageToTxnWithGroupMetadata(message, groupMetadata, nil); err != nil {
		e.handleTxnError(producer, message, session, func() error {
			return producer.AddMessageToTxnWithGroupMetadata(message, groupMetadata, nil)
		})
		return
	}
	if err := producer.CommitTxn(); err != nil {
		e.handleTxnError(producer, message, session, producer.CommitTxn)
		return
	}
	e.Commit()
}

// handleTxnError is the example's: abort if the error is abortable, reset
// the session's offset to the message, or else retry.
func (e *example) handleTxnError(producer sarama.AsyncProducer, message *sarama.ConsumerMessage, session sarama.ConsumerGroupSession, defaulthandler func() error) {
	for !e.Stopping() {
		if producer.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0 {
			// fatal error. need to recreate producer.
			session.ResetOffset(message.Topic, message.Partition, message.Offset, "")
			return
		}
		if producer.TxnStatus()&sarama.ProducerTxnFlagAbortableError != 0 {
			if err := producer.AbortTxn(); err != nil {
				continue
			}
			session.ResetOffset(message.Topic, message.Partition, message.Offset, "")
			return
		}
		if err := defaulthandler(); err == nil {
			return
		}
	}
}

// producerProvider is the example's pool of transactional producers,
// per input partition.
type producerProvider struct {
	job       clients.Job
	mu        sync.Mutex
	producers map[topicPartition][]sarama.AsyncProducer
	closed    bool
}

type topicPartition struct {
	topic     string
	partition int32
}

func newProducerProvider(job clients.Job) *producerProvider {
	return &producerProvider{job: job, producers: map[topicPartition][]sarama.AsyncProducer{}}
}

// transactionalID is the example's "sarama-<topic>-<partition>", in the
// job's names.
func (p *producerProvider) transactionalID(topic string, partition int32) string {
	return fmt.Sprintf("%ssarama-%s-%d", p.job.Prefix, strings.TrimPrefix(topic, p.job.Prefix), partition)
}

func (p *producerProvider) newProducer(topic string, partition int32) sarama.AsyncProducer {
	cfg, err := producerConfig(p.job, p.transactionalID(topic, partition))
	if err != nil {
		return nil
	}
	cfg.Producer.Return.Successes = false // the example's producer config leaves sarama's default
	producer, err := sarama.NewAsyncProducer(p.job.Brokers, cfg)
	if err != nil {
		return nil
	}
	return producer
}

// borrow is the example's: a pooled producer, or a new one (the example
// tries for ever; nil once the worker is closing).
func (p *producerProvider) borrow(topic string, partition int32) sarama.AsyncProducer {
	if producer, closed := p.pooled(topicPartition{topic, partition}); producer != nil || closed {
		return producer
	}
	for !p.isClosed() {
		if producer := p.newProducer(topic, partition); producer != nil {
			return producer
		}
	}
	return nil
}

// pooled takes a producer of tp from the pool, if there is one.
func (p *producerProvider) pooled(tp topicPartition) (producer sarama.AsyncProducer, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.producers[tp]); n > 0 && !p.closed {
		producer = p.producers[tp][n-1]
		p.producers[tp] = p.producers[tp][:n-1]
	}
	return producer, p.closed
}

func (p *producerProvider) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *producerProvider) release(topic string, partition int32, producer sarama.AsyncProducer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if producer.TxnStatus()&sarama.ProducerTxnFlagInError != 0 || p.closed {
		_ = producer.Close()
		return
	}
	tp := topicPartition{topic, partition}
	p.producers[tp] = append(p.producers[tp], producer)
}

func (p *producerProvider) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, producers := range p.producers {
		for _, producer := range producers {
			_ = producer.Close()
		}
	}
	clear(p.producers)
}

// Close stops the example and closes its clients, for at most
// crashWindDown: the example can wedge in CommitTxn for ever (a failed
// produce's error waits on a producer's Errors channel, which it never
// reads), and a process that does not stop is killed, so a Close that
// does not end is left behind as a crash's wind-down is.
func (e *example) Close() error {
	e.Abandon(crashWindDown, func() {
		e.Stop()
		e.producers.clear()
		_ = e.group.Close()
	})
	e.WoundDown()
	return e.Err()
}

func (e *example) Crash() {
	e.Abandon(crashWindDown, func() {
		e.producers.clear()
		_ = e.group.Close()
		<-e.Done()
	})
}
