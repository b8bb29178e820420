package kafka

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The clock. The model's clock moves only at Tick; the broker's is the wall
// clock, and the timeouts the target sends are scaled (see the package
// documentation). A Tick that slept its whole scaled length would spend
// most of an exploration's time waiting for timers that are not there:
// most ticks find no transaction open and no member in a group, and a tick
// of a second fires nothing. On kfake, the target knows the timeouts of
// every broker timer it starts (they are all its own requests), so a Tick
// waits only as long as those timers need:
//
//   - an open transaction: kfake says when it began (DescribeTransactions:
//     its start S, on the wall clock, and its scaled timeout), so it fires
//     at S + scaled(T). The model's time at S, m, is that after the last
//     Tick ended before S (the model's clock moves at nothing else; a
//     restart, which moves S on by kfake's outage, keeps m); the model
//     aborts the transaction at this tick when m + T <= the model's time
//     after it. A transaction the model aborts now is waited for until
//     kfake has aborted it too, however long that is past this Tick's own
//     length: a timeout may run out over several ticks, none of which
//     reaches it alone (FINDINGS.md, 14). While a transaction stays open,
//     the Tick lasts until its time on kfake has caught up with the
//     model's, at most its whole scaled length: a Tick that returned at
//     once would leave it behind by the tick, and the transactions begun
//     after it as far ahead once its timeout is waited for (kfake would
//     then abort them ticks before the model does); one that lasted its
//     whole length would leave it ahead by the real time its requests
//     took. Nor does the Tick last until kfake is within tickSlack of
//     aborting a transaction the model keeps (a timeout a few scaled
//     milliseconds above the tick's, as an adversary sends): the
//     requests that follow take real time too. And a tick that would
//     leave a transaction nearly due is lengthened to its deadline
//     beforehand (TickLength), so that what follows the tick cannot run
//     it out on kfake alone.
//   - a member: for each request the target sent (at model time m,
//     answered at real time r) that may have started or renewed its
//     session, and each session timeout T (model ms) its group was given,
//     the timer is due when m + T <= the model's time after the tick, and
//     the broker fires it by r + scaled(T). Only members the broker still
//     holds count: a member its group lists (DescribeGroups), or a member
//     id not yet admitted (a KIP-394 pending member, which DescribeGroups
//     does not list). The Tick sleeps until the latest due deadline, at
//     most its whole length (the sessions, 45 s, are shorter than a tick
//     that expires them), and waits until kfake's group loop has removed
//     them, past its whole length if the loop is late (expiryGrace).
//   - then the Tick makes sure the broker has acted: kfake aborts an
//     expired transaction after the next request it handles.
//   - a group in the middle of a rebalance has a timer the model does not
//     know (the rebalance timeout, real time): the Tick then sleeps up to
//     its whole scaled length, as it always did, unless the rebalance ends
//     sooner.
//
// Between ticks the broker's clock runs on while the requests are
// answered, and the model's stands still: CatchUp (catchup.go) has the
// model's clock catch up before a request when that real time has brought
// a timer the model keeps near its deadline on the broker.
//
// Every timer the model fires is fired, at the broker's own deadline, and
// none that the model keeps. What is left out is the drift the whole
// sleep added. A cluster by address is followed the same way: every
// request the clock sends is a Kafka one (ListTransactions,
// DescribeTransactions, DescribeGroups). It must fire its timers on time
// (Kafka looks for expired transactions every 10 s unless told otherwise:
// see Settings in the package documentation), and its clock must agree
// with this machine's. A sleep of the whole tick there met kfake aborting
// transactions the model kept, from the real time the requests between
// ticks took.

