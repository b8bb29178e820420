package kafka

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/proxy"
	"github.com/fencecheck/fencecheck/model"
)

// Static members (KIP-345) on franz-go's GroupTransactSession, recorded
// through a fencecheck proxy, as any client is. Each worker has its own
// group.instance.id (kgo.InstanceID). A restart keeps the instance id, so
// it takes the member's place without a rebalance, and the process it
// replaced is fenced with FENCED_INSTANCE_ID.

// staticSessionTimeout is longer than a worker's restart takes, so that
// the restart takes the instance over before the group drops it. That is
// what static membership is for.
const staticSessionTimeout = 5 * time.Second

// staticWorker is the config of process proc, a worker with instance id
// instance. Its transactional id goes with the instance, as a restarted
// worker keeps both.
func staticWorker(p *proxy.Proxy, proc, instance string) SessionConfig {
	return SessionConfig{Group: "fare-workers", TransactionalID: "ctp-" + instance, InstanceID: instance,
		Input: "trips", Output: "fares", SessionTimeout: staticSessionTimeout, Proxy: p, Proc: proc}
}

// newStaticProxy is a proxy in front of s's cluster, recording into s's
// history.
func newStaticProxy(t *testing.T, s *scenario) *proxy.Proxy {
	p, err := s.target.NewProxy(s.rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestGroupTransactSessionStaticMembers: two static workers share the
// group. W2 crashes and restarts with the same instance id. Its rejoin
// with no member id takes the instance over under a new member id. A
// rebalance may follow, because franz-go's cooperative subscription
// names the partitions a member owns, and the new process owns none.
// Every trip is committed once, and every check holds. The history's
// joins carry the instance ids. A copy of it with the instance id
// dropped from the takeover join is flagged: that join then takes
// nothing over, so the new member id's requests naming the instance
// are fenced.
func TestGroupTransactSessionStaticMembers(t *testing.T) {
	forEachSessionProtocol(t, func(t *testing.T, s *scenario) {
		p := newStaticProxy(t, s)
		src := s.newSource()
		trips := src.write(3)
		w1 := s.startSession(staticWorker(p, "W1", "fare-worker-1"))
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1 commits the first trips")
		w2 := s.startSession(staticWorker(p, "W2", "fare-worker-2"))
		s.waitFor(func() bool { // trips keep coming until W2 has a partition of its own
			trips = append(trips, src.write(1)...)
			return assertEventually(func() bool { return w2.Committed() > 0 }, 300*time.Millisecond)
		}, "w2 commits")
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "both commit")

		require.NoError(t, p.Fault("W2", "crash", 0))
		w2.Crash()
		require.NoError(t, p.Fault("W2", "restart", 0))
		w2 = s.startSession(staticWorker(p, "W2", "fare-worker-2"))
		trips = append(trips, src.write(3)...)
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "every trip committed")
		t.Logf("closing: w1 %v, w2 %v", w1.Close(), w2.Close())

		s.readAll("fares")
		h := s.history("static-members")
		h.Trips, h.OutputTopics = trips, []string{"fares"}
		requireValidDocument(t, h)
		requireAllHold(t, h)

		takeover := takeoverJoinOf(t, h, "W2", "fare-worker-2")
		require.True(t, slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
			return op.Proc == "W1" && op.Kind == model.JoinGroup && op.Req.InstanceID == "fare-worker-1"
		}), "W1's joins carry no instance id")

		doctored := withOp(h, takeover, func(op *histories.Op) { op.Req.InstanceID = "" })
		report := checker.Check(doctored, checker.Options{})
		require.False(t, report.Verdict(checker.Linearizable).Held(),
			"the takeover join without its instance id went unnoticed:\n%v", report.Verdicts)
	})
}

// takeoverJoinOf is the ID of proc's join that names instance and no
// member id and is answered with a member id, after proc's restart if it
// restarted: the join that took the instance over.
func takeoverJoinOf(t *testing.T, h histories.History, proc, instance string) int {
	t.Helper()
	from := max(0, slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Proc == proc && op.Kind == model.Restart }))
	i := slices.IndexFunc(h.Ops[from:], func(op histories.Op) bool {
		return isProc(op, proc) && op.Kind == model.JoinGroup && op.Req.MemberID == "" &&
			op.Req.InstanceID == instance && op.Result.Succeeded() && op.Result.Resp.MemberID != ""
	})
	require.GreaterOrEqual(t, i, 0, "no join of %s took instance %s over", proc, instance)
	return h.Ops[from+i].ID
}

