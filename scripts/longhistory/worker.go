package main

import (
	"slices"

	"github.com/fencecheck/fencecheck/internal/consumer"
	"github.com/fencecheck/fencecheck/model"
)

// worker is a consume-transform-produce worker of the pipeline shape. It
// behaves as internal/workload's KIP-848 worker does (worker.go and
// worker848.go there), which follows Kafka's consumer
// (ConsumerMembershipManager) and producer (TransactionManager), under
// transactions v2 (KIP-890): one trip a transaction, its fare produced
// and its input offset committed with the transaction (KIP-447).
type worker struct {
	p     *pipeline
	slot  *slot
	proc  string
	txnID string
	// member is the member id the process chose (KIP-1082).
	member string

	pid   int64
	epoch int16
	seqs  map[model.Partition]int32

	step workerStep
	// Member is the membership, its epochs, the assignment and the
	// place in each partition.
	consumer.Member
	batch  []model.FetchedRecord // read, not yet committed
	from   model.Partition       // the partition batch came from
	commit bool                  // the end_txn in flight commits
	// committedOn: the partitions where this process committed an
	// offset (for the rewind-offset fault).
	committedOn map[model.Partition]bool

	// stalled: the process stopped in the middle of a transaction, and
	// another was started in its slot. It wakes as a zombie.
	stalled bool
}

type workerStep int

const (
	stepInit workerStep = iota
	stepRead
	stepFetchOffsets
	stepProduce
	stepCommitOffsets
	stepEnd
	stepAbort
	stepLeave
	stepClosed
)

func (w *worker) name() string { return w.proc }
func (w *worker) done() bool   { return w.step == stepClosed }

// inTxn: the worker holds a batch it is committing, trip by trip.
func (w *worker) inTxn() bool { return w.step >= stepProduce && w.step <= stepEnd }

func (w *worker) request() model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = w.txnID, w.pid, w.epoch
	return r
}

func (w *worker) next() (model.Op, bool) {
	switch w.step {
	case stepClosed:
		return model.Op{}, false
	case stepLeave:
		r := model.NewRequest()
		r.Group, r.MemberID, r.MemberEpoch = pipeGroup, w.member, model.LeaveMemberEpoch
		return model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}, true
	case stepInit:
		r := model.NewRequest()
		r.TransactionalID = w.txnID
		return model.Op{Kind: model.InitProducerID, Req: r}, true
	}
	if w.MemberEpoch == model.JoinMemberEpoch || w.BeatDue {
		return w.beatOp(), true
	}
	if !w.inTxn() && w.step != stepAbort {
		w.reconcile()
	}
	switch w.step {
	case stepFetchOffsets:
		r := model.NewRequest()
		r.Group, r.Partition, r.RequireStable = pipeGroup, w.Unknown[0], true
		return model.Op{Kind: model.OffsetFetch, Req: r}, true
	case stepRead:
		for _, part := range w.Assigned {
			if !w.Drained[part] {
				r := model.NewRequest()
				r.Partition, r.Offset, r.Isolation = part, w.Position[part], model.ReadCommitted
				return model.Op{Kind: model.Fetch, Req: r}, true
			}
		}
		// Nothing to read: the consumer's poll is a heartbeat, and
		// its next poll fetches again.
		clear(w.Drained)
		return w.beatOp(), true
	case stepProduce:
		r := w.request()
		out := outputOf(w.from)
		trip := w.batch[0].Key
		r.Partition, r.Sequence = out, w.seqs[out]
		r.Records = []model.Record{{Key: trip, Value: "fare of " + trip}}
		return model.Op{Kind: model.Produce, Req: r}, true
	case stepCommitOffsets:
		r := w.request()
		r.Group, r.MemberID, r.GenerationID = pipeGroup, w.member, w.Generation
		offset := w.batch[0].Offset + 1
		if w.p.cfg.fault == "rewind-offset" && !w.p.faulted && w.committedOn[w.from] && offset >= 3 && w.p.committed >= 20 {
			w.p.faulted = true
			offset -= 2 // the trip before the one committed last
		}
		r.Offsets = map[model.Partition]int64{w.from: offset}
		return model.Op{Kind: model.TxnOffsetCommit, Req: r}, true
	case stepEnd:
		w.commit = w.p.draining || w.p.rng.IntN(abortOneIn) != 0
		r := w.request()
		r.Commit = w.commit
		return model.Op{Kind: model.EndTxn, Req: r}, true
	case stepAbort:
		w.commit = false
		return model.Op{Kind: model.EndTxn, Req: w.request()}, true
	}
	return model.Op{}, false
}

// beatOp is a full heartbeat: a join at epoch 0, else the member's epoch
// with the partitions the application owns (worker848.go's beatOp).
func (w *worker) beatOp() model.Op {
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch = pipeGroup, w.member, w.MemberEpoch
	r.SubscribedTopics, r.RebalanceTimeoutMs = &[]string{pipeInput}, rebalanceTimeoutMs
	owned := slices.Clone(w.Assigned)
	if w.MemberEpoch == model.JoinMemberEpoch || owned == nil {
		owned = []model.Partition{}
	}
	r.OwnedPartitions = &owned
	return model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
}

