package workload

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/model"
)

// adversaryScenario is the scenario that adds an adversary to the correct
// configuration.
const adversaryScenario = "adversary"

// adversaryIDs are the transactional ids the adversary uses: two of its
// own, and a fare writer's, which it takes over as an impostor would
// (the writer's next request is fenced, the orchestrator restarts it).
var adversaryIDs = []string{"adversary-0", "adversary-1", "fare-writer-0"}

// adversaryGroupOffsets are the input partitions whose offsets it tries to
// commit in the workers' group.
var adversaryGroupOffsets = []model.Partition{"trips-0", "trips-1"}

// maxAdversaryTimeoutMs caps the transaction timeouts it asks for: the
// quiet phase's last tick passes it, so an open transaction of the
// adversary never holds a partition's last stable offset for good.
const maxAdversaryTimeoutMs = 60_000

// credential is a (producer id, epoch) under a transactional id, as the
// broker once granted it, or as the adversary forged it.
type credential struct {
	txnID string
	pid   int64
	epoch int16
}

// adversary is a buggy or stale client: it sends well-formed requests with
// producer ids, epochs, sequences, generations and transaction timeouts
// drawn by rapid, among them a zombie bumping its own stale epoch
// (KIP-360 InitProducerId with its old producer id and epoch). Whatever it
// sends, a correct broker keeps every invariant: it refuses what must be
// refused, and what it accepts touches only the adversary's own records
// (keys "junk-...", never a trip).
//
// Two limits keep it fair. It never forges an epoch above one it was
// granted, nor produces for a producer id no broker granted it: a leader
// that has not heard of an epoch cannot tell a forgery from the owner
// (under transactions v1 that opens a hanging transaction, KAFKA-14402,
// which no broker-side check prevents). And it has no work of its own
// besides what the Adversary action queued: in the quiet phase it falls
// silent, so writers it fenced can finish.
type adversary struct {
	name    string
	v2      bool
	queue   []model.Op
	granted []credential // every grant, oldest first
	// added are the partitions of each credential's open transaction
	// (transactions v1): where it may produce without opening a
	// transaction the coordinator does not know.
	added map[credential]map[model.Partition]bool
	seqs  map[credential]int32
	open  map[credential]bool
	keys  int
}

func newAdversary(name string, v2 bool) *adversary {
	return &adversary{name: name, v2: v2, added: map[credential]map[model.Partition]bool{},
		seqs: map[credential]int32{}, open: map[credential]bool{}}
}

func (a *adversary) next() (model.Op, bool) {
	if len(a.queue) == 0 {
		return model.Op{}, false
	}
	return a.queue[0], true
}

func (a *adversary) closed() bool { return false }

func (a *adversary) idle() bool { return len(a.queue) == 0 }

func (a *adversary) inTxn() bool { return len(a.open) > 0 }

// learn keeps what the broker granted; refusals teach it nothing, as a
// buggy client ignores them.
func (a *adversary) learn(op model.Op, res model.Result) {
	if len(a.queue) > 0 {
		a.queue = a.queue[1:]
	}
	if !res.Succeeded() {
		return
	}
	c := credential{op.Req.TransactionalID, op.Req.ProducerID, op.Req.Epoch}
	switch op.Kind {
	case model.InitProducerID:
		a.grant(credential{op.Req.TransactionalID, res.Resp.ProducerID, res.Resp.Epoch})
	case model.AddPartitions:
		a.open[c] = true
		for _, p := range op.Req.Partitions {
			a.addedTo(c)[p] = true
		}
	case model.Produce:
		a.open[c] = true
		a.seqs[c] = max(a.seqs[c], op.Req.Sequence+1)
	case model.EndTxn:
		delete(a.open, c)
		delete(a.added, c)
		if res.Resp.ProducerID != model.NoProducerID {
			a.grant(credential{op.Req.TransactionalID, res.Resp.ProducerID, res.Resp.Epoch})
		}
	}
}

func (a *adversary) grant(c credential) {
	if c.pid != model.NoProducerID {
		a.granted = append(a.granted, c)
	}
}

func (a *adversary) addedTo(c credential) map[model.Partition]bool {
	if a.added[c] == nil {
		a.added[c] = map[model.Partition]bool{}
	}
	return a.added[c]
}

// Adversary queues one request of the adversary, drawn by rapid; the
// scheduler sends it like any other (it can stall, crash, lose its
// answer). The first one starts the adversary process.
func (r *run) Adversary(t *rapid.T) {
	p := r.adversaryProc()
	a := p.c.(*adversary)
	attacks := map[string]func(*rapid.T) model.Op{
		"init":            a.drawInit,
		"zombie bump":     a.drawZombieBump,
		"produce":         a.drawProduce,
		"end transaction": a.drawEndTxn,
		"commit offsets":  a.drawOffsetCommit,
	}
	kind := rapid.SampledFrom([]string{"init", "zombie bump", "produce", "end transaction", "commit offsets"}).Draw(t, "attack")
	op := attacks[kind](t)
	if op.Kind == "" {
		return
	}
	r.did("Adversary", p, kind)
	a.queue = append(a.queue, op)
}

