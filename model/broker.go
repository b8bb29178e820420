package model

import (
	"context"
	"fmt"
	"sync"
)

// Broker is what fencecheck checks: anything that answers Kafka's requests.
// The reference model (NewBroker), the optimised broker and real
// Kafka-protocol brokers all stand behind it. A method never panics on a bad
// answer from its broker: it returns a Result, undecided when it cannot tell.
type Broker interface {
	InitProducerID(ctx context.Context, req Request) Result
	AddPartitions(ctx context.Context, req Request) Result
	Produce(ctx context.Context, req Request) Result
	AddOffsets(ctx context.Context, req Request) Result
	TxnOffsetCommit(ctx context.Context, req Request) Result
	EndTxn(ctx context.Context, req Request) Result
	JoinGroup(ctx context.Context, req Request) Result
	LeaveGroup(ctx context.Context, req Request) Result
	OffsetFetch(ctx context.Context, req Request) Result
	Fetch(ctx context.Context, req Request) Result
}

// Target is a broker that fencecheck can explore: the requests, and the
// faults that strike the broker itself. The workload drives nothing else, so
// the model, the optimised broker and a Kafka cluster are interchangeable.
type Target interface {
	Broker
	// Tick moves the broker's clock by ms: transaction and session
	// timeouts that pass fire.
	Tick(ms int64)
	// Restart stops the broker and starts it again on its logs.
	Restart()
	// Close releases the broker; a target is used for one exploration.
	Close() error
}

// NewTarget makes a fresh target, for one exploration each.
type NewTarget func() (Target, error)

// Send dispatches op to the method of b that serves its kind.
func Send(ctx context.Context, b Broker, op Op) (Result, error) {
	send := map[Kind]func(context.Context, Request) Result{
		InitProducerID:  b.InitProducerID,
		AddPartitions:   b.AddPartitions,
		Produce:         b.Produce,
		AddOffsets:      b.AddOffsets,
		TxnOffsetCommit: b.TxnOffsetCommit,
		EndTxn:          b.EndTxn,
		JoinGroup:       b.JoinGroup,
		LeaveGroup:      b.LeaveGroup,
		OffsetFetch:     b.OffsetFetch,
		Fetch:           b.Fetch,
	}[op.Kind]
	if send == nil {
		return Result{}, fmt.Errorf("%q is not a request a broker answers", op.Kind)
	}
	return send(ctx, op.Req), nil
}

// NewBroker is the reference model as a Broker: every request is answered by
// Apply, one at a time.
func NewBroker(opts Options) *RefBroker { return &RefBroker{state: Init(opts)} }

// RefBroker is the reference model behind the Broker interface. It is safe
// for concurrent use: requests are applied one at a time, in lock order.
type RefBroker struct {
	mu    sync.Mutex
	state State
}

func (b *RefBroker) apply(kind Kind, req Request) Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	var res Result
	b.state, res = Apply(b.state, Op{Kind: kind, Req: req})
	return res
}

// Tick moves the broker's clock by ms; expired transactions and sessions end.
func (b *RefBroker) Tick(ms int64) { b.apply(Tick, Request{Ms: ms}) }

// Restart restarts the broker; the model keeps its logs and so its state.
func (b *RefBroker) Restart() { b.apply(BrokerRestart, Request{}) }

// Close does nothing: the model holds no resources.
func (b *RefBroker) Close() error { return nil }

func (b *RefBroker) InitProducerID(_ context.Context, r Request) Result {
	return b.apply(InitProducerID, r)
}
func (b *RefBroker) AddPartitions(_ context.Context, r Request) Result {
	return b.apply(AddPartitions, r)
}
func (b *RefBroker) Produce(_ context.Context, r Request) Result { return b.apply(Produce, r) }
func (b *RefBroker) AddOffsets(_ context.Context, r Request) Result {
	return b.apply(AddOffsets, r)
}
func (b *RefBroker) TxnOffsetCommit(_ context.Context, r Request) Result {
	return b.apply(TxnOffsetCommit, r)
}
func (b *RefBroker) EndTxn(_ context.Context, r Request) Result    { return b.apply(EndTxn, r) }
func (b *RefBroker) JoinGroup(_ context.Context, r Request) Result { return b.apply(JoinGroup, r) }
func (b *RefBroker) LeaveGroup(_ context.Context, r Request) Result {
	return b.apply(LeaveGroup, r)
}
func (b *RefBroker) OffsetFetch(_ context.Context, r Request) Result {
	return b.apply(OffsetFetch, r)
}
func (b *RefBroker) Fetch(_ context.Context, r Request) Result { return b.apply(Fetch, r) }

var _ Target = (*RefBroker)(nil)
