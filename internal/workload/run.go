package workload

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// proc is one running process: a client, and what the scheduler knows of
// it. A process that is replaced while stalled lives on as a zombie.
type proc struct {
	name    string
	slot    *slot
	c       client
	stalled bool
	dead    bool
	sent    int       // the history index of its request in flight, or -1
	resend  *model.Op // a request whose answer was lost, to send again
	// sawGroup is the run's groupChanges when the process's last join
	// was answered: what its heartbeat tells a consumer.
	sawGroup int
}

func (p *proc) live() bool { return !p.dead && !p.c.closed() }

// slot is a unit the orchestrator keeps one process running for: a shard's
// writer, a worker. It starts a new process from the same config when the
// current one crashes, closes, or stops answering (seed 000).
type slot struct {
	current  *proc
	start    func(name string) client
	restarts bool
}

// run is one exploration: the target, the processes, the history so far.
type run struct {
	sc     Scenario
	target model.Target
	v2     bool
	h      histories.History
	now    int64
	procs  []*proc
	slots  []*slot
	named  int
	// workerSlots counts the worker slots opened (instanceID).
	workerSlots int
	steps       []string // the actions taken, for the bug report
	cov         *Coverage
	inputs      []model.Partition
	outputs     []string // topics
	// stuck counts restarts since the last commit: when every slot has
	// been restarted twice and nobody committed, the quiet phase gives up.
	stuck int
	// idleRounds counts quiet-phase rounds since the last commit.
	idleRounds int
	// rivalFenced are the slots whose process was fenced by another
	// slot's process since the last commit (replicas sharing an id).
	rivalFenced map[*slot]bool
	// quiet is set once the quiet phase has begun.
	quiet bool
	// actionsOver is set by an action that is a run's last (ExhaustEpoch):
	// the actions left do nothing, and the history is checked at the end.
	actionsOver bool
	// generations are the newest generation answered, by group (the
	// workers' and the auditors' are apart), and groupChanges counts
	// what may have changed a group since the run began: new
	// generations, leaves, clock ticks, broker restarts.
	generations  map[string]int32
	groupChanges int
	// delayed are requests the network holds back: their clients gave up
	// on them and sent them again, and they arrive later all the same.
	delayed []delayedRequest
	// waitBlocked: the target said a restart or a join does not fit
	// (see waitFits).
	waitBlocked bool
	// undecided counts the requests whose answer never came back.
	undecided int
	// shorterThan, when set, is how many operations a violation must
	// beat.
	shorterThan int
	// broken is the counterexample, once a check has broken; tooLong is
	// set once no counterexample the run could still give would count.
	broken  *brokenRun
	tooLong bool
	// panicked is the target's panic, once it panicked answering a request
	// or taking a fault: the run ends there, and the panic is its
	// counterexample, the history cut at panickedAt operations (the
	// operation's own included).
	panicked   *TargetPanic
	panickedAt int
	// known are the findings that do not fail the run, and sightings what
	// it met and went past (see judge).
	known     checker.Known
	hunt      *checker.Signature
	sightings map[sightingKey]*Sighting
	// answers counts the answers received; checkedAnswers is how many the
	// last check after an action saw.
	answers, checkedAnswers int
	// timers are the broker's timers as the answers tell them.
	timers timers
}

// maxUndecided bounds the faults that leave a request without an answer
// (a lost response, a delayed request, a crash with a request in flight).
// The checker must consider every moment after its call for each such
// request to take effect, so their number, not the history's length,
// drives its cost; past this bound those faults strike elsewhere.
const maxUndecided = 4

// mayLeaveUndecided says whether a fault may leave one more request
// without an answer.
func (r *run) mayLeaveUndecided() bool { return r.undecided < maxUndecided }

// delayedRequest is a copy of a request the network holds back.
type delayedRequest struct {
	from string // the process that sent it
	op   model.Op
}

// tick moves the history's clock: every event takes a millisecond.
func (r *run) tick() int64 {
	r.now++
	return r.now
}

