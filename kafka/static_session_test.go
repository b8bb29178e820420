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
// group. W2 crashes and restarts with the same instance id; its rejoin
// with no member id takes the instance over, with no rebalance. Every
// trip is committed once, and every check holds. The history's joins
// carry the instance ids, and a copy of it with the instance id dropped
// from the takeover join is flagged: a dynamic member's first join gets
// no place of an old member.
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

		takeover := takeoverJoin(t, h, "W2", "fare-worker-2")
		require.True(t, slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
			return op.Proc == "W1" && op.Kind == model.JoinGroup && op.Req.InstanceID == "fare-worker-1"
		}), "W1's joins carry no instance id")

		doctored := withOp(h, takeover, func(op *histories.Op) { op.Req.InstanceID = "" })
		report := checker.Check(doctored, checker.Options{})
		require.False(t, report.Verdict(checker.Linearizable).Held(),
			"the takeover join without its instance id went unnoticed:\n%v", report.Verdicts)
	})
}

// takeoverJoin is the ID of proc's join after its restart that names
// instance and no member id, answered with a member id: the rejoin that
// took the instance over.
func takeoverJoin(t *testing.T, h histories.History, proc, instance string) int {
	t.Helper()
	restart := slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Proc == proc && op.Kind == model.Restart })
	require.GreaterOrEqual(t, restart, 0, "%s never restarted", proc)
	i := slices.IndexFunc(h.Ops[restart:], func(op histories.Op) bool {
		return strings.HasPrefix(op.Proc, proc) && op.Kind == model.JoinGroup && op.Req.MemberID == "" &&
			op.Req.InstanceID == instance && op.Result.Succeeded()
	})
	require.GreaterOrEqual(t, i, 0, "no join of %s after its restart took instance %s over", proc, instance)
	return h.Ops[restart+i].ID
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
