package workload

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/model"
)

// Tick sizes: a second; past the session timeout but not the transaction
// timeout (so a zombie consumer is evicted while its producer is not);
// past both.
var tickSizes = []int64{1_000, 50_000, 61_000}

// actions are the moves rapid chooses among, named for what they do. An
// action with nothing to act on does nothing rather than call t.Skip: rapid
// gives up on a run after 100 skipped actions in a row, and a fuzzer's bytes
// can choose the same impossible action that often.
func (r *run) actions() map[string]func(*rapid.T) {
	_, exact := r.target.(exactClock)
	acts := r.actionsOn(exact)
	if b, ok := r.target.(restartsBroker); ok && !b.RestartsBroker() {
		delete(acts, "RestartBroker")
	}
	return acts
}

// restartsBroker is a target that says whether its Restart restarts the
// broker. A Kafka cluster reached by its address is not the target's to
// restart: its Restart only reconnects, and the model's broker_restart
// would record a restart that never happened. On such a target
// RestartBroker is not offered.
type restartsBroker interface{ RestartsBroker() bool }

// actionsOn are the actions of the run's scenario on a target whose clock
// is exact, or not (see exactClock).
func (r *run) actionsOn(exact bool) map[string]func(*rapid.T) {
	acts := map[string]func(*rapid.T){
		"StepProcess":           r.StepProcess,
		"StallProcess":          r.StallProcess,
		"WakeProcess":           r.WakeProcess,
		"CrashProcess":          r.CrashProcess,
		"ReplaceStalledProcess": r.ReplaceStalledProcess,
		"LoseResponse":          r.LoseResponse,
		"Tick":                  r.Tick,
		"RestartBroker":         r.RestartBroker,
		"DelayRequest":          r.DelayRequest,
		"DeliverDelayedRequest": r.DeliverDelayedRequest,
		"ReadOutput":            r.ReadOutput,
	}
	if r.sc.Name == adversaryScenario {
		acts["Adversary"] = r.Adversary
	}
	if exact {
		acts["TickToDeadline"] = r.TickToDeadline
		acts["ExhaustEpoch"] = r.ExhaustEpoch
	}
	if _, ok := r.target.(model.MarkerWriter); ok {
		acts["LandMarkers"] = r.LandMarkers
	}
	if r.sc.workers {
		acts["JoinWorker"] = r.JoinWorker
		acts["LeaveWorker"] = r.LeaveWorker
		acts["RejoinWorker"] = r.RejoinWorker
	}
	return acts
}

// resolving are the actions a swarm run always offers: moving a process,
// and ending what a fault began, so that no configuration leaves a run
// unable to finish.
// The adversary scenario's attacks are offered too: they are what the
// scenario is for (left out half the time, the leader-ignores-marker-epoch
// bug took 1.7 times as many interleavings to meet).
var resolving = map[string]bool{"StepProcess": true, "WakeProcess": true, "DeliverDelayedRequest": true, "Adversary": true}

// swarm draws which of the other actions this run offers, each as likely
// as not (rapid shrinks a draw toward leaving the action out, and so a
// counterexample toward the fewest kinds of fault it needs). Swarm testing
// (Groce, Zhang, Eide, Chen, Regehr, "Swarm Testing", ISSTA 2012): a run
// that never crashes anyone goes deeper into what stalls do, and runs that
// each leave out different faults find rare bugs sooner than runs that
// always offer everything. The actions left out are not offered at all, so
// those offered are chosen more often.
func swarm(t *rapid.T, acts map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	offered := map[string]func(*rapid.T){}
	for _, name := range slices.Sorted(maps.Keys(acts)) {
		if resolving[name] || rapid.Bool().Draw(t, "swarm offers "+name) {
			offered[name] = acts[name]
		}
	}
	return offered
}

