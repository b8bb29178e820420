package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// sessionPartitions is the input's and output's partitions: one for each
// of two workers.
const sessionPartitions = 2

// sessionJudged are the checks a session's history is judged by: all but
// linearizable. The broker's timers run on real time (a paused worker's
// session expires, a transaction times out), which the history's ticks
// do not follow, and a worker's heartbeats are not operations of the
// format, so the model cannot tell a member the group dropped from one
// its heartbeats kept.
var sessionJudged = []string{checker.OneLiveProducer, checker.ExactlyOnce, checker.NoAbortedRead, checker.OffsetsMonotonic, checker.Progress}

// TestGroupTransactSessionExactlyOnce runs franz-go's own exactly-once loop
// (kgo.GroupTransactSession) against kfake through the workload's faults,
// imposed at its connections: a worker pauses mid-work while a second
// joins, the group drops the silent one and the second takes its
// partitions, and the first wakes a zombie (seed 002); a worker crashes
// mid-transaction and restarts with the same transactional id (a zombie
// producer, seed 000); answers are lost. A worker that stops on an error
// is restarted, as a supervisor restarts a process. The history records
// the input, the workers' own requests as they went over the wire, and
// the final read_committed reads; every check but linearizable
// (sessionJudged) must hold on it.
func TestGroupTransactSessionExactlyOnce(t *testing.T) {
	forEachSessionProtocol(t, func(t *testing.T, s *scenario) {
		src := s.newSource()
		trips := src.write(5)
		cfg := func(name string) SessionConfig {
			return SessionConfig{Group: "fare-workers", TransactionalID: "ctp-" + name, Input: "trips", Output: "fares",
				Record: s.rec, Proc: name}
		}
		workers := map[string]*Session{"W1": s.startSession(cfg("W1"))}
		restart := func(name string) { // its session stopped or crashed
			s.rec.Fault(name, model.Crash, model.NewRequest())
			workers[name] = s.startSession(cfg(name))
			s.rec.Fault(name, model.Restart, model.NewRequest())
		}
		supervise := func() {
			for name, w := range workers {
				if w.Stopped() {
					t.Logf("%s stopped: %v", name, w.Close())
					restart(name)
				}
			}
		}
		s.waitFor(func() bool { return workers["W1"].Committed() > 0 }, "w1 commits")
		workers["W1"].Stall()
		s.rec.Fault("W1", model.Stall, model.NewRequest())
		trips = append(trips, src.write(5)...)
		workers["W2"] = s.startSession(cfg("W2"))
		workers["W2"].LoseResponse()
		s.waitFor(func() bool { return workers["W2"].Committed() > 0 }, "w2 commits while w1 is stalled")
		workers["W1"].Wake()
		s.rec.Fault("W1", model.Wake, model.NewRequest())

		workers["W2"].Crash()
		restart("W2")
		trips = append(trips, src.write(5)...)

		s.waitFor(func() bool { supervise(); return len(s.committedKeys("fares")) >= len(trips) }, "every trip committed")
		for name, w := range workers {
			t.Logf("%s (its last start) committed %d transactions; closing: %v", name, w.Committed(), w.Close())
		}

		s.readAll("fares")
		h := s.history("group-transact-session")
		h.Trips, h.OutputTopics = trips, []string{"fares"}
		requireSessionRecorded(t, h)
		requireZombieFenced(t, h, "W1")
		report := checker.Check(h, checker.Options{})
		for _, check := range sessionJudged {
			if v := report.Verdict(check); !v.Held() {
				var timeline strings.Builder
				_ = checker.WriteTimeline(&timeline, h, report.Verdicts)
				t.Fatalf("%s\n%s", v, timeline.String())
			}
		}
	})
}

// forEachSessionProtocol runs fn under each transaction protocol against a
// fresh kfake cluster whose input and output topics have a partition for
// each of two workers.
func forEachSessionProtocol(t *testing.T, fn func(t *testing.T, s *scenario)) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s := newSessionScenario(t, p.kafkaVersion)
			t.Cleanup(func() { require.NoError(t, s.target.Close()) })
			fn(t, s)
		})
	}
}

// newSessionScenario starts a kfake cluster for session workers; the
// caller closes its target.
func newSessionScenario(t *testing.T, kafkaVersion string) *scenario {
	target, err := NewKfake(Config{
		Topics:         map[string]int32{"trips": sessionPartitions, "fares": sessionPartitions},
		KafkaVersion:   kafkaVersion,
		Logf:           t.Logf,
		SessionWorkers: true,
	})
	require.NoError(t, err)
	lossy := &lossyBroker{b: target}
	return &scenario{t: t, target: target, lossy: lossy, rec: histories.NewRecorder(lossy, nil), ctx: t.Context()}
}

// source writes trips to the input partitions, as an idempotent producer.
type source struct {
	s       *scenario
	session session
	written []int32 // per partition: trips written, the next sequence
}

