package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/consumer"
	"github.com/fencecheck/fencecheck/model"
)

// The pipeline shape is the exploration's consume-transform-produce
// pipeline (docs/how-it-works.md, scenario kip848-consumers), run for as
// long as asked:
//   - a source, an idempotent producer, writes trips to the input topic,
//     one record per produce, spread over its partitions;
//   - workers in a KIP-848 consumer group read the trips read_committed,
//     and for each one produce its fare, commit the input offset with the
//     transaction (TxnOffsetCommit under the member id and member epoch)
//     and commit; one transaction in fifty is aborted instead, and the
//     worker reads again from the committed offsets;
//   - a worker heartbeats beside its transactions, takes a new assignment
//     between them, and reads the committed offsets of partitions it
//     gains (require_stable);
//   - now and then a worker stalls in the middle of a transaction and is
//     restarted: the new process inits the same transactional id (which
//     aborts the open transaction and fences the stalled one) and joins
//     under a member id of its own; the stalled process wakes, is refused
//     as fenced, and leaves the group;
//   - a reader reads the output topic read_committed.
//
// Every answer is the reference broker's (model.Apply), under
// transactions v2. Its markers land at once, and its clock has no tick,
// so no transaction or session times out. The exploration's histories
// differ there: their markers may land late ("markers": "async"), and
// their clock ticks.
//
// The operations come in rounds of up to three processes (-overlap),
// each with one request in flight: their calls, then their answers, in
// an order drawn from the seed. Each request takes effect between its
// call and its answer, in an order drawn too, so the intervals of a
// round overlap and the history is linearizable by construction. The
// operations are written as they return, as a recorder writes them.
//
// Once the history has the operations asked for, the source stops and
// the pipeline drains: every trip is committed, and the reader reads
// the output to its end. So the history is a little longer than asked.

const (
	pipeInput  = "trips"
	pipeOutput = "fares-ctp"
	pipeGroup  = "fare-workers"
	// rebalanceTimeoutMs is what the Java consumer sends
	// (max.poll.interval.ms, 300000 by default).
	rebalanceTimeoutMs = 300_000
	// abortOneIn: a worker aborts one transaction in this many.
	abortOneIn = 50
	// beatOneIn: after one request in this many, a worker's heartbeat
	// interval has passed, so its next request is a heartbeat.
	beatOneIn = 8
	// readerOneIn: the reader takes part in one round in this many.
	readerOneIn = 3
)

// pipelineConfig is what the flags say of a pipeline history.
type pipelineConfig struct {
	ops          int
	seed         uint64
	workers      int
	partitions   int
	restartEvery int
	// overlap is the most requests in flight at once: 1 writes one
	// request at a time.
	overlap int
	// fault, for tests of the checks: "" for none, or one of faults.
	fault string
}

// faults are the deliberate faults a pipeline history can carry, each
// with the check it breaks.
var faults = map[string]string{
	// A worker commits a trip, then does not move on: it processes
	// the trip again, and its fare is committed twice.
	"duplicate-fare": "exactly-once",
	// A worker commits the offset of the trip before the one it
	// processed: the group's committed offset moves back.
	"rewind-offset": "offsets-monotonic",
}

func (c pipelineConfig) validate() error {
	switch {
	case c.ops < 1:
		return fmt.Errorf("-ops is %d; it must be at least 1", c.ops)
	case c.workers < 1:
		return fmt.Errorf("-workers is %d; it must be at least 1", c.workers)
	case c.partitions < 1:
		return fmt.Errorf("-partitions is %d; it must be at least 1", c.partitions)
	case c.overlap < 1 || c.overlap > 3:
		return fmt.Errorf("-overlap is %d; it must be 1, 2 or 3", c.overlap)
	case c.restartEvery < 0:
		return fmt.Errorf("-restart-every is %d; it must be 0 (no restarts) or more", c.restartEvery)
	}
	if _, ok := faults[c.fault]; c.fault != "" && !ok {
		return fmt.Errorf("-fault %q is not one of duplicate-fare, rewind-offset", c.fault)
	}
	return nil
}