func (r *run) record(op histories.Op) int {
	op.ID = len(r.h.Ops)
	r.h.Ops = append(r.h.Ops, op)
	return op.ID
}

// histoOp is op as called by proc at call, not yet answered.
func histoOp(proc string, call int64, op model.Op) histories.Op {
	return histories.Op{Proc: proc, Call: call, Op: op, Result: model.NoAnswer()}
}

func (r *run) fault(proc string, kind model.Kind, req model.Request) {
	r.record(histoOp(proc, r.tick(), model.Op{Kind: kind, Req: req}))
}

// open adds a slot to the orchestrator's care and starts its first process.
func (r *run) open(s *slot) {
	r.slots = append(r.slots, s)
	r.spawn(s)
}

// spawn starts a new process in s, named by the next letter.
func (r *run) spawn(s *slot) *proc {
	name := procName(r.named)
	r.named++
	p := &proc{name: name, slot: s, c: s.start(name), sent: -1}
	s.current = p
	r.procs = append(r.procs, p)
	return p
}

func procName(i int) string {
	name := string(rune('A' + i%26))
	if i >= 26 {
		name += fmt.Sprint(i / 26)
	}
	return name
}

// send records the process's next request as called. A join is not sent
// while it does not fit on the target's clock (see waitFits): it stays
// the process's next request.
func (r *run) send(p *proc) bool {
	op, ok := model.Op{}, false
	if p.resend != nil {
		op, ok = *p.resend, true
	} else {
		op, ok = p.c.next()
	}
	if !ok || (op.Kind == model.JoinGroup && !r.waitFits()) {
		return false
	}
	p.resend = nil
	p.sent = r.record(histoOp(p.name, r.tick(), op))
	return true
}

// deliver sends the request in flight to the broker. With lose, the
// response is dropped on the way back and the client will send the same
// request again, as a client library retries.
func (r *run) deliver(p *proc, lose bool) {
	i := p.sent
	p.sent = -1
	res, version, err := r.sendToBroker(r.h.Ops[i].Op)
	op := &r.h.Ops[i] // after the send: a catch-up tick (see catchUp) grows the history
	if err != nil {
		panic(err) // the workload sent a kind no broker answers: a bug here
	}
	op.APIVersion = version
	if lose || !res.Answered {
		r.undecided++
		again := op.Op
		p.resend = &again
		return
	}
	op.Returned, op.Return, op.Result = true, r.tick(), res
	r.answers++
	r.countPlainCommit(op.Op, res)
	if commits(op.Op, res) {
		r.stuck, r.idleRounds = 0, 0
		clear(r.rivalFenced)
	}
	r.noteGroup(p, op.Op, res)
	r.timers.answered(op.Op, res)
	p.c.learn(op.Op, res)
	if p.c.closed() {
		r.replace(p)
	}
}

// sendToBroker sends op to the target. When op may end a transaction, the
// processes waiting for one to end are woken (see txnMayEnd), whatever
// the answer and whether or not it comes back: a lost answer does not
// undo what the broker did.
//
// version is the API version the target sent it at, when it speaks
// Kafka's protocol (model.NoteVersion).
func (r *run) sendToBroker(op model.Op) (res model.Result, version model.Version, err error) {
	r.catchUp()
	if r.panicked != nil {
		return model.Result{}, version, nil // a target that panicked is not asked again
	}
	defer r.catchPanic(op.Kind)
	if w, ok := r.target.(model.MarkerWriter); ok && w.MarkersInFlight() {
		// Coverage: a request inside the marker window, between an
		// EndTxn's answer and its markers.
		r.cov.count(InMarkerWindow, false)
	}
	ctx, noted := model.WithVersionNote(context.Background())
	res, err = model.Send(ctx, r.target, op)
	version = *noted
	if mayEndTxn(op) {
		r.txnMayEnd()
	}
	return res, version, err
}

// catchesUp is a target whose clock is not exact that may need the
// model's clock to catch up before the next request (kafka.Target.CatchUp):
// the broker's clock ran on while the requests since the last tick were
// answered, and a timer the model keeps is near its deadline there. The
// error says the target's clock lost step.
type catchesUp interface{ CatchUp() (int64, error) }

