package impl_test

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// The optimised broker answers as the reference broker does, unless a
// seeded bug is switched on. With reinit-keeps-epoch, a second
// InitProducerId hands out the same epoch, so nothing fences the first
// producer.
func ExampleNew() {
	ctx := context.Background()
	init := model.NewRequest()
	init.TransactionalID = "fare-writer-7"
	for _, mutants := range []string{"", "reinit-keeps-epoch"} {
		bugs, err := impl.ParseMutants(mutants)
		if err != nil {
			panic(err)
		}
		b := impl.New(impl.Config{TxnVersion: 2, Mutants: bugs})
		first := b.InitProducerID(ctx, init)
		second := b.InitProducerID(ctx, init)
		fmt.Printf("mutants %q: epochs %d, %d\n", mutants, first.Resp.Epoch, second.Resp.Epoch)
	}
	// Output:
	// mutants "": epochs 0, 1
	// mutants "reinit-keeps-epoch": epochs 0, 0
}