// withOp is a copy of h whose operation id is changed by doctor.
func withOp(h histories.History, id int, doctor func(*histories.Op)) histories.History {
	c := h
	c.Ops = slices.Clone(h.Ops)
	i := slices.IndexFunc(c.Ops, func(op histories.Op) bool { return op.ID == id })
	doctor(&c.Ops[i])
	return c
}

// requireAllHold fails unless every check holds on h, but for a known
// finding of kfake's (KnownFindings), which is logged.
func requireAllHold(t *testing.T, h histories.History) checker.Report {
	t.Helper()
	report := checker.Check(h, checker.Options{})
	explained := map[string]bool{}
	for _, sig := range report.Signatures() {
		if name, ok := KnownFindings().Identify(h, sig); ok {
			t.Logf("known finding %s: %s", name, report.Verdict(sig.Check))
			explained[sig.Check] = true
		}
	}
	for _, v := range report.Verdicts {
		if !v.Held() && !explained[v.Check] {
			var timeline strings.Builder
			_ = checker.WriteTimeline(&timeline, h, report.Verdicts)
			t.Fatalf("%s\n%s", v, timeline.String())
		}
	}
	return report
}

// TestGroupTransactSessionStaticRestartFencesTheStalled: a static
// worker's process W1 is stalled through the proxy (Proxy.Fault), as a
// host that hangs. Its supervisor starts another process, W1b, with the
// same instance id and transactional id. W1b's join takes the instance
// over before W1's session times out, and W1b commits the trips. Then W1
// wakes: its next group request naming the instance (a heartbeat, a
// commit or a rejoin) is refused with FENCED_INSTANCE_ID, so it never
// commits again. Every check holds, and a copy of the history in which
// that request succeeded is flagged.
func TestGroupTransactSessionStaticRestartFencesTheStalled(t *testing.T) {
	forEachSessionProtocol(t, func(t *testing.T, s *scenario) {
		p := newStaticProxy(t, s)
		src := s.newSource()
		trips := src.write(3)
		w1 := s.startSession(staticWorker(p, "W1", "fare-worker"))
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1 commits the first trips")

		require.NoError(t, p.Fault("W1", "stall", 0))
		trips = append(trips, src.write(3)...)
		w1b := s.startSession(staticWorker(p, "W1b", "fare-worker"))
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1b takes the instance over and commits")
		require.NoError(t, p.Fault("W1", "wake", 0))
		s.waitFor(func() bool { return fencedInstance(s.rec.History(), "W1", "fare-worker") >= 0 }, "w1 is fenced")
		trips = append(trips, src.write(3)...)
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "every trip committed")
		t.Logf("closing: w1 %v, w1b %v", w1.Close(), w1b.Close())

		s.readAll("fares")
		h := s.history("static-restart-fences-the-stalled")
		h.Trips, h.OutputTopics = trips, []string{"fares"}
		requireValidDocument(t, h)
		report := requireAllHold(t, h)
		if testing.Verbose() {
			var timeline strings.Builder
			_ = checker.WriteTimeline(&timeline, h, report.Verdicts)
			t.Log(timeline.String())
		}
		takeoverJoinOf(t, h, "W1b", "fare-worker")
		require.False(t, slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
			return isProc(op, "W1") && op.Kind == model.EndTxn && op.Req.Commit && op.Result.Succeeded() && op.ID > fencedInstance(h, "W1", "fare-worker")
		}), "W1 committed a transaction after it was fenced")

		requireFencingNoticed(t, h, fencedInstance(h, "W1", "fare-worker"))
	})
}

// requireFencingNoticed: h is linearizable, and a copy of h in which
// operation fenced, refused with FENCED_INSTANCE_ID, succeeded instead
// is not, at that operation and for that reason.
func requireFencingNoticed(t *testing.T, h histories.History, fenced int) {
	t.Helper()
	require.True(t, checker.Check(h, checker.Options{}).Verdict(checker.Linearizable).Held(), "%s is not linearizable as recorded", h.Name)
	doctored := withOp(h, fenced, func(op *histories.Op) { op.Result = model.Result{Answered: true, Resp: op.Result.Resp} })
	v := checker.Check(doctored, checker.Options{}).Verdict(checker.Linearizable)
	require.False(t, v.Held(), "the fenced %s (op %d) answered success went unnoticed", h.Ops[slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.ID == fenced })].Kind, fenced)
	require.Equal(t, fenced, v.Violations[0].Op, "%s", v)
	require.Contains(t, v.Violations[0].Reason, string(model.FencedInstanceID), "%s", v)
}