// clock is the target's account of the model's time and of the requests
// that start broker timers.
type clock struct {
	mu  sync.Mutex
	now int64 // model ms: the ticks so far
	// ticks are when each Tick ended, with the model's time, the oldest
	// first.
	ticks []tickMark
	// txnStarts are the model's time at the start of the last open
	// transaction of each cluster transactional id, with the start the
	// broker told (it moves on by a restart's outage: see restarted).
	txnStarts map[string]txnStart
	// txnTimeouts are the transaction timeouts (model ms) sent with each
	// cluster transactional id.
	txnTimeouts map[string]map[int64]bool
	// members are by member id.
	members map[string]*memberTimers
	// sessions are the session timeouts (model ms) sent to each cluster
	// group.
	sessions map[string]map[int64]bool
	groups   map[string]bool
	// consumerGroups are the groups sent a KIP-848 heartbeat: their
	// members are described with ConsumerGroupDescribe, because
	// DescribeGroups lists a classic group's only.
	consumerGroups map[string]bool
	// inStepAt is when the model's clock last stood in step with the
	// wall clock: when the last Tick ended, or when the clock began.
	inStepAt time.Time
	// kept are the timers the model keeps, as the last catch-up check
	// saw them (none after a Tick or a restart); checkAt is when
	// CatchUp must ask the broker again (zero: at the next request).
	kept    []kept
	checkAt time.Time
	// lost is set when a restart aborted a transaction the model keeps.
	lost *errLostStep
	// lastAnswer is when the last request the target sent was answered.
	lastAnswer time.Time
}

// tickMark is a Tick: when it ended (zero while it lasts), and the
// model's time before and after it.
type tickMark struct {
	at            time.Time
	before, after int64
}

// endedBy reports whether the Tick had ended by at.
func (m tickMark) endedBy(at time.Time) bool { return !m.at.IsZero() && !m.at.After(at) }

// txnStart is when an open transaction began, on the broker's clock and
// the model's.
type txnStart struct {
	broker time.Time
	model  int64
}

// timers are the requests that may have started or renewed a member's
// session: for each model time they were sent at, when the last of them
// was answered.
type timers struct {
	last map[int64]time.Time
}

// memberTimers are a group member's, as the clock knows it.
type memberTimers struct {
	timers
	// renewed is when the last request that renewed its session on
	// the broker was sent: the broker renewed it at that time or
	// later, so its session ends no sooner than renewed plus the
	// timeout (keptTimers). A request counts when the broker answered
	// it with a code under which Kafka and kfake renew the session
	// (renews).
	renewed  time.Time
	group    string
	admitted bool // a join answered it without error: no longer pending
	// gone: admitted, and then no longer in its group. For good, for
	// a classic member (the coordinator never gives an id twice); a
	// KIP-848 member's join at epoch 0 brings its id back.
	gone bool
}

func newClock() *clock {
	return &clock{txnTimeouts: map[string]map[int64]bool{}, txnStarts: map[string]txnStart{}, members: map[string]*memberTimers{}, sessions: map[string]map[int64]bool{}, groups: map[string]bool{}, consumerGroups: map[string]bool{}, inStepAt: time.Now()}
}

func (tm *timers) saw(now int64, at time.Time) {
	if tm.last == nil {
		tm.last = map[int64]time.Time{}
	}
	if at.After(tm.last[now]) {
		tm.last[now] = at
	}
}

func (c *clock) member(group, id string) *memberTimers {
	m, ok := c.members[id]
	if !ok {
		m = &memberTimers{group: group}
		c.members[id] = m
	}
	return m
}

// txnTimeout notes the transaction timeout a transactional id is given.
func (c *clock) txnTimeout(id string, ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txnTimeouts[id] == nil {
		c.txnTimeouts[id] = map[int64]bool{}
	}
	c.newTimeout(c.txnTimeouts[id], ms)
}

// sessionTimeout notes a session timeout sent to a group.
func (c *clock) sessionTimeout(group string, ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[group] == nil {
		c.sessions[group] = map[int64]bool{}
	}
	c.newTimeout(c.sessions[group], ms)
	c.groups[group] = true
}

// newTimeout adds ms to the timeouts sent. A timeout not sent before may
// be shorter than every one the last catch-up check knew, so CatchUp
// asks the broker at the next request. The check reckoned its next one
// from the timeouts sent by then (nextCheckAfter): a session of 45 s
// begun after a check that knew only a transaction's 60 s ran out on the
// broker before that next check came (FINDINGS.md, round 13).
func (c *clock) newTimeout(timeouts map[int64]bool, ms int64) {
	if !timeouts[ms] {
		c.checkAt = time.Time{}
	}
	timeouts[ms] = true
}