// did notes an action for the bug report and the coverage count; struck is
// the process it hit, or nil for a fault of the broker's, which strikes
// every process with a transaction open.
func (r *run) did(action string, struck *proc, detail string) {
	line := action
	if struck != nil {
		line += " " + struck.name
	}
	if detail != "" {
		line += " " + detail
	}
	r.steps = append(r.steps, line)
	midTxn := struck != nil && struck.c.inTxn()
	if struck == nil {
		midTxn = len(r.where(r.procs, func(p *proc) bool { return p.live() && p.c.inTxn() })) > 0
	}
	r.cov.count(action, midTxn)
}

// StepProcess lets processes move, one after another: each delivers its
// request in flight or sends its next one. Processes move far more often
// than faults strike, so one action is several moves.
func (r *run) StepProcess(t *rapid.T) {
	for range rapid.IntRange(1, 12).Draw(t, "moves") {
		if r.decided() {
			return // the target panicked: nothing more reaches it
		}
		ready := r.where(r.movable(), func(p *proc) bool { return p.sent >= 0 || p.resend != nil || hasNext(p) })
		if len(ready) == 0 {
			return
		}
		p := r.pick(t, ready, "process")
		r.did("StepProcess", p, "")
		r.step(p)
	}
}

// pickVictim draws the process a fault strikes, half the time among those
// with a transaction open: that is where fencing matters, and where a
// uniform draw rarely lands when most processes are between trips.
func (r *run) pickVictim(t *rapid.T, ps []*proc, label string) *proc {
	if len(ps) == 0 {
		return nil
	}
	inTxn := r.where(ps, func(p *proc) bool { return p.c.inTxn() })
	if len(inTxn) > 0 && rapid.Bool().Draw(t, label+" mid-transaction") {
		ps = inTxn
	}
	return r.pick(t, ps, label)
}

func hasNext(p *proc) bool {
	_, ok := p.c.next()
	return ok
}

// StallProcess freezes a process: a garbage collection pause, a dropped
// link. Its request in flight is held until it wakes.
func (r *run) StallProcess(t *rapid.T) {
	p := r.pickVictim(t, r.movable(), "stall")
	if p == nil {
		return
	}
	r.did("StallProcess", p, "")
	p.stalled = true
	r.fault(p.name, model.Stall, model.Request{})
}

// WakeProcess ends a stall: the process goes on as if nothing happened.
func (r *run) WakeProcess(t *rapid.T) {
	p := r.pick(t, r.where(r.procs, func(p *proc) bool { return p.stalled && p.live() }), "wake")
	if p == nil {
		return
	}
	r.did("WakeProcess", p, "")
	p.stalled = false
	r.fault(p.name, model.Wake, model.Request{})
}

// CrashProcess kills a process; the orchestrator starts another from the
// same config. A request in flight may or may not have reached the broker.
func (r *run) CrashProcess(t *rapid.T) {
	p := r.pickVictim(t, r.where(r.procs, func(p *proc) bool { return p.live() && (p.sent < 0 || r.mayLeaveUndecided()) }), "crash")
	if p == nil {
		return
	}
	delivered := p.sent >= 0 && rapid.Bool().Draw(t, "delivered")
	r.did("CrashProcess", p, map[bool]string{true: "(its request in flight arrived)"}[delivered])
	r.crash(p, delivered)
}

// ReplaceStalledProcess is the orchestrator giving up on a stalled process
// and starting another with the same config: two processes now claim the
// same work, and the stalled one will wake as a zombie (seed 000).
func (r *run) ReplaceStalledProcess(t *rapid.T) {
	p := r.pick(t, r.where(r.procs, func(p *proc) bool { return p.stalled && p.live() && p.slot.current == p }), "replace")
	if p == nil {
		return
	}
	r.did("ReplaceStalledProcess", p, "")
	n := r.spawn(p.slot)
	r.fault(n.name, model.Restart, model.Request{})
}

// LoseResponse delivers a request and drops its response: the client sends
// the same request again.
func (r *run) LoseResponse(t *rapid.T) {
	p := r.pickVictim(t, r.where(r.movable(), func(p *proc) bool { return p.sent >= 0 && r.mayLeaveUndecided() }), "lose")
	if p == nil {
		return
	}
	r.did("LoseResponse", p, "")
	r.deliver(p, true)
}

