package workload

import (
	"fmt"
	"maps"
	"slices"

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

// minAdversaryTimeoutMs floors them. Only Tick moves the model's clock,
// but a real broker's clock also runs while requests travel: a timeout
// short enough to fire during a run's own real time (at the Kafka
// target's time scale, 1 s is 10 ms) aborts a transaction at no Tick,
// which no history can explain. Between 40 s and 60 s, the ticks decide:
// 50 s fires some, 61 s every one.
const minAdversaryTimeoutMs = 40_000

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
// (KIP-360 InitProducerId with its old producer id and epoch), and a
// reader whose position lies above the last stable offset. Whatever it
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
	seqs  map[credential]int32 // by producer id and epoch alone
	// wrote are the partitions each credential wrote in a transaction.
	wrote map[credential][]model.Partition
	open  map[credential]bool
	// past is, by partition, the offset after its last acknowledged
	// write: not past the log's end, and above the last stable offset
	// while that write's transaction is open.
	past map[model.Partition]int64
	keys int
}

func newAdversary(name string, v2 bool) *adversary {
	return &adversary{name: name, v2: v2, added: map[credential]map[model.Partition]bool{},
		seqs: map[credential]int32{}, open: map[credential]bool{}, wrote: map[credential][]model.Partition{},
		past: map[model.Partition]int64{}}
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
		if c.txnID != "" {
			a.open[c] = true
			a.wrote[c] = append(a.wrote[c], op.Req.Partition)
		}
		space := sequenceSpace(op.Req)
		a.seqs[space] = max(a.seqs[space], op.Req.Sequence+1)
		a.past[op.Req.Partition] = max(a.past[op.Req.Partition], res.Resp.BaseOffset+int64(len(op.Req.Records)))
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

// Adversary lets the adversary make a few moves in a row, as StepProcess
// does for the others: an attack takes several requests (a producer id,
// a write, a fence, the stale write), and faults strike between them.
func (r *run) Adversary(t *rapid.T) {
	for range rapid.IntRange(1, 4).Draw(t, "moves") {
		if r.decided() || !r.adversaryMove(t) {
			return
		}
	}
}

// adversaryMove is one move of the adversary: its request in flight
// arrives, and it sends its next, drawn by rapid from what the broker
// granted it so far; with nothing granted yet, it asks for a producer id.
// Between moves, faults strike its request like any other (stall, crash,
// lost answer, delay) and the scheduler may deliver it. The first move
// starts the adversary process. A stalled adversary cannot move.
func (r *run) adversaryMove(t *rapid.T) bool {
	p := r.adversaryProc()
	if p.stalled {
		return false
	}
	if p.sent >= 0 {
		if r.deliver(p, false); r.adversaryProc() != p || r.decided() {
			return false
		}
	}
	a := p.c.(*adversary)
	attacks := map[string]func(*rapid.T) model.Op{
		"init":             a.drawInit,
		"zombie bump":      a.drawZombieBump,
		"produce":          a.drawProduce,
		"end transaction":  a.drawEndTxn,
		"commit offsets":   a.drawOffsetCommit,
		"idempotent bump":  a.drawIdempotentBump,
		"read past stable": a.drawReadPastStable,
	}
	kind := rapid.SampledFrom([]string{"init", "zombie bump", "produce", "end transaction", "commit offsets", "idempotent bump", "read past stable"}).Draw(t, "attack")
	op := attacks[kind](t)
	if op.Kind == "" {
		kind, op = "init", a.drawInit(t)
	}
	r.did("Adversary", p, kind)
	a.queue = append(a.queue, op)
	if p.sent < 0 {
		r.send(p)
	}
	return true
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
//
// Or an idempotent producer id, with no transactional id at all, which it
// then bumps itself (see drawIdempotentBump).
func (a *adversary) drawInit(t *rapid.T) model.Op {
	r := model.NewRequest()
	if rapid.IntRange(0, 3).Draw(t, "idempotent") == 0 {
		return model.Op{Kind: model.InitProducerID, Req: r}
	}
	r.TransactionalID = rapid.SampledFrom(adversaryIDs).Draw(t, "transactional id")
	if r.TransactionalID != "fare-writer-0" {
		r.TimeoutMs = rapid.Int64Range(minAdversaryTimeoutMs, maxAdversaryTimeoutMs).Draw(t, "timeout ms")
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

// drawIdempotentBump is an idempotent producer bumping its own epoch, as
// Kafka's producer does on its side after UNKNOWN_PRODUCER_ID or an
// expired batch (no request to the coordinator: KIP-360's client-side
// bump): its next write carries the epoch above, at sequence 0, or at a
// sequence it did not restart.
func (a *adversary) drawIdempotentBump(t *rapid.T) model.Op {
	var idempotent []credential
	for _, c := range a.granted {
		if c.txnID == "" {
			idempotent = append(idempotent, c)
		}
	}
	if len(idempotent) == 0 {
		return model.Op{}
	}
	c := rapid.SampledFrom(idempotent).Draw(t, "idempotent credential")
	c.epoch++
	a.grant(c)
	part := model.Partition(fmt.Sprintf("%s-%d", writerTopic, rapid.IntRange(0, 1).Draw(t, "partition")))
	return a.write(t, requestOf(c), part)
}

// drawCredential is, half the time, the newest credential granted (a
// buggy client still gets most requests right, and that is how it gets
// deep into a transaction), and otherwise any granted one, its epoch
// lowered by up to two.
func (a *adversary) drawCredential(t *rapid.T) (credential, bool) {
	if len(a.granted) == 0 {
		return credential{}, false
	}
	if rapid.Bool().Draw(t, "newest credential") {
		return a.granted[len(a.granted)-1], true
	}
	c := rapid.SampledFrom(a.granted).Draw(t, "credential")
	c.epoch = max(0, c.epoch-int16(rapid.IntRange(0, 2).Draw(t, "epochs back")))
	return c, true
}

// drawCoordinatorCredential is a granted credential, or one with a
// producer id no broker granted: the coordinator must refuse it
// (INVALID_PRODUCER_ID_MAPPING).
//
// Or an epoch above any granted: only the coordinator knows which epochs
// it handed out, and it must fence those too (KIP-98: any epoch but the
// current one).
func (a *adversary) drawCoordinatorCredential(t *rapid.T) credential {
	if c, ok := a.drawCredential(t); ok && c.txnID != "" && rapid.Bool().Draw(t, "granted producer id") {
		if rapid.IntRange(0, 3).Draw(t, "epoch above") == 0 {
			c.epoch += int16(rapid.IntRange(1, 2).Draw(t, "epochs above"))
		}
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
	if rapid.Bool().Draw(t, "outside a transaction") {
		return a.drawZombieWrite(t)
	}
	c, ok := a.drawCredential(t)
	if !ok {
		return model.Op{}
	}
	part := model.Partition(fmt.Sprintf("%s-%d", writerTopic, rapid.IntRange(0, 1).Draw(t, "partition")))
	if c.txnID != "" && !a.v2 && !a.added[c][part] {
		r := requestOf(c)
		r.Partitions = []model.Partition{part}
		return model.Op{Kind: model.AddPartitions, Req: r}
	}
	return a.write(t, requestOf(c), part)
}

// drawZombieWrite is a zombie that lost its transactional config but kept
// its producer state: it writes outside any transaction, with a producer
// id and epoch its transactional.id has since moved past, to a partition
// it wrote in a transaction. The coordinator never sees such a write; only
// the epoch the leader learnt from the transaction's marker fences it
// (KIP-98).
func (a *adversary) drawZombieWrite(t *rapid.T) model.Op {
	var stale []credential
	for _, c := range a.granted {
		if len(a.wrote[c]) > 0 && a.superseded(c) {
			stale = append(stale, c)
		}
	}
	if len(stale) == 0 {
		return model.Op{}
	}
	c := rapid.SampledFrom(stale).Draw(t, "stale credential")
	r := requestOf(c)
	r.TransactionalID = ""
	return a.write(t, r, rapid.SampledFrom(a.wrote[c]).Draw(t, "partition"))
}

// superseded says whether the broker granted c's transactional.id a newer
// epoch since.
func (a *adversary) superseded(c credential) bool {
	for _, g := range a.granted {
		if g.txnID == c.txnID && (g.pid != c.pid || g.epoch > c.epoch) {
			return true
		}
	}
	return false
}

// sequenceSpace is what a leader numbers a write's sequences by: its
// producer id and epoch, whether or not it is transactional.
func sequenceSpace(r model.Request) credential {
	return credential{pid: r.ProducerID, epoch: r.Epoch}
}

// write is a produce of one record of its own, half the time at the next
// sequence, otherwise skewed.
func (a *adversary) write(t *rapid.T, r model.Request, part model.Partition) model.Op {
	r.Partition = part
	r.Sequence = a.seqs[sequenceSpace(r)]
	if !rapid.Bool().Draw(t, "next sequence") {
		// A retry's, a gap, or a restart at 0.
		r.Sequence = max(0, r.Sequence+int32(rapid.SampledFrom([]int{-1, 1, 2, -1 << 20}).Draw(t, "sequence skew")))
	}
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

// drawReadPastStable reads read_committed from just past a record it
// wrote, a position a consumer reaches by a seek or by an offset a
// read_uncommitted reader committed. While that record's transaction is
// open the position lies above the last stable offset and not past the
// log's end, and Kafka answers it with no record, not
// OFFSET_OUT_OF_RANGE (LocalLog.read: a start above the isolation's
// upper bound reads nothing; only one past the log end is out of range).
func (a *adversary) drawReadPastStable(t *rapid.T) model.Op {
	if len(a.past) == 0 {
		return model.Op{}
	}
	part := rapid.SampledFrom(slices.Sorted(maps.Keys(a.past))).Draw(t, "partition read")
	return a.readPast(part)
}

func (a *adversary) readPast(part model.Partition) model.Op {
	r := model.NewRequest()
	r.Partition, r.Offset, r.Isolation = part, a.past[part], model.ReadCommitted
	return model.Op{Kind: model.Fetch, Req: r}
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