// exchanged notes a request sent at real time sent, and its answer when
// one came, as answered at real time at: every member id it names may
// have had its session started or renewed. (A transaction's start kfake
// tells: see txnsDue.)
func (c *clock) exchanged(req kmsg.Request, resp kmsg.Response, sent, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.lastAnswer) {
		c.lastAnswer = at
	}
	renewed := renews(req, resp)
	member := func(group, id string) *memberTimers {
		if id == "" {
			return nil
		}
		c.groups[group] = true
		m := c.member(group, id)
		if !m.gone {
			m.saw(c.now, at)
			if renewed {
				m.renewed = latest(m.renewed, sent)
			}
		}
		return m
	}
	switch r := req.(type) {
	case *kmsg.TxnOffsetCommitRequest:
		member(r.Group, r.MemberID)
	case *kmsg.JoinGroupRequest:
		member(r.Group, r.MemberID)
		if jr, ok := resp.(*kmsg.JoinGroupResponse); ok {
			if m := member(r.Group, jr.MemberID); m != nil && jr.ErrorCode == 0 {
				m.admitted = true
			}
		}
	case *kmsg.SyncGroupRequest:
		member(r.Group, r.MemberID)
	case *kmsg.HeartbeatRequest:
		member(r.Group, r.MemberID)
	case *kmsg.LeaveGroupRequest:
		member(r.Group, r.MemberID)
		for _, m := range r.Members {
			member(r.Group, m.MemberID)
		}
	case *kmsg.OffsetCommitRequest:
		member(r.Group, r.MemberID)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if known, ok := c.members[r.MemberID]; ok && r.MemberEpoch == 0 {
			// A KIP-848 member joins again under the id it chose
			// (KIP-1082), so an id gone from its group may come back.
			known.gone = false
		}
		m := member(r.Group, r.MemberID)
		if hr, ok := resp.(*kmsg.ConsumerGroupHeartbeatResponse); ok && hr.ErrorCode == 0 && hr.MemberEpoch > 0 {
			if hr.MemberID != nil && *hr.MemberID != r.MemberID {
				m = member(r.Group, *hr.MemberID) // a join at 3.9 gets its id
			}
			if m != nil {
				m.admitted = true
			}
		}
	}
}

// renews reports whether the broker renewed the session of the members
// req names when it answered with resp: a join (MEMBER_ID_REQUIRED starts
// a pending member's), a sync, a heartbeat (REBALANCE_IN_PROGRESS
// too), an offset commit whose every partition was taken, and a KIP-848
// heartbeat, each answered without error. (kfake: group.updateHeartbeat,
// addPendingRebalance and atConsumerSessionTimeout; Kafka:
// GroupCoordinator's completeAndScheduleNextHeartbeatExpiration.) A
// leave and a transactional offset commit renew nothing on kfake. Any
// other answer may have left the session as it was.
func renews(req kmsg.Request, resp kmsg.Response) bool {
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode == 0 || r.ErrorCode == kerr.MemberIDRequired.Code
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode == 0
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode == 0 || r.ErrorCode == kerr.RebalanceInProgress.Code
	case *kmsg.OffsetCommitResponse:
		if _, ok := req.(*kmsg.OffsetCommitRequest); !ok || len(r.Topics) == 0 {
			return false
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return false
				}
			}
		}
		return true
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode == 0
	}
	return false
}

// consumerGroup notes a group that is sent KIP-848 heartbeats.
func (c *clock) consumerGroup(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.consumerGroups[group] = true
}

// knownConsumerGroups are the groups sent KIP-848 heartbeats.
func (c *clock) knownConsumerGroups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.consumerGroups))
}

