package kafka

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/fencecheck/fencecheck/model"
)

// The properties' budgets: each interleaving is a kfake cluster and real
// time, seconds of it, so CI runs a few (a smoke test), and an
// exploration, or a replay of one interleaving (RAPID_SEED), sets
// FENCECHECK_SESSION_CHECKS (sessionBudget). A misconfigured worker is
// given more, to be found on every run: rapid stops at the first failure.
const (
	sessionChecks              = 3
	clientLoopChecks           = 1 // a library's worker is slower to crash and to rejoin
	misconfiguredSessionChecks = 12
)

// sessionBudget sets the interleavings a session property runs:
// FENCECHECK_SESSION_CHECKS when set, else ciChecks.
func sessionBudget(t *testing.T, ciChecks int) {
	checks := ciChecks
	if v, set := os.LookupEnv("FENCECHECK_SESSION_CHECKS"); set {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "FENCECHECK_SESSION_CHECKS=%q: want a number of interleavings", v)
		require.Positive(t, n, "FENCECHECK_SESSION_CHECKS=%q: want at least one interleaving", v)
		checks = n
	}
	setRapidFlag(t, "rapid.checks", checks)
}

// TestPropertyKafkaGroupTransactSession: franz-go's own exactly-once loop
// (kgo.GroupTransactSession) under random faults, as rapid draws them,
// while trips keep arriving: workers join and leave, stall mid-transaction
// and wake (zombie consumers, seed 002), crash and are restarted with the
// same transactional id (zombie producers, seed 000), the clock moves on
// and the brokers restart. Then faults stop, and every trip must be
// committed exactly once, with no aborted record read. The history holds
// the faults, the input, the workers' own requests as they went over the
// wire (package recorder) and the final reads; every check but linearizable
// (sessionJudged) must hold on it. Real time and real goroutines make an
// interleaving replay only roughly, so rapid's shrinking of a failure
// here is best effort. Each transaction protocol runs with the classic
// group protocol, and Kafka 4's also with KIP-848's consumer protocol
// (kip848), under the same faults.
func TestPropertyKafkaGroupTransactSession(t *testing.T) {
	sessionBudget(t, sessionChecks)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			rapid.Check(t, sessionProperty(t, sessionRun{kafkaVersion: p.kafkaVersion}))
		})
	}
	t.Run(kip848.name, func(t *testing.T) {
		rapid.Check(t, sessionProperty(t, sessionRun{kafkaVersion: kip848.kafkaVersion, base: SessionConfig{ConsumerProtocol: true}}))
	})
}

// TestPropertyKafkaGroupTransactSessionThroughProxy: the same workers,
// faults and checks, with the workers reaching the cluster through a
// fencecheck proxy that records and faults them as it does any client
// (processes named by their client.id), instead of dialing through a
// recorder of their own.
func TestPropertyKafkaGroupTransactSessionThroughProxy(t *testing.T) {
	sessionBudget(t, sessionChecks)
	rapid.Check(t, sessionProperty(t, sessionRun{throughProxy: true}))
}

// TestPropertyKafkaGroupTransactSessionStaticMembers: the same workers,
// faults and checks through the proxy, each worker a static member
// (KIP-345) with an instance id of its own. A crashed worker's restart
// takes its instance over, and a stalled one may wake fenced by it
// (FENCED_INSTANCE_ID) or dropped by its session timeout.
func TestPropertyKafkaGroupTransactSessionStaticMembers(t *testing.T) {
	sessionBudget(t, sessionChecks)
	rapid.Check(t, sessionProperty(t, sessionRun{throughProxy: true, static: true}))
}