// pipeline is the whole run: the broker's state, the processes, the clock.
type pipeline struct {
	cfg    pipelineConfig
	rng    *rand.Rand
	state  model.State
	w      *histories.Writer
	clock  int64
	nextID int
	procs  []process // every process started, in order of start
	source *source
	reader *reader
	slots  []*slot

	produced  int // trips the source wrote
	committed int // trips whose fare a worker committed
	draining  bool
	restartAt int // the op id from which the next restart may come
	faulted   bool
	err       error

	// stats, for the summary on stderr
	restarts, aborts, fenced int
}

// process is one simulated client: it sends one request at a time.
type process interface {
	name() string
	// next is the process's next request, false when it sends none now.
	next() (model.Op, bool)
	learn(op model.Op, res model.Result)
	done() bool
}

// slot is a worker's place in the deployment: its transactional id is
// the slot's, and a restart starts a new process in it.
type slot struct {
	n       int
	starts  int
	current *worker
}

// writePipeline writes the operations of a pipeline history to hw, and
// returns the end of the document (its trips and output topics) and the
// run.
func writePipeline(hw *histories.Writer, cfg pipelineConfig) (histories.History, *pipeline, error) {
	p := &pipeline{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x70697065)), w: hw,
		state: model.Init(model.Options{TxnVersion: 2})}
	p.source = &source{p: p, pid: model.NoProducerID, epoch: model.NoEpoch, seqs: make([]int32, cfg.partitions)}
	p.reader = &reader{p: p, position: make([]int64, cfg.partitions), clean: make([]bool, cfg.partitions)}
	p.procs = []process{p.source, p.reader}
	p.restartAt = p.drawRestart()
	for p.nextID < cfg.ops && p.err == nil {
		if p.slots == nil && p.produced >= cfg.partitions {
			// Every input partition has a trip, so the group's
			// assignor spreads them all: the workers start.
			for i := range cfg.workers {
				s := &slot{n: i + 1}
				p.slots = append(p.slots, s)
				p.start(s, false)
			}
		}
		p.maybeRestart()
		p.round()
	}
	p.draining = true
	// The drain: the source has stopped, so the workers commit what is
	// left and go idle. A drained pipeline takes a few rounds per trip
	// left at most; a pipeline that does not drain is a bug here.
	for limit := 1000 + 100*(p.produced-p.committed); p.err == nil && !p.reader.finished(); limit-- {
		if limit == 0 {
			return histories.History{}, nil, fmt.Errorf("the pipeline did not drain: %d trips written, %d committed;%s", p.produced, p.committed, p.describe())
		}
		p.round()
	}
	if p.err != nil {
		return histories.History{}, nil, p.err
	}
	trips := make([]string, p.produced)
	for i := range trips {
		trips[i] = tripKey(i + 1)
	}
	return histories.History{Trips: trips, OutputTopics: []string{pipeOutput}}, p, nil
}

func tripKey(n int) string { return "trip-" + strconv.Itoa(n) }

func inputPartition(i int) model.Partition {
	return model.Partition(pipeInput + "-" + strconv.Itoa(i))
}

func outputOf(in model.Partition) model.Partition {
	topic, _ := in.Topic()
	return model.Partition(pipeOutput + string(in[len(topic):]))
}

func (p *pipeline) tick() int64 {
	p.clock++
	return p.clock
}

func (p *pipeline) drawRestart() int {
	if p.cfg.restartEvery == 0 {
		return -1
	}
	return p.nextID + 1 + p.rng.IntN(2*p.cfg.restartEvery)
}

