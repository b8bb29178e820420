package fencecheck_test

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/model"
)

// myTarget is a target skeleton: one function answers every request, and
// the broker's own faults (its clock, a restart) are methods. Here the
// function asks fencecheck's reference broker; a broker's own test calls
// that broker instead. docs/test-your-broker.md shows this code.
type myTarget struct {
	model.BrokerFunc
	broker *model.RefBroker // your broker here
}

func newMyTarget() (model.Target, error) {
	b := model.NewBroker(model.Options{TxnVersion: 2})
	answer := func(ctx context.Context, kind model.Kind, req model.Request) model.Result {
		res, err := model.Send(ctx, b, model.Op{Kind: kind, Req: req})
		if err != nil {
			return model.NoAnswer() // a kind this broker does not serve
		}
		return res
	}
	return &myTarget{BrokerFunc: answer, broker: b}, nil
}

func (t *myTarget) Tick(ms int64) { t.broker.Tick(ms) }  // advance your clock
func (t *myTarget) Restart()      { t.broker.Restart() } // stop and start on your logs
func (t *myTarget) Close() error  { return nil }

// A target written from the skeleton holds every check of the correct
// scenarios.
func ExampleTest_target() {
	t := &firstLines{}
	fencecheck.Test(t, newMyTarget, fencecheck.Options{Checks: 200, Seed: 1})
	fmt.Println("failed:", t.failed, t.errors)
	// Output:
	// failed: false []
}
