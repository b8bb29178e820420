package kafka

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Catching up. A Tick leaves a transaction the model keeps at least
// nearDue from its deadline on the broker (TickLength), and a member's
// session what the model has left of it. The broker's clock runs on
// between ticks while the requests are answered; the model's stands
// still. On a busy machine the requests were met taking all of that
// margin: a crashed worker's transaction, left 100 ms (10 s of model
// time) by a 50 s tick, was aborted by kfake between two requests of the
// next owner, at a moment the model's clock had not reached its deadline
// (FINDINGS.md, round 12). So before each request the workload asks
// CatchUp. When a timer the model keeps is within catchUpMargin of its
// deadline on the broker, the model's clock must catch up: the workload
// records a tick for the real time since the last Tick ended, lengthened
// past the model's deadline of each timer the broker fires within nearDue
// (so that the model fires it at that tick, and the Tick waits for the
// broker to). The tick is in the history like any other, so the history
// stays honest about the time that passed. When a timer the model keeps
// may have fired on the broker before the last answer came, no tick can
// place it: the target's clock lost step, and CatchUp says so.

// catchUpMargin is how near its deadline on the broker a timer the model
// keeps may come before the model's clock catches up. It must outlast one
// request, as tickSlack must, and it stays under nearDue, so that only
// requests that took most of the margin a tick leaves bring a catch-up.
const catchUpMargin = 50 * time.Millisecond

// errLostStep is the target's clock out of step with the broker's: a
// timer the model keeps may have fired on the broker where no tick can
// place it.
type errLostStep struct {
	what, how string
	scale     float64
}

func (e errLostStep) Error() string {
	return fmt.Sprintf("the target's clock lost step with the broker's: %s, which the model's clock kept, %s. It may have fired on the broker where no tick of the model's can place it, so this run's history is not judged. The requests or restarts since the last tick took longer than the margin the target leaves (is the machine busy?): run again with a larger --time-scale (now %g)", e.what, e.how, e.scale)
}

// CatchUp is the tick (model ms) the model's clock must take before the
// next request, so that no timer it keeps fires on the broker first: 0
// while none is near its deadline there (see above). The error says the
// target's clock lost step: a timer the model keeps may have fired on
// the broker before the last answer came. The broker is asked only once
// the real time since the last check may have brought a timer near.
func (t *Target) CatchUp() (int64, error) {
	if !t.clock.mustCheck(time.Now()) {
		return 0, nil
	}
	h, err := t.held()
	if err != nil {
		t.cfg.Logf("kafka: catching the clock up: asking the broker what it holds: %v", err)
		return 0, nil
	}
	ms, lost := t.clock.catchUp(h, time.Now(), t.scaledDuration, t.modelDuration)
	if lost != nil {
		e := *lost
		e.scale = t.cfg.TimeScale
		return 0, e
	}
	return ms, nil
}

// modelDuration is how much model time a real duration lasts.
func (t *Target) modelDuration(d time.Duration) int64 {
	return int64(float64(d) / float64(time.Millisecond) / t.cfg.TimeScale)
}

// mustCheck reports whether CatchUp must ask the broker at wall: a timer
// was started, and the real time since the last check may have brought
// one near its deadline, or a restart lost step (restarted).
func (c *clock) mustCheck(wall time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.txnTimeouts) == 0 && len(c.members) == 0 {
		return false
	}
	return c.lost != nil || !wall.Before(c.checkAt)
}

// kept is a timer the model keeps: when the broker fires it, and the
// model time a tick must reach for the model to fire it.
type kept struct {
	what  string
	fires time.Time
	cross int64
}

// keptTimers are the timers the broker holds that the model keeps: the
// open transactions it has not aborted, and the sessions of the members
// it has not expired.
func (c *clock) keptTimers(h held, scaled func(int64) time.Duration) []kept {
	var all []kept
	for _, id := range slices.Sorted(maps.Keys(h.txns)) {
		tx := h.txns[id]
		timeout, ok := c.sentTimeout(id, tx.timeout, scaled)
		if !ok {
			continue
		}
		deadline := c.startOf(id, tx.start) + timeout
		if deadline < c.now {
			continue // the model aborted it at the last tick
		}
		// The model aborts it once past its timeout (txnsDue).
		all = append(all, kept{what: "transaction " + id, fires: tx.start.Add(tx.timeout), cross: deadline + 1})
	}
	for _, id := range slices.Sorted(maps.Keys(c.members)) {
		m := c.members[id]
		timeouts := c.sessions[m.group]
		if m.gone || m.admitted && !h.members[m.group][id] || len(m.last) == 0 || len(timeouts) == 0 {
			continue
		}
		if c.lastDue(&m.timers, timeouts, c.now) {
			continue // the model expired it at the last tick
		}
		all = append(all, c.session(id, m, timeouts, scaled))
	}
	return all
}

