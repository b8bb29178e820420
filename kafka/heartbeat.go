package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// A real consumer heartbeats from a thread of its own, and rejoins a
// rebalance within the rebalance timeout even in the middle of a
// transaction (kgo's heartbeat loop on REBALANCE_IN_PROGRESS; Java's
// consumer on its next poll). The workload's members send one request at a
// time and have no such thread, so while one member's join waits for the
// others, this target heartbeats for them and rejoins them, as their
// clients would. Without it every join drops the members that are busy,
// each of them comes back as a new member and drops the next: a livelock
// no real client shows (FINDINGS 8).
//
// A member counts as alive while its session lasts since its own last
// join or offset commit: a crashed or paused process stops heartbeating
// too, and the broker drops it when its session ends. The rejoins are the
// client's background traffic, like its heartbeats, and are not recorded;
// the member learns its new generation when the coordinator refuses its
// old one.

// member is what the target knows of a group member it joined.
type member struct {
	join model.Request // its last join: group, partitions, session timeout
	gen  int32
	// alive is the model time its session lasts until: till then its
	// client heartbeats. Model time moves only at Tick; a session
	// measured on the wall clock would end sooner or later as the
	// machine is busy, and a seed would not replay its interleaving.
	alive int64
	cl    *kgo.Client // its client's, for its heartbeats and rejoins
}

// noteMember records a member's join, or a commit that shows it alive.
func (t *Target) noteMember(id string, join *model.Request, gen int32) {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	m, ok := t.members[id]
	if !ok && join == nil {
		return
	}
	if !ok {
		// Its heartbeats and rejoins are all it sends: no telemetry.
		cl, err := kgo.NewClient(append(t.clientOpts(), kgo.DisableClientMetrics())...)
		if err != nil {
			t.cfg.Logf("kafka: no heartbeats for %s: %v", id, err)
			return
		}
		m = &member{cl: cl}
		t.members[id] = m
	}
	if join != nil {
		m.join, m.gen = *join, gen
	}
	session := m.join.SessionTimeoutMs
	if session <= 0 {
		session = model.DefaultSessionTimeoutMs
	}
	m.alive = t.clock.time() + session
}

func (t *Target) forgetMember(id string) {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	if m, ok := t.members[id]; ok {
		m.cl.Close()
		delete(t.members, id)
	}
}

// disconnectMembers closes every member's client before a restart, and
// reconnectMembers gives each a new one after it, as Restart does for the
// target's own: the old ones' connections die with the cluster, and their
// first requests after it would go to the dead ones and wait out kgo's
// retry backoff (about 250 ms) before they found the coordinator again,
// past the rebalance timeout of a join that waits for their rejoins.
func (t *Target) disconnectMembers() {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	for _, m := range t.members {
		m.cl.Close()
	}
}

func (t *Target) reconnectMembers() {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	for id, m := range t.members {
		cl, err := kgo.NewClient(append(t.clientOpts(), kgo.DisableClientMetrics())...)
		if err != nil {
			t.cfg.Logf("kafka: no heartbeats for %s after the restart: %v", id, err)
			delete(t.members, id)
			continue
		}
		m.cl = cl
	}
}

// forgetMembers closes every member's client.
func (t *Target) forgetMembers() {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	for id, m := range t.members {
		m.cl.Close()
		delete(t.members, id)
	}
}

// othersAlive are the members of group, other than id, whose clients
// still heartbeat.
func (t *Target) othersAlive(group, id string) map[string]member {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	now := t.clock.time()
	alive := map[string]member{}
	for other, m := range t.members {
		if other != id && m.join.Group == group && now < m.alive {
			alive[other] = *m
		}
	}
	return alive
}

// heartbeatInterval is how often a waiting join's fellow members
// heartbeat: well within the rebalance timeout.
const heartbeatInterval = 2 * time.Millisecond

// keepOthersAlive heartbeats, until stop is called, for the live members
// of the group that id joins, and rejoins each whose heartbeat learns of
// a rebalance. stop waits for the rejoins under way.
//
// A new member's join (id "") is sent only once each of them has
// heartbeated once, and rejoined if that heartbeat told of a rebalance:
// their clients' heartbeat threads would have run all along, and a
// rebalance begun before the join (a member left) would have ended
// before it. Racing the join, a member's rejoin would end that rebalance
// before the join arrived or take part in the join's round, as the
// machine's timing had it, and a seed would not replay its interleaving.
// A member's own rejoin is not held back: the rebalance under way waits
// for it as for the others (and when it leads the round, their SyncGroup
// waits for its own).
func (t *Target) keepOthersAlive(group, id string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg, caughtUp sync.WaitGroup
	for other, m := range t.othersAlive(group, id) {
		wg.Add(1)
		caughtUp.Add(1)
		go func() {
			defer wg.Done()
			t.heartbeatUntilStopped(ctx, other, m, caughtUp.Done)
		}()
	}
	if id == "" {
		caughtUp.Wait()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// heartbeatUntilStopped heartbeats for one member, and rejoins it each
// time its heartbeat learns of a rebalance: a new member's join takes two
// rounds on the coordinator (KIP-394), and each is a rebalance. caughtUp
// is called once, after the first heartbeat and the rejoin it led to.
func (t *Target) heartbeatUntilStopped(ctx context.Context, id string, m member, caughtUp func()) {
	var once sync.Once
	defer once.Do(caughtUp)
	tick := time.NewTicker(heartbeatInterval)
	defer tick.Stop()
	for {
		switch t.heartbeat(ctx, id, m) {
		case 0:
		case kerr.RebalanceInProgress.Code:
			var ok bool
			if m, ok = t.rejoin(id, m); !ok {
				return
			}
		default:
			return // fenced or gone: its client finds out on its own
		}
		once.Do(caughtUp)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *Target) heartbeat(ctx context.Context, id string, m member) int16 {
	group := t.names.group(m.join.Group)
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = group, m.gen, id
	req.InstanceID = instanceOf(m.join) // v3 on
	resp, undecided := groupExchange(ctx, t, m.cl, group, func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode }, req)
	if undecided != nil {
		return kerr.UnknownServerError.Code
	}
	return resp.ErrorCode
}

// rejoin is the member's client joining the rebalance: JoinGroup then
// SyncGroup, as its own join would, to completion whatever the waiting
// join does meanwhile. It reports the member as it is now.
func (t *Target) rejoin(id string, m member) (member, bool) {
	m.join.MemberID = id
	res := t.joinRound(context.Background(), m.join, m.cl)
	if !res.Succeeded() {
		return m, false
	}
	m.gen = res.Resp.GenerationID
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	if known, ok := t.members[id]; ok {
		known.gen = m.gen // its liveness is its process's own doing, not this
	}
	return m, true
}