// catchUp asks the target whether the model's clock must catch up, and
// records the tick it needs, lengthened as any tick is (tickLength). A
// target whose clock lost step ends the run, as a panic does, with no
// check judged: what the history shows past that point is the target's
// clock, not the broker.
func (r *run) catchUp() {
	c, ok := r.target.(catchesUp)
	if !ok || r.panicked != nil {
		return
	}
	ms, err := c.CatchUp()
	if err != nil {
		r.panicked = &TargetPanic{Request: string(model.Tick), Value: err.Error(), ClockLost: true}
		r.panickedAt = len(r.h.Ops)
		return
	}
	if ms <= 0 {
		return
	}
	ms = r.tickLength(ms)
	r.did("Tick", nil, fmt.Sprintf("%d ms (the target's clock caught up)", ms))
	r.clockTick(ms)
}

// strike has the target take a fault of its own (a tick, a restart),
// recorded already, and guarded as a request is.
func (r *run) strike(kind model.Kind, fault func()) {
	if r.panicked != nil {
		return
	}
	defer r.catchPanic(kind)
	fault()
}

// catchPanic, deferred around a call of the target's, ends the run at the
// first panic: the operation the call was for, recorded last, is where
// its history is cut; a request's has no answer.
func (r *run) catchPanic(kind model.Kind) {
	if v := recover(); v != nil && r.panicked == nil {
		r.panicked = &TargetPanic{Request: string(kind), Value: fmt.Sprint(v), Stack: string(debug.Stack())}
		r.panickedAt = len(r.h.Ops)
	}
}

// TargetPanic is a panic of an in-process target's while it answered a
// request or took a fault (a tick, a restart): a bug of the broker's as
// much as a broken check is, reported in its place, with the history up
// to that operation.
type TargetPanic struct {
	Request string `json:"request"` // the operation's type in the history format: a request's, or a fault's
	Value   string `json:"value"`   // what it panicked with
	Stack   string `json:"stack"`   // the goroutine's stack at the panic
	// ClockLost: not a panic, but the target's clock out of step with
	// the broker's (see catchUp); Value says how. Nothing is judged.
	ClockLost bool `json:"clock_lost,omitempty"`
}

func (p TargetPanic) String() string {
	if p.ClockLost {
		return p.Value
	}
	if model.Kind(p.Request).IsFault() {
		return fmt.Sprintf("the target panicked taking a %s: %s", p.Request, p.Value)
	}
	return fmt.Sprintf("the target panicked answering a %s request: %s", p.Request, p.Value)
}

// mayEndTxn says whether op can end an open transaction: an EndTxn, or an
// InitProducerId for a transactional.id, which aborts that id's open
// transaction (KIP-98's fencing; KIP-360's bump alike). Nothing else a
// client sends does; the clock and a broker restart are the others (see
// clockTick, RestartBroker).
func mayEndTxn(op model.Op) bool {
	return op.Kind == model.EndTxn || op.Kind == model.InitProducerID && op.Req.TransactionalID != ""
}

// txnMayEnd wakes every process waiting for a transaction to end: a fare
// writer waiting for a last stable offset to move, as a long-polling
// fetch is answered once it moves, and a worker refused its committed
// offset as unstable. Each asks again, and waits anew if nothing changed.
func (r *run) txnMayEnd() {
	r.waitBlocked = false
	for _, p := range r.procs {
		if w, ok := p.c.(interface{ txnMayEnd() }); ok {
			w.txnMayEnd()
		}
	}
}

// commits reports whether an answer committed a write: a transaction's
// commit, or an idempotent write.
func commits(op model.Op, res model.Result) bool {
	switch {
	case !res.Succeeded():
		return false
	case op.Kind == model.EndTxn:
		return op.Req.Commit
	case op.Kind == model.Produce:
		return op.Req.TransactionalID == ""
	}
	return false
}

// Coverage lines of the at-least-once consumers' plain OffsetCommits:
// those answered, and those refused for a stale generation or an unknown
// member (the fencing a zombie consumer meets).
const (
	PlainCommits       = "plain offset commit"
	PlainCommitsFenced = "plain commit fenced"
)

