package kafka

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The clock. The model's clock moves only at Tick; the broker's is the wall
// clock, and the timeouts the target sends are scaled (see the package
// documentation). A Tick that slept its whole scaled length would spend
// most of an exploration's time waiting for timers that are not there:
// most ticks find no transaction open and no member in a group, and a tick
// of a second fires nothing. On kfake, the target knows every request that
// starts a broker timer with a scaled timeout (they are all its own), so a
// Tick waits only for the timers the model fires at that tick:
//
//   - for each request the target sent (at model time m, answered at real
//     time r) that may have started or renewed a transaction's or a
//     member's timer, and each timeout T (model ms) that entity was given,
//     the timer is due when m + T <= the model's time after the tick, and
//     the broker fires it by r + scaled(T);
//   - only entities the broker still holds count: an ongoing transaction
//     (ListTransactions), a member its group lists (DescribeGroups), or a
//     member id not yet admitted (a KIP-394 pending member, which
//     DescribeGroups does not list);
//   - the Tick sleeps until the latest due deadline, then makes sure the
//     broker has acted on it: kfake aborts an expired transaction after
//     the next request it handles, and removes an expired member on its
//     group loop, which the Tick waits for;
//   - a group in the middle of a rebalance has a timer the model does not
//     know (the rebalance timeout, real time): the Tick then sleeps up to
//     its whole scaled length, as it always did, unless the rebalance ends
//     sooner.
//
// Every timer the whole sleep fired because the model fires it is fired
// (from the same requests, the deadlines are the broker's own), and real
// time never runs ahead of what the whole sleep let pass, so no timer
// fires that the whole sleep would not have fired. What is left out is
// the drift the whole sleep added: on a real cluster, which is not the
// target's own and whose timers run on intervals of their own (Kafka
// looks for expired transactions every 10 s), a Tick sleeps its whole
// length.

// clock is the target's account of the model's time and of the requests
// that start broker timers.
type clock struct {
	mu  sync.Mutex
	now int64 // model ms: the ticks so far
	// txns are by cluster transactional id, members by member id.
	txns    map[string]*timers
	members map[string]*memberTimers
	// sessions are the session timeouts (model ms) sent to each cluster
	// group.
	sessions map[string]map[int64]bool
	groups   map[string]bool
}

// timers are one entity's timeouts and the requests that may have started
// or renewed its timer: for each model time they were sent at, when the
// last of them was answered.
type timers struct {
	timeouts map[int64]bool // model ms
	last     map[int64]time.Time
}

// memberTimers are a group member's, as the clock knows it.
type memberTimers struct {
	timers
	group    string
	admitted bool // a join answered it without error: no longer pending
	gone     bool // admitted, and then no longer in its group: for good
}

func newClock() *clock {
	return &clock{txns: map[string]*timers{}, members: map[string]*memberTimers{}, sessions: map[string]map[int64]bool{}, groups: map[string]bool{}}
}

func (tm *timers) saw(now int64, at time.Time) {
	if tm.last == nil {
		tm.last = map[int64]time.Time{}
	}
	if at.After(tm.last[now]) {
		tm.last[now] = at
	}
}

func (c *clock) txn(id string) *timers {
	tm, ok := c.txns[id]
	if !ok {
		tm = &timers{timeouts: map[int64]bool{}}
		c.txns[id] = tm
	}
	return tm
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
	c.txn(id).timeouts[ms] = true
}

// sessionTimeout notes a session timeout sent to a group.
func (c *clock) sessionTimeout(group string, ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[group] == nil {
		c.sessions[group] = map[int64]bool{}
	}
	c.sessions[group][ms] = true
	c.groups[group] = true
}

// exchanged notes a request, and its answer when one came, as answered at
// real time at: every transactional id and member id it names may have had
// its timer started or renewed.
func (c *clock) exchanged(req kmsg.Request, resp kmsg.Response, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	txn := func(id *string) {
		if id != nil && *id != "" {
			c.txn(*id).saw(c.now, at)
		}
	}
	member := func(group, id string) *memberTimers {
		if id == "" {
			return nil
		}
		c.groups[group] = true
		m := c.member(group, id)
		if !m.gone {
			m.saw(c.now, at)
		}
		return m
	}
	switch r := req.(type) {
	case *kmsg.InitProducerIDRequest:
		txn(r.TransactionalID)
	case *kmsg.AddPartitionsToTxnRequest:
		txn(&r.TransactionalID)
		for i := range r.Transactions {
			txn(&r.Transactions[i].TransactionalID)
		}
	case *kmsg.ProduceRequest:
		txn(r.TransactionID)
	case *kmsg.AddOffsetsToTxnRequest:
		txn(&r.TransactionalID)
	case *kmsg.EndTxnRequest:
		txn(&r.TransactionalID)
	case *kmsg.TxnOffsetCommitRequest:
		txn(&r.TransactionalID)
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
	}
}