// TestPropertyKafkaGroupTransactSessionCatchesOutputOutsideTxn: the
// property is not blind. A worker that writes its output with a producer
// outside its transaction leaves an aborted transaction's output behind,
// and its input is processed again: exactly-once breaks.
func TestPropertyKafkaGroupTransactSessionCatchesOutputOutsideTxn(t *testing.T) {
	setRapidFlag(t, "rapid.checks", misconfiguredSessionChecks)
	setRapidFlag(t, "rapid.nofailfile", true)        // a fail file would be replayed by the next run
	setRapidFlag(t, "rapid.shrinktime", time.Second) // finding it is the point here
	failure := &failureOf{T: t}
	rapid.Check(failure, sessionProperty(t, sessionRun{base: SessionConfig{outsideTxn: true}}))
	require.True(t, failure.failed, "a worker writing outside its transaction went unnoticed")
	require.Contains(t, failure.report, "exactly-once: VIOLATED")
}

// sessionRun says what the workers of an interleaving are.
type sessionRun struct {
	// base is the workers' config, but for their names.
	base SessionConfig
	// kafkaVersion is the kfake cluster's ("" the newest).
	kafkaVersion string
	// throughProxy puts a proxy in front of the cluster, which records
	// and faults the workers; a loop of a client library always runs
	// through one.
	throughProxy bool
	// static makes each worker a static member: its instance id is
	// fare-worker-<name>, kept across its restarts.
	static bool
	// loop is the client library's loop the workers run; nil is
	// franz-go's GroupTransactSession (Target.StartSession).
	loop *clients.Loop
	// failed, when set, is given the history of each interleaving that
	// breaks a check (the last is rapid's shrunk one).
	failed func(histories.History)
	// fromSeed002 starts each interleaving in seed 002's situation, before
	// the drawn faults: two workers share the group, and one pauses with
	// its fares written and its offsets not committed, for longer than
	// its session timeout, so that the group gives its partitions to the
	// other.
	fromSeed002 bool
}

// sessionProperty is one interleaving of the workers of run on a fresh
// kfake cluster.
func sessionProperty(t *testing.T, run sessionRun) func(*rapid.T) {
	return func(rt *rapid.T) {
		s := newSessionScenario(t, run.kafkaVersion)
		defer s.target.Close()
		base := run.base
		if run.throughProxy || run.loop != nil {
			newProxy := s.target.NewProxy
			if run.loop != nil && run.loop.DialsItself {
				newProxy = s.target.NewTCPProxy
			}
			p, err := newProxy(s.rec)
			require.NoError(t, err)
			defer p.Close()
			base.Proxy = p
		}
		m := &sessionMachine{s: s, base: base, loop: run.loop, static: run.static, failed: run.failed, source: s.newSource()}
		defer m.closeAll()
		m.WriteTrips(rt)
		m.JoinWorker(rt)
		if run.fromSeed002 {
			m.JoinWorker(rt)
			m.LetWorkersRun(rt)
			m.pauseAt(rt, model.TxnOffsetCommit)
		}
		rt.Repeat(rapid.StateMachineActions(m))
		m.quiesce(rt)
	}
}

