package kafka

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// tickAs records a tick and has the target take it, lengthened as the
// workload lengthens any tick (TickLength); it returns its length.
func (s *scenario) tickAs(ms int64) int64 {
	ms = s.target.TickLength(ms)
	s.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
	s.target.Tick(ms)
	return ms
}

// catchUp asks the target whether the model's clock must catch up, as
// the workload does before each request, and takes the tick it needs.
func (s *scenario) catchUp() int64 {
	s.t.Helper()
	ms, err := s.target.CatchUp()
	require.NoError(s.t, err)
	if ms > 0 {
		ms = s.tickAs(ms)
	}
	return ms
}

// Round 12: a busy machine. A 50 s tick leaves a transaction 10 s of its
// timeout, 100 ms on kfake, and the requests after it take 70 ms and
// then 50 more (here, sleeps: the time they took on a machine with a
// load average of 17). Without a catch-up, kfake aborts the transaction
// between two requests while the model's clock has not reached its
// deadline, and the next owner's init, answered with the bumps of the
// timeout's fence and its own, is called wrong. With CatchUp asked before
// each request, as the workload asks it, the model's clock catches up
// once 70 ms have gone: the tick runs past the deadline, the model aborts
// the transaction there, and the history holds.
func TestCatchUpBringsTheModelToAKeptTransactionsDeadline(t *testing.T) {
	for _, caughtUp := range []bool{false, true} {
		name := map[bool]string{false: "kept-txn-without-catch-up", true: "kept-txn-caught-up"}[caughtUp]
		t.Run(name, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, s *scenario) {
				a := s.begin("A", "fare-writer-1", fares2)
				s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
				require.Equal(t, int64(50_000), s.tickAs(50_000), "10 s of the timeout left are kept")
				var caught int64
				if caughtUp {
					// On an idle machine 0: the tick left 100 ms. A
					// machine busy enough to hold the tick past its
					// end catches up here already.
					caught = s.catchUp()
				}
				time.Sleep(70 * time.Millisecond)
				if caughtUp {
					caught += s.catchUp()
					require.Equal(t, int64(10_001), caught, "one catch-up, run past the deadline")
				}
				time.Sleep(50 * time.Millisecond) // past kfake's deadline
				if caughtUp {
					require.Zero(t, s.catchUp(), "the transaction is aborted: nothing is kept")
				}
				owner := s.ok("C", model.InitProducerID, initRequest("fare-writer-1"))
				require.Equal(t, a.epoch+2, owner.Epoch, "kfake's timeout fenced the producer, and the init bumped again")
				if caughtUp {
					s.check(name)
					return
				}
				s.check(name, "linearizable")
			})
		})
	}
}

// The same for a member's session: a member joins, and the requests after
// it take 410 ms of its 450 ms session on kfake (45 s of the model's)
// while the model's clock stands still. Without a catch-up kfake expires
// the member between two requests, and its commit, UNKNOWN_MEMBER_ID, is
// called wrong; with one, the model expires it at the catch-up tick, and
// the tick waits for kfake to remove it.
func TestCatchUpBringsTheModelToAKeptSessionsDeadline(t *testing.T) {
	trips0 := model.Partition("trips-0")
	for _, caughtUp := range []bool{false, true} {
		name := map[bool]string{false: "kept-session-without-catch-up", true: "kept-session-caught-up"}[caughtUp]
		t.Run(name, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, s *scenario) {
				j := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", trips0))
				require.Zero(t, s.catchUp(), "a session just begun is not near its deadline")
				time.Sleep(410 * time.Millisecond)
				if caughtUp {
					require.GreaterOrEqual(t, s.catchUp(), int64(model.DefaultSessionTimeoutMs), "the catch-up runs to the session's deadline")
				}
				time.Sleep(60 * time.Millisecond) // past kfake's deadline
				commit := model.NewRequest()
				commit.Group, commit.MemberID, commit.GenerationID = "fare-workers", j.MemberID, j.GenerationID
				commit.Offsets = map[model.Partition]int64{trips0: 1}
				require.False(t, s.send("W1", model.OffsetCommit, commit).Succeeded(), "kfake expired the member")
				if caughtUp {
					s.check(name)
					return
				}
				s.check(name, "linearizable")
			})
		})
	}
}

// A request answered after kfake fired a timer the model kept, with no
// check between (a single request slower than the margin): no tick can
// place the abort, and CatchUp says the target's clock lost step, naming
// --time-scale. Here the transaction's whole 600 ms pass with no tick.
func TestCatchUpSaysTheClockLostStep(t *testing.T) {
	s := newScenario(t, "")
	a := s.begin("A", "fare-writer-1", fares2)
	s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
	require.Zero(t, s.catchUp(), "600 ms left on kfake")
	time.Sleep(700 * time.Millisecond) // one slow request: past kfake's deadline
	s.ok("B", model.InitProducerID, initRequest("fare-writer-2"))
	_, err := s.target.CatchUp()
	require.ErrorContains(t, err, "the target's clock lost step")
	require.ErrorContains(t, err, "--time-scale (now 0.01)")
	require.ErrorContains(t, err, "fare-writer-1")
}

