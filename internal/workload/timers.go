package workload

import (
	"cmp"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// timers are the broker's timers as the run knows them from the requests
// it sent and the answers it saw, on the broker's clock (which only Tick
// moves): when each open transaction began and its timeout, and when each
// group member was last seen and its session timeout. They say where the
// deadlines are, so that a tick can land on one (TickToDeadline). They
// are the run's account, not the broker's: a request whose answer was lost
// or delayed may have started or renewed a timer the run does not know,
// which only makes such a tick land elsewhere.
type timers struct {
	clock int64 // the broker's clock: the ticks so far, in ms
	// txnTimeout is the transaction timeout each transactional.id's last
	// InitProducerId asked for; began, when its open transaction began.
	txnTimeout map[string]int64
	began      map[string]int64
	// members are by group and member id.
	members map[memberKey]session
}

type memberKey struct{ group, member string }

// session is a member's session timer: last seen at seen, expired once the
// clock is timeout past it.
type session struct{ seen, timeout int64 }

// start makes the zero timers ready: none known, the clock at 0.
func (ts *timers) start() {
	if ts.began == nil {
		ts.txnTimeout, ts.began, ts.members = map[string]int64{}, map[string]int64{}, map[memberKey]session{}
	}
}

// answered takes what an answer says of the broker's timers, by the
// model's rules: a transaction begins with the first request that adds to
// it (AddPartitionsToTxn, AddOffsetsToTxn; under KIP-890 the produce or
// offset commit that adds implicitly) and ends with EndTxn or a fencing
// InitProducerId; a member's session starts at its join and ends with its
// leave. A TxnOffsetCommit does not renew it (model: txnOffsetCommit).
func (ts *timers) answered(op model.Op, res model.Result) {
	ts.start()
	r := op.Req
	switch {
	case op.Kind == model.InitProducerID && r.TransactionalID != "" && (res.Succeeded() || res.Err == model.ConcurrentTransactions):
		// A fence aborts the open transaction (in two steps, answering
		// CONCURRENT_TRANSACTIONS first, as Kafka does).
		delete(ts.began, r.TransactionalID)
		if res.Succeeded() {
			ts.txnTimeout[r.TransactionalID] = positiveOr(r.TimeoutMs, model.DefaultTxnTimeoutMs)
		}
	case op.Kind == model.EndTxn && res.Succeeded():
		delete(ts.began, r.TransactionalID)
	case addsToTxn(op) && res.Succeeded():
		if _, open := ts.began[r.TransactionalID]; !open {
			ts.began[r.TransactionalID] = ts.clock
		}
	}
	key := memberKey{r.Group, r.MemberID}
	switch {
	case op.Kind == model.JoinGroup && res.Succeeded():
		ts.members[memberKey{r.Group, res.Resp.MemberID}] = session{seen: ts.clock, timeout: positiveOr(r.SessionTimeoutMs, model.DefaultSessionTimeoutMs)}
	case op.Kind == model.LeaveGroup && res.Answered || res.Err == model.UnknownMemberID:
		delete(ts.members, key)
	case op.Kind == model.ConsumerGroupHeartbeat && r.MemberEpoch < model.JoinMemberEpoch && res.Answered:
		delete(ts.members, key) // a KIP-848 leave
	case op.Kind == model.ConsumerGroupHeartbeat && res.Succeeded():
		// Each heartbeat of a KIP-848 member renews its session, whose
		// timeout is the broker's (group.consumer.session.timeout.ms,
		// the model's default).
		ts.members[memberKey{r.Group, cmp.Or(res.Resp.MemberID, r.MemberID)}] = session{seen: ts.clock, timeout: model.DefaultConsumerSessionTimeoutMs}
	case op.Kind == model.OffsetCommit && res.Succeeded() && r.GenerationID != model.NoGeneration:
		// A member's plain commit renews its session (model: offsetCommit).
		if s, ok := ts.members[key]; ok {
			s.seen = ts.clock
			ts.members[key] = s
		}
	}
}

// addsToTxn says whether op adds to its producer's transaction, beginning
// it when none is open (a produce and an offset commit do so only under
// KIP-890; under KIP-98 their success says one was open already).
func addsToTxn(op model.Op) bool {
	switch op.Kind {
	case model.AddPartitions, model.AddOffsets, model.TxnOffsetCommit:
		return true
	case model.Produce:
		return op.Req.TransactionalID != ""
	}
	return false
}

// tick moves the clock by ms and forgets the timers that fire: a
// transaction past its timeout (TransactionStateManager.timedOutTransactions:
// txnStartTimestamp + txnTimeoutMs < now), a session at its timeout (the
// model's expireMembers).
func (ts *timers) tick(ms int64) {
	ts.clock += ms
	maps.DeleteFunc(ts.began, func(id string, began int64) bool { return ts.clock >= ts.due(id, began) })
	maps.DeleteFunc(ts.members, func(_ memberKey, s session) bool { return ts.clock >= s.seen+s.timeout })
}

// due is when the open transaction of id, begun at began, is first past
// its timeout.
func (ts *timers) due(id string, began int64) int64 {
	return began + positiveOr(ts.txnTimeout[id], model.DefaultTxnTimeoutMs) + 1
}

// deadlines are the moments, after now, at which a timer the run knows of
// fires, the soonest first.
func (ts *timers) deadlines() []int64 {
	var due []int64
	for id, began := range ts.began {
		due = append(due, ts.due(id, began))
	}
	for _, s := range ts.members {
		due = append(due, s.seen+s.timeout)
	}
	due = slices.DeleteFunc(due, func(d int64) bool { return d <= ts.clock })
	slices.Sort(due)
	return slices.Compact(due)
}

// positiveOr is ms, or otherwise when a request left it unset.
func positiveOr(ms, otherwise int64) int64 {
	if ms > 0 {
		return ms
	}
	return otherwise
}
