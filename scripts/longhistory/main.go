// Command longhistory writes a long correct history of the soak's shape,
// to measure `fencecheck check` on it (scripts/check-ladder.sh). One
// transactional client commits one record per transaction, as
// internal/proxy's soak does through kfake: an init, then a produce and an
// end_txn for each record, under transactions v2 on a wall clock. Every
// answer is the reference broker's. The history is written as it is made,
// so a history of any length takes the generator little memory.
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
	consume := flag.Bool("consume", false, "a consumer fetches each committed record, read_committed, after its commit")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "longhistory: -out names the file to write")
		os.Exit(2)
	}
	if err := write(*out, *n, *consume); err != nil {
		fmt.Fprintln(os.Stderr, "longhistory:", err)
		os.Exit(1)
	}
}

func write(path string, n int, consume bool) error {
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
	// The soak never fetches, so the model keeps no record (model.Reads)
	// and the generator's memory stays flat however long the history.
	opts := model.Options{TxnVersion: 2, WallClock: true, Reads: model.NewReads()}
	if consume {
		// The consumer reads each record once: the model keeps what it
		// has not read yet (model.ReadsFrom).
		opts.Reads = nil
	}
	c := soakClient{state: model.Init(opts), pid: model.NoProducerID, epoch: model.NoEpoch, consume: consume}
	for i := range n {
		if err := w.Write(c.next(i)); err != nil {
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
	// consume: after each commit, a consumer fetches from where it has
	// read up to, read_committed, and position is that offset.
	consume, fetchDue bool
	position          int64
}

// next is operation i: the client's next request with the reference
// broker's answer, a millisecond long, the next one called as it returns.
func (c *soakClient) next(i int) histories.Op {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = "soak-0", c.pid, c.epoch
	op := model.Op{Kind: model.InitProducerID, Req: r}
	switch {
	case c.fetchDue:
		r = model.NewRequest()
		r.Partition, r.Offset, r.Isolation = "trips-0", c.position, model.ReadCommitted
		op = model.Op{Kind: model.Fetch, Req: r}
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
	proc := "soak"
	if op.Kind == model.Fetch {
		proc = "consumer"
		c.state = model.ReadsFrom(c.state, "trips-0", c.position)
	}
	return histories.Op{ID: i, Proc: proc, Call: call, Return: call + 1, Returned: true, Op: op, Result: res}
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
		c.fetchDue = c.consume
	case model.Fetch:
		if len(res.Resp.Records) != 1 {
			panic(fmt.Sprintf("the consumer read %d records from %d, not the one just committed", len(res.Resp.Records), c.position))
		}
		c.position, c.fetchDue = res.Resp.LastStableOffset, false
	}
}