// DelayRequest holds a request back in the network: its client times out
// and sends it again, and the first copy arrives later, after the client
// has moved on (KAFKA-17754: a late EndTxn landing on the next
// transaction).
func (r *run) DelayRequest(t *rapid.T) {
	p := r.pickVictim(t, r.where(r.movable(), func(p *proc) bool { return p.sent >= 0 && r.mayLeaveUndecided() && r.mayDelay(p) }), "delay")
	if p == nil {
		return
	}
	r.did("DelayRequest", p, "")
	again := r.h.Ops[p.sent].Op
	r.undecided++
	r.delayed = append(r.delayed, delayedRequest{from: p.name, op: again})
	p.resend, p.sent = &again, -1
}

// mayDelay says whether p's request in flight may be held back. Under
// transactions v1 an EndTxn is not: a late copy carries the same epoch as
// the producer's next transaction and ends it (KAFKA-17754), which no
// client can prevent; that is what transactions v2 fixes, and where the
// properties delay it. Nor is a TxnOffsetCommit, for the same reason: a
// late copy lands its offsets in the next transaction, over the ones that
// transaction sent, and a correct Kafka 3.9 commits them (no sequence
// number guards it, as one guards a produce): the group's offset moves
// back (met on kfake; the model agreed with the broker).
func (r *run) mayDelay(p *proc) bool {
	kind := r.h.Ops[p.sent].Kind
	return r.v2 || kind != model.EndTxn && kind != model.TxnOffsetCommit
}

// DeliverDelayedRequest lets the oldest delayed request arrive; nobody is
// waiting for its answer.
func (r *run) DeliverDelayedRequest(t *rapid.T) {
	if len(r.delayed) == 0 {
		return
	}
	r.did("DeliverDelayedRequest", nil, "")
	r.deliverDelayedAt(0)
}

// deliverDelayedAt lets the i-th delayed request arrive.
func (r *run) deliverDelayedAt(i int) {
	d := r.delayed[i]
	r.delayed = append(r.delayed[:i:i], r.delayed[i+1:]...)
	if _, _, err := r.sendToBroker(d.op); err != nil {
		panic(err)
	}
}

// ReadOutput is a downstream consumer reading an output partition
// read_committed from the start, while transactions are open.
func (r *run) ReadOutput(t *rapid.T) {
	parts := r.outputPartitions()
	if len(parts) == 0 {
		return
	}
	part := rapid.SampledFrom(parts).Draw(t, "partition")
	r.did("ReadOutput", nil, string(part))
	r.readPartition(part, func(string) {})
}

// Tick moves the broker's clock: transaction and session timeouts fire.
func (r *run) Tick(t *rapid.T) {
	ms := r.tickLength(rapid.SampledFrom(tickSizes).Draw(t, "ms"))
	r.did("Tick", nil, fmt.Sprintf("%d ms", ms))
	r.clockTick(ms)
}

// exactClock is a target whose clock only Tick moves, as the model's: a
// tick may land on a timer's deadline to the millisecond. The model and
// impl are such targets (they say so with an ExactClock method). A Kafka
// cluster's clock is the wall clock, which runs between ticks too: there
// a tick that stops a millisecond short of a deadline races the broker's
// timer, and an action of thousands of requests lets the other
// transactions' timeouts run out while the model's clock stands still, so
// TickToDeadline and ExhaustEpoch are not offered.
type exactClock interface{ ExactClock() }

// lengthensTicks is a target whose clock is not exact that lengthens a
// tick which would leave a transaction nearly due on the broker to its
// deadline (kafka.Target.TickLength): the broker's clock runs between
// ticks, and would abort it where the model cannot.
type lengthensTicks interface{ TickLength(ms int64) int64 }

// tickLength is ms, or the longer tick the target needs for it.
func (r *run) tickLength(ms int64) int64 {
	if l, ok := r.target.(lengthensTicks); ok {
		return l.TickLength(ms)
	}
	return ms
}