func (w *worker) learn(op model.Op, res model.Result) {
	if op.Kind == model.ConsumerGroupHeartbeat {
		w.learnBeat(op, res)
		return
	}
	if w.MemberEpoch > 0 && w.p.rng.IntN(beatOneIn) == 0 {
		w.BeatDue = true
	}
	switch model.ClassOf(op.Kind, res.Err) {
	case model.Success, model.Duplicate:
	case model.FencedProducer, model.WrongProducerID:
		if res.Err == model.InvalidProducerEpoch && op.Kind == model.Produce {
			// KIP-588: abortable; the abort says whether it is fenced.
			w.step = stepAbort
			return
		}
		w.fenced()
		return
	case model.Busy, model.Undecided, model.Unstable:
		return // sent again
	default:
		w.refused(op)
		return
	}
	switch op.Kind {
	case model.InitProducerID:
		w.takeGrant(res.Resp)
		w.step = stepRead
	case model.OffsetFetch:
		w.Position[w.Unknown[0]] = max(res.Resp.Offset, 0)
		w.Unknown = w.Unknown[1:]
		if len(w.Unknown) == 0 {
			w.step = stepRead
		}
	case model.Fetch:
		w.read(op.Req.Partition, res.Resp)
	case model.Produce:
		w.seqs[op.Req.Partition]++
		w.step = stepCommitOffsets
	case model.TxnOffsetCommit:
		w.step = stepEnd
	case model.EndTxn:
		w.ended(res.Resp)
	}
}

// refused handles an abortable refusal: the group fenced the commit (a
// stale member epoch), or another error. The worker aborts what is open
// and reads again from the committed offsets.
func (w *worker) refused(op model.Op) {
	if op.Kind == model.TxnOffsetCommit {
		w.BeatDue = true // the heartbeat tells whether the member was fenced
	}
	switch {
	case op.Kind == model.EndTxn && !op.Req.Commit:
		w.fenced() // an abort refused: the producer cannot go on
	case w.inTxn():
		w.step = stepAbort
	default:
		w.rewind()
	}
}

// fenced closes the process, as a fenced producer is closed for good and
// the application closes its consumer with it, which leaves the group.
// When it was its slot's current process, another starts in the slot.
func (w *worker) fenced() {
	w.p.fenced++
	w.step = stepClosed
	if w.MemberEpoch > 0 {
		w.step = stepLeave
	}
	if w.slot.current == w {
		w.p.start(w.slot, true)
	}
}

func (w *worker) takeGrant(resp model.Response) {
	if resp.ProducerID != w.pid || resp.Epoch != w.epoch {
		clear(w.seqs)
	}
	w.pid, w.epoch = resp.ProducerID, resp.Epoch
}

func (w *worker) read(part model.Partition, resp model.Response) {
	w.Stable[part] = resp.LastStableOffset
	if len(resp.Records) == 0 {
		w.Drained[part] = w.Position[part] >= resp.LastStableOffset
		return
	}
	w.batch, w.from = resp.Records, part
	w.step = stepProduce
}

// ended takes an end_txn's answer: under transactions v2 it hands out the
// epoch to go on with.
func (w *worker) ended(resp model.Response) {
	w.takeGrant(resp)
	if !w.commit {
		w.p.aborts++
		w.rewind()
		return
	}
	w.p.committed++
	if w.committedOn == nil {
		w.committedOn = map[model.Partition]bool{}
	}
	w.committedOn[w.from] = true
	if w.p.cfg.fault == "duplicate-fare" && !w.p.faulted && w.p.committed >= 20 {
		// The worker forgets it committed the trip: it is processed
		// again, in a transaction of its own.
		w.p.faulted = true
		w.p.committed--
		w.step = stepProduce
		return
	}
	w.Position[w.from] = w.batch[0].Offset + 1
	w.batch = w.batch[1:]
	w.step = stepProduce
	if len(w.batch) == 0 {
		// The partition is drained when the fetch that returned the
		// batch reached the last stable offset.
		w.step = stepRead
		w.Drained[w.from] = w.Position[w.from] >= w.Stable[w.from]
	}
}

// rewind starts again from the committed offsets of the assignment.
func (w *worker) rewind() {
	w.batch = nil
	w.Unknown = slices.Clone(w.Assigned)
	w.Drained = map[model.Partition]bool{}
	w.step = stepFetchOffsets
	if len(w.Unknown) == 0 {
		w.step = stepRead
	}
}

// learnBeat takes a heartbeat's answer (worker848.go's learnBeat).
func (w *worker) learnBeat(op model.Op, res model.Result) {
	if op.Req.MemberEpoch == model.LeaveMemberEpoch {
		w.step = stepClosed // gone from the group either way
		return
	}
	switch {
	case res.Succeeded():
		w.MemberEpoch, w.BeatDue = res.Resp.MemberEpoch, false
		if res.Resp.MemberAssignment != nil {
			told := slices.Sorted(slices.Values(*res.Resp.MemberAssignment))
			w.Told = &told
		}
	case model.ClassOf(op.Kind, res.Err) == model.Busy || model.ClassOf(op.Kind, res.Err) == model.Undecided:
		// Sent again as it is.
	default:
		// Fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) or another
		// error: the partitions are lost, and the member joins again.
		w.MemberEpoch, w.Lost, w.Told = model.JoinMemberEpoch, true, nil
	}
}

// reconcile is the application's poll taking what the heartbeats told
// it, between transactions (consumer.Member.Reconcile, as
// internal/workload's worker takes it).
func (w *worker) reconcile() {
	if w.Reconcile() {
		w.batch = nil
		w.step = stepRead
		if len(w.Unknown) > 0 {
			w.step = stepFetchOffsets
		}
	}
}
