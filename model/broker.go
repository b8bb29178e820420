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

// OffsetCommitter is a broker that also takes a consumer's plain
// OffsetCommit, outside a transaction. It is apart from Broker so that
// the brokers written before it keep compiling; Send refuses the request
// to a broker without it.
type OffsetCommitter interface {
	OffsetCommit(ctx context.Context, req Request) Result
}

// ConsumerGroupHeartbeater is a broker that also answers KIP-848's
// ConsumerGroupHeartbeat, the one request of a consumer group
// (group.protocol=consumer). It is apart from Broker, as OffsetCommitter
// is, so that the brokers written before it keep compiling; Send refuses
// the request to a broker without it.
type ConsumerGroupHeartbeater interface {
	ConsumerGroupHeartbeat(ctx context.Context, req Request) Result
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
	if op.Kind == OffsetCommit {
		c, ok := b.(OffsetCommitter)
		if !ok {
			return Result{}, fmt.Errorf("%T takes no %q: it is not an OffsetCommitter", b, op.Kind)
		}
		send = c.OffsetCommit
	}
	if op.Kind == ConsumerGroupHeartbeat {
		c, ok := b.(ConsumerGroupHeartbeater)
		if !ok {
			return Result{}, fmt.Errorf("%T takes no %q: it is not a ConsumerGroupHeartbeater", b, op.Kind)
		}
		send = c.ConsumerGroupHeartbeat
	}
	if send == nil {
		return Result{}, fmt.Errorf("%q is not a request a broker answers", op.Kind)
	}
	return send(ctx, op.Req), nil
}

// BrokerFunc is a Broker made of one function that answers every kind of
// request: its methods call it with their kind.
type BrokerFunc func(ctx context.Context, kind Kind, req Request) Result

func (f BrokerFunc) InitProducerID(ctx context.Context, r Request) Result {
	return f(ctx, InitProducerID, r)
}
func (f BrokerFunc) AddPartitions(ctx context.Context, r Request) Result {
	return f(ctx, AddPartitions, r)
}
func (f BrokerFunc) Produce(ctx context.Context, r Request) Result { return f(ctx, Produce, r) }
func (f BrokerFunc) AddOffsets(ctx context.Context, r Request) Result {
	return f(ctx, AddOffsets, r)
}
func (f BrokerFunc) TxnOffsetCommit(ctx context.Context, r Request) Result {
	return f(ctx, TxnOffsetCommit, r)
}
func (f BrokerFunc) EndTxn(ctx context.Context, r Request) Result    { return f(ctx, EndTxn, r) }
func (f BrokerFunc) JoinGroup(ctx context.Context, r Request) Result { return f(ctx, JoinGroup, r) }
func (f BrokerFunc) LeaveGroup(ctx context.Context, r Request) Result {
	return f(ctx, LeaveGroup, r)
}
func (f BrokerFunc) OffsetFetch(ctx context.Context, r Request) Result {
	return f(ctx, OffsetFetch, r)
}
func (f BrokerFunc) Fetch(ctx context.Context, r Request) Result { return f(ctx, Fetch, r) }

// NewBroker is the reference model as a Broker: every request is answered by
// Apply, one at a time.
func NewBroker(opts Options) *RefBroker {
	b := &RefBroker{state: Init(opts)}
	b.BrokerFunc = func(_ context.Context, kind Kind, r Request) Result { return b.apply(kind, r) }
	return b
}

// RefBroker is the reference model behind the Broker interface. It is safe
// for concurrent use: requests are applied one at a time, in lock order.
type RefBroker struct {
	BrokerFunc
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

// OffsetCommit answers a consumer's plain commit (OffsetCommitter). A
// BrokerFunc has no such method, so that a function that wraps another
// broker, such as a recorder's, takes it only when it says so.
func (b *RefBroker) OffsetCommit(ctx context.Context, r Request) Result {
	return b.BrokerFunc(ctx, OffsetCommit, r)
}

var _ OffsetCommitter = (*RefBroker)(nil)

// ConsumerGroupHeartbeat answers KIP-848's heartbeat
// (ConsumerGroupHeartbeater). A BrokerFunc has no such method, for the
// reason OffsetCommit gives.
func (b *RefBroker) ConsumerGroupHeartbeat(ctx context.Context, r Request) Result {
	return b.BrokerFunc(ctx, ConsumerGroupHeartbeat, r)
}

var _ ConsumerGroupHeartbeater = (*RefBroker)(nil)

// Tick moves the broker's clock by ms; expired transactions and sessions end.
func (b *RefBroker) Tick(ms int64) { b.apply(Tick, Request{Ms: ms}) }

// ExactClock says that only Tick moves the reference broker's clock, so
// that an exploration may tick to a timer's deadline to the millisecond.
func (b *RefBroker) ExactClock() {}

// Restart restarts the broker; the model keeps its logs and so its state.
func (b *RefBroker) Restart() { b.apply(BrokerRestart, Request{}) }

// Close does nothing: the model holds no resources.
func (b *RefBroker) Close() error { return nil }

var _ Target = (*RefBroker)(nil)

// LandMarkers writes every marker in flight (Options.AsyncMarkers).
func (b *RefBroker) LandMarkers() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = LandMarkers(b.state)
}

// MarkerWriter is a target that answers EndTxn before it writes the
// markers, and writes them when asked: the exploration then runs requests
// inside the window between the two (model.Options.AsyncMarkers,
// impl.Config.AsyncMarkers). A real cluster writes them on its own.
type MarkerWriter interface {
	LandMarkers()
	// MarkersInFlight reports whether an ended transaction's markers
	// are still to be written.
	MarkersInFlight() bool
}

// MarkersInFlight reports whether an ended transaction's markers are
// still to be written.
func (b *RefBroker) MarkersInFlight() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return MarkersInFlight(b.state)
}

// AsyncMarkers reports whether the model answers EndTxn before its
// markers land (Options.AsyncMarkers).
func (b *RefBroker) AsyncMarkers() bool { return b.state.opts.AsyncMarkers }

var _ MarkerWriter = (*RefBroker)(nil)