// start starts a process in s: its first, or a restart.
func (p *pipeline) start(s *slot, restart bool) {
	s.starts++
	w := &worker{p: p, slot: s, proc: fmt.Sprintf("w%d-%d", s.n, s.starts),
		txnID: fmt.Sprintf("fare-worker-%d", s.n), member: fmt.Sprintf("fare-worker-%d-%d", s.n, s.starts),
		pid: model.NoProducerID, epoch: model.NoEpoch, seqs: map[model.Partition]int32{},
		Member: consumer.Member{MemberEpoch: model.JoinMemberEpoch, Generation: model.NoGeneration}}
	s.current = w
	p.procs = append(p.procs, w)
	if restart {
		p.restarts++
		p.fault(w.proc, model.Restart)
	}
}

// fault writes a fault of proc's.
func (p *pipeline) fault(proc string, kind model.Kind) {
	op := histories.Op{ID: p.nextID, Proc: proc, Call: p.tick(), Op: model.Op{Kind: kind}, Result: model.NoAnswer()}
	p.nextID++
	if err := p.w.Write(op); err != nil && p.err == nil {
		p.err = err
	}
}

// maybeRestart stalls a worker in the middle of a transaction, once
// its time has come, and starts another process in its slot.
func (p *pipeline) maybeRestart() {
	if p.draining || p.restartAt < 0 || p.nextID < p.restartAt {
		return
	}
	for _, i := range p.rng.Perm(len(p.slots)) {
		w := p.slots[i].current
		if w.step == stepCommitOffsets || w.step == stepEnd {
			w.stalled = true
			p.fault(w.proc, model.Stall)
			p.start(w.slot, true)
			p.restartAt = p.drawRestart()
			return
		}
	}
}

// round sends one request of each of up to three processes (cfg.overlap),
// with their intervals overlapping: one round in two has one request, three
// in ten two, two in ten three.
func (p *pipeline) round() {
	m := 1
	switch r := p.rng.IntN(10); {
	case r >= 8:
		m = 3
	case r >= 5:
		m = 2
	}
	m = min(m, p.cfg.overlap)
	type flight struct {
		proc process
		op   model.Op
		id   int
		call int64
		ret  int64
		res  model.Result
	}
	var in []flight
	for _, i := range p.rng.Perm(len(p.procs)) {
		if len(in) == m {
			break
		}
		pr := p.procs[i]
		if pr.done() || !p.eligible(pr) {
			continue
		}
		if op, ok := pr.next(); ok {
			in = append(in, flight{proc: pr, op: op})
		}
	}
	if len(in) == 0 {
		p.err = errors.New("no process has a request to send: the pipeline is stuck")
		return
	}
	for i := range in {
		in[i].id, in[i].call = p.nextID, p.tick()
		p.nextID++
	}
	answers := p.rng.Perm(len(in))
	for _, i := range answers {
		in[i].ret = p.tick()
	}
	for _, i := range p.rng.Perm(len(in)) {
		f := &in[i]
		f.op.Span = model.Span{From: f.call, To: f.ret}
		p.state, f.res = model.Apply(p.state, f.op)
	}
	for _, i := range answers {
		f := &in[i]
		err := p.w.Write(histories.Op{ID: f.id, Proc: f.proc.name(), Call: f.call, Return: f.ret, Returned: true, Op: f.op, Result: f.res})
		if err != nil && p.err == nil {
			p.err = err
		}
		f.proc.learn(f.op, f.res)
	}
}

// eligible says whether pr may send in this round: a stalled worker
// wakes once its replacement has its producer (so it is fenced), and
// the reader takes part in one round in readerOneIn but at the end.
func (p *pipeline) eligible(pr process) bool {
	switch pr := pr.(type) {
	case *worker:
		if pr.stalled {
			if pr.slot.current.pid == model.NoProducerID || p.rng.IntN(4) != 0 {
				return false
			}
			pr.stalled = false
			p.fault(pr.proc, model.Wake)
		}
	case *reader:
		return p.reader.final || p.rng.IntN(readerOneIn) == 0
	}
	return true
}

