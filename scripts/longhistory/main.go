// Command longhistory writes a long correct history, to measure
// `fencecheck check` on it (scripts/check-ladder.sh). Every answer is the
// reference broker's. The history is written as it is made, so a history
// of any length takes the generator little memory beyond the model's
// logs.
//
// -shape soak (the default) is the soak's shape. One transactional client
// commits one record per transaction, as internal/proxy's soak does
// through kfake: an init, then a produce and an end_txn for each record,
// under transactions v2 on a wall clock. With -clients N, N such clients
// take turns, each with a transactional id and a partition of its own, so
// that the history splits into N pieces that never meet. With -consume, a consumer
// fetches each committed record after its commit. With -marks, each
// batch written ends with a complete_before mark, as a recording proxy
// writes it, so that `fencecheck check --follow` can be measured on it.
//
// -shape pipeline is the exploration's consume-transform-produce
// pipeline: a source of trips, workers in a KIP-848 consumer group that
// turn each trip into a fare in a transaction, restarts that fence a
// stalled worker, and a read_committed reader of the fares (pipeline.go).
// It is drawn from -seed, so a seed writes the same bytes each time.
//
//	go run ./scripts/longhistory -ops 5000000 -out /tmp/5M.json
//	go run ./scripts/longhistory -shape pipeline -ops 1000000 -out /tmp/pipeline-1M.json
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

func main() {
	n := flag.Int("ops", 1_000_000, "how many operations to write (the pipeline shape writes a few more, to drain)")
	out := flag.String("out", "", "the `FILE` to write")
	shape := flag.String("shape", "soak", "the history's `SHAPE`: soak or pipeline")
	seed := flag.Uint64("seed", 1, "pipeline: the seed its draws come from")
	workers := flag.Int("workers", 3, "pipeline: how many workers run at once")
	partitions := flag.Int("partitions", 4, "pipeline: the input topic's partitions (the output has as many)")
	restartEvery := flag.Int("restart-every", 2000, "pipeline: a worker is restarted about once in this many operations; 0 never")
	overlap := flag.Int("overlap", 3, "pipeline: the most requests in flight at once, 1 to 3")
	fault := flag.String("fault", "", "pipeline: a deliberate fault, for tests of the checks: duplicate-fare or rewind-offset")
	consume := flag.Bool("consume", false, "soak: a consumer fetches each committed record, read_committed, after its commit")
	marks := flag.Bool("marks", false, "soak: mark what is whole, as a recording proxy does (complete_before)")
	clients := flag.Int("clients", 1, "soak: how many clients take turns, each with a transactional id and a partition of its own")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(2, fmt.Errorf("unexpected argument %q: every setting is a flag", flag.Arg(0)))
	}
	if *out == "" {
		fail(2, errors.New("-out names the file to write"))
	}
	switch *shape {
	case "soak":
		if *n < 0 {
			fail(2, fmt.Errorf("-ops is %d; it must be 0 or more", *n))
		}
		if *clients < 1 || *clients > 1000 {
			fail(2, fmt.Errorf("-clients is %d; it must be 1 to 1000", *clients))
		}
		if err := write(*out, soakConfig{ops: *n, clients: *clients, consume: *consume, marks: *marks}); err != nil {
			fail(1, err)
		}
	case "pipeline":
		cfg := pipelineConfig{ops: *n, seed: *seed, workers: *workers, partitions: *partitions, restartEvery: *restartEvery, overlap: *overlap, fault: *fault}
		if err := cfg.validate(); err != nil {
			fail(2, err)
		}
		sum, err := writePipelineFile(*out, cfg)
		if err != nil {
			fail(1, err)
		}
		fmt.Fprintln(os.Stderr, "longhistory:", sum)
	default:
		fail(2, fmt.Errorf("-shape %q is not soak or pipeline", *shape))
	}
}

func fail(status int, err error) {
	fmt.Fprintln(os.Stderr, "longhistory:", err)
	os.Exit(status)
}

// writePipelineFile writes a pipeline history to path, and says what it
// holds.
func writePipelineFile(path string, cfg pipelineConfig) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := bufio.NewWriterSize(f, 1<<20)
	sum, err := writePipelineTo(buf, cfg)
	if err != nil {
		return "", err
	}
	if err := buf.Flush(); err != nil {
		return "", err
	}
	return sum, f.Close()
}