// adversaryProc is the live adversary, started the first time.
func (r *run) adversaryProc() *proc {
	for _, p := range r.procs {
		if _, ok := p.c.(*adversary); ok && p.live() && p.slot.current == p {
			return p
		}
	}
	return r.spawnAdversary()
}

func (r *run) spawnAdversary() *proc {
	s := &slot{restarts: true, start: func(name string) client { return newAdversary(name, r.v2) }}
	r.open(s)
	return s.current
}

// drawInit asks for a producer id for one of its ids; for its own ids with
// a transaction timeout of its choosing.
func (a *adversary) drawInit(t *rapid.T) model.Op {
	r := model.NewRequest()
	r.TransactionalID = rapid.SampledFrom(adversaryIDs).Draw(t, "transactional id")
	if r.TransactionalID != "fare-writer-0" {
		r.TimeoutMs = rapid.Int64Range(1_000, maxAdversaryTimeoutMs).Draw(t, "timeout ms")
	}
	return model.Op{Kind: model.InitProducerID, Req: r}
}

// drawZombieBump is KIP-360's InitProducerId with a producer id and epoch
// it once held, however stale: only the current epoch (or the one before,
// for a retry) may be bumped.
func (a *adversary) drawZombieBump(t *rapid.T) model.Op {
	if len(a.granted) == 0 {
		return model.Op{}
	}
	c := rapid.SampledFrom(a.granted).Draw(t, "stale credential")
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = c.txnID, c.pid, c.epoch
	return model.Op{Kind: model.InitProducerID, Req: r}
}

// drawCredential is a granted credential, its epoch lowered by up to two.
func (a *adversary) drawCredential(t *rapid.T) (credential, bool) {
	if len(a.granted) == 0 {
		return credential{}, false
	}
	c := rapid.SampledFrom(a.granted).Draw(t, "credential")
	c.epoch = max(0, c.epoch-int16(rapid.IntRange(0, 2).Draw(t, "epochs back")))
	return c, true
}

// drawCoordinatorCredential is a granted credential, or one with a
// producer id no broker granted: the coordinator must refuse it
// (INVALID_PRODUCER_ID_MAPPING).
func (a *adversary) drawCoordinatorCredential(t *rapid.T) credential {
	if c, ok := a.drawCredential(t); ok && rapid.Bool().Draw(t, "granted producer id") {
		return c
	}
	return credential{
		txnID: rapid.SampledFrom(adversaryIDs).Draw(t, "transactional id"),
		pid:   rapid.Int64Range(1<<40, 1<<40+1_000).Draw(t, "forged producer id"),
		epoch: int16(rapid.IntRange(0, 3).Draw(t, "forged epoch")),
	}
}

func requestOf(c credential) model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = c.txnID, c.pid, c.epoch
	return r
}

// drawProduce writes a record of its own with any sequence. Under
// transactions v1 it first registers the partition (or writes where its
// transaction has it): a partition leader cannot fence an epoch it never
// heard of.
func (a *adversary) drawProduce(t *rapid.T) model.Op {
	c, ok := a.drawCredential(t)
	if !ok {
		return model.Op{}
	}
	part := model.Partition(fmt.Sprintf("%s-%d", writerTopic, rapid.IntRange(0, 1).Draw(t, "partition")))
	if !a.v2 && !a.added[c][part] {
		r := requestOf(c)
		r.Partitions = []model.Partition{part}
		return model.Op{Kind: model.AddPartitions, Req: r}
	}
	r := requestOf(c)
	r.Partition = part
	r.Sequence = a.seqs[c] + int32(rapid.IntRange(-1, 2).Draw(t, "sequence skew"))
	a.keys++
	key := fmt.Sprintf("junk-%s-%d", a.name, a.keys)
	r.Records = []model.Record{{Key: key, Value: "not a fare"}}
	return model.Op{Kind: model.Produce, Req: r}
}

func (a *adversary) drawEndTxn(t *rapid.T) model.Op {
	r := requestOf(a.drawCoordinatorCredential(t))
	r.Commit = rapid.Bool().Draw(t, "commit")
	return model.Op{Kind: model.EndTxn, Req: r}
}

// drawOffsetCommit commits an input offset in the workers' group with a
// member id the group never gave out and a generation of its choosing
// (never the unchecked groupId-string overload, which no broker can
// fence: seed 002). Under transactions v1 the group is added first.
func (a *adversary) drawOffsetCommit(t *rapid.T) model.Op {
	r := requestOf(a.drawCoordinatorCredential(t))
	r.Group = group
	if !a.v2 && rapid.Bool().Draw(t, "add offsets first") {
		return model.Op{Kind: model.AddOffsets, Req: r}
	}
	r.MemberID = fmt.Sprintf("adversary-member-%d", rapid.IntRange(0, 3).Draw(t, "member"))
	r.GenerationID = int32(rapid.IntRange(0, 6).Draw(t, "generation"))
	part := rapid.SampledFrom(adversaryGroupOffsets).Draw(t, "input partition")
	r.Offsets = map[model.Partition]int64{part: int64(rapid.IntRange(0, 4).Draw(t, "offset"))}
	return model.Op{Kind: model.TxnOffsetCommit, Req: r}
}