// session is the timer of member id's session, which the model keeps.
// The broker's session runs from the last request that renewed it, at
// its own timeout: it fires no sooner than that request was sent plus
// the shortest timeout sent (renewed). An answer comes later than the
// broker renewed the session, by as long as the answer took, which a
// busy machine stretched: reckoned from the answers, the session fired
// on kfake before the time the catch-up saw it near, and before the
// answer that met it, so that neither caught it (FINDINGS.md, round
// 13). A member no answer renewed is reckoned from its answers. The
// model's session runs, at the latest, from the newest model time a
// request named it at, for the longest timeout.
func (c *clock) session(id string, m *memberTimers, timeouts map[int64]bool, scaled func(int64) time.Duration) kept {
	newest := slices.Max(slices.Collect(maps.Keys(m.last)))
	from := m.renewed
	if from.IsZero() {
		for _, at := range m.last {
			from = latest(from, at)
		}
	}
	shortest := slices.Min(slices.Collect(maps.Keys(timeouts)))
	longest := slices.Max(slices.Collect(maps.Keys(timeouts)))
	return kept{what: "the session of member " + id, fires: from.Add(scaled(shortest)), cross: newest + longest}
}

// unseenGone are the sessions the model keeps of the admitted members the
// broker no longer holds that the last check did not keep (they began
// after it): a session begun and ended between two checks. They are
// marked gone, so that the next check does not count them again.
func (c *clock) unseenGone(h held, scaled func(int64) time.Duration) []kept {
	var all []kept
	for _, id := range slices.Sorted(maps.Keys(c.members)) {
		m := c.members[id]
		timeouts := c.sessions[m.group]
		if m.gone || !m.admitted || h.members[m.group][id] {
			continue
		}
		if len(m.last) > 0 && len(timeouts) > 0 && !c.lastDue(&m.timers, timeouts, c.now) {
			k := c.session(id, m, timeouts, scaled)
			if !slices.ContainsFunc(c.kept, func(kk kept) bool { return kk.what == k.what }) {
				all = append(all, k)
			}
		}
		m.gone, m.last, m.renewed = true, nil, time.Time{}
	}
	return all
}

// catchUp is the tick that brings the model's clock in step at wall, given
// what the broker holds (see CatchUp). A timer the model kept at the last
// check that the broker holds no more has ended: by a request, or by the
// broker's own timer. If it was due on the broker before the last answer,
// that answer may have seen it fire: lost is set. If not, and it was
// near, the tick runs past its deadline too: no request has seen the
// broker fire it, so the model may fire it now. (A timer the broker
// still holds has not fired, however near it is: the tick catches it
// up.) A restart's loss (restarted) is reported here too.
func (c *clock) catchUp(h held, wall time.Time, scaled func(int64) time.Duration, model func(time.Duration) int64) (ms int64, lost *errLostStep) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost != nil {
		return 0, c.lost
	}
	timers := c.keptTimers(h, scaled)
	near := slices.Clone(timers)
	for _, k := range append(slices.Clone(c.kept), c.unseenGone(h, scaled)...) {
		if slices.ContainsFunc(timers, func(now kept) bool { return now.what == k.what }) {
			continue
		}
		if k.fires.Before(c.lastAnswer) {
			return 0, &errLostStep{what: k.what, how: fmt.Sprintf("is gone, and was due on the broker %v before the last answer came", c.lastAnswer.Sub(k.fires).Round(time.Millisecond))}
		}
		near = append(near, k)
	}
	var soonest time.Time
	for _, k := range near {
		if soonest.IsZero() || k.fires.Before(soonest) {
			soonest = k.fires
		}
	}
	if soonest.IsZero() || soonest.Sub(wall) >= catchUpMargin {
		c.kept = timers
		c.checkAt = c.nextCheckAfter(soonest, wall, scaled)
		return 0, nil
	}
	// The real time since the last Tick, and past each deadline the
	// broker reaches within nearDue.
	ms = max(model(wall.Sub(c.inStepAt)), 1)
	for _, k := range near {
		if k.fires.Sub(wall) < nearDue {
			ms = max(ms, k.cross-c.now)
		}
	}
	c.kept, c.checkAt = nil, time.Time{}
	return ms, nil
}

// nextCheckAfter is when a timer may next come within catchUpMargin of
// its deadline: the soonest kept now, or one begun after wall, which runs
// at least the shortest timeout sent.
func (c *clock) nextCheckAfter(soonest, wall time.Time, scaled func(int64) time.Duration) time.Time {
	next := soonest
	shortest := func(timeouts map[int64]bool) {
		for ms := range timeouts {
			if at := wall.Add(scaled(ms)); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	for _, timeouts := range c.txnTimeouts {
		shortest(timeouts)
	}
	for _, timeouts := range c.sessions {
		shortest(timeouts)
	}
	if next.IsZero() {
		return next
	}
	return next.Add(-catchUpMargin)
}