// setRapidFlag sets one of rapid's flags for one test: flags are the only
// way to give rapid.Check a budget, and RAPID_CHECKS is for the fast
// properties.
func setRapidFlag(t *testing.T, name string, value any) {
	f := flag.Lookup(name)
	old := f.Value.String()
	require.NoError(t, f.Value.Set(fmt.Sprint(value)))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// failureOf is a test that keeps rapid's failure instead of failing:
// rapid reports one with Errorf, then asks Failed and calls FailNow.
type failureOf struct {
	*testing.T
	failed bool
	report string
}

func (f *failureOf) Errorf(format string, args ...any) {
	f.failed, f.report = true, f.report+fmt.Sprintf(format, args...)
}
func (f *failureOf) Failed() bool { return f.failed }
func (f *failureOf) FailNow()     {}

// sessionMachine is the orchestrator of session workers: a slot per
// worker, each running one session at a time under its own
// transactional id.
type sessionMachine struct {
	s       *scenario
	base    SessionConfig
	loop    *clients.Loop
	static  bool
	failed  func(histories.History)
	source  *source
	trips   []string
	workers []*sessionWorker
	// crashed are the instances crashes left behind, winding down.
	crashed []clients.Worker
	// taps are every instance's, for what their transactions spoke.
	taps []*recorder.Client
}

type sessionWorker struct {
	name    string
	session clients.Worker
	// tap is where the worker is recorded and faulted: its own
	// recorder, or its process at the proxy.
	tap     *recorder.Client
	stalled bool
	left    bool
}

// maxSessionWorkers bounds the group: enough for a rebalance to move
// partitions from a stalled worker to a live one.
const maxSessionWorkers = 3

func (m *sessionMachine) config(w *sessionWorker) SessionConfig {
	cfg := m.base
	cfg.Group, cfg.TransactionalID, cfg.Input, cfg.Output = "fare-workers", "ctp-"+w.name, "trips", "fares"
	cfg.Record, cfg.Proc = m.s.rec, w.name
	if m.static {
		cfg.InstanceID = "fare-worker-" + w.name
	}
	return cfg
}

// WriteTrips writes a few more trips to each input partition: work keeps
// arriving, so that faults meet workers in the middle of it.
func (m *sessionMachine) WriteTrips(rt *rapid.T) {
	m.trips = append(m.trips, m.source.write(rapid.IntRange(1, 3).Draw(rt, "trips per partition"))...)
}

// JoinWorker starts another worker: the group rebalances.
func (m *sessionMachine) JoinWorker(rt *rapid.T) {
	if len(m.workers) == maxSessionWorkers {
		rt.Skip("the group is full")
	}
	w := &sessionWorker{name: fmt.Sprintf("W%d", len(m.workers)+1)}
	m.workers = append(m.workers, w)
	m.startSession(w)
}

func (m *sessionMachine) startSession(w *sessionWorker) {
	cfg := m.config(w)
	m.s.rec.Fault(w.name, model.Restart, model.NewRequest()) // before a library that speaks as it starts (sarama's producer inits)
	if m.loop == nil {
		session, err := m.s.target.StartSession(cfg)
		require.NoError(m.s.t, err)
		w.session, w.tap = session, session.tap
	} else {
		worker, err := m.s.target.StartWorker(*m.loop, cfg)
		require.NoError(m.s.t, err)
		w.session, w.tap = worker, cfg.Proxy.Process(cfg.Proc)
	}
	m.taps = append(m.taps, w.tap)
	w.stalled, w.left = false, false
}

// LeaveWorker closes a running worker after its transaction: it leaves the
// group, which rebalances.
func (m *sessionMachine) LeaveWorker(rt *rapid.T) {
	w := m.pick(rt, "leave", func(w *sessionWorker) bool { return !w.left && !w.stalled })
	_ = w.session.Close() // a fenced zombie stops with an error: the checks judge what it left
	w.left = true
}

// StallProcess pauses a worker, as a garbage collection pause does:
// nothing it sends goes out, its heartbeats included, so the group may
// drop it and its open transaction may time out.
func (m *sessionMachine) StallProcess(rt *rapid.T) {
	w := m.pick(rt, "stall", func(w *sessionWorker) bool { return !w.left && !w.stalled })
	w.tap.Stall()
	w.stalled = true
	m.s.rec.Fault(w.name, model.Stall, model.NewRequest())
}

// PauseMidTransaction is seed 002's pause: trips arrive, and a worker
// stalls mid-transaction, as it produces their fares or as it commits
// its offsets (seed 002's moment: the fares written, the offsets not),
// for longer than its session timeout and shorter than its transaction
// timeout. The group drops it and gives its partitions to another, and
// it wakes a zombie with what it read in hand and its producer not
// fenced. A library may commit its offsets before its fares go out
// (librdkafka produces in the background), so each moment is drawn.
func (m *sessionMachine) PauseMidTransaction(rt *rapid.T) {
	m.pauseAt(rt, rapid.SampledFrom([]model.Kind{model.Produce, model.TxnOffsetCommit}).Draw(rt, "pause at"))
}

func (m *sessionMachine) pauseAt(rt *rapid.T, at model.Kind) {
	w := m.pick(rt, "pause", func(w *sessionWorker) bool { return !w.left && !w.stalled })
	w.tap.StallAtNext(at)
	m.WriteTrips(rt)
	assertEventually(func() bool { return w.tap.State() == "stalled" }, time.Second)
	w.tap.StallAtNext("")
	if w.tap.State() != "stalled" {
		return // it had nothing to do: the trips went to others
	}
	w.stalled = true
	m.s.rec.Fault(w.name, model.Stall, model.NewRequest())
	time.Sleep(zombiePause)
	m.wake(w)
}

// zombiePause is longer than the session timeout (1 s) and shorter than
// the transaction timeout (3 s).
const zombiePause = 1500 * time.Millisecond

// WakeProcess ends a pause: the worker goes on, a zombie if the group
// dropped it meanwhile (seed 002).
func (m *sessionMachine) WakeProcess(rt *rapid.T) {
	w := m.pick(rt, "wake", func(w *sessionWorker) bool { return w.stalled })
	m.wake(w)
}

func (m *sessionMachine) wake(w *sessionWorker) {
	w.tap.Wake()
	w.stalled = false
	m.s.rec.Fault(w.name, model.Wake, model.NewRequest())
}

// CrashProcess kills a worker mid-whatever (its connections drop, it
// says nothing more), and the orchestrator starts another with the same
// config: its InitProducerId fences the old one (seed 000).
func (m *sessionMachine) CrashProcess(rt *rapid.T) {
	m.crashAndRestart(m.pick(rt, "crash", func(w *sessionWorker) bool { return !w.left }))
}

func (m *sessionMachine) crashAndRestart(w *sessionWorker) {
	w.tap.Crash()
	w.session.Crash()
	m.crashed = append(m.crashed, w.session)
	m.s.rec.Fault(w.name, model.Crash, model.NewRequest())
	m.startSession(w)
}

// LoseResponse drops the answer to a worker's next request: the request
// takes effect, and the client, hearing nothing, sends it again.
func (m *sessionMachine) LoseResponse(rt *rapid.T) {
	w := m.pick(rt, "lose", func(w *sessionWorker) bool { return !w.left && !w.stalled })
	w.tap.LoseNextAnswer()
}

// LetWorkersRun lets real time pass while the workers poll and commit.
func (m *sessionMachine) LetWorkersRun(rt *rapid.T) {
	time.Sleep(time.Duration(rapid.IntRange(20, 300).Draw(rt, "ms")) * time.Millisecond)
}

// Tick moves the clock on by up to a session timeout and a half: a
// stalled worker's transaction may time out.
func (m *sessionMachine) Tick(rt *rapid.T) {
	ms := int64(rapid.IntRange(100, 1500).Draw(rt, "ms"))
	time.Sleep(time.Duration(ms) * time.Millisecond)
	req := model.NewRequest()
	req.Ms = int64(float64(ms) / DefaultTimeScale)
	m.s.rec.Fault("clock", model.Tick, req)
}

// RestartBroker restarts the cluster on its logs; the workers' clients
// reconnect on their own.
func (m *sessionMachine) RestartBroker(rt *rapid.T) {
	m.s.target.Restart()
	m.s.rec.Fault("broker", model.BrokerRestart, model.NewRequest())
}

// pick draws a worker that keep selects, or skips the action.
func (m *sessionMachine) pick(rt *rapid.T, label string, keep func(*sessionWorker) bool) *sessionWorker {
	var names []string
	for _, w := range m.workers {
		if keep(w) {
			names = append(names, w.name)
		}
	}
	if len(names) == 0 {
		rt.Skip("no worker to " + label)
	}
	name := rapid.SampledFrom(names).Draw(rt, label)
	return m.workers[slices.IndexFunc(m.workers, func(w *sessionWorker) bool { return w.name == name })]
}

// quiesce stops the faults: stalled workers wake, and the orchestrator
// supervises the workers while the rest of the trips are processed (or
// sessionSettle passed): it restarts a worker whose loop ended on an
// error, and, as a liveness probe would, every worker when nothing was
// committed for stuckAfter. Then the workers close and a reader reads the
// output.
func (m *sessionMachine) quiesce(rt *rapid.T) {
	for _, w := range m.workers {
		if w.stalled {
			m.wake(w)
		}
	}
	if !slices.ContainsFunc(m.workers, func(w *sessionWorker) bool { return !w.left }) {
		m.startSession(m.workers[0])
	}
	committed, since := 0, time.Now()
	assertEventually(func() bool {
		n := len(m.s.committedKeys("fares"))
		switch {
		case n > committed:
			committed, since = n, time.Now()
		case time.Since(since) > stuckAfter:
			m.restartLive()
			since = time.Now()
		}
		m.restartStopped()
		return n >= len(m.trips)
	}, sessionSettle)
	m.closeAll()
	require.True(rt, m.workersRecorded(), "the workers' own commits are not in the history")
	require.NoError(rt, groupProtocolSpoken(m.s.rec.History(), m.base.ConsumerProtocol))
	require.NoError(rt, instancesSpoken(m.s.rec.History(), m.static))
	m.judge(rt, sessionJudged...)
}

// instancesSpoken says how the workers' joins in h differ from their
// config: with static members each join names the worker's instance id
// (fare-worker-<process>), and without them none names one. A library
// that dropped the setting would be judged as dynamic members.
func instancesSpoken(h histories.History, static bool) error {
	for _, op := range h.Ops {
		if !strings.HasPrefix(op.Proc, "W") || op.Kind != model.JoinGroup {
			continue
		}
		want := ""
		if static {
			proc, _, _ := strings.Cut(op.Proc, ".")
			want = "fare-worker-" + proc
		}
		if op.Req.InstanceID != want {
			return fmt.Errorf("op %d: %s's join_group names instance %q, want %q", op.ID, op.Proc, op.Req.InstanceID, want)
		}
	}
	return nil
}

// workersRecorded reports whether the history holds a commit a worker
// sent itself, read off its connections: every trip is committed by now,
// so a recording that works has one.
func (m *sessionMachine) workersRecorded() bool {
	for _, op := range m.s.rec.History().Ops {
		if op.Kind == model.EndTxn && op.Req.Commit && op.Result.Succeeded() && strings.HasPrefix(op.Proc, "W") {
			return true
		}
	}
	return false
}

// groupProtocolSpoken says how the workers' group requests in h differ
// from the protocol they were configured with (consumerProtocol: KIP-848's):
// a library that falls back to the classic protocol (kgo does, silently,
// without a range or sticky balancer or on a cluster before Kafka 4) would
// be judged on the wrong one.
func groupProtocolSpoken(h histories.History, consumerProtocol bool) error {
	classic, consumer := 0, 0
	for _, op := range h.Ops {
		if !strings.HasPrefix(op.Proc, "W") {
			continue
		}
		switch op.Kind {
		case model.JoinGroup, model.SyncGroup:
			classic++
		case model.ConsumerGroupHeartbeat:
			consumer++
		}
	}
	switch {
	case consumerProtocol && (consumer == 0 || classic > 0):
		return fmt.Errorf("the workers were to speak KIP-848's consumer protocol: %d consumer_group_heartbeat and %d join_group or sync_group in the history", consumer, classic)
	case !consumerProtocol && (classic == 0 || consumer > 0):
		return fmt.Errorf("the workers were to speak the classic group protocol: %d join_group or sync_group and %d consumer_group_heartbeat in the history", classic, consumer)
	}
	return nil
}

// stuckAfter is how long the orchestrator lets the workers commit nothing
// while trips wait before it restarts them. A worker whose group lost a
// member right after a join round has stayed stuck on kfake until
// restarted (FINDINGS.md, 11).
const stuckAfter = 3 * time.Second

// restartStopped restarts each worker whose loop ended on an error: the
// process exits, its client closes (leaving the group), and another starts
// with the same config.
func (m *sessionMachine) restartStopped() {
	for _, w := range m.workers {
		if !w.left && w.session.Stopped() {
			_ = w.session.Close()
			m.s.rec.Fault(w.name, model.Crash, model.NewRequest())
			m.startSession(w)
		}
	}
}

// restartLive kills and restarts every running worker.
func (m *sessionMachine) restartLive() {
	for _, w := range m.workers {
		if !w.left {
			m.crashAndRestart(w)
		}
	}
}

// Check is the invariant after each action: no trip committed twice so
// far. A quick unrecorded read decides whether to read the output on the
// record and judge it.
func (m *sessionMachine) Check(rt *rapid.T) {
	for _, n := range m.s.committedKeys("fares") {
		if n > 1 {
			m.judge(rt, checker.ExactlyOnce, checker.NoAbortedRead)
		}
	}
}

// judge reads the output on the record and fails when one of checks
// does not hold on the history, unless a known finding is what broke it
// (knownFinding): that is logged, and the search goes on.
func (m *sessionMachine) judge(rt *rapid.T, checks ...string) {
	h := m.recorded("group-transact-session")
	if err := validDocument(h); err != nil {
		m.s.saveFailure(h)
		rt.Fatalf("the recorded history is not a valid document: %v", err)
	}
	report := checker.Check(h, checker.Options{})
	for _, sig := range report.Signatures() {
		if !slices.Contains(checks, sig.Check) {
			continue
		}
		if name, ok := m.knownFinding(h, report, sig); ok {
			m.s.t.Logf("known finding %s: %s", name, report.Verdict(sig.Check))
			checks = slices.DeleteFunc(slices.Clone(checks), func(c string) bool { return c == sig.Check })
		}
	}
	for _, check := range checks {
		if v := report.Verdict(check); !v.Held() {
			if m.failed != nil {
				m.failed(h)
			}
			m.s.saveFailure(h)
			var timeline strings.Builder
			_ = checker.WriteTimeline(&timeline, h, report.Verdicts)
			rt.Fatalf("%s\n%s", v, timeline.String())
		}
	}
}

// knownFinding names the known finding that broke sig.Check on h: one of
// kfake's (KnownFindings), or, when the workers run franz-go's own loop,
// franz-go's regain of a lost partition at its old position, or, when
// they run a confluent-kafka-go loop, librdkafka's stale records.
func (m *sessionMachine) knownFinding(h histories.History, report checker.Report, sig checker.Signature) (string, bool) {
	if name, ok := KnownFindings().Identify(h, sig); ok {
		return name, true
	}
	if m.loop == nil && explainedByStaleRegain(h, report.Verdict(sig.Check)) {
		return franzGoRegainsAtOldPosition, true
	}
	if m.loop != nil && m.loop.Library == confluentLibrary && explainedByLibrdkafka(h, report.Verdict(sig.Check)) {
		return librdkafkaStaleRecords, true
	}
	return "", false
}

// recorded reads the output on the record and is the history so far, in
// the transaction protocol the workers spoke.
func (m *sessionMachine) recorded(name string) histories.History {
	m.s.readAll("fares")
	h := m.s.history(name)
	h.Trips, h.OutputTopics = m.trips, []string{"fares"}
	h.TransactionsVersion = m.transactionsVersion()
	return h
}

// transactionsVersion is the transaction protocol the workers' EndTxns
// spoke (recorder.Client.TransactionsVersion), which is the cluster's
// unless the library does not speak KIP-890: sarama v1.61.1 and librdkafka
// 2.11 run transactions v1 on a Kafka 4 broker, which answers them so. 0
// (either) when workers spoke both.
func (m *sessionMachine) transactionsVersion() int {
	spoken := 0
	for _, tap := range m.taps {
		switch v := tap.TransactionsVersion(); {
		case v == 0:
		case spoken == 0:
			spoken = v
		case v != spoken:
			return 0
		}
	}
	if spoken == 0 {
		return m.s.target.TransactionsVersion()
	}
	return spoken
}

// sessionSettle is how long the quiet phase waits for every trip.
const sessionSettle = 20 * time.Second

func (m *sessionMachine) closeAll() {
	for _, w := range m.workers {
		if w.stalled { // a test that failed mid-stall: a stalled worker never closes
			m.wake(w)
		}
		if !w.left {
			_ = w.session.Close()
			w.left = true
		}
	}
	for _, crashed := range m.crashed {
		_ = crashed.Close() // waits for its wind-down
	}
	m.crashed = nil
}

// saveFailure writes a history that broke a check to the directory
// FENCECHECK_SESSION_OUT names, when it names one, so that a long
// exploration keeps each counterexample whole (the log has only its
// timeline).
func (s *scenario) saveFailure(h histories.History) {
	dir := os.Getenv("FENCECHECK_SESSION_OUT")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "-", " ", "-").Replace(s.t.Name())
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", name, time.Now().UnixNano()))
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = histories.SaveFile(path, h)
	}
	if err != nil {
		s.t.Logf("saving the counterexample: %v", err)
		return
	}
	s.t.Logf("counterexample saved: %s", path)
}