// restarted notes a broker restart that took d: kfake moves the start of
// every open transaction on by the outage, so their deadlines move too.
// (A member's session runs on through an outage.)
func (c *clock) restarted(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tm := range c.txns {
		for m, at := range tm.last {
			tm.last[m] = at.Add(d)
		}
	}
}

// advance moves the model's clock by ms and returns the new time.
func (c *clock) advance(ms int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += ms
	return c.now
}

// time is the model's time.
func (c *clock) time() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// idle reports whether no request that starts a timer was ever sent.
func (c *clock) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txns) == 0 && len(c.members) == 0
}

// held is what the broker still holds a timer for.
type held struct {
	txns    map[string]bool            // ongoing transactional ids
	members map[string]map[string]bool // group -> its members
	settled bool                       // no group is in the middle of a rebalance
}

// due is the latest deadline of the timers the model fires at now among
// those the broker holds, and the members whose timers those are (the
// broker must have removed them by then). ok is false when nothing is due.
func (c *clock) due(now int64, h held, scaled func(int64) time.Duration) (deadline time.Time, expired map[string]string, ok bool) {
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
	for id, tm := range c.txns {
		if !h.txns[id] {
			continue
		}
		if d, any := consider(tm, tm.timeouts); any {
			ok = true
			if d.After(deadline) {
				deadline = d
			}
		}
	}
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
// timeout (nothing they started can be due again), and marks the admitted
// members the broker no longer holds as gone.
func (c *clock) prune(h held, before time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tm := range c.txns {
		maps.DeleteFunc(tm.last, func(_ int64, at time.Time) bool { return at.Before(before) })
	}
	for id, m := range c.members {
		if m.admitted && !h.members[m.group][id] {
			m.gone, m.last = true, nil
		}
		maps.DeleteFunc(m.last, func(_ int64, at time.Time) bool { return at.Before(before) })
	}
}

// Tick lets ms of model time pass. On a real cluster it sleeps ms*TimeScale.
// On kfake it waits for the timers the model fires (see above).
func (t *Target) Tick(ms int64) {
	if ms <= 0 {
		return
	}
	start := time.Now()
	whole := start.Add(t.realDuration(ms))
	now := t.clock.advance(ms)
	if t.embedded == nil {
		time.Sleep(t.realDuration(ms))
		return
	}
	if t.clock.idle() {
		return
	}
	h, err := t.held()
	if err != nil {
		t.cfg.Logf("kafka: tick: asking the broker what it holds: %v; sleeping the whole tick", err)
		time.Sleep(time.Until(whole))
		return
	}
	deadline, expired, ok := t.clock.due(now, h, t.scaledDuration)
	if ok {
		deadline = deadline.Add(tickMargin)
		if deadline.After(whole) {
			deadline = whole // never past what the whole sleep let pass
		}
		time.Sleep(time.Until(deadline))
	}
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
		if !time.Now().Before(whole) {
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
	// tickPoll is how often a Tick asks whether the broker has acted.
	tickPoll = time.Millisecond
	// maxTimeoutMs bounds the timeouts a run sends (model ms): Kafka's
	// transaction.max.timeout.ms.
	maxTimeoutMs = 15 * 60 * 1000
)

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

// held asks the broker which transactions are ongoing and which members its
// groups hold.
func (t *Target) held() (held, error) {
	ctx, cancel := t.requestCtx(context.Background())
	defer cancel()
	cl := t.routes.client()
	h := held{txns: map[string]bool{}, members: map[string]map[string]bool{}, settled: true}
	lt := kmsg.NewPtrListTransactionsRequest()
	resp, err := lt.RequestWith(ctx, cl)
	if err != nil {
		return h, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return h, err
	}
	for _, s := range resp.TransactionStates {
		if s.TransactionState != "Empty" && s.TransactionState != "CompleteCommit" && s.TransactionState != "CompleteAbort" {
			h.txns[s.TransactionalID] = true
		}
	}
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
	return h, nil
}