// writePipelineTo writes a pipeline history to out.
func writePipelineTo(out io.Writer, cfg pipelineConfig) (string, error) {
	header := histories.History{Name: fmt.Sprintf("pipeline shape, %d operations, seed %d", cfg.ops, cfg.seed), TransactionsVersion: 2}
	w, err := histories.NewWriter(out, header)
	if err != nil {
		return "", err
	}
	end, p, err := writePipeline(w, cfg)
	if err != nil {
		return "", err
	}
	if err := w.Close(end); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d operations, %d trips, %d restarts, %d fenced, %d aborted transactions",
		p.nextID, p.produced, p.restarts, p.fenced, p.aborts), nil
}

// soakConfig is what -shape soak writes: ops operations of clients
// clients taking turns, each one's consumer fetching each commit with
// consume, marked as a recording proxy marks them with marks.
type soakConfig struct {
	ops, clients   int
	consume, marks bool
}

func write(path string, cfg soakConfig) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	name := fmt.Sprintf("soak shape, %d operations", cfg.ops)
	if cfg.clients > 1 {
		name += fmt.Sprintf(" of %d clients", cfg.clients)
	}
	header := histories.History{Name: name, WallClock: true}
	w, err := histories.NewWriter(buf, header)
	if err != nil {
		return err
	}
	// The soak never fetches, so the model keeps no record (model.Reads)
	// and the generator's memory stays flat however long the history.
	opts := model.Options{TxnVersion: 2, WallClock: true, Reads: model.NewReads()}
	if cfg.consume {
		// The consumer reads each record once: the model keeps what it
		// has not read yet (model.ReadsFrom).
		opts.Reads = nil
	}
	broker := model.Init(opts)
	clients := make([]*soakClient, cfg.clients)
	for k := range clients {
		clients[k] = &soakClient{state: &broker, pid: model.NoProducerID, epoch: model.NoEpoch, consume: cfg.consume,
			id: fmt.Sprintf("soak-%d", k), partition: model.Partition(fmt.Sprintf("trips-%d", k)), proc: "soak", consumer: "consumer"}
		if cfg.clients > 1 {
			clients[k].proc, clients[k].consumer = clients[k].id, fmt.Sprintf("consumer-%d", k)
		}
	}
	write := w.Write
	if cfg.marks {
		// One request at a time: every operation called before an
		// operation's return is written with it or before it.
		write = func(op histories.Op) error { return w.WriteMarked(op, op.Return) }
	}
	for i := range cfg.ops {
		if err := write(clients[i%len(clients)].next(i)); err != nil {
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
	state     *model.State // the broker, which the clients share
	id        string       // the transactional id
	partition model.Partition
	proc      string // the producer's process, and its consumer's
	consumer  string
	pid       int64
	epoch     int16
	sequence  int32
	records   int
	produced  bool // a record is in the open transaction
	// consume: after each commit, a consumer fetches from where it has
	// read up to, read_committed, and position is that offset.
	consume, fetchDue bool
	position          int64
}

// next is operation i: the client's next request with the reference
// broker's answer, a millisecond long, the next one called as it returns.
func (c *soakClient) next(i int) histories.Op {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = c.id, c.pid, c.epoch
	op := model.Op{Kind: model.InitProducerID, Req: r}
	switch {
	case c.fetchDue:
		r = model.NewRequest()
		r.Partition, r.Offset, r.Isolation = c.partition, c.position, model.ReadCommitted
		op = model.Op{Kind: model.Fetch, Req: r}
	case c.pid == model.NoProducerID:
	case !c.produced:
		c.records++
		r.Partition, r.Sequence = c.partition, c.sequence
		r.Records = []model.Record{{Key: fmt.Sprintf("%s-trip-%d", c.id, c.records), Value: "fare"}}
		if c.id == "soak-0" {
			r.Records[0].Key = fmt.Sprintf("trip-%d", c.records)
		}
		op = model.Op{Kind: model.Produce, Req: r}
	default:
		r.Commit = true
		op = model.Op{Kind: model.EndTxn, Req: r}
	}
	call := int64(i)
	op.Span = model.Span{From: call, To: call + 1}
	var res model.Result
	*c.state, res = model.Apply(*c.state, op)
	c.learn(op, res)
	proc := c.proc
	if op.Kind == model.Fetch {
		proc = c.consumer
		*c.state = model.ReadsFrom(*c.state, c.partition, c.position)
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