// TickToDeadline moves the broker's clock to the moment a timer fires (an
// open transaction's timeout, a member's session), to the millisecond, or
// one millisecond short of it or past it: where an off-by-one comparison
// in a broker fires a timer a tick too soon or too late. The deadline is
// drawn among those the run knows of, the soonest the likeliest.
func (r *run) TickToDeadline(t *rapid.T) {
	due := r.timers.deadlines()
	if len(due) == 0 {
		return
	}
	deadline := rapid.SampledFrom(due).Draw(t, "deadline")
	ms := deadline - r.timers.clock + rapid.SampledFrom([]int64{0, -1, 1}).Draw(t, "ms past the deadline")
	if ms <= 0 {
		return
	}
	r.did("TickToDeadline", nil, fmt.Sprintf("%d ms", ms))
	r.clockTick(ms)
}

func (r *run) clockTick(ms int64) {
	r.now += ms
	r.timers.tick(ms)
	r.groupChanges++ // sessions may have expired
	r.txnMayEnd()    // transactions may have timed out
	for _, p := range r.procs {
		if w, ok := p.c.(*worker); ok {
			w.clockMoved(ms)
		}
	}
	r.fault("clock", model.Tick, model.Request{Ms: ms})
	r.strike(model.Tick, func() { r.target.Tick(ms) })
}

// waitsOnTheClock is a target whose clock is not exact, where a restart,
// or a join that waits out the rebalance timeout for a member that does
// not rejoin, takes real time that runs the open transactions' timeouts
// while the model's clock stands still: it says whether one fits before
// the next tick (kafka.Target.WaitFits). Until one does, the broker is
// not restarted and no join is sent.
type waitsOnTheClock interface{ WaitFits() bool }

// waitFits asks the target whether a restart or a join fits now; once it
// says no, the answer stands until a transaction may have ended (see
// txnMayEnd), and the target is not asked again meanwhile.
func (r *run) waitFits() bool {
	w, ok := r.target.(waitsOnTheClock)
	if !ok {
		return true
	}
	if !r.waitBlocked {
		r.waitBlocked = !w.WaitFits()
	}
	return !r.waitBlocked
}

// InMarkerWindow is the coverage line of requests sent while a
// transaction's markers were in flight.
const InMarkerWindow = "sent in marker window"

// LandMarkers has a target that answers EndTxn before its markers
// (model.MarkerWriter) write the markers in flight. The history does not
// say when: a real cluster's does not either, so the checker must find
// where they landed from the answers.
func (r *run) LandMarkers(t *rapid.T) {
	w := r.target.(model.MarkerWriter)
	if !w.MarkersInFlight() {
		return
	}
	r.did("LandMarkers", nil, "")
	r.strike("land_markers", w.LandMarkers)
}

// RestartBroker restarts the broker on its logs.
func (r *run) RestartBroker(t *rapid.T) {
	if r.catchUp(); r.panicked != nil || !r.waitFits() {
		return
	}
	r.did("RestartBroker", nil, "")
	r.groupChanges++
	// A coordinator loading its log sends the markers of the transactions
	// it was ending (TransactionStateManager.loadTransactionsForTxnTopicPartition).
	r.txnMayEnd()
	r.fault("broker", model.BrokerRestart, model.Request{})
	r.strike(model.BrokerRestart, r.target.Restart)
}

// exhaustionOdds is how many fair coin flips must all come up heads for
// ExhaustEpoch to run when drawn: ten, once in 1,024 draws, about once in
// a thousand interleavings. Its history of some 32,768 requests takes the
// checker a few tenths of a second, a hundred interleavings' worth.
const exhaustionOdds = 10

// maxEpochBumps bounds ExhaustEpoch: enough bumps for an epoch to run from
// 0 past the last one (Short.MAX_VALUE - 1), and a few more for a broker
// that does not rotate the producer id there.
const maxEpochBumps = math.MaxInt16 + 3

