package kafka_test

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
)

// New is the target for a Kafka-protocol cluster by address: the same
// requests as the reference broker's, over the wire. Here the cluster is
// kfake on real ports, set up as a cluster by address must be.
func ExampleNew() {
	cluster, err := kafka.StartListening("127.0.0.1:0", nil, 0, nil)
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	target, err := kafka.New(kafka.Config{Brokers: cluster.ListenAddrs(), Topics: map[string]int32{"fares": 1}})
	if err != nil {
		panic(err)
	}
	defer target.Close()
	init := model.NewRequest()
	init.TransactionalID = "fare-writer-7"
	first := target.InitProducerID(context.Background(), init)
	second := target.InitProducerID(context.Background(), init)
	fmt.Println("answered:", first.Succeeded(), second.Succeeded())
	fmt.Println("the second fences the first:", second.Resp.Epoch > first.Resp.Epoch || second.Resp.ProducerID != first.Resp.ProducerID)
	// Output:
	// answered: true true
	// the second fences the first: true
}