// A kept transaction that kfake's timer aborts while no request is sent
// (here, a sleep past its deadline) is gone when CatchUp next asks: no
// answer saw the abort, so the catch-up tick runs past its deadline, the
// model aborts it there, and the history holds.
func TestCatchUpPlacesAnAbortNoAnswerSaw(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-1", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
		require.Equal(t, int64(50_000), s.tickAs(50_000))
		first := s.catchUp()               // 0 on an idle machine: the tick left 100 ms
		time.Sleep(120 * time.Millisecond) // kfake's timer fires, and nothing is sent
		if first != 0 {
			t.Logf("the machine is busy: the catch-up came right after the tick (%d ms)", first)
		}
		require.GreaterOrEqual(t, first+s.catchUp(), int64(10_001), "the catch-up runs past the deadline")
		owner := s.ok("C", model.InitProducerID, initRequest("fare-writer-1"))
		require.Equal(t, a.epoch+2, owner.Epoch)
		s.check("abort-no-answer-saw-caught-up")
	})
}

// A restart whose reload aborts a transaction the model keeps (kfake's
// clock ran out during it: finding 24) is the target's clock lost step,
// said at the next request. Here the broker's answers on either side of
// the restart are given: open before, gone after.
func TestARestartThatAbortsAKeptTransactionLosesStep(t *testing.T) {
	s := newScenario(t, "")
	a := s.begin("A", "fare-writer-1", fares2)
	s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
	before := s.target.openTxnsAround(s.target.routes.client(), "before")
	require.Len(t, before, 1)
	s.target.clock.restarted(before, map[string]openTxn{}, s.target.scaledDuration)
	_, err := s.target.CatchUp()
	require.ErrorContains(t, err, "was aborted by the broker's restart")
	require.ErrorContains(t, err, "--time-scale")

	// The control: kept across the restart, as kfake keeps it.
	s = newScenario(t, "")
	a = s.begin("A", "fare-writer-1", fares2)
	s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
	s.target.Restart()
	ms, err := s.target.CatchUp()
	require.NoError(t, err)
	require.Zero(t, ms)
}

// Round 13: a check that knew only a transaction's timeout (60 s, 600
// ms on kfake) set the next one 550 ms on. A static member that joined
// 10 ms later, with a session of 45 s (450 ms), then ran out on kfake
// 90 ms before that next check, and its rejoin was answered
// UNKNOWN_MEMBER_ID while the model kept it. A session timeout sent for
// the first time brings the check forward, so the catch-up comes before
// the broker fires the session. Driven here on the clock alone, with the
// times of that run and the broker's answers as they came.
func TestASessionBegunAfterACheckIsCheckedInTime(t *testing.T) {
	const scale = DefaultTimeScale
	scaled := func(ms int64) time.Duration { return time.Duration(float64(ms) * scale * float64(time.Millisecond)) }
	model := func(d time.Duration) int64 { return int64(float64(d) / float64(time.Millisecond) / scale) }
	c := newClock()
	start := c.inStepAt
	c.txnTimeout("fare-worker-A", 60_000)
	require.True(t, c.mustCheck(start), "the first timer is checked at once")
	ms, lost := c.catchUp(held{}, start, scaled, model)
	require.Nil(t, lost)
	require.Zero(t, ms, "nothing is held")

	// B joins 10 ms on, as a static member, and never heartbeats.
	const group, id = "fare-workers", "fare-worker-2-d1e7"
	joined := start.Add(10 * time.Millisecond)
	c.sessionTimeout(group, 45_000)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = group
	answer := kmsg.NewPtrJoinGroupResponse()
	answer.MemberID = id
	c.exchanged(join, answer, joined.Add(-time.Millisecond), joined)
	h := held{members: map[string]map[string]bool{group: {id: true}}}

	// Checked on the way, B's session is kept and not near.
	require.True(t, c.mustCheck(joined.Add(time.Millisecond)), "a session timeout sent for the first time brings the check forward")
	ms, lost = c.catchUp(h, joined.Add(time.Millisecond), scaled, model)
	require.Nil(t, lost)
	require.Zero(t, ms, "449 ms of the session are left on the broker")

	// 410 ms after the join, 40 ms before the broker fires it, the
	// next request must bring the model's clock past the session.
	wall := joined.Add(410 * time.Millisecond)
	require.True(t, c.mustCheck(wall), "the session is within catchUpMargin of its deadline")
	ms, lost = c.catchUp(h, wall, scaled, model)
	require.Nil(t, lost)
	require.GreaterOrEqual(t, ms, int64(45_000), "the catch-up runs to the session's deadline")
}