// advance moves the model's clock by ms, at the start of a Tick, and
// returns the new time.
func (c *clock) advance(ms int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks = append(c.ticks, tickMark{before: c.now, after: c.now + ms})
	c.now += ms
	return c.now
}

// ticked notes that the Tick under way ended at at.
func (c *clock) ticked(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks[len(c.ticks)-1].at = at
	c.inStepAt, c.kept, c.checkAt = at, nil, time.Time{}
}

// startOf is the model's time at the start of id's open transaction,
// which the broker says began at start, to the millisecond below: that
// after the last Tick ended by then. No request is in flight during a
// Tick, and a Tick with a transaction open lasts more than a millisecond,
// so a start within the millisecond after a Tick ended came after it.
func (c *clock) startOf(id string, start time.Time) int64 {
	if s, ok := c.txnStarts[id]; ok && s.broker.Equal(start) {
		return s.model
	}
	at := start.Add(time.Millisecond)
	i, _ := slices.BinarySearchFunc(c.ticks, at, func(m tickMark, at time.Time) int {
		if m.endedBy(at) {
			return -1
		}
		return 1
	})
	m := c.now
	switch {
	case i > 0:
		m = c.ticks[i-1].after
	case len(c.ticks) > 0:
		m = c.ticks[0].before
	}
	c.txnStarts[id] = txnStart{broker: start, model: m}
	return m
}

// restarted notes the broker's restart: before and after are the open
// transactions as it told them on either side (nil: not known). kfake
// moves the start of each on by the outage (its own measure of it), and
// each keeps the model's time it began at.
//
// A transaction the model keeps that was open before and is not after
// was aborted by the reload (finding 24): no request was answered in
// between, and no tick can place that abort, because kfake's reload
// leaves the producer's epoch as it was. The target's clock lost step
// (CatchUp says so). The kept timers of the last catch-up check stay,
// with the new deadlines of the transactions kfake moved on; CatchUp
// asks the broker again before the next request.
func (c *clock) restarted(before, after map[string]openTxn, scaled func(int64) time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkAt = time.Time{}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		tx := before[id]
		m := c.startOf(id, tx.start)
		moved, ok := after[id]
		if ok {
			c.txnStarts[id] = txnStart{broker: moved.start, model: m}
			for i, k := range c.kept {
				if k.what == "transaction "+id {
					c.kept[i].fires = moved.start.Add(moved.timeout)
				}
			}
			continue
		}
		if timeout, known := c.sentTimeout(id, tx.timeout, scaled); known && after != nil && m+timeout >= c.now && c.lost == nil {
			c.lost = &errLostStep{what: "transaction " + id, how: "was aborted by the broker's restart"}
		}
	}
}

// time is the model's time.
func (c *clock) time() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// knowsTxn reports whether the target sent id a transaction timeout.
func (c *clock) knowsTxn(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txnTimeouts[id] != nil
}

// idle reports whether no request that starts a timer was ever sent.
func (c *clock) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txnTimeouts) == 0 && len(c.members) == 0
}

// held is what the broker still holds a timer for.
type held struct {
	txns    map[string]openTxn         // ongoing transactions, by cluster transactional id
	members map[string]map[string]bool // group -> its members
	settled bool                       // no group is in the middle of a rebalance
}

// openTxn is an ongoing transaction as the broker tells it.
type openTxn struct {
	start   time.Time     // when it began, to the millisecond below
	timeout time.Duration // as the broker runs it (scaled)
}

