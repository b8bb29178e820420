package workload

import (
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/internal/consumer"
	"github.com/fencecheck/fencecheck/model"
)

// worker is a consume-transform-produce worker (seed 002, KIP-447): it
// joins the group, reads the committed offset of each partition it is
// assigned (require_stable), reads trips read_committed, and for each one
// writes its fare and commits the input offset in one transaction. Its
// transactional.id is its own (KIP-447: a producer per worker, not per
// partition), so only the generation in its offset commits fences it when a
// rebalance has given its partitions to another worker.
type worker struct {
	producer
	group     string
	inputs    []model.Partition // the input topic's partitions
	outOf     func(model.Partition) model.Partition
	groupMeta bool // commit offsets with group metadata; false: the groupId-string overload
	v2        bool
	// atLeastOnce: the worker has no producer and writes nothing; it
	// commits each batch's offsets with a plain OffsetCommit once it has
	// processed the batch (see newAuditor).
	atLeastOnce bool
	// instance is the worker's group.instance.id (KIP-345), "" for a
	// dynamic member. A static member's join without a member id takes
	// the instance's place in the group, and the process that held it is
	// fenced: its next request naming the instance is FENCED_INSTANCE_ID.
	instance string

	member string
	// Member is the membership and the place in each partition; with
	// kip848, its Generation is the member epoch the application last saw.
	consumer.Member
	batch   []model.FetchedRecord // read, not yet processed
	from    model.Partition       // the partition batch came from
	step    workerStep
	leaving bool
	// rejoining: the worker rejoins its group at its next poll.
	rejoining bool
	// awaitStable: its committed offset was refused as unstable; it asks
	// again once a transaction may have ended (txnMayEnd).
	awaitStable bool
	// instanceFenced: another process took the worker's instance. Kafka's
	// consumer takes FENCED_INSTANCE_ID as fatal (FencedInstanceIdException),
	// so the worker aborts what is open and closes.
	instanceFenced bool
	// kip848: the worker's consumer speaks KIP-848's consumer group
	// protocol (worker848.go). member is then the id it chose.
	kip848 bool
}

type workerStep int

const (
	workerInit workerStep = iota
	workerJoin
	workerFetchOffsets
	workerRead
	workerAddPartition
	workerProduce
	workerAddOffsets
	workerCommitOffsets
	workerCommit
	workerAbort
	workerLeave
	workerClosed
	// workerPlainCommit: an at-least-once worker commits the batch it
	// processed (newAuditor). Last, so that no transaction step
	// (inTxn) includes it.
	workerPlainCommit
)

func newWorker(txnID, group string, inputs []model.Partition, outOf func(model.Partition) model.Partition, groupMeta, v2 bool) *worker {
	return &worker{producer: newProducer(txnID), group: group, inputs: inputs, outOf: outOf,
		groupMeta: groupMeta, v2: v2, Member: consumer.Member{Generation: model.NoGeneration}}
}

// newAuditor is an at-least-once consumer beside the exactly-once
// workers: a member of a group of its own that reads the input topic
// read_committed, processes each batch (it counts trips, say, and writes
// nothing), then commits the batch's offsets with a plain OffsetCommit
// carrying its member id and generation. Kafka's consumer does so with
// commitSync after its poll (ConsumerCoordinator.commitOffsetsSync). A
// crash between processing and commit processes the batch again: at least
// once. A rebalance fences its stale commits by generation, as KIP-447
// fences a worker's transactional ones.
func newAuditor(group string, inputs []model.Partition) *worker {
	w := newWorker("", group, inputs, nil, true, false)
	w.atLeastOnce, w.step = true, workerJoin
	return w
}

func (w *worker) closed() bool { return w.step == workerClosed }

func (w *worker) idle() bool {
	if w.kip848 && (w.MemberEpoch == model.JoinMemberEpoch || w.BeatDue || w.Told != nil || w.Lost) {
		return false // the membership has a heartbeat to send, or the application news to take
	}
	if w.step != workerRead || w.leaving || w.rejoining || w.member == "" {
		return false // a worker outside the group must join it
	}
	for _, p := range w.Assigned {
		if !w.Drained[p] {
			return false
		}
	}
	return true
}

