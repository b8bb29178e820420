package histories_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// A history is read from its JSON document; a malformed one is refused
// with the operation and the field.
func ExampleLoad() {
	h, err := histories.Load(strings.NewReader(`{"format": "fencecheck/history/v1", "ops": [
	  {"id": 0, "proc": "A", "call": 0, "return": 5, "type": "init_producer_id",
	   "req": {"transactional_id": "fare-writer-7"}, "resp": {"producer_id": 4001, "epoch": 0}}]}`))
	fmt.Println(len(h.Ops), h.Ops[0].Kind, err)

	_, err = histories.Load(strings.NewReader(`{"format": "fencecheck/history/v1", "ops": [
	  {"id": 0, "proc": "A", "call": 0, "return": 5, "type": "init_producer_id",
	   "req": {"transactional_id": "fare-writer-7"}, "error": "NOT_A_CODE"}]}`))
	fmt.Println(err)
	// Output:
	// 1 init_producer_id <nil>
	// op 0: init_producer_id: error: unknown error code "NOT_A_CODE"
}

// A Recorder stands between clients and any broker, and writes down every
// call and answer as a history.
func ExampleNewRecorder() {
	clock := int64(0)
	rec := histories.NewRecorder(model.NewBroker(model.Options{TxnVersion: 2}), func() int64 { clock++; return clock })
	init := model.NewRequest()
	init.TransactionalID = "fare-writer-7"
	rec.Proc("A").InitProducerID(context.Background(), init)
	if err := histories.Save(os.Stdout, rec.History()); err != nil {
		panic(err)
	}
	// Output:
	// {
	//   "format": "fencecheck/history/v1",
	//   "ops": [
	//     {"id": 0, "proc": "A", "call": 1, "return": 2, "type": "init_producer_id", "req": {"transactional_id": "fare-writer-7"}, "resp": {"producer_id": 1, "epoch": 0}}
	//   ]
	// }
}