// TestGroupProtocolSpokenCatchesAFallback: a history whose workers joined
// by the classic protocol fails the check when KIP-848's was asked for, and
// the same history with its group requests made consumer_group_heartbeats
// fails it when the classic one was.
func TestGroupProtocolSpokenCatchesAFallback(t *testing.T) {
	h, err := histories.LoadFile(filepath.Join(clientsDir, "confluent-kafka-go-kip447-txn-v1-stale-fetch.json"))
	require.NoError(t, err)
	require.NoError(t, groupProtocolSpoken(h, false))
	require.ErrorContains(t, groupProtocolSpoken(h, true), "consumer protocol")

	consumer := h
	consumer.Ops = slices.Clone(h.Ops)
	for i, op := range consumer.Ops {
		if op.Kind == model.JoinGroup || op.Kind == model.SyncGroup {
			consumer.Ops[i].Kind = model.ConsumerGroupHeartbeat
		}
	}
	require.NoError(t, groupProtocolSpoken(consumer, true))
	require.ErrorContains(t, groupProtocolSpoken(consumer, false), "classic group protocol")
}

// TestInstancesSpokenCatchesADroppedInstance: a recorded history of
// dynamic members passes as dynamic and fails as static; the same
// history with each join naming its worker's instance id passes as
// static and fails as dynamic.
func TestInstancesSpokenCatchesADroppedInstance(t *testing.T) {
	h, err := histories.LoadFile(filepath.Join(clientsDir, "confluent-kafka-go-kip447-txn-v1-stale-fetch.json"))
	require.NoError(t, err)
	require.NoError(t, instancesSpoken(h, false))
	require.ErrorContains(t, instancesSpoken(h, true), `names instance ""`)

	static := h
	static.Ops = slices.Clone(h.Ops)
	for i, op := range static.Ops {
		if op.Kind == model.JoinGroup {
			proc, _, _ := strings.Cut(op.Proc, ".")
			static.Ops[i].Req.InstanceID = "fare-worker-" + proc
		}
	}
	require.NoError(t, instancesSpoken(static, true))
	require.ErrorContains(t, instancesSpoken(static, false), `want ""`)
}