func (w *worker) inTxn() bool { return w.step > workerAddPartition && w.step <= workerCommit }

// leave asks the worker to leave the group once no transaction is open.
func (w *worker) leave() { w.leaving = true }

// rejoin asks the worker to rejoin its group, under its member id, at its
// next poll (between transactions), whether or not the group changed: a
// Kafka consumer does so when the metadata of a topic it subscribes to
// changes (ConsumerCoordinator.rejoinNeededOrPending), and a consumer
// that leads its group thereby starts a rebalance, while a follower is
// answered its current generation and assignment
// (GroupMetadataManager.classicGroupJoinExistingMember, state Stable).
func (w *worker) rejoin() { w.rejoining = true }

func (w *worker) next() (model.Op, bool) {
	if w.kip848 {
		if op, ok := w.membershipOp(); ok {
			return op, true
		}
	}
	if w.leaving && !w.inTxn() && w.step != workerClosed {
		w.step = workerLeave
		if w.member == "" {
			w.step = workerClosed // never joined: nothing to leave
		}
	}
	switch w.step {
	case workerInit:
		return w.initOp(), true
	case workerJoin:
		return w.joinOp(), true
	case workerFetchOffsets:
		if w.awaitStable {
			return model.Op{}, false
		}
		r := model.NewRequest()
		r.Group, r.Partition, r.RequireStable = w.group, w.Unknown[0], true
		return model.Op{Kind: model.OffsetFetch, Req: r}, true
	case workerRead:
		if w.rejoining && w.member != "" {
			return w.joinOp(), true
		}
		return w.readOp()
	case workerAddPartition:
		if w.v2 {
			w.step = workerProduce
			return w.next()
		}
		return w.addPartitionsOp(w.outOf(w.from)), true
	case workerProduce:
		trip := w.batch[0].Key
		return w.produceOp(w.outOf(w.from), trip, fmt.Sprintf("fare of %s", trip)), true
	case workerAddOffsets:
		if w.v2 {
			w.step = workerCommitOffsets
			return w.next()
		}
		r := w.request()
		r.Group = w.group
		return model.Op{Kind: model.AddOffsets, Req: r}, true
	case workerCommitOffsets:
		return w.commitOffsetsOp(), true
	case workerCommit:
		return w.endTxnOp(true), true
	case workerAbort:
		return w.endTxnOp(false), true
	case workerLeave:
		if w.kip848 {
			return w.leaveBeatOp(), true
		}
		r := model.NewRequest()
		r.Group, r.MemberID, r.InstanceID = w.group, w.member, w.instance
		return model.Op{Kind: model.LeaveGroup, Req: r}, true
	case workerPlainCommit:
		return w.plainCommitOp(), true
	}
	return model.Op{}, false
}

// plainCommitOp commits the processed batch: the offset after its last
// record, under the worker's member id and generation.
func (w *worker) plainCommitOp() model.Op {
	r := model.NewRequest()
	r.Group, r.MemberID, r.GenerationID = w.group, w.member, w.Generation
	r.Offsets = map[model.Partition]int64{w.from: w.batch[len(w.batch)-1].Offset + 1}
	return model.Op{Kind: model.OffsetCommit, Req: r}
}

func (w *worker) joinOp() model.Op {
	if w.kip848 {
		return w.beatOp() // the consumer's poll is its heartbeat
	}
	r := model.NewRequest()
	r.Group, r.MemberID, r.Partitions, r.InstanceID = w.group, w.member, w.inputs, w.instance
	return model.Op{Kind: model.JoinGroup, Req: r}
}

// readOp reads the next assigned partition that has trips left; with none,
// the worker polls the group (a rejoin), which is how it learns of a
// rebalance while it is idle.
func (w *worker) readOp() (model.Op, bool) {
	for _, p := range w.Assigned {
		if !w.Drained[p] {
			r := model.NewRequest()
			r.Partition, r.Offset, r.Isolation = p, w.Position[p], model.ReadCommitted
			return model.Op{Kind: model.Fetch, Req: r}, true
		}
	}
	return w.joinOp(), true
}

