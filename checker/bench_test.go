package checker_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// BenchmarkCheck times every check on a concurrent history of 10,000
// operations: 8 clients over 4 transactional ids (two per id, so they fence
// each other) and 8 partitions, with read_committed readers among them.
func BenchmarkCheck(b *testing.B) {
	h := syntheticHistory(10_000, 8, 4, 8, 1)
	b.ResetTimer()
	for range b.N {
		report := checker.Check(h, checker.Options{})
		if !report.Held() {
			b.Fatalf("a correct history failed: %v", report.Verdicts)
		}
	}
}

// BenchmarkCheckPieces times every check on a history of 10,000 operations
// of 8 transactional ids that no operation links: 8 pieces, searched on
// every core, so that -cpu 1,2 shows what the cores buy.
func BenchmarkCheckPieces(b *testing.B) {
	h := independentHistory(10_000, 8, 1)
	b.ResetTimer()
	for range b.N {
		if report := checker.Check(h, checker.Options{}); !report.Held() {
			b.Fatalf("a correct history failed: %v", report.Verdicts)
		}
	}
}

func TestSyntheticHistoryHolds(t *testing.T) {
	h := syntheticHistory(2_000, 8, 4, 8, 7)
	report := checker.Check(h, checker.Options{})
	for _, v := range report.Verdicts {
		require.True(t, v.Held(), "%v", v)
	}
	require.Equal(t, syntheticHistory(2_000, 8, 4, 8, 7), h, "the generator is deterministic")
}

// syntheticHistory runs clients against the reference broker in a seeded
// order and records each operation with an interval around the moment it
// took effect, so intervals overlap but the history stays linearizable.
func syntheticHistory(n, clients, ids, partitions int, seed uint64) histories.History {
	return syntheticTxnHistory(n, clients, ids, partitions, 3, seed)
}

// syntheticTxnHistory is syntheticHistory with produces records in each
// transaction.
func syntheticTxnHistory(n, clients, ids, partitions, produces int, seed uint64) histories.History {
	cs := make([]*client, clients)
	for i := range cs {
		cs[i] = newClient(fmt.Sprintf("c%d", i), fmt.Sprintf("fare-writer-%d", i%ids), produces,
			model.Partition(fmt.Sprintf("fares-%d", i%partitions)), model.Partition(fmt.Sprintf("fares-%d", (i+1)%partitions)))
	}
	return recordClients(n, cs, seed)
}

// independentHistory is n operations of ids transactional ids that no
// operation links, so that the search has ids pieces: two clients per id
// (they fence each other), each id with two partitions of its own.
func independentHistory(n, ids int, seed uint64) histories.History {
	cs := make([]*client, 2*ids)
	for i := range cs {
		id := i / 2
		cs[i] = newClient(fmt.Sprintf("c%d", i), fmt.Sprintf("fare-writer-%d", id), 3,
			model.Partition(fmt.Sprintf("fares-%d", 2*id)), model.Partition(fmt.Sprintf("fares-%d", 2*id+1)))
	}
	return recordClients(n, cs, seed)
}

func newClient(name, txnID string, produces int, parts ...model.Partition) *client {
	return &client{name: name, txnID: txnID, parts: parts, seqs: map[model.Partition]int32{},
		read: map[model.Partition]int64{}, lastReturn: -1 << 40, produces: produces}
}

// recordClients runs n requests of the clients, picked in a seeded order,
// against the reference broker.
func recordClients(n int, cs []*client, seed uint64) histories.History {
	rng := rand.New(rand.NewPCG(seed, seed))
	state := model.Init(model.Options{TxnVersion: 1})
	var h histories.History
	for i := range n {
		c := cs[rng.IntN(len(cs))]
		op := c.next(rng)
		var res model.Result
		state, res = model.Apply(state, op)
		c.learn(op, res)
		// The effect happens at 10i: the call before it, the return after,
		// before the same client's next effect at 10(i+1) or later.
		at := 1000 + int64(i)*10
		call := max(c.lastReturn+1, at-rng.Int64N(15))
		ret := at + rng.Int64N(6)
		c.lastReturn = ret
		h.Ops = append(h.Ops, histories.Op{ID: i, Proc: c.name, Call: call, Return: ret, Returned: true, Op: op, Result: res})
	}
	return h
}

// client is a transactional fare writer that also reads what it wrote.
type client struct {
	name, txnID string
	parts       []model.Partition
	pid         int64
	epoch       int16
	step        int
	seqs        map[model.Partition]int32
	read        map[model.Partition]int64
	lastReturn  int64
	record      int
	produces    int // records in a transaction
}

// next is the client's next request: init, add its partitions, its
// produces, commit; now and then a read_committed fetch.
func (c *client) next(rng *rand.Rand) model.Op {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = c.txnID, c.pid, c.epoch
	if rng.IntN(8) == 0 {
		p := c.parts[rng.IntN(len(c.parts))]
		r = model.NewRequest()
		r.Partition, r.Offset, r.Isolation = p, c.read[p], model.ReadCommitted
		return model.Op{Kind: model.Fetch, Req: r}
	}
	switch c.step {
	case 0:
		r.ProducerID, r.Epoch = model.NoProducerID, model.NoEpoch
		return model.Op{Kind: model.InitProducerID, Req: r}
	case 1:
		r.Partitions = c.parts
		return model.Op{Kind: model.AddPartitions, Req: r}
	case c.produces + 2:
		r.Commit = true
		return model.Op{Kind: model.EndTxn, Req: r}
	}
	p := c.parts[c.step%len(c.parts)]
	c.record++
	r.Partition, r.Sequence = p, c.seqs[p]
	r.Records = []model.Record{{Key: fmt.Sprintf("%s-trip-%d", c.name, c.record)}}
	return model.Op{Kind: model.Produce, Req: r}
}

