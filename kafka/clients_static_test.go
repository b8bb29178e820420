package kafka

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/internal/clients/sarama"
	"github.com/fencecheck/fencecheck/model"
)

// TestSaramaStaticRestartFencesTheStalled: sarama's kip447 loop as a
// static member (Consumer.Group.InstanceId). See
// requireStaticRestartFencesTheStalled. The whole history is
// linearizable too, on the cluster's protocol (transactions v2): sarama
// sends EndTxn v3, which Kafka runs in transactions v1 (the model's
// endTxnV2), and no timer of the broker fires in the run.
func TestSaramaStaticRestartFencesTheStalled(t *testing.T) {
	h, report := requireStaticRestartFencesTheStalled(t, loopNamed(t, sarama.Loops, "kip447"))
	require.Equal(t, 2, h.TransactionsVersion, "the history is not judged on the cluster's transactions v2")
	requireHeld(t, report, checker.Linearizable)
}

// requireStaticRestartFencesTheStalled is
// TestGroupTransactSessionStaticRestartFencesTheStalled on a client
// library's loop, run through the proxy by Target.StartWorker with
// clients.Job.InstanceID. W1, a static member, is stalled through the
// proxy, as a host that hangs. Its supervisor starts W1b with the same
// instance id and transactional id. W1b's join takes the instance over
// before W1's session times out, and W1b commits the trips. Then W1
// wakes. Its first group request naming the instance (a heartbeat, a
// commit or a rejoin) is refused with FENCED_INSTANCE_ID, and it never
// commits again. Its loop ends, on that error or on its producer's,
// which W1b's InitProducerId fenced (sarama's, in the runs seen). Every check of sessionJudged holds. The history's group
// requests are linearizable, and a copy of them in which that request
// succeeded is not. One protocol (the newest) keeps the test short. It
// returns the history and its report, for a library's test to judge more.
func requireStaticRestartFencesTheStalled(t *testing.T, loop clients.Loop) (histories.History, checker.Report) {
	s := newSessionScenario(t, "")
	t.Cleanup(func() { require.NoError(t, s.target.Close()) })
	newProxy := s.target.NewProxy
	if loop.DialsItself {
		newProxy = s.target.NewTCPProxy
	}
	p, err := newProxy(s.rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	start := func(proc string) clients.Worker {
		w, err := s.target.StartWorker(loop, staticWorker(p, proc, "fare-worker"))
		require.NoError(t, err)
		return w
	}

	src := s.newSource()
	trips := src.write(3)
	w1 := start("W1")
	s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1 commits the first trips")

	require.NoError(t, p.Fault("W1", "stall", 0))
	trips = append(trips, src.write(3)...)
	w1b := start("W1b")
	s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "w1b takes the instance over and commits")
	require.NoError(t, p.Fault("W1", "wake", 0))
	s.waitFor(func() bool { return fencedInstance(s.rec.History(), "W1", "fare-worker") >= 0 }, "w1 is fenced")
	s.waitFor(w1.Stopped, "w1's loop ends")
	trips = append(trips, src.write(3)...)
	s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(trips) }, "every trip committed")
	t.Logf("closing: w1 %v, w1b %v", w1.Close(), w1b.Close())

	s.readAll("fares")
	h := s.history(loop.Library + "-static-restart-fences-the-stalled")
	h.Trips, h.OutputTopics = trips, []string{"fares"}
	requireValidDocument(t, h)
	report := checker.Check(h, checker.Options{})
	if !report.Verdict(checker.Linearizable).Held() || slices.ContainsFunc(sessionJudged, func(c string) bool { return !report.Verdict(c).Held() }) {
		s.saveFailure(h)
	}
	requireHeld(t, report, sessionJudged...)
	takeoverJoinOf(t, h, "W1b", "fare-worker")
	fenced := fencedInstance(h, "W1", "fare-worker")
	require.False(t, slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
		return isProc(op, "W1") && op.Kind == model.EndTxn && op.Req.Commit && op.Result.Succeeded() && op.ID > fenced
	}), "W1 committed a transaction after it was fenced")
	requireFencingNoticed(t, groupRequests(h), fenced)
	return h, report
}

// groupRequests is h with only its group requests (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and its faults: what decides who holds an
// instance id. A library's whole history is judged by sessionJudged,
// without linearizable, because the broker's timers run on real time.
func groupRequests(h histories.History) histories.History {
	g := h
	g.Name = h.Name + "-group-requests"
	g.Ops = slices.DeleteFunc(slices.Clone(h.Ops), func(op histories.Op) bool {
		switch op.Kind {
		case model.JoinGroup, model.SyncGroup, model.Heartbeat, model.LeaveGroup:
			return false
		}
		return !op.Kind.IsFault()
	})
	g.Trips, g.OutputTopics = nil, nil
	return g
}