// source is the idempotent producer that writes the trips.
type source struct {
	p     *pipeline
	pid   int64
	epoch int16
	seqs  []int32
}

func (s *source) name() string { return "source" }
func (s *source) done() bool   { return false }

func (s *source) next() (model.Op, bool) {
	r := model.NewRequest()
	if s.pid == model.NoProducerID {
		return model.Op{Kind: model.InitProducerID, Req: r}, true
	}
	p := s.p
	// The source keeps a few trips ahead of the workers, so that a
	// fetch answers a few records, as a busy pipeline's does.
	if p.draining || p.produced-p.committed >= 4*p.cfg.partitions {
		return model.Op{}, false
	}
	i := p.produced % p.cfg.partitions
	r.ProducerID, r.Epoch = s.pid, s.epoch
	r.Partition, r.Sequence = inputPartition(i), s.seqs[i]
	key := tripKey(p.produced + 1)
	r.Records = []model.Record{{Key: key, Value: "ride of " + key}}
	return model.Op{Kind: model.Produce, Req: r}, true
}

func (s *source) learn(op model.Op, res model.Result) {
	if !res.Succeeded() {
		s.p.fail(fmt.Errorf("the reference broker refused the source's %s: %s", op.Kind, res.Err))
		return
	}
	switch op.Kind {
	case model.InitProducerID:
		s.pid, s.epoch = res.Resp.ProducerID, res.Resp.Epoch
	case model.Produce:
		s.seqs[s.p.produced%s.p.cfg.partitions]++
		s.p.produced++
	}
}

func (p *pipeline) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// reader reads the output topic read_committed, one partition a fetch.
type reader struct {
	p        *pipeline
	position []int64
	turn     int
	// final: the pipeline has drained, and clean says which partitions
	// the reader has since read to their end.
	final bool
	clean []bool
}

func (r *reader) name() string { return "reader" }
func (r *reader) done() bool   { return false }

func (r *reader) next() (model.Op, bool) {
	req := model.NewRequest()
	i := r.turn % len(r.position)
	req.Partition, req.Offset, req.Isolation = outputOf(inputPartition(i)), r.position[i], model.ReadCommitted
	return model.Op{Kind: model.Fetch, Req: req}, true
}

func (r *reader) learn(op model.Op, res model.Result) {
	i := r.turn % len(r.position)
	r.turn++
	if !res.Succeeded() {
		r.p.fail(fmt.Errorf("the reference broker refused the reader's fetch of %s: %s", op.Req.Partition, res.Err))
		return
	}
	if n := len(res.Resp.Records); n > 0 {
		r.position[i] = res.Resp.Records[n-1].Offset + 1
		return
	}
	// Nothing committed from here to the last stable offset: aborted
	// records and markers, which a consumer steps over.
	r.position[i] = max(r.position[i], res.Resp.LastStableOffset)
	if r.final && res.Resp.LastStableOffset == res.Resp.HighWatermark {
		r.clean[i] = true
	}
}

// finished says whether the pipeline has drained and the reader has read
// the whole output since.
func (r *reader) finished() bool {
	p := r.p
	if !r.final {
		if p.committed < p.produced {
			return false
		}
		for _, pr := range p.procs {
			if w, ok := pr.(*worker); ok && !w.done() && (w.inTxn() || w.stalled) {
				return false
			}
		}
		r.final = true
		return false
	}
	return !slices.Contains(r.clean, false)
}

// describe says where each worker is, for an error.
func (p *pipeline) describe() string {
	var s string
	for _, pr := range p.procs {
		if w, ok := pr.(*worker); ok && !w.done() {
			s += fmt.Sprintf(" %s: step %d, member epoch %d, assigned %v, unknown %v, stalled %v;", w.proc, w.step, w.MemberEpoch, w.Assigned, w.Unknown, w.stalled)
		}
	}
	return s
}