// txnsDue says what a Tick to now must do about the open transactions:
// wait until due, the latest deadline of those the model aborts at this
// tick (zero: none); stop before keep, the earliest deadline of those it
// keeps open (zero: none); and last until inStep, when the one of those
// furthest ahead on the broker is back in step with the model's clock, so
// that none is ahead after the tick. The broker's clock runs between
// ticks too, while the requests are answered, and the model's does not:
// a tick that lasted its whole length left each transaction ahead by the
// real time of the requests since it began, until a restart or a few
// requests after the tick took the rest of a timeout the model had left
// (FINDINGS.md, round 8). An open transaction whose timeout the target
// did not send is not its own, and not its to time.
func (c *clock) txnsDue(now int64, h held, real, scaled func(int64) time.Duration) (due, keep, inStep time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, tx := range h.txns {
		timeout, ok := c.sentTimeout(id, tx.timeout, scaled)
		if !ok {
			continue
		}
		// kfake fires at its own start, at most a millisecond past
		// the one it tells, plus the timeout.
		fires := tx.start.Add(tx.timeout)
		began := c.startOf(id, tx.start)
		if began+timeout < now { // the model's: past the timeout, not at it
			if d := fires.Add(time.Millisecond); d.After(due) {
				due = d
			}
			continue
		}
		if keep.IsZero() || fires.Before(keep) {
			keep = fires
		}
		if at := tx.start.Add(real(now - began)); inStep.IsZero() || at.Before(inStep) {
			inStep = at
		}
	}
	return due, keep, inStep
}

// tickLength is how long a tick of ms from the model's time now must be:
// ms, or long enough to abort each open transaction that it would leave
// less than nearDue from its deadline on the broker (see Target.TickLength),
// at wall.
func (c *clock) tickLength(ms int64, h held, wall time.Time, real, scaled func(int64) time.Duration) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for stretched := true; stretched; {
		stretched = false
		after := c.now + ms
		for id, tx := range h.txns {
			timeout, ok := c.sentTimeout(id, tx.timeout, scaled)
			if !ok {
				continue
			}
			deadline := c.startOf(id, tx.start) + timeout
			if deadline < after {
				continue // the model aborts it at this tick
			}
			// What the broker has left of it after the tick: what
			// the model has, once the tick has brought it in step,
			// and never more than it has left now.
			left := earliest(wall.Add(real(deadline-after)), tx.start.Add(tx.timeout)).Sub(wall)
			if left < nearDue {
				ms, stretched = deadline+1-c.now, true
			}
		}
	}
	return ms
}

// sentTimeout is the model timeout the broker's scaled timeout of id was
// sent as: the longest, if several scale to it.
func (c *clock) sentTimeout(id string, scaledTimeout time.Duration, scaled func(int64) time.Duration) (int64, bool) {
	var timeout int64
	var ok bool
	for ms := range c.txnTimeouts[id] {
		if scaled(ms) == scaledTimeout && ms >= timeout {
			timeout, ok = ms, true
		}
	}
	return timeout, ok
}

// membersDue is the latest deadline of the member sessions the model
// expires at now among those the broker holds, and the members whose
// sessions those are (the broker must have removed them by then). ok is
// false when nothing is due.
func (c *clock) membersDue(now int64, h held, scaled func(int64) time.Duration) (deadline time.Time, expired map[string]string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	consider := func(tm *timers, timeouts map[int64]bool) (time.Time, bool) {
		var latest time.Time
		var any bool
		for m, at := range tm.last {
			for timeout := range timeouts {
				if m+timeout > now {
					continue
				}
				if d := at.Add(scaled(timeout)); d.After(latest) {
					latest = d
				}
				any = true
			}
		}
		return latest, any
	}
	expired = map[string]string{}
	for id, m := range c.members {
		if m.gone || m.admitted && !h.members[m.group][id] {
			continue // gone: a member id is never given twice
		}
		d, any := consider(&m.timers, c.sessions[m.group])
		if !any {
			continue
		}
		ok = true
		if d.After(deadline) {
			deadline = d
		}
		// Expired for good once its last request is due: nothing after
		// that renewed its session.
		if m.admitted && c.lastDue(&m.timers, c.sessions[m.group], now) {
			expired[id] = m.group
		}
	}
	return deadline, expired, ok
}

// lastDue reports whether the entity's last request, at the newest model
// time it sent one at, is due under its longest timeout.
func (c *clock) lastDue(tm *timers, timeouts map[int64]bool, now int64) bool {
	if len(tm.last) == 0 || len(timeouts) == 0 {
		return false
	}
	newest := slices.Max(slices.Collect(maps.Keys(tm.last)))
	longest := slices.Max(slices.Collect(maps.Keys(timeouts)))
	return newest+longest <= now
}

