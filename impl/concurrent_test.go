//go:build !checkeronly

package impl

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestPropertyLinearizable runs clients on goroutines against one broker
// at once: a sequential prefix, then parallel branches (transactional
// producers, among them a zombie and the new owner of its transactional.id
// that fences it, an idempotent producer, a reader that restarts the
// broker), then a sequential suffix that lets every timeout fire and reads
// everything. The recorded history must pass every check: linearizable
// against the model, and every invariant. Half the seeds run with the
// marker window (Config.AsyncMarkers): the reader writes the markers in
// flight at moments the history does not record, and the checker must
// find where they landed.
func TestPropertyLinearizable(t *testing.T) {
	for seed := range concurrentSeeds() {
		version := 1 + int(seed%2)
		async := seed%4 >= 2
		t.Run(fmt.Sprintf("seed-%d-v%d-async-%v", seed, version, async), func(t *testing.T) {
			t.Parallel()
			h := runConcurrently(seed, Config{TxnVersion: version, AsyncMarkers: async})
			report := checker.Check(h, checker.Options{Timeout: 20 * time.Second})
			if !report.Held() {
				var timeline strings.Builder
				require.NoError(t, report.WriteTimeline(&timeline))
				require.Fail(t, "a check failed", "%v\n%s", report.Verdicts, timeline.String())
			}
		})
	}
}

// runConcurrently records one run of the workload against a fresh broker.
// concurrentSeeds is how many seeded runs to make: 40, or RAPID_CHECKS
// when set, so that the same variable sets every property's budget.
func concurrentSeeds() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("RAPID_CHECKS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 40
}

func runConcurrently(seed uint64, cfg Config) histories.History {
	b := New(cfg)
	version := max(cfg.TxnVersion, 1)
	rec := histories.NewRecorder(b, nil)
	rng := rand.New(rand.NewPCG(seed, 0))

	setup := newClient(rec, "setup", version, rng.Uint64())
	setup.txn, setup.output, setup.input = "tx-c", "out-2", "in-2"
	setup.transact(6)

	var wg sync.WaitGroup
	for i, kind := range branchKinds(rng) {
		c := newClient(rec, fmt.Sprintf("%s-%d", kind, i), version, rng.Uint64())
		c.output = outputs[rng.IntN(len(outputs))]
		c.input = model.Partition(fmt.Sprintf("in-%s", c.name))
		c.becomeZombie(kind)
		budget := 8 + rng.IntN(6)
		wg.Go(func() { c.run(kind, budget, b) })
	}
	wg.Wait()

	// The quiet phase: open transactions and members time out, then a
	// reader reads every partition.
	rec.Fault(histories.MainProc, model.Tick, model.Request{Ms: 70_000})
	b.Tick(70_000)
	for _, p := range outputs {
		send(rec, model.Fetch, fetchReq(p, 0, model.ReadCommitted))
	}
	h := rec.History()
	h.TransactionsVersion = version
	h.AsyncMarkers = cfg.AsyncMarkers
	return h
}

// branchKinds chooses the clients of the parallel phase.
func branchKinds(rng *rand.Rand) []string {
	kinds := []string{"zombie-a", "owner-a", "writer-b", "idempotent", "reader"}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	return kinds[:3+rng.IntN(3)]
}

// client is one process of the workload: its own view of the broker, a
// budget of requests, and what it learnt from the answers.
type client struct {
	name    string
	b       model.Broker
	rec     *histories.Recorder
	rng     *rand.Rand
	v2      bool
	budget  int
	txn     string // "" for an idempotent producer
	s       session
	current bool // s is a session this client holds
	// zombie: the client took its session before the parallel phase and
	// never takes another; fenced, it goes on sending with the old one
	// (seed 000: a process that stalled with sends queued).
	zombie bool
	seq    map[model.Partition]int32
	keys   int
	output model.Partition
	input  model.Partition
	member joined
	offset int64
}

func newClient(rec *histories.Recorder, name string, version int, seed uint64) *client {
	return &client{name: name, b: rec.Proc(name), rec: rec, rng: rand.New(rand.NewPCG(seed, 1)),
		v2: version >= 2, seq: map[model.Partition]int32{}}
}

func (c *client) run(kind string, budget int, b *Broker) {
	switch {
	case strings.HasSuffix(kind, "-a"):
		c.txn = "tx-a"
	case kind == "writer-b":
		c.txn = "tx-b"
	case kind == "reader":
		c.read(budget, b)
		return
	}
	if c.txn == "" {
		c.produceIdempotent(budget)
		return
	}
	c.transact(budget)
}

// becomeZombie gives the zombie its session before the parallel phase, so
// that in it only the owner takes sessions of the shared id: the owner
// fences the zombie while the zombie is busy.
func (c *client) becomeZombie(kind string) {
	if kind == "zombie-a" {
		c.txn, c.zombie = "tx-a", true
		c.init()
	}
}

// send is one request, counted against the budget.
func (c *client) send(kind model.Kind, r model.Request) model.Result {
	c.budget--
	res := send(c.b, kind, r)
	switch model.ClassOf(kind, res.Err) {
	case model.FencedProducer, model.WrongProducerID:
		c.current = false
	}
	return res
}

// transact runs transactions until the budget is spent: begin, write,
// commit offsets now and then, and commit (mostly) or abort.
func (c *client) transact(budget int) { c.whileBudget(budget, c.oneTxn) }

// whileBudget does step until the budget is spent, taking a session first
// whenever the client holds none.
func (c *client) whileBudget(budget int, step func()) {
	c.budget = budget
	for c.budget > 0 {
		if !c.holdsSession() {
			c.init()
			continue
		}
		step()
	}
}

