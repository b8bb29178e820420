package kafka

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/internal/clients/sarama"
	"github.com/fencecheck/fencecheck/model"
)

// TestSaramaShippedExampleWedgesAfterAFencedProduce: sarama's
// examples/exactly_once names its transactional producers after their
// input partitions (sarama-<topic>-<partition>), the same in every
// instance of the application, so an instance that takes a partition up
// fences the producer of whoever had it (KIP-98: InitProducerId bumps the
// epoch and aborts the open transaction). Here one does while the
// example's transaction of a trip is open. The fenced produce's error
// goes to the producer's Errors channel, which the example never reads
// and sarama (v1.61.1) makes unbuffered, so the producer's goroutine
// blocks on it, CommitTxn waits for that produce for ever, and the
// example never gets to its abort and ResetOffset: it stays in the group,
// heartbeating, holding its partitions, and commits nothing more
// (progress breaks while every safety check holds). Killed and restarted,
// it takes up the trips from the committed offsets, and every check holds.
func TestSaramaShippedExampleWedgesAfterAFencedProduce(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s, m, w := shippedExampleAtWork(t, p.kafkaVersion)

			// Trips of trips-0 only, so that the stalled produce is
			// sarama-trips-0's; the stall is shorter than the session
			// timeout, so the group keeps the example.
			w.tap.StallAtNext(model.Produce)
			m.trips = append(m.trips, m.source.writeTo(0, 2)...)
			require.True(t, assertEventually(func() bool { return w.tap.State() == "stalled" }, 5*time.Second), "the example produced nothing")
			s.ok("another-instance", model.InitProducerID, initRequest("sarama-trips-0"))
			m.wake(w)

			committed := len(s.committedKeys("fares"))
			require.False(t, assertEventually(func() bool { return len(s.committedKeys("fares")) > committed }, wedgedFor),
				"the example went on after its fenced produce")
			require.False(t, w.session.Stopped(), "the example's loop ended: it is not wedged")
			h, wedged := m.judgeNow(t, "sarama-shipped-example-wedged-"+p.name)
			requireWedged(t, wedged)
			h = afterWake(h, w.name, shownAfterWake)
			h.Name = "sarama-shipped-example-" + p.name
			requireWedged(t, checker.Check(h, checker.Options{}))
			if *update {
				saveClientHistory(t, h)
			}

			m.crashAndRestart(w)
			s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(m.trips) }, "the restarted example commits the rest")
			m.closeAll()
			_, restarted := m.judgeNow(t, "sarama-shipped-example-restarted-"+p.name)
			requireHeld(t, restarted, sessionJudged...)
		})
	}
}

// TestSaramaShippedExampleLosesTheMessageItAborted: the same fencing
// instance, but after the example's fare was written, while its commit
// sends the message's offset: the TxnOffsetCommit is PRODUCER_FENCED, the
// example's handleTxnError takes the error as fatal and calls
// session.ResetOffset(message), which moves the session's offset mark and
// nothing else (auto-commit off: nothing is committed or re-read), and the
// claim goes on with the next message. The next trip's transaction commits
// the offset past the aborted one, whose fare was aborted with the
// transaction: the trip is lost for good (progress breaks while every
// safety check holds, and a restart does not bring it back). Met by the
// exploration of the shipped example on a Kafka 4 cluster (interleaving
// 489), where a second instance took the partition up.
func TestSaramaShippedExampleLosesTheMessageItAborted(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s, m, w := shippedExampleAtWork(t, p.kafkaVersion)

			w.tap.StallAtNext(model.TxnOffsetCommit)
			aborted := m.source.writeTo(0, 1)
			require.True(t, assertEventually(func() bool { return w.tap.State() == "stalled" }, 5*time.Second), "the example sent no offsets")
			s.ok("another-instance", model.InitProducerID, initRequest("sarama-trips-0"))
			m.wake(w)
			next := m.source.writeTo(0, 1)
			m.trips = append(m.trips, append(aborted, next...)...)
			s.waitFor(func() bool { return s.committedKeys("fares")[next[0]] > 0 }, "the example commits the next trip")
			m.closeAll()
			h, report := m.judgeNow(t, "sarama-shipped-example-lost-"+p.name)
			require.Zero(t, s.committedKeys("fares")[aborted[0]], "the aborted trip was taken up again")
			requireWedged(t, report)
			if *update {
				h.Name = "sarama-shipped-example-lost-" + p.name
				saveClientHistory(t, h)
			}
		})
	}
}

// shippedExampleAtWork starts sarama's shipped example as worker W1,
// through the proxy, and waits until it has committed the first trips.
func shippedExampleAtWork(t *testing.T, kafkaVersion string) (*scenario, *sessionMachine, *sessionWorker) {
	loop := loopNamed(t, sarama.Loops, "shipped-example")
	s := newSessionScenario(t, kafkaVersion)
	t.Cleanup(func() { s.target.Close() })
	proxy, err := s.target.NewProxy(s.rec)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	m := &sessionMachine{s: s, base: SessionConfig{Proxy: proxy}, loop: &loop, source: s.newSource()}
	t.Cleanup(m.closeAll)
	w := &sessionWorker{name: "W1"}
	m.workers = append(m.workers, w)
	m.trips = m.source.write(1)
	m.startSession(w)
	s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(m.trips) }, "the first trips are committed")
	return s, m, w
}

