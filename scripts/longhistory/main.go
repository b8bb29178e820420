// Command longhistory writes a long correct history of the soak's shape,
// to measure `fencecheck check` on it (scripts/check-ladder.sh). One
// transactional client commits one record per transaction, as
// internal/proxy's soak does through kfake: an init, then a produce and an
// end_txn for each record, under transactions v2 on a wall clock. Every
// answer is the reference broker's. The history is written as it is made,
// so a history of any length takes the generator little memory beyond the
// model's log. With -marks, each batch written ends with a
// complete_before mark, as a recording proxy writes it, so that
// `fencecheck check --follow` can be measured on it.
//
//	go run ./scripts/longhistory -ops 5000000 -out /tmp/5M.json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

func main() {
	n := flag.Int("ops", 1_000_000, "how many operations to write")
	out := flag.String("out", "", "the `FILE` to write")
	marks := flag.Bool("marks", false, "mark what is whole, as a recording proxy does (complete_before)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "longhistory: -out names the file to write")
		os.Exit(2)
	}
	if err := write(*out, *n, *marks); err != nil {
		fmt.Fprintln(os.Stderr, "longhistory:", err)
		os.Exit(1)
	}
}

func write(path string, n int, marks bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	header := histories.History{Name: fmt.Sprintf("soak shape, %d operations", n), WallClock: true}
	w, err := histories.NewWriter(buf, header)
	if err != nil {
		return err
	}
	c := soakClient{state: model.Init(model.Options{TxnVersion: 2, WallClock: true}), pid: model.NoProducerID, epoch: model.NoEpoch}
	write := w.Write
	if marks {
		// One client, one request at a time: every operation called
		// before an operation's return is written with it or before it.
		write = func(op histories.Op) error { return w.WriteMarked(op, op.Return) }
	}
	for i := range n {
		if err := write(c.next(i)); err != nil {
			return err
		}
	}
	if err := w.Close(histories.History{}); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// soakClient is the soak's producer: it commits one record at a time.
type soakClient struct {
	state    model.State
	pid      int64
	epoch    int16
	sequence int32
	records  int
	produced bool // a record is in the open transaction
}

// next is operation i: the client's next request with the reference
// broker's answer, a millisecond long, the next one called as it returns.
func (c *soakClient) next(i int) histories.Op {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = "soak-0", c.pid, c.epoch
	op := model.Op{Kind: model.InitProducerID, Req: r}
	switch {
	case c.pid == model.NoProducerID:
	case !c.produced:
		c.records++
		r.Partition, r.Sequence = "trips-0", c.sequence
		r.Records = []model.Record{{Key: fmt.Sprintf("trip-%d", c.records), Value: "fare"}}
		op = model.Op{Kind: model.Produce, Req: r}
	default:
		r.Commit = true
		op = model.Op{Kind: model.EndTxn, Req: r}
	}
	call := int64(i)
	op.Span = model.Span{From: call, To: call + 1}
	var res model.Result
	c.state, res = model.Apply(c.state, op)
	c.learn(op, res)
	return histories.Op{ID: i, Proc: "soak", Call: call, Return: call + 1, Returned: true, Op: op, Result: res}
}

func (c *soakClient) learn(op model.Op, res model.Result) {
	if !res.Succeeded() {
		panic(fmt.Sprintf("the reference broker refused the soak's %s: %s", op.Kind, res.Err))
	}
	switch op.Kind {
	case model.InitProducerID:
		c.pid, c.epoch = res.Resp.ProducerID, res.Resp.Epoch
	case model.Produce:
		c.sequence++
		c.produced = true
	case model.EndTxn:
		// Under v2 the commit answers the epoch to go on with (a new
		// producer id once the epoch runs out), and sequences start over.
		c.pid, c.epoch, c.sequence = res.Resp.ProducerID, res.Resp.Epoch, 0
		c.produced = false
	}
}