// ExhaustEpoch is a long life in one action: a transactional producer
// bumps its own epoch (KIP-360's InitProducerId with its producer id and
// epoch, as Kafka's producer does to recover from an abortable error) over
// and over, until the epoch runs out and the coordinator hands its
// transactional.id a fresh producer id at epoch 0 (KIP-360: once the epoch
// reaches Short.MAX_VALUE - 1; TransactionMetadata.isEpochExhausted). The
// producer goes on with it, restoring as after any init. Some 32,766 bumps
// are the only way there from a fresh cluster, so the action is rare (see
// exhaustionOdds), and it is a run's last: the quiet phase follows, and
// the history is checked at its end rather than after each action.
func (r *run) ExhaustEpoch(t *rapid.T) {
	producers := r.where(r.movable(), func(p *proc) bool {
		s, ok := sessionOf(p.c)
		return ok && s.txnID != "" && s.pid != model.NoProducerID && p.sent < 0 && p.resend == nil
	})
	if len(producers) == 0 {
		return
	}
	for range exhaustionOdds {
		if !rapid.Bool().Draw(t, "a long life") {
			return
		}
	}
	p := r.pick(t, producers, "exhaust")
	r.did("ExhaustEpoch", p, "")
	r.actionsOver = true
	s, _ := sessionOf(p.c)
	first := s.pid
	for range maxEpochBumps {
		s, _ := sessionOf(p.c)
		if !p.live() || s.pid != first {
			return // fenced, or rotated to a fresh producer id
		}
		if r.outgrown() {
			return // nothing from here on can give a shorter counterexample
		}
		bump := s.initOp()
		bump.Req.ProducerID, bump.Req.Epoch = s.pid, s.epoch
		p.resend = &bump
		r.send(p)
		r.deliver(p, false)
		if p.resend != nil {
			return // no answer: its retry is the producer's next request
		}
	}
}

// maxWorkers bounds the group, to keep histories short.
const maxWorkers = 3

// JoinWorker starts one more worker: the group rebalances.
func (r *run) JoinWorker(t *rapid.T) {
	if r.liveWorkers() >= maxWorkers {
		return
	}
	r.did("JoinWorker", nil, "")
	r.addWorker()
}

// LeaveWorker makes a worker leave the group once its transaction is done;
// the orchestrator does not replace it, but keeps one worker at least.
func (r *run) LeaveWorker(t *rapid.T) {
	if r.liveWorkers() < 2 {
		return
	}
	// The orchestrator scales a slot down through its current process: a
	// zombie the slot replaced is not the slot's, and its leave must not
	// stop the slot from restarting the process that replaced it.
	p := r.pick(t, r.where(r.procs, func(p *proc) bool { return exactlyOnce(p) && p.live() && p.slot.current == p }), "leave")
	if p == nil {
		return
	}
	r.did("LeaveWorker", p, "")
	p.c.(*worker).leave()
	p.slot.restarts = false
}

// RejoinWorker makes a worker rejoin its group at its next poll, whether
// or not the group changed (a subscribed topic's metadata changed, as its
// consumer sees): the member rejoining the generation it is in, which the
// group answers without a rebalance or, when the member leads it, with
// one. Twice in a run, two members rejoin the current generation in turn.
func (r *run) RejoinWorker(t *rapid.T) {
	p := r.pick(t, r.where(r.procs, func(p *proc) bool {
		w, ok := p.c.(*worker)
		return ok && p.live() && w.member != "" && !w.rejoining
	}), "rejoin")
	if p == nil {
		return
	}
	r.did("RejoinWorker", p, "")
	p.c.(*worker).rejoin()
}

// liveWorkers counts the exactly-once workers the orchestrator keeps.
func (r *run) liveWorkers() int {
	return len(r.where(r.procs, func(p *proc) bool {
		return exactlyOnce(p) && p.live() && p.slot.current == p && p.slot.restarts
	}))
}

// exactlyOnce reports whether p is a consume-transform-produce worker:
// the at-least-once consumers (newAuditor) write nothing, so that the
// workers must not all leave while they stay.
func exactlyOnce(p *proc) bool {
	w, ok := p.c.(*worker)
	return ok && !w.atLeastOnce
}