// fencedInstance is the ID of proc's first request naming instance that
// it sent after it woke, when that request was refused with
// FENCED_INSTANCE_ID; -1 when there is none yet or it was answered
// otherwise. Only group requests name an instance.
func fencedInstance(h histories.History, proc, instance string) int {
	woke := slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Proc == proc && op.Kind == model.Wake })
	if woke < 0 {
		return -1
	}
	i := slices.IndexFunc(h.Ops[woke:], func(op histories.Op) bool { return isProc(op, proc) && op.Req.InstanceID == instance })
	if i < 0 || h.Ops[woke+i].Result.Err != model.FencedInstanceID {
		return -1
	}
	return h.Ops[woke+i].ID
}

// isProc reports whether op is process proc's, on any of its lanes.
func isProc(op histories.Op, proc string) bool {
	return op.Proc == proc || strings.HasPrefix(op.Proc, proc+".")
}

// TestGroupTransactSessionSharedInstanceID is a misconfiguration: two
// live franz-go workers, W1 and W2, are given one group.instance.id
// (each its own transactional id). W2's join names no member id, so it
// takes the instance over from W1, as a restart would. W1's next group
// request naming the instance is refused with FENCED_INSTANCE_ID. kgo
// (v1.22.3) does not take that as fatal: it rejoins under the member id
// it lost, which is refused with FENCED_INSTANCE_ID again, for as long
// as it runs. So W1 is locked out, and W2 does all the work. No check
// breaks: the broker's fencing keeps the history exactly-once, and every
// trip is committed. What the misconfiguration costs is W1's share of
// the work. A broker that let W1 rejoin would be caught: a copy of the
// history with W1's refused rejoin answered ok breaks linearizable.
//
// The workload's shared-instance-id scenario breaks progress instead,
// because its workers close on FENCED_INSTANCE_ID, as Kafka's Java
// consumer does, and the orchestrator restarts them: each restart takes
// the instance back, and the two processes take turns.
func TestGroupTransactSessionSharedInstanceID(t *testing.T) {
	forEachSessionProtocol(t, func(t *testing.T, s *scenario) {
		p := newStaticProxy(t, s)
		worker := func(proc string) SessionConfig {
			cfg := staticWorker(p, proc, "fare-worker")
			cfg.TransactionalID = "ctp-" + proc
			return cfg
		}
		src := s.newSource()
		trips := src.write(3)
		w1 := s.startSession(worker("W1"))
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1 commits the first trips")
		w2 := s.startSession(worker("W2"))
		s.waitFor(func() bool { return fencedRejoin(s.rec.History(), "W1", "fare-worker") >= 0 }, "w1 rejoins and is refused")
		trips = append(trips, src.write(3)...)
		s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "every trip committed")
		t.Logf("closing: w1 %v, w2 %v", w1.Close(), w2.Close())

		s.readAll("fares")
		h := s.history("shared-instance-id")
		h.Trips, h.OutputTopics = trips, []string{"fares"}
		requireValidDocument(t, h)
		requireAllHold(t, h)

		takeover := takeoverJoinOf(t, h, "W2", "fare-worker")
		took := h.Ops[slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.ID == takeover })].Return
		for _, op := range h.Ops {
			if isProc(op, "W1") && op.Req.InstanceID == "fare-worker" && op.Call > took && op.Result.Answered {
				require.Equal(t, model.FencedInstanceID, op.Result.Err, "W1's %s (op %d) after W2 took the instance", op.Kind, op.ID)
			}
		}
		requireFencingNoticed(t, h, fencedRejoin(h, "W1", "fare-worker"))
	})
}

// fencedRejoin is the ID of proc's first JoinGroup that names instance
// and a member id and is refused with FENCED_INSTANCE_ID: a rejoin
// under a member id that lost the instance; -1 when there is none.
func fencedRejoin(h histories.History, proc, instance string) int {
	i := slices.IndexFunc(h.Ops, func(op histories.Op) bool {
		return isProc(op, proc) && op.Kind == model.JoinGroup && op.Req.InstanceID == instance &&
			op.Req.MemberID != "" && op.Result.Err == model.FencedInstanceID
	})
	if i < 0 {
		return -1
	}
	return h.Ops[i].ID
}