func (w *worker) commitOffsetsOp() model.Op {
	r := w.request()
	r.Group = w.group
	r.Offsets = map[model.Partition]int64{w.from: w.batch[0].Offset + 1}
	if w.groupMeta {
		// The consumer's group metadata: a static member's carries its
		// instance id (TxnOffsetCommit v3, KIP-447).
		r.MemberID, r.GenerationID, r.InstanceID = w.member, w.Generation, w.instance
	}
	return model.Op{Kind: model.TxnOffsetCommit, Req: r}
}

func (w *worker) learn(op model.Op, res model.Result) {
	if op.Kind == model.ConsumerGroupHeartbeat {
		w.learnBeat(op, res)
		return
	}
	if op.Kind == model.JoinGroup {
		w.rejoining = false // answered, or refused: either way the poll is done
	}
	if op.Kind == model.OffsetFetch && res.Err == model.UnstableOffsetCommit {
		w.awaitStable = true
		return
	}
	if !react(op, res, w.fenced, w.recover) {
		return
	}
	switch op.Kind {
	case model.InitProducerID:
		w.takeGrant(res.Resp)
		w.step = workerJoin
		if w.kip848 {
			w.step = workerRead // the membership joins on its own
		}
	case model.JoinGroup:
		w.joined(res.Resp)
	case model.OffsetFetch:
		w.Position[w.Unknown[0]] = max(res.Resp.Offset, 0)
		w.Unknown = w.Unknown[1:]
		if len(w.Unknown) == 0 {
			w.step = workerRead
		}
	case model.Fetch:
		w.read(op.Req.Partition, res.Resp)
	case model.AddPartitions:
		w.step = workerProduce
	case model.Produce:
		w.seqs[op.Req.Partition]++
		w.step = workerAddOffsets
	case model.AddOffsets:
		w.step = workerCommitOffsets
	case model.TxnOffsetCommit:
		w.step = workerCommit
	case model.EndTxn:
		w.ended(op, res)
	case model.LeaveGroup:
		w.step = workerClosed
	case model.OffsetCommit:
		w.Position[w.from] = op.Req.Offsets[w.from]
		w.batch = nil
		w.step = workerRead
		w.Drained[w.from] = w.Position[w.from] >= w.Stable[w.from]
	}
}

// txnMayEnd tells the worker that something happened that can end an open
// transaction (see run.txnMayEnd): a committed offset it was refused as
// unstable may be stable now, and it asks again. Asking before, nothing
// could have changed the answer; Kafka's consumer asks again after its
// retry backoff (ConsumerCoordinator.fetchCommittedOffsets), time the
// model's clock does not count, but a broker's does: on kfake, dozens of
// such polls in a row ran out a transaction's timeout that the model kept
// (FINDINGS.md, round 9).
func (w *worker) txnMayEnd() { w.awaitStable = false }

// fenced closes the worker: a fenced producer is closed for good, and the
// application closes its consumer with it, which leaves the group so that
// its partitions go to others at once. A static member's consumer closes
// without leaving (AbstractCoordinator.maybeLeaveGroup leaves only for a
// dynamic member), so that the process that replaces it takes its place
// without a rebalance.
func (w *worker) fenced() {
	w.step = workerClosed
	if w.kip848 {
		if w.MemberEpoch > 0 {
			w.step, w.leaving = workerLeave, true
		}
		return
	}
	if w.member != "" && w.Generation != model.NoGeneration && w.instance == "" {
		w.step, w.leaving = workerLeave, true
	}
}

// joined takes an assignment: a new one is read from its committed offsets.
// The same one keeps its positions, but for the partitions whose committed
// offsets it has not read yet: an init between the join and the offset
// fetch (ExhaustEpoch's bumps) leads to a join that answers the same, and
// the consumer still fetches them (seed 99 of stable-id: the worker read
// its partition from 0, and committed a trip a second time).
func (w *worker) joined(resp model.Response) {
	same := resp.GenerationID == w.Generation && slices.Equal(resp.Assignment, w.Assigned)
	w.member, w.Generation = resp.MemberID, resp.GenerationID
	w.step = workerRead
	if same {
		if len(w.Unknown) > 0 {
			w.step = workerFetchOffsets
		}
		return
	}
	w.Assigned = resp.Assignment
	w.Position, w.Stable, w.Drained, w.batch = map[model.Partition]int64{}, map[model.Partition]int64{}, map[model.Partition]bool{}, nil
	w.Unknown = slices.Clone(resp.Assignment)
	if len(w.Unknown) > 0 {
		w.step = workerFetchOffsets
	}
}

