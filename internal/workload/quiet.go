package workload

import (
	"github.com/fencecheck/fencecheck/model"
)

// settleRounds bounds the quiet phase, far above what any worker needs to
// drain its input (a round is one request per process). A configuration
// that cannot make progress is stopped sooner and reported by the progress
// check rather than left to hang: when every slot's process has been
// fenced by another slot's holding the same transactional.id (seed 000:
// "each replica's init_transactions() bumps the epoch past the other 7,
// every replica is fenced on its next send, and the service writes
// nothing"), or when every slot has been restarted twice, without a
// commit.
const settleRounds = 400

// roundsWithoutCommit is how long the quiet phase waits for a commit: many
// times what one transaction takes (a worker's is a dozen requests,
// rebalances included), so that only a livelock runs out of it.
const roundsWithoutCommit = 60

// quiesce is how every exploration ends, as Jepsen's do: faults stop,
// stalled processes wake, every process runs until its work is done, and
// a read_committed reader reads every output partition from the start.
// Unless that read found every trip and no transaction open, the clock
// then lets every timeout fire, the processes run once more, and the
// reader reads again. A fare writer whose restore read stopped below
// another producer's open transaction waits through the first settle (it
// sends nothing) and reads again after the tick, which aborts that
// transaction on its timeout (see fareWriter.restored). (Firing timeouts
// in a finished run only expires idle consumers' sessions: rejoins that
// make a counterexample longer and show nothing.)
func (r *run) quiesce() {
	r.stuck, r.quiet, r.rivalFenced = 0, true, map[*slot]bool{}
	for _, p := range r.procs {
		if p.stalled && p.live() {
			p.stalled = false
			r.fault(p.name, model.Wake, model.Request{})
		}
	}
	r.deliverInFlight()
	rivals := r.settle()
	if r.panicked != nil || r.outgrown() {
		return // the target is not asked again, or nothing more counts
	}
	r.writeMarkers()
	if rivals {
		r.readOutputs() // what the replicas fencing each other left: no timeout changes it
		return
	}
	late := len(r.delayed) > 0
	for len(r.delayed) > 0 && !r.outgrown() {
		r.deliverDelayedAt(0)
	}
	if r.outgrown() || !late && r.readOutputs() {
		return
	}
	r.afterTimeouts()
}

// finalTicks bounds the ticks of the quiet phase. A run needs a second
// one when a process that ran after the first was fenced, holding a
// group's partitions as a static member that sends no LeaveGroup: only
// its session's timeout hands them to the live member (seed
// 1796585545275663748 of static-members: the zombie of a slot scaled
// down rejoined, took the partition and was fenced by its own late
// InitProducerId).
const finalTicks = 3

// afterTimeouts lets every timeout fire, runs the processes once more and
// reads again, until the reads find every trip, or a tick changes
// nothing, or finalTicks have passed.
func (r *run) afterTimeouts() {
	for range finalTicks {
		answers := r.answers
		r.clockTick(r.tickLength(tickSizes[len(tickSizes)-1]))
		// The processes run once more with the restart count at zero:
		// restarts a woken zombie caused before the tick (it fenced the
		// new owner, which was restarted, twice) are not a livelock, and
		// the last owner must get its rounds.
		r.stuck = 0
		r.settle()
		if r.outgrown() {
			return
		}
		moved := r.answers > answers
		r.writeMarkers()
		if r.readOutputs() || !moved {
			return
		}
	}
}

// writeMarkers has a target that holds markers in flight write them, as
// a cluster does on its own: in the quiet phase, before each round and
// before the final reads, so that a worker waiting on another's markers
// (UNSTABLE_OFFSET_COMMIT) goes on, and a commit counts as a trip
// processed.
func (r *run) writeMarkers() {
	if w, ok := r.target.(model.MarkerWriter); ok && r.panicked == nil {
		r.strike("land_markers", w.LandMarkers)
	}
}

// deliverInFlight answers every request in flight once the faults stop.
// settle's rounds move only the processes with work left, and an idle
// worker's rejoin sent during the actions would otherwise stay unanswered
// for good: an undecided request that no fault chose, past maxUndecided.
func (r *run) deliverInFlight() {
	for _, p := range r.movable() {
		if p.sent >= 0 {
			r.deliver(p, false)
		}
	}
}

