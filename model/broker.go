package model

import (
	"context"
	"fmt"
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
