package workload

import (
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// A KIP-848 worker (Scenario.kip848) is the consume-transform-produce
// worker of worker.go on the consumer group protocol
// (group.protocol=consumer): its consumer speaks ConsumerGroupHeartbeat
// and nothing else to its group. It behaves as Kafka's consumer does
// (ConsumerMembershipManager and AbstractMembershipManager in the Java
// client, 4.x):
//   - it joins at member epoch 0 under a member id of its own choosing
//     (KIP-1082), subscribed to the input topic, owning nothing;
//   - its heartbeat runs beside the application, on the consumer's
//     background thread, so it may be sent in the middle of a
//     transaction, and carries the partitions the application owns;
//   - a new assignment is reconciled by the application at its next poll,
//     between transactions: it stops reading what was revoked, reads the
//     committed offsets of what was added, and acknowledges with a
//     heartbeat that owns the new assignment (ConsumerMembershipManager.
//     maybeReconcile, then AbstractMembershipManager.transitionTo
//     ACKNOWLEDGING);
//   - its transactions commit offsets with its member id and the member
//     epoch the application last saw (consumer.groupMetadata(), which
//     the background thread updates through the application's poll);
//   - a heartbeat refused with FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID
//     fences the member: its partitions are lost and it joins again at
//     epoch 0 under the same member id (AbstractMembershipManager.
//     transitionToFenced, then transitionToJoining). With no rebalance
//     listener the lost partitions are released at once, so the rejoin
//     does not wait for the application, whose open transaction goes on
//     and is then refused by the group;
//   - it leaves with member epoch -1 (LEAVE_GROUP_MEMBER_EPOCH).

// kip848RebalanceTimeoutMs is the rebalance timeout a KIP-848 worker
// joins with: the Java consumer sends max.poll.interval.ms, 300000 by
// default (ConsumerHeartbeatRequestState).
const kip848RebalanceTimeoutMs = 300_000

// beatOp is the membership's next heartbeat: a join at epoch 0 when it
// has no epoch, else a heartbeat at its epoch owning what the
// application owns. It is always a full one, which the coordinator
// answers with the whole assignment: the Java client sends every field
// again after a failed heartbeat (AbstractHeartbeatRequestManager.onFailure
// resets ConsumerHeartbeatRequestManager.HeartbeatState), and a
// heartbeat whose answer is lost is sent again as it was, so it must be
// full from the first (else a lost answer that took a partition away
// would leave the worker reading it, told nothing more).
func (w *worker) beatOp() model.Op {
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch = w.group, w.member, w.MemberEpoch
	topic, _ := w.inputs[0].Topic()
	r.SubscribedTopics, r.RebalanceTimeoutMs = &[]string{topic}, kip848RebalanceTimeoutMs
	owned := slices.Clone(w.Assigned)
	if w.MemberEpoch == model.JoinMemberEpoch {
		owned = []model.Partition{}
	}
	if owned == nil {
		owned = []model.Partition{}
	}
	r.OwnedPartitions = &owned
	return model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
}

// leaveBeatOp leaves the group (ConsumerGroupHeartbeatRequest.
// LEAVE_GROUP_MEMBER_EPOCH).
func (w *worker) leaveBeatOp() model.Op {
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch = w.group, w.member, model.LeaveMemberEpoch
	return model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
}

// membershipOp is the heartbeat the background thread sends before the
// application's next request, false when none is due: a join while the
// member has no epoch, and a heartbeat when one is due (its interval
// passed, or an assignment is to be acknowledged). Else, between
// transactions, the application reconciles what the heartbeats told it.
func (w *worker) membershipOp() (model.Op, bool) {
	switch {
	case w.step == workerInit || w.step == workerClosed || w.step == workerLeave || w.leaving && !w.inTxn():
		return model.Op{}, false
	case w.MemberEpoch == model.JoinMemberEpoch || w.BeatDue || w.rejoining:
		return w.beatOp(), true
	}
	if !w.inTxn() && (w.step == workerRead || w.step == workerFetchOffsets || w.step == workerJoin) {
		w.reconcile()
	}
	return model.Op{}, false
}

// clockMoved tells the worker that ms passed: a KIP-848 member's
// background thread heartbeats once its heartbeat interval has passed,
// whatever the application is doing (AbstractHeartbeatRequestManager.poll,
// HeartbeatRequestState.canSendRequest), so a heartbeat is due.
func (w *worker) clockMoved(ms int64) {
	if w.kip848 && w.MemberEpoch > 0 && ms >= model.DefaultConsumerHeartbeatIntervalMs {
		w.BeatDue = true
	}
}

// learnBeat takes a heartbeat's answer.
func (w *worker) learnBeat(op model.Op, res model.Result) {
	if op.Req.MemberEpoch == model.LeaveMemberEpoch {
		w.step = workerClosed // gone from the group either way
		return
	}
	switch {
	case res.Succeeded():
		w.MemberEpoch, w.BeatDue, w.rejoining = res.Resp.MemberEpoch, false, false
		if res.Resp.MemberAssignment != nil {
			told := slices.Sorted(slices.Values(*res.Resp.MemberAssignment))
			w.Told = &told
		}
	case res.Err == model.FencedMemberEpoch || res.Err == model.UnknownMemberID:
		// transitionToFenced: the assignment is lost, and the member
		// joins again at epoch 0 under its id.
		w.MemberEpoch, w.Lost, w.Told = model.JoinMemberEpoch, true, nil
	case classify(op.Kind, res) == retry:
		// Sent again as it is.
	default:
		// Any other error: the Java client sends a full heartbeat
		// again; a join is one.
		w.MemberEpoch, w.Lost, w.Told = model.JoinMemberEpoch, true, nil
	}
}

// reconcile is the application's poll taking what the heartbeats told
// it (consumer.Member.Reconcile); an assignment taken starts the reading
// over.
func (w *worker) reconcile() {
	if w.step == workerJoin {
		w.step = workerRead
	}
	if w.Reconcile() {
		w.readAnew()
	}
}

// readAnew drops the batch read and reads on, first the committed
// offsets of the partitions added.
func (w *worker) readAnew() {
	w.batch = nil
	w.step = workerRead
	if len(w.Unknown) > 0 {
		w.step = workerFetchOffsets
	}
}