func (c *client) learn(op model.Op, res model.Result) {
	switch {
	case op.Kind == model.Fetch:
		if recs := res.Resp.Records; len(recs) > 0 {
			c.read[op.Req.Partition] = recs[len(recs)-1].Offset + 1
		}
		return
	case !res.Succeeded():
		c.step = 0 // fenced or refused: start over with a new epoch
		return
	case op.Kind == model.InitProducerID:
		c.pid, c.epoch = res.Resp.ProducerID, res.Resp.Epoch
		clear(c.seqs)
	case op.Kind == model.Produce:
		c.seqs[op.Req.Partition]++
	}
	c.step = (c.step + 1) % (c.produces + 3)
	if c.step == 0 {
		c.step = 1 // a committed transaction; the next one needs no init
	}
}

// BenchmarkCheckScale is the ladder of docs/performance.md, "Checking large histories":
// one generator at growing sizes, reported per operation, so that a cost
// that grows faster than the history shows as a growing ns/checked-op.
// The shapes widen what costs, a window: many more clients and ids, or
// transactions of 50 records.
func BenchmarkCheckScale(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}
	for _, shape := range scaleShapes {
		for _, size := range sizes {
			b.Run(shape.name+size.name, func(b *testing.B) {
				h := shape.history(size.n)
				b.ResetTimer()
				for range b.N {
					if report := checker.Check(h, checker.Options{}); !report.Held() {
						b.Fatalf("a correct history failed: %v", report.Verdicts)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size.n), "ns/checked-op")
			})
		}
	}
}

// scaleShapes are the ladder's shapes, the benchmark's own first.
var scaleShapes = []scaleShape{{"", 8, 4, 8, 3}, {"64clients-32ids/", 64, 32, 8, 3}, {"long-txns/", 8, 4, 8, 50}}

type scaleShape struct {
	name                             string
	clients, ids, partitions, writes int
}

func (s scaleShape) history(n int) histories.History {
	return syntheticTxnHistory(n, s.clients, s.ids, s.partitions, s.writes, 1)
}

// TestWriteScaleHistory writes a history of the ladder to a file, to
// measure `fencecheck check` of it (FENCECHECK_SCALE_SHAPE, when set, is
// the name of another shape than the first: 64clients-32ids, long-txns):
//
//	FENCECHECK_SCALE_HISTORY=/tmp/1M.json FENCECHECK_SCALE_OPS=1000000 go test -run TestWriteScaleHistory ./checker/
func TestWriteScaleHistory(t *testing.T) {
	path := os.Getenv("FENCECHECK_SCALE_HISTORY")
	if path == "" {
		t.Skip("FENCECHECK_SCALE_HISTORY names the file to write")
	}
	n, err := strconv.Atoi(os.Getenv("FENCECHECK_SCALE_OPS"))
	require.NoError(t, err, "FENCECHECK_SCALE_OPS is the number of operations")
	name := os.Getenv("FENCECHECK_SCALE_SHAPE")
	i := slices.IndexFunc(scaleShapes, func(s scaleShape) bool { return strings.TrimSuffix(s.name, "/") == name })
	require.GreaterOrEqual(t, i, 0, "no shape %q", name)
	h := scaleShapes[i].history(n)
	h.Name = fmt.Sprintf("BenchmarkCheckScale/%s%d", scaleShapes[i].name, n)
	require.NoError(t, histories.SaveFile(path, h))
}

// BenchmarkCheckSequentialReinit times the path to epoch exhaustion: one
// process re-initialising one transactional.id 32,767 times, one request
// after the other. Nothing overlaps, so nothing is left to search.
func BenchmarkCheckSequentialReinit(b *testing.B) {
	h := sequentialReinits(32_767)
	b.ResetTimer()
	for range b.N {
		if report := checker.Check(h, checker.Options{}); !report.Held() {
			b.Fatalf("a correct history failed: %v", report.Verdicts)
		}
	}
}

// sequentialReinits is n init_producer_id requests of one id by one
// process, answered by the reference broker, on a clock where each answer
// comes back at its call's instant and the next call goes out then.
func sequentialReinits(n int) histories.History {
	state := model.Init(model.Options{TxnVersion: 1})
	var h histories.History
	for i := range n {
		r := model.NewRequest()
		r.TransactionalID = "fare-writer-7"
		op := model.Op{Kind: model.InitProducerID, Req: r}
		var res model.Result
		state, res = model.Apply(state, op)
		h.Ops = append(h.Ops, histories.Op{ID: i, Proc: "A", Call: int64(i), Return: int64(i), Returned: true, Op: op, Result: res})
	}
	return h
}

// The transaction stream replays a long history's transactions as the
// whole-history replay does.
func TestTxnStreamOnSyntheticHistories(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		require.NoError(t, checker.TxnStreamDiff(syntheticTxnHistory(5_000, 8, 3, 4, 2, seed)), "seed %d", seed)
	}
}