// knownGroups are the cluster groups the target has spoken to.
func (c *clock) knownGroups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.groups))
}

// prune forgets the requests answered before before, older than any
// timeout (nothing they started can be due again), and the ticks begun
// before it but the last (a transaction begun before it has timed out on
// the broker), and marks the admitted members the broker no longer holds
// as gone.
func (c *clock) prune(h held, before time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.IndexFunc(c.ticks, func(m tickMark) bool { return !m.endedBy(before) }); i > 1 {
		c.ticks = slices.Delete(c.ticks, 0, i-1)
	}
	for id := range c.txnStarts {
		if _, open := h.txns[id]; !open {
			delete(c.txnStarts, id)
		}
	}
	for id, m := range c.members {
		if m.admitted && !h.members[m.group][id] {
			m.gone, m.last, m.renewed = true, nil, time.Time{}
		}
		maps.DeleteFunc(m.last, func(_ int64, at time.Time) bool { return at.Before(before) })
	}
}

// TickLength is how long a tick of ms must be on this target: ms, or
// longer, to the deadline of each open transaction the tick would leave
// less than nearDue of its timeout on kfake, so that the model aborts it
// at this tick, as kfake is about to. Left open, kfake's clock, which
// runs while the requests after the tick are answered and while a restart
// reloads the cluster, would abort it between ticks, where the model
// cannot: kfake's reload aborts an expired transaction without fencing its
// producer, too (FINDINGS.md, 24).
func (t *Target) TickLength(ms int64) int64 {
	if ms <= 0 || t.clock.idle() {
		return ms
	}
	h, err := t.held()
	if err != nil {
		t.cfg.Logf("kafka: tick: asking the broker what it holds: %v; the tick is not lengthened", err)
		return ms
	}
	return t.clock.tickLength(ms, h, time.Now(), t.realDuration, t.scaledDuration)
}

// WaitFits reports whether every open transaction has at least waitMargin
// of its timeout left on kfake, so that an operation that takes real time
// cannot run it out before the next tick: a restart, or a join that waits
// out the rebalance timeout for a member that does not rejoin. kfake's
// clock counts that time while the model's stands still: a restart's
// reload shifts a transaction's start by the outage alone, under a
// millisecond from saving its state to loading it, and decides whether
// the transaction expired before that shift; five restarts after a 50 s
// tick ran out the 100 ms it left a transaction (FINDINGS.md, round 9),
// and so did five joins that each waited 50 ms for stalled members
// (round 10). The workload neither restarts the broker nor sends a join
// while one does not fit. A cluster by address is not restarted by the
// target, but a join there waits as on kfake.
func (t *Target) WaitFits() bool {
	if t.clock.idle() {
		return true
	}
	ctx, cancel := t.requestCtx(context.Background())
	defer cancel()
	txns, err := t.openTxns(ctx, t.routes.client())
	if err != nil {
		t.cfg.Logf("kafka: asking the broker for its open transactions: %v; taken to leave room", err)
		return true
	}
	now := time.Now()
	for _, tx := range txns {
		if tx.start.Add(tx.timeout).Sub(now) < waitMargin {
			return false
		}
	}
	return true
}

