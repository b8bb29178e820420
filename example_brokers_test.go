package fencecheck_test

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/kafka"
)

// A cluster by address is explored the same way: here kfake on real
// ports, as 'fencecheck broker' runs it. A correct configuration holds,
// with kfake's known divergences from Kafka gone past (Known), within the
// budget Options gives for a test that must stay under a minute.
func ExampleBrokers() {
	cluster, err := kafka.StartListening("127.0.0.1:0", nil, 0, nil) // Brokers creates fencecheck's topics

	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	t := &firstLines{}
	fencecheck.Test(t, fencecheck.Brokers(cluster.ListenAddrs()...), fencecheck.Options{
		Checks: 20, Seed: 5, ShrinkTime: 10 * time.Second, Known: kafka.KnownFindings()})
	fmt.Println("failed:", t.failed, t.errors)
	// Output:
	// failed: false []
}
