package model_test

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/model"
)

// The reference broker answers requests as Apache Kafka does. A second
// InitProducerId for one transactional.id bumps the epoch, and the old
// epoch's writes are fenced (KIP-98).
func ExampleNewBroker() {
	b := model.NewBroker(model.Options{TxnVersion: 2})
	ctx := context.Background()
	init := model.NewRequest()
	init.TransactionalID = "fare-writer-7"
	first, _ := model.Send(ctx, b, model.Op{Kind: model.InitProducerID, Req: init})
	second, _ := model.Send(ctx, b, model.Op{Kind: model.InitProducerID, Req: init})
	fmt.Println("epochs:", first.Resp.Epoch, second.Resp.Epoch)

	zombie := model.NewRequest()
	zombie.TransactionalID = "fare-writer-7"
	zombie.ProducerID, zombie.Epoch = first.Resp.ProducerID, first.Resp.Epoch
	zombie.Partition = "fares-2"
	zombie.Records = []model.Record{{Key: "trip-9001"}}
	res, _ := model.Send(ctx, b, model.Op{Kind: model.Produce, Req: zombie})
	fmt.Println("the old epoch's produce:", res.Err, "-", model.ClassOf(model.Produce, res.Err))
	// Output:
	// epochs: 0 1
	// the old epoch's produce: INVALID_PRODUCER_EPOCH - fenced producer
}