// countPlainCommit counts an answered plain OffsetCommit.
func (r *run) countPlainCommit(op model.Op, res model.Result) {
	if op.Kind != model.OffsetCommit {
		return
	}
	r.cov.count(PlainCommits, false)
	if model.ClassOf(op.Kind, res.Err) == model.FencedConsumer {
		r.cov.count(PlainCommitsFenced, false)
	}
}

// noteGroup keeps count of what may have changed the group, so that an
// idle worker knows, as its heartbeat would tell it, whether to rejoin.
func (r *run) noteGroup(p *proc, op model.Op, res model.Result) {
	switch {
	case op.Kind == model.JoinGroup && res.Succeeded():
		if res.Resp.GenerationID > r.generations[op.Req.Group] {
			if r.generations == nil {
				r.generations = map[string]int32{}
			}
			r.generations[op.Req.Group] = res.Resp.GenerationID
			r.groupChanges++
		}
		p.sawGroup = r.groupChanges
	case op.Kind == model.LeaveGroup:
		r.groupChanges++
	case op.Kind == model.ConsumerGroupHeartbeat && res.Answered:
		// A KIP-848 join, leave or fencing changes the target, and an
		// answer that moves a member's assignment may free partitions
		// another waits for: the idle members heartbeat again.
		if op.Req.MemberEpoch <= model.JoinMemberEpoch || !res.Succeeded() || res.Resp.MemberAssignment != nil {
			r.groupChanges++
		}
		p.sawGroup = r.groupChanges
	}
}

// replace starts a new process in p's slot when p was its current one. In
// the quiet phase the new process starts at once with its first request,
// as a restarted service calls init_transactions on start.
func (r *run) replace(p *proc) {
	if p.slot.current != p || !p.slot.restarts {
		return
	}
	r.stuck++
	if r.quiet && r.hasRival(p) {
		r.rivalFenced[p.slot] = true
	}
	n := r.spawn(p.slot)
	r.fault(n.name, model.Restart, model.Request{})
	if r.quiet && r.send(n) {
		r.deliver(n, false)
	}
}

// hasRival reports whether a live process of another slot holds p's
// transactional.id: two owners of one id, which fence each other.
func (r *run) hasRival(p *proc) bool {
	id := transactionalID(p.c)
	return id != "" && slices.ContainsFunc(r.procs, func(q *proc) bool {
		return q.slot != p.slot && q.live() && transactionalID(q.c) == id
	})
}

// crash kills p. A request in flight may or may not reach the broker.
func (r *run) crash(p *proc, delivered bool) {
	if p.sent >= 0 {
		r.undecided++
		if delivered {
			_, version, _ := r.sendToBroker(r.h.Ops[p.sent].Op)
			r.h.Ops[p.sent].APIVersion = version
		}
		p.sent = -1
	}
	p.dead = true
	r.fault(p.name, model.Crash, model.Request{})
	r.replace(p)
}

// movable are the processes that can take a step: live, awake, with a
// request in flight or one to send.
func (r *run) movable() []*proc {
	var ps []*proc
	for _, p := range r.procs {
		if p.live() && !p.stalled {
			ps = append(ps, p)
		}
	}
	return ps
}

// step moves p: it delivers its request in flight, or sends its next one.
// It reports whether anything happened.
func (r *run) step(p *proc) bool {
	if p.sent >= 0 {
		r.deliver(p, false)
		return true
	}
	return r.send(p)
}

// pick draws one of ps by name, so that rapid's log reads as a timeline;
// nil if there is none.
func (r *run) pick(t *rapid.T, ps []*proc, label string) *proc {
	if len(ps) == 0 {
		return nil
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return ps[slices.Index(names, rapid.SampledFrom(names).Draw(t, label))]
}

func (r *run) where(ps []*proc, keep func(*proc) bool) []*proc {
	return slices.DeleteFunc(slices.Clone(ps), func(p *proc) bool { return !keep(p) })
}