func (w *worker) read(p model.Partition, resp model.Response) {
	w.Stable[p] = resp.LastStableOffset
	if len(resp.Records) == 0 {
		w.Drained[p] = w.Position[p] >= resp.LastStableOffset
		return
	}
	w.batch, w.from = resp.Records, p
	w.step = workerAddPartition
	if w.atLeastOnce {
		w.step = workerPlainCommit // processed: nothing is written
	}
}

func (w *worker) ended(op model.Op, res model.Result) {
	w.takeGrant(res.Resp)
	if !op.Req.Commit {
		w.afterAbort()
		return
	}
	w.Position[w.from] = w.batch[0].Offset + 1
	w.batch = w.batch[1:]
	w.step = workerAddPartition
	if len(w.batch) == 0 {
		// Done with the batch: the partition is drained when the fetch
		// that returned it reached the last stable offset, as a consumer
		// knows from the fetch's answer without fetching again.
		w.step = workerRead
		w.Drained[w.from] = w.Position[w.from] >= w.Stable[w.from]
	}
}

// afterAbort goes back to the committed offsets, rejoining first when the
// group fenced the worker.
func (w *worker) afterAbort() {
	if w.instanceFenced {
		w.step = workerClosed
		return
	}
	if w.Generation == model.NoGeneration && !w.kip848 {
		w.step = workerJoin
		return
	}
	w.rewind()
}

// rewind starts again from the committed offsets of the assignment.
func (w *worker) rewind() {
	w.batch = nil
	w.Unknown = slices.Clone(w.Assigned)
	w.Drained = map[model.Partition]bool{}
	w.step = workerFetchOffsets
	if len(w.Unknown) == 0 {
		w.step = workerRead
	}
}

// recover handles a refusal: a fenced consumer (a stale generation, an
// unknown member) aborts and rejoins; other errors abort and rewind.
func (w *worker) recover(op model.Op, res model.Result) {
	switch {
	case op.Kind == model.LeaveGroup:
		w.step = workerClosed // gone from the group either way
	case w.kip848 && model.ClassOf(op.Kind, res.Err) == model.FencedConsumer:
		// A commit the group refused (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
		// the producer's CommitFailedException is abortable, and the
		// member's heartbeat tells whether it was fenced
		// (TransactionManager.TxnOffsetCommitHandler).
		w.BeatDue = true
		if w.inTxn() {
			w.step = workerAbort
		} else {
			w.rewind()
		}
	case res.Err == model.FencedInstanceID:
		// Fatal to the consumer: abort what is open, then close.
		w.instanceFenced, w.member, w.Generation = true, "", model.NoGeneration
		if w.inTxn() {
			w.step = workerAbort
		} else {
			w.step = workerClosed
		}
	case model.ClassOf(op.Kind, res.Err) == model.FencedConsumer && op.Kind == model.JoinGroup:
		// Forgotten by the group: join anew before reading on (a rejoin
		// may be refused with partitions still to read).
		w.member, w.Generation = "", model.NoGeneration
		w.step = workerJoin
	case model.ClassOf(op.Kind, res.Err) == model.FencedConsumer:
		w.Generation = model.NoGeneration
		w.step = workerAbort
		if w.atLeastOnce {
			// No transaction to abort: the batch goes uncommitted, and
			// whoever holds its partition now reads it again.
			w.step, w.batch = workerJoin, nil
		}
		if res.Err == model.UnknownMemberID {
			w.member = ""
		}
	case op.Kind == model.EndTxn && !op.Req.Commit:
		w.afterAbort()
	case w.inTxn():
		w.step = workerAbort
	default:
		w.rewind()
	}
}