func (c *client) init() {
	if res := c.send(model.InitProducerID, initReq(c.txn, 0)); res.Succeeded() {
		c.newSession(sessionOf(res))
	}
}

// holdsSession reports whether the client goes on with its session: it
// is current, or the client is a zombie that does not know better.
func (c *client) holdsSession() bool { return c.current || c.zombie }

func (c *client) newSession(s session) {
	c.s, c.current = s, true
	clear(c.seq)
}

// oneTxn writes to this client's output partition and, half the time, to
// a second one, so that a transaction's markers land on several partitions
// at once.
func (c *client) oneTxn() {
	parts := []model.Partition{c.output}
	if other := outputs[c.rng.IntN(len(outputs))]; other != c.output && c.rng.IntN(2) == 0 {
		parts = append(parts, other)
	}
	if !c.v2 && !c.send(model.AddPartitions, addPartitionsReq(c.txn, c.s, parts...)).Succeeded() {
		return
	}
	for _, p := range parts {
		c.produce(p)
	}
	if c.rng.IntN(3) == 0 {
		c.commitOffsets()
	}
	if !c.holdsSession() {
		return
	}
	res := c.send(model.EndTxn, endTxnReq(c.txn, c.s, c.rng.IntN(4) != 0))
	if res.Succeeded() && c.v2 {
		c.newSession(sessionOf(res))
	}
}

// produce writes one batch of fresh keys, now and then sending it twice
// (a retry whose first answer was slow): the second gets the same offset.
func (c *client) produce(p model.Partition) {
	keys := make([]string, 1+c.rng.IntN(2))
	for i := range keys {
		c.keys++
		keys[i] = fmt.Sprintf("%s-k%d", c.name, c.keys)
	}
	r := produceReq(c.txn, c.s, p, c.seq[p], keys...)
	if !c.send(model.Produce, r).Succeeded() {
		return
	}
	c.seq[p] += int32(len(keys))
	if c.rng.IntN(5) == 0 {
		c.send(model.Produce, r)
	}
}

// commitOffsets commits this client's own input partition, always further
// on, in its transaction, as a consume-transform-produce loop does.
func (c *client) commitOffsets() {
	if c.member.id == "" {
		res := c.send(model.JoinGroup, joinReq(theGroup, "", 0, inputs...))
		if !res.Succeeded() {
			return
		}
		c.member = joined{id: res.Resp.MemberID, gen: res.Resp.GenerationID}
	}
	if !c.v2 && !c.send(model.AddOffsets, addOffsetsReq(c.txn, c.s, theGroup)).Succeeded() {
		return
	}
	c.offset += int64(1 + c.rng.IntN(3))
	offsets := map[model.Partition]int64{c.input: c.offset}
	res := c.send(model.TxnOffsetCommit, commitOffsetsReq(c.txn, c.s, theGroup, c.member.id, c.member.gen, offsets))
	if model.ClassOf(model.TxnOffsetCommit, res.Err) == model.FencedConsumer {
		c.member = joined{} // rebalanced away: join again next time
	}
}

func (c *client) produceIdempotent(budget int) {
	c.whileBudget(budget, func() { c.produce(c.output) })
}

// read fetches and asks for offsets, and now and then restarts the broker
// under everyone's feet (a restart is invisible to the model).
func (c *client) read(budget int, b *Broker) {
	c.budget = budget
	for c.budget > 0 {
		switch c.rng.IntN(6) {
		case 0:
			c.budget--
			c.rec.Fault(c.name, model.BrokerRestart, model.NewRequest())
			b.Restart()
		case 5:
			b.LandMarkers() // the broker's own doing: not in the history
		case 1:
			c.send(model.OffsetFetch, offsetFetchReq(theGroup, inputs[c.rng.IntN(len(inputs))], c.rng.IntN(2) == 0))
		default:
			isolation := isolations[c.rng.IntN(len(isolations))]
			c.send(model.Fetch, fetchReq(outputs[c.rng.IntN(len(outputs))], 0, isolation))
		}
	}
}

// TestConcurrentTicksAndRestarts runs the clients, and two members of a
// KIP-848 consumer group, while another goroutine moves the clock (transactions and members expire under their feet) and
// restarts the broker. A tick has no duration in a history, so this run is
// not checked for linearizability: it is here for the race detector and
// for the lock order (it must end).
func TestConcurrentTicksAndRestarts(t *testing.T) {
	for seed := range uint64(10) {
		b := New(Config{TxnVersion: 1 + int(seed%2), AsyncMarkers: seed%4 >= 2})
		rec := histories.NewRecorder(b, nil)
		rng := rand.New(rand.NewPCG(seed, 2))
		var wg sync.WaitGroup
		for i, kind := range []string{"zombie-a", "owner-a", "writer-b", "idempotent", "reader"} {
			c := newClient(rec, fmt.Sprintf("%s-%d", kind, i), 1+int(seed%2), rng.Uint64())
			c.output, c.input = outputs[i%len(outputs)], model.Partition(c.name)
			wg.Go(func() { c.run(kind, 60, b) })
		}
		for _, member := range []string{"c1", "c2"} {
			wg.Go(func() { consumeKIP848(b, member, 60) })
		}
		wg.Go(func() {
			for i := range 40 {
				b.Tick(int64(500 * (i % 7)))
				if i%5 == 0 {
					b.Restart()
				}
				if i%3 == 0 {
					b.LandMarkers()
				}
			}
		})
		wg.Wait()
		require.NotEmpty(t, rec.History().Ops)
	}
}