// Tick lets ms of model time pass: it waits for the timers the model
// fires (see above).
func (t *Target) Tick(ms int64) {
	if ms <= 0 {
		return
	}
	start := time.Now()
	whole := start.Add(t.realDuration(ms))
	now := t.clock.advance(ms)
	defer func() { t.clock.ticked(time.Now()) }()
	if t.clock.idle() {
		return
	}
	h, err := t.held()
	if err != nil {
		t.cfg.Logf("kafka: tick: asking the broker what it holds: %v; sleeping the whole tick", err)
		time.Sleep(time.Until(whole))
		return
	}
	until := start
	txnsDue, keep, inStep := t.clock.txnsDue(now, h, t.realDuration, t.scaledDuration)
	stopBy := whole // the latest any wait may last, but for the aborts the model makes
	if !keep.IsZero() {
		// A transaction stays open: the tick lasts until its time on
		// the broker has caught up with the model's, but never until
		// the broker would abort it within tickSlack.
		until = earliest(whole, inStep)
		stopBy = earliest(whole, keep.Add(-tickSlack))
	}
	membersDue, expired, ok := t.clock.membersDue(now, h, t.scaledDuration)
	if ok {
		until = latest(until, membersDue.Add(tickMargin))
	}
	until = earliest(until, stopBy)
	// The model removes the expired members at this tick: wait for the
	// broker to, past the tick's own length if it is late (its group
	// loop, on a machine busy with other work, was met lagging more than
	// the 160 ms between a session's deadline and the end of the tick
	// that expires it at the default scale), but not for ever.
	expiryStop := stopBy
	if len(expired) > 0 {
		expiryStop = latest(stopBy, membersDue.Add(expiryGrace))
	}
	if !txnsDue.IsZero() {
		// However long past the tick's own length: the model aborts it.
		if !keep.IsZero() && !txnsDue.Add(tickMargin).Before(keep.Add(-tickSlack)) {
			t.cfg.Logf("kafka: tick: a transaction the model aborts and one it keeps open time out together on the broker; both are aborted")
		}
		until = latest(until, txnsDue.Add(tickMargin))
		stopBy = latest(stopBy, until)
	}
	time.Sleep(time.Until(until))
	// Let the broker act on what expired: the request that asks flushes
	// kfake's expired transactions, and an expired member leaves its
	// group on the group's loop. A rebalance under way ends by the
	// rebalance timeout, as the whole sleep would have let it.
	for {
		h, err = t.held()
		if err != nil {
			time.Sleep(time.Until(whole))
			return
		}
		if h.settled && gone(h, expired) {
			break
		}
		if !time.Now().Before(stopBy) && (gone(h, expired) || !time.Now().Before(expiryStop)) {
			if !gone(h, expired) {
				t.cfg.Logf("kafka: tick: the broker still holds members whose sessions the model expires, %v past their deadline", time.Since(membersDue).Round(time.Millisecond))
			}
			break
		}
		time.Sleep(tickPoll)
	}
	// Requests older than the longest scaled timeout can start nothing
	// that is still to come.
	t.clock.prune(h, time.Now().Add(-t.realDuration(maxTimeoutMs)))
}

const (
	// tickMargin is how long past a timer's deadline a Tick waits for
	// the broker's timer to fire.
	tickMargin = time.Millisecond
	// tickSlack is how much of its timeout a Tick leaves on the broker
	// to a transaction the model keeps open: the requests that follow
	// take real time, which the model does not count (1 ms is 100 ms
	// at the default scale), and more of it on a busy machine: at 10 ms
	// an EndTxn right after such a tick met the broker's abort when the
	// tests ran beside others on two cores.
	tickSlack = 50 * time.Millisecond
	// nearDue is the least a tick leaves on the broker of a
	// transaction the model keeps open (Target.TickLength): what the
	// requests and restarts before the next tick may take of it. Round 8
	// met kfake aborting transactions the model had left 8 and 9 s of
	// (80 and 90 ms at the default scale). It stays under the 10 s (100
	// ms) that a 50 s tick leaves a transaction begun just before, which
	// must stay open: the zombie consumer that tick evicts keeps its
	// producer.
	nearDue = 95 * time.Millisecond
	// waitMargin is the least of its timeout an open transaction must
	// have left on kfake for a restart or a join to go ahead
	// (Target.WaitFits). A restart took 2 to 3 ms of kfake's clock on an
	// idle machine, and up to 15 ms beside four busy loops on two cores;
	// a join waits at most the rebalance timeout (50 ms). 75 ms leaves
	// at least 25 after either, of the 95 a tick leaves (nearDue).
	waitMargin = 75 * time.Millisecond
	// expiryGrace is how long past a member session's deadline a Tick
	// that expires it waits for the broker to remove the member.
	expiryGrace = 2 * time.Second
	// tickPoll is how often a Tick asks whether the broker has acted.
	tickPoll = time.Millisecond
	// maxTimeoutMs bounds the timeouts a run sends (model ms): Kafka's
	// transaction.max.timeout.ms.
	maxTimeoutMs = 15 * 60 * 1000
)

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func gone(h held, expired map[string]string) bool {
	for id, group := range expired {
		if h.members[group][id] {
			return false
		}
	}
	return true
}