// settle runs the processes round-robin, one whole request each, until
// none has anything to do but wait. A waiting worker polls its group when
// the group may have changed since it last joined (a rebalance may have
// given it work). settle reports whether it stopped because the slots'
// processes fence each other.
func (r *run) settle() (rivals bool) {
	r.idleRounds = 0
	for range settleRounds {
		if len(r.rivalFenced) == len(r.slots) {
			return true
		}
		if r.panicked != nil || r.outgrown() {
			return false // the target is not asked again, or nothing more counts
		}
		if r.stuck >= 2*len(r.slots) || r.idleRounds > roundsWithoutCommit {
			return false // restarts or rebalances without a commit: no progress
		}
		r.idleRounds++
		r.writeMarkers() // a cluster writes them on its own, in the end
		if !r.round(func(p *proc) bool { return !p.c.idle() }) &&
			!r.round(func(p *proc) bool { return p.c.idle() && pollsGroup(p) && p.sawGroup < r.groupChanges }) {
			return false
		}
	}
	return false
}

// round gives one exchange to each movable process that keep selects, and
// reports whether any process has work left afterwards (one the
// orchestrator just started among them).
func (r *run) round(keep func(*proc) bool) bool {
	for _, p := range r.where(r.movable(), keep) {
		if p.sent < 0 && !r.send(p) {
			continue
		}
		r.deliver(p, false)
		r.deliverDelayedOf(p)
	}
	return len(r.where(r.movable(), func(p *proc) bool { return !p.c.idle() && (p.sent >= 0 || p.resend != nil || hasNext(p)) })) > 0
}

// deliverDelayedOf lets p's delayed requests arrive once p is in the middle
// of its next transaction: the moment a late request does harm (KAFKA-17754:
// a late EndTxn ending the next transaction; KAFKA-14402: a late produce
// after its transaction ended).
func (r *run) deliverDelayedOf(p *proc) {
	if !p.c.inTxn() {
		return
	}
	for i := 0; i < len(r.delayed); {
		if r.delayed[i].from == p.name {
			r.deliverDelayedAt(i)
			continue
		}
		i++
	}
}

func pollsGroup(p *proc) bool {
	_, ok := p.c.(*worker)
	return ok
}

// readOutputs reads every output partition from the start, read_committed,
// until the last stable offset. It reports whether the run is finished:
// every trip read, and no transaction holding a last stable offset back.
func (r *run) readOutputs() bool {
	seen := map[string]bool{}
	finished := true
	for _, part := range r.outputPartitions() {
		stable := r.readPartition(part, func(key string) { seen[key] = true })
		finished = finished && stable
	}
	for _, trip := range r.h.Trips {
		finished = finished && seen[trip]
	}
	return finished
}

// readPartition reads part from the start, read_committed, until the last
// stable offset, and reports whether that is the high watermark: no
// transaction is open there.
func (r *run) readPartition(part model.Partition, see func(key string)) bool {
	from := int64(0)
	for range settleRounds {
		req := model.NewRequest()
		req.Partition, req.Offset, req.Isolation = part, from, model.ReadCommitted
		res := r.sendDirect("reader", model.Op{Kind: model.Fetch, Req: req}, func(model.Result) {})
		if !res.Succeeded() {
			return false
		}
		recs := res.Resp.Records
		for _, rec := range recs {
			see(rec.Key)
		}
		stable := res.Resp.LastStableOffset == res.Resp.HighWatermark
		if len(recs) == 0 {
			return stable
		}
		if from = recs[len(recs)-1].Offset + 1; from >= res.Resp.LastStableOffset {
			return stable
		}
	}
	return false
}

func (r *run) outputPartitions() []model.Partition {
	var parts []model.Partition
	seen := map[model.Partition]bool{}
	add := func(p model.Partition) {
		if !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	for _, p := range r.procs {
		switch c := p.c.(type) {
		case *fareWriter:
			add(c.shard.out)
		}
	}
	for _, in := range r.inputs {
		add(outputOf(in))
	}
	return parts
}