func (s *scenario) newSource() *source {
	s.t.Helper()
	got := s.ok("source", model.InitProducerID, initRequest(""))
	return &source{s: s, session: session{"", got.ProducerID, got.Epoch}, written: make([]int32, sessionPartitions)}
}

// write writes n more trips to each partition, one batch each, and
// returns their keys.
func (src *source) write(n int) []string {
	var trips []string
	for p := range sessionPartitions {
		trips = append(trips, src.writeTo(p, n)...)
	}
	return trips
}

// writeTo writes n more trips to partition p, in one batch; trips of
// partition p are named trip-<'a'+p>NN.
func (src *source) writeTo(p, n int) []string {
	part := model.Partition(fmt.Sprintf("trips-%d", p))
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("trip-%c%02d", 'a'+p, int(src.written[p])+i+1))
	}
	src.s.ok("source", model.Produce, src.session.produce(part, src.written[p], keys...))
	src.written[p] += int32(n)
	return keys
}

func (s *scenario) startSession(cfg SessionConfig) *Session {
	s.t.Helper()
	w, err := s.target.StartSession(cfg)
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = w.Close() })
	return w
}

// waitFor polls cond for up to 20 s.
func (s *scenario) waitFor(cond func() bool, what string) {
	s.t.Helper()
	if !assertEventually(cond, 20*time.Second) {
		s.t.Fatalf("waiting until %s: %d committed keys", what, len(s.committedKeys("fares")))
	}
}

// committedKeys counts the records of each key of topic read_committed,
// read unrecorded, for waiting.
func (s *scenario) committedKeys(topic string) map[string]int {
	keys := map[string]int{}
	for p := range sessionPartitions {
		part := model.Partition(fmt.Sprintf("%s-%d", topic, p))
		for from := int64(0); ; {
			req := fetchRequest(part, model.ReadCommitted)
			req.Offset = from
			res := s.target.Fetch(s.ctx, req)
			if !res.Succeeded() || len(res.Resp.Records) == 0 {
				break
			}
			for _, r := range res.Resp.Records {
				keys[r.Key]++
			}
			if from = res.Resp.Records[len(res.Resp.Records)-1].Offset + 1; from >= res.Resp.LastStableOffset {
				break
			}
		}
	}
	return keys
}

// readAll reads every partition of topic from the start, read_committed,
// recorded, until its last stable offset.
func (s *scenario) readAll(topic string) {
	for p := range sessionPartitions {
		part := model.Partition(fmt.Sprintf("%s-%d", topic, p))
		for from := int64(0); ; {
			req := fetchRequest(part, model.ReadCommitted)
			req.Offset = from
			res := s.send("reader", model.Fetch, req)
			if !res.Succeeded() || len(res.Resp.Records) == 0 {
				break
			}
			if from = res.Resp.Records[len(res.Resp.Records)-1].Offset + 1; from >= res.Resp.LastStableOffset {
				break
			}
		}
	}
}

func assertEventually(cond func() bool, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// requireSessionRecorded: the workers' own requests are in the history,
// each kind the exactly-once loop sends, and the history is a valid
// document (no process's operations overlap, among others).
func requireSessionRecorded(t *testing.T, h histories.History) {
	t.Helper()
	requireValidDocument(t, h)
	seen := map[model.Kind]bool{}
	for _, op := range h.Ops {
		if strings.HasPrefix(op.Proc, "W") && op.Result.Succeeded() {
			seen[op.Kind] = true
		}
	}
	for _, kind := range []model.Kind{model.JoinGroup, model.InitProducerID, model.Produce, model.TxnOffsetCommit, model.EndTxn, model.LeaveGroup} {
		require.True(t, seen[kind], "no %s of a worker answered in the history", kind)
	}
}

// requireZombieFenced: the group dropped proc while it was paused, so a
// group request of its after it woke was refused as a fenced consumer's.
func requireZombieFenced(t *testing.T, h histories.History, proc string) {
	t.Helper()
	woke := slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Proc == proc && op.Kind == model.Wake })
	require.GreaterOrEqual(t, woke, 0, "%s never woke", proc)
	fenced := slices.ContainsFunc(h.Ops[woke:], func(op histories.Op) bool {
		return (op.Proc == proc || strings.HasPrefix(op.Proc, proc+".")) && model.ClassOf(op.Kind, op.Result.Err) == model.FencedConsumer
	})
	require.True(t, fenced, "%s woke, but nothing it sent was refused as a zombie consumer's", proc)
}

// requireValidDocument: h saves and loads back, as `fencecheck check`
// would read it.
func requireValidDocument(t require.TestingT, h histories.History) {
	require.NoError(t, validDocument(h), "the recorded history is not a valid document")
}

// validDocument is why h does not save and load back, nil when it does.
func validDocument(h histories.History) error {
	var doc bytes.Buffer
	if err := histories.Save(&doc, h); err != nil {
		return err
	}
	_, err := histories.Load(&doc)
	return err
}