// wedgedFor is how long a worker that commits nothing while trips wait is
// taken to be wedged: several transaction timeouts.
const wedgedFor = 5 * time.Second

// shownAfterWake is how many operations after the wake the saved history
// keeps: the rest is the same fetches and heartbeats, for seconds.
const shownAfterWake = 12

// requireWedged: progress breaks, and no safety check does.
func requireWedged(t *testing.T, report checker.Report) {
	t.Helper()
	require.False(t, report.Verdict(checker.Progress).Held(), "%v", report.Verdicts)
	requireHeld(t, report, checker.OneLiveProducer, checker.ExactlyOnce, checker.NoAbortedRead, checker.OffsetsMonotonic)
}

// afterWake is h cut n operations after proc's last wake, with the
// reader's final reads.
func afterWake(h histories.History, proc string, n int) histories.History {
	wake := -1
	for _, op := range h.Ops {
		if op.Kind == model.Wake && op.Proc == proc {
			wake = op.ID
		}
	}
	cut := h
	cut.Ops = slices.DeleteFunc(slices.Clone(h.Ops), func(op histories.Op) bool {
		return op.ID > wake+n && op.Proc != "reader" // readAll's
	})
	return cut
}

// judgeNow reads the output on the record and checks the history so far.
func (m *sessionMachine) judgeNow(t *testing.T, name string) (histories.History, checker.Report) {
	h := m.recorded(name)
	requireValidDocument(t, h)
	report := checker.Check(h, checker.Options{})
	if t.Failed() || testing.Verbose() {
		var timeline strings.Builder
		_ = checker.WriteTimeline(&timeline, h, report.Verdicts)
		t.Logf("%s:\n%s", name, timeline.String())
	}
	return h, report
}

// requireHeld fails unless every one of checks held.
func requireHeld(t *testing.T, report checker.Report, checks ...string) {
	t.Helper()
	for _, check := range checks {
		require.True(t, report.Verdict(check).Held(), "%s", report.Verdict(check))
	}
}

// loopNamed is the loop of loops with name.
func loopNamed(t *testing.T, loops []clients.Loop, name string) clients.Loop {
	i := slices.IndexFunc(loops, func(l clients.Loop) bool { return l.Name == name })
	require.GreaterOrEqual(t, i, 0, "no loop %q", name)
	return loops[i]
}

// TestFranzGoSessionRegainsAPartitionAtItsOldPosition: franz-go's
// GroupTransactSession (v1.22.3) under the exploration's fault of
// interleaving 243 (histories/clients/README.md). W1 has committed the
// first trips when W2 joins; W1's rejoin is held (W1 stalls as it sends
// it), so the round completes without it, the coordinator removes it, and
// W2 takes both partitions, commits the next trips and leaves. W1 wakes:
// its held JoinGroup is answered UNKNOWN_MEMBER_ID, which kgo takes as a
// plain rejoin (TestFranzGoRejoinAfterUnknownMember), so it claims its
// partitions as still its own, fetches no offset, and reads on from where
// it was before the stall: the trips W2 committed are committed again
// (exactly-once), and the group's offsets may go back (offsets-monotonic).
func TestFranzGoSessionRegainsAPartitionAtItsOldPosition(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s := newSessionScenario(t, p.kafkaVersion)
			defer s.target.Close()
			m := &sessionMachine{s: s, source: s.newSource()}
			defer m.closeAll()
			w1, w2 := &sessionWorker{name: "W1"}, &sessionWorker{name: "W2"}
			m.workers = append(m.workers, w1)
			m.trips = m.source.write(1)
			m.startSession(w1)
			s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(m.trips) }, "W1 commits the first trips")

			w1.tap.StallAtNext(model.JoinGroup)
			m.workers = append(m.workers, w2)
			m.startSession(w2)
			require.True(t, assertEventually(func() bool { return w1.tap.State() == "stalled" }, 5*time.Second), "W1 did not rejoin")
			w1.stalled = true
			s.rec.Fault(w1.name, model.Stall, model.NewRequest())
			m.trips = append(m.trips, m.source.write(2)...)
			s.waitFor(func() bool { return len(s.committedKeys("fares")) == len(m.trips) }, "W2 commits the next trips")
			require.NoError(t, w2.session.Close())
			w2.left = true

			m.wake(w1)
			more := m.source.write(1)
			m.trips = append(m.trips, more...)
			s.waitFor(func() bool { return s.committedKeys("fares")[more[0]] > 0 }, "W1 commits the last trips")
			m.closeAll()
			h, report := m.judgeNow(t, "franz-go-session-regains-"+p.name)
			require.False(t, report.Verdict(checker.ExactlyOnce).Held(), "%v", report.Verdicts)
			requireHeld(t, report, checker.Linearizable, checker.OneLiveProducer, checker.NoAbortedRead)
			require.True(t, explainedByStaleRegain(h, report.Verdict(checker.ExactlyOnce)), "the session property would not name %s here", franzGoRegainsAtOldPosition)
			if *update {
				h.Name = "franz-go-session-regains-" + p.name
				saveClientHistory(t, h) // whole: minimized, it keeps only the two commits of a trip, not why
			}
		})
	}
}