// clockScale is a clock alone, with DefaultTimeScale's conversions.
func clockScale() (c *clock, scaled func(int64) time.Duration, model func(time.Duration) int64) {
	scaled = func(ms int64) time.Duration {
		return time.Duration(float64(ms) * DefaultTimeScale * float64(time.Millisecond))
	}
	model = func(d time.Duration) int64 { return int64(float64(d) / float64(time.Millisecond) / DefaultTimeScale) }
	return newClock(), scaled, model
}

// heartbeat is a KIP-848 heartbeat of member id, sent at sent and
// answered at at with code.
func heartbeat(c *clock, group, id string, epoch int32, code int16, sent, at time.Time) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, id, epoch
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.ErrorCode = code
	if code == 0 {
		resp.MemberID, resp.MemberEpoch = &id, max(epoch, 1)
	}
	c.exchanged(req, resp, sent, at)
}

// Round 13, the KIP-848 run: a member heartbeats, and the answer takes
// 150 ms to come back on a busy machine. kfake renewed the session when
// it took the heartbeat, so it fires 450 ms after that, 150 ms before
// the answer plus the timeout. The next heartbeat meets it fired. The
// check after that answer must say the clock lost step, because the
// broker's session is reckoned from when the heartbeat was sent; from
// when it was answered, the session looked 80 ms from its deadline and
// not yet due, and the run went on to call the broker wrong.
func TestASessionRunsFromTheRequestThatRenewedIt(t *testing.T) {
	c, scaled, model := clockScale()
	const group, id = "fare-workers", "fare-worker-J"
	c.sessionTimeout(group, 45_000)
	c.consumerGroup(group)
	sent := c.inStepAt.Add(time.Millisecond)
	heartbeat(c, group, id, 0, 0, sent, sent.Add(150*time.Millisecond))
	h := held{members: map[string]map[string]bool{group: {id: true}}}
	ms, lost := c.catchUp(h, sent.Add(151*time.Millisecond), scaled, model)
	require.Nil(t, lost)
	require.Zero(t, ms, "299 ms are left of the session on the broker")

	// The next heartbeat is sent at once, and the machine stalls: it is
	// answered UNKNOWN_MEMBER_ID 470 ms after the first was sent.
	require.False(t, c.mustCheck(sent.Add(152*time.Millisecond)))
	heartbeat(c, group, id, 1, 25, sent.Add(152*time.Millisecond), sent.Add(470*time.Millisecond))
	wall := sent.Add(471 * time.Millisecond)
	require.True(t, c.mustCheck(wall))
	_, lost = c.catchUp(held{members: map[string]map[string]bool{group: {}}}, wall, scaled, model)
	require.NotNil(t, lost, "the session fired on the broker before the last answer")
	require.Contains(t, lost.Error(), "the session of member "+id)
}

// A session begun after one check and fired on the broker before the
// next (a request sent in time stalled past it) is gone by that next
// check, which did not keep it: it is counted all the same, and the
// answer that came after its deadline makes the clock lose step.
func TestASessionBegunAndEndedBetweenChecksLosesStep(t *testing.T) {
	c, scaled, model := clockScale()
	const group, id = "fare-workers", "fare-worker-2-d1e7"
	c.sessionTimeout(group, 45_000)
	start := c.inStepAt
	ms, lost := c.catchUp(held{}, start, scaled, model)
	require.Nil(t, lost)
	require.Zero(t, ms)
	require.Equal(t, start.Add(400*time.Millisecond), c.checkAt, "a session begun now runs at least 450 ms")

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID = group, kmsg.StringPtr("fare-worker-2")
	answer := kmsg.NewPtrJoinGroupResponse()
	answer.MemberID = id
	c.exchanged(join, answer, start.Add(5*time.Millisecond), start.Add(10*time.Millisecond))
	// The next request is sent 390 ms on, before the check is due, and
	// is answered 600 ms on: past the session's 455.
	require.False(t, c.mustCheck(start.Add(390*time.Millisecond)))
	rejoin := kmsg.NewPtrJoinGroupRequest()
	rejoin.Group, rejoin.MemberID, rejoin.InstanceID = group, id, kmsg.StringPtr("fare-worker-2")
	refused := kmsg.NewPtrJoinGroupResponse()
	refused.ErrorCode = kerr.UnknownMemberID.Code
	c.exchanged(rejoin, refused, start.Add(390*time.Millisecond), start.Add(600*time.Millisecond))

	wall := start.Add(601 * time.Millisecond)
	require.True(t, c.mustCheck(wall))
	_, lost = c.catchUp(held{members: map[string]map[string]bool{group: {}}}, wall, scaled, model)
	require.NotNil(t, lost, "the session fired on the broker before the last answer")
	require.Contains(t, lost.Error(), id)
	_, lost = c.catchUp(held{members: map[string]map[string]bool{group: {}}}, wall.Add(time.Millisecond), scaled, model)
	require.Nil(t, lost, "counted once: the member is gone")
}
