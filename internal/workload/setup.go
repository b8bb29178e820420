package workload

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/model"
)

const (
	group       = "fare-workers"
	inputTopic  = "trips"
	writerTopic = "fares"
	workerTopic = "fares-ctp"
)

// newRun draws the size of the world (rapid shrinks it toward one shard,
// one trip) and sets it up: the orchestrator's slots, and the input topic
// the workers read, written by a source process.
func newRun(t *rapid.T, sc Scenario, target model.Target, v2 bool, cov *Coverage) *run {
	r := &run{sc: sc, target: target, v2: v2, cov: cov}
	r.h.TransactionsVersion = 1
	if v2 {
		r.h.TransactionsVersion = 2
	}
	r.h.Trips = []string{}
	if a, ok := target.(interface{ AsyncMarkers() bool }); ok && a.AsyncMarkers() {
		// The broker answers EndTxn before its markers land: the history
		// says so, and is judged with the marker window.
		r.h.AsyncMarkers = true
	}
	writers, workers := sc.writers != noWriters, sc.workers
	if writers && workers {
		// Both kinds of pipeline, or one: rapid shrinks toward the one
		// a counterexample needs.
		mix := rapid.IntRange(0, 2).Draw(t, "pipelines (0 writers, 1 workers, 2 both)")
		writers, workers = mix != 1, mix != 0
	}
	if writers {
		replicas := 1
		if sc.writers == sharedID {
			replicas = rapid.IntRange(2, sc.replicas).Draw(t, "replicas")
		}
		// Up to six trips a shard: one more than a leader remembers batches
		// of a producer (KIP-98's window of five), so that under
		// transactions v1, where a writer's epoch lasts its whole session,
		// the window fills and moves on.
		r.addWriters(rapid.IntRange(1, 2).Draw(t, "shards"), rapid.IntRange(1, maxTripsPerShard).Draw(t, "trips per shard"), replicas)
	}
	if workers && sc.kip848 {
		if _, ok := target.(model.ConsumerGroupHeartbeater); !ok {
			t.Fatalf("scenario %s sends KIP-848 ConsumerGroupHeartbeats, and the target, a %T, is not a model.ConsumerGroupHeartbeater", sc.Name, target)
		}
	}
	if workers {
		r.seedInput(rapid.IntRange(1, 2).Draw(t, "input partitions"), rapid.IntRange(1, 3).Draw(t, "trips per partition"))
		for range rapid.IntRange(1, 2).Draw(t, "workers") {
			r.addWorker()
		}
	}
	if sc.auditors {
		r.addAuditors(t)
	}
	return r
}

// auditorGroup is the at-least-once consumers' group: their commits
// must not move the offsets the exactly-once workers read.
const auditorGroup = "trip-auditors"

// addAuditors starts one or two at-least-once consumers of the input
// topic (newAuditor). They commit with a plain OffsetCommit, which only
// a model.OffsetCommitter takes.
func (r *run) addAuditors(t *rapid.T) {
	if _, ok := r.target.(model.OffsetCommitter); !ok {
		t.Fatalf("scenario %s sends plain OffsetCommits, and the target, a %T, is not a model.OffsetCommitter", r.sc.Name, r.target)
	}
	for range rapid.IntRange(1, 2).Draw(t, "auditors") {
		r.open(&slot{restarts: true, start: func(string) client { return newAuditor(auditorGroup, r.inputs) }})
	}
}

// maxTripsPerShard is how many trips a fare writer's shard may hold.
const maxTripsPerShard = 6

func (r *run) addWriters(shards, trips, replicas int) {
	r.outputs = append(r.outputs, writerTopic)
	if r.sc.writers == sharedID {
		shards = 1 // one shard of work, and every replica on it
	}
	for s := range shards {
		sh := &shard{out: model.Partition(fmt.Sprintf("%s-%d", writerTopic, s)), acked: map[string]bool{}}
		for i := range trips {
			sh.trips = append(sh.trips, fmt.Sprintf("trip-%d%02d", s+1, i+1))
		}
		r.h.Trips = append(r.h.Trips, sh.trips...)
		for range replicas {
			r.open(&slot{restarts: true, start: r.writerConfig(sh, s)})
		}
	}
}

// writerConfig is how the orchestrator starts a writer of shard s: the
// scenario decides its transactional.id.
func (r *run) writerConfig(sh *shard, s int) func(string) client {
	starts := 0
	return func(string) client {
		starts++
		id := map[writerIDs]string{
			stableID:   fmt.Sprintf("fare-writer-%d", s),
			freshID:    fmt.Sprintf("fare-writer-%d-start%d", s, starts),
			sharedID:   "fare-writer",
			idempotent: "",
		}[r.sc.writers]
		return newFareWriter(sh, id, r.v2)
	}
}

// seedInput writes the trips the workers read, before anything else, as a
// process of its own: an idempotent producer, one batch per partition.
func (r *run) seedInput(partitions, trips int) {
	r.outputs = append(r.outputs, workerTopic)
	src := newProducer("")
	r.sendDirect("source", src.initOp(), func(res model.Result) { src.takeGrant(res.Resp) })
	for p := range partitions {
		part := model.Partition(fmt.Sprintf("%s-%d", inputTopic, p))
		r.inputs = append(r.inputs, part)
		op := src.produceOp(part, "", "")
		op.Req.Records = nil
		for i := range trips {
			trip := fmt.Sprintf("trip-%c%02d", 'a'+p, i+1)
			op.Req.Records = append(op.Req.Records, model.Record{Key: trip, Value: "ride of " + trip})
			r.h.Trips = append(r.h.Trips, trip)
		}
		r.sendDirect("source", op, func(model.Result) {})
	}
}

// sendDirect sends a request outside the scheduler (set-up and final
// reads), recording it like any other.
func (r *run) sendDirect(proc string, op model.Op, learn func(model.Result)) model.Result {
	i := r.record(histoOp(proc, r.tick(), op))
	res, version, err := r.sendToBroker(op)
	if err != nil {
		panic(err)
	}
	r.h.Ops[i].APIVersion = version
	if res.Answered {
		r.h.Ops[i].Returned, r.h.Ops[i].Return, r.h.Ops[i].Result = true, r.tick(), res
		r.answers++
		r.timers.answered(op, res)
		learn(res)
	}
	return res
}

func (r *run) addWorker() {
	instance := r.instanceID()
	r.open(&slot{restarts: true, start: func(name string) client {
		// KIP-447: a producer per worker, its id that worker's own.
		w := newWorker("fare-worker-"+name, group, r.inputs, outputOf, r.sc.groupMeta, r.v2)
		w.instance = instance
		if r.sc.kip848 {
			// KIP-1082: the consumer chooses its member id, once, and
			// keeps it when it joins again after being fenced.
			w.kip848, w.member, w.MemberEpoch = true, "fare-worker-"+name, model.JoinMemberEpoch
		}
		return w
	}})
}

// instanceID is the group.instance.id of the next worker slot: the same
// for every process the orchestrator starts in that slot.
func (r *run) instanceID() string {
	r.workerSlots++
	switch r.sc.instances {
	case instancePerSlot:
		return fmt.Sprintf("fare-worker-%d", r.workerSlots)
	case sharedInstance:
		return "fare-worker"
	}
	return ""
}

// outputOf is the output partition of an input partition.
func outputOf(in model.Partition) model.Partition {
	topic, _ := in.Topic()
	return model.Partition(workerTopic + string(in[len(topic):]))
}