// scaledDuration is a model timeout as the broker's timer runs it.
func (t *Target) scaledDuration(ms int64) time.Duration {
	return time.Duration(t.scaledMs(ms)) * time.Millisecond
}

// openTxns asks the broker which of the target's transactions are
// ongoing, and when each began.
func (t *Target) openTxns(ctx context.Context, cl *kgo.Client) (map[string]openTxn, error) {
	txns := map[string]openTxn{}
	lt := kmsg.NewPtrListTransactionsRequest()
	resp, err := lt.RequestWith(ctx, cl)
	if err != nil {
		return txns, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return txns, err
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	for _, s := range resp.TransactionStates {
		if s.TransactionState != "Empty" && s.TransactionState != "CompleteCommit" && s.TransactionState != "CompleteAbort" && t.clock.knowsTxn(s.TransactionalID) {
			dt.TransactionalIDs = append(dt.TransactionalIDs, s.TransactionalID)
		}
	}
	if len(dt.TransactionalIDs) == 0 {
		return txns, nil
	}
	dresp, err := dt.RequestWith(ctx, cl)
	if err != nil {
		return txns, err
	}
	for _, s := range dresp.TransactionStates {
		if err := kerr.ErrorForCode(s.ErrorCode); err != nil {
			return txns, err
		}
		if s.State != "Ongoing" || s.StartTimestamp < 0 {
			continue // ended since it was listed
		}
		txns[s.TransactionalID] = openTxn{start: time.UnixMilli(s.StartTimestamp), timeout: time.Duration(s.TimeoutMillis) * time.Millisecond}
	}
	return txns, nil
}

// held asks the broker which transactions are ongoing and which members its
// groups hold.
func (t *Target) held() (held, error) {
	ctx, cancel := t.requestCtx(context.Background())
	defer cancel()
	cl := t.routes.client()
	h := held{members: map[string]map[string]bool{}, settled: true}
	txns, err := t.openTxns(ctx, cl)
	if err != nil {
		return h, err
	}
	h.txns = txns
	groups := t.clock.knownGroups()
	if len(groups) == 0 {
		return h, nil
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = groups
	dresp, err := dg.RequestWith(ctx, cl)
	if err != nil {
		return h, err
	}
	for _, g := range dresp.Groups {
		if g.ErrorCode == kerr.GroupIDNotFound.Code {
			continue // no such group (any more): it holds no one
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return h, err
		}
		switch g.State {
		case "PreparingRebalance", "CompletingRebalance":
			h.settled = false
		}
		ids := map[string]bool{}
		for _, m := range g.Members {
			ids[m.MemberID] = true
		}
		h.members[g.Group] = ids
	}
	return h, t.consumerMembersHeld(ctx, h)
}

// consumerMembersHeld adds the members of the KIP-848 groups to h. A
// consumer group's rebalance has no timer the model does not know (each
// member's rebalance timeout is its own, and the model's), so it leaves
// h settled.
func (t *Target) consumerMembersHeld(ctx context.Context, h held) error {
	groups := t.clock.knownConsumerGroups()
	if len(groups) == 0 {
		return nil
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = groups
	resp, err := req.RequestWith(ctx, t.routes.client())
	if err != nil {
		return err
	}
	for _, g := range resp.Groups {
		if g.ErrorCode == kerr.GroupIDNotFound.Code {
			continue // no such group (any more): it holds no one
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return err
		}
		ids := h.members[g.Group]
		if ids == nil {
			ids = map[string]bool{}
			h.members[g.Group] = ids
		}
		for _, m := range g.Members {
			ids[m.MemberID] = true
		}
	}
	return nil
}
