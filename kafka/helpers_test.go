package kafka

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// The transaction protocols every scenario runs under: Kafka 3.9 speaks
// transactions v1 (KIP-98), the newest versions speak v2 (KIP-890).
var protocols = []struct {
	name         string
	kafkaVersion string
	txnVersion   int
}{
	{"txn-v1", "3.9", 1},
	{"txn-v2", "", 2},
}

// kip848 is the group protocol dimension beside protocols: a Kafka 4
// cluster (transactions v2) whose workers join their group by KIP-848's
// consumer protocol (SessionConfig.ConsumerProtocol) rather than the
// classic one.
var kip848 = struct {
	name         string
	kafkaVersion string
}{"kip848", ""}

// forEachProtocol runs fn as a subtest against a fresh kfake cluster under
// each transaction protocol.
func forEachProtocol(t *testing.T, fn func(t *testing.T, s *scenario)) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s := newScenario(t, p.kafkaVersion)
			require.Equal(t, p.txnVersion, s.target.TransactionsVersion())
			fn(t, s)
		})
	}
}

// scenario is a kfake cluster with a recorder in front of it.
type scenario struct {
	t      *testing.T
	target *Target
	lossy  *lossyBroker
	rec    *histories.Recorder
	ctx    context.Context
}

func newScenario(t *testing.T, kafkaVersion string) *scenario {
	t.Helper()
	target, err := NewKfake(Config{
		Topics:       map[string]int32{"fares": 3, "trips": 1},
		KafkaVersion: kafkaVersion,
		Logf:         t.Logf,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, target.Close()) })
	lossy := &lossyBroker{b: target}
	return &scenario{t: t, target: target, lossy: lossy, rec: histories.NewRecorder(lossy, nil), ctx: context.Background()}
}

// send sends one request of proc, recorded.
func (s *scenario) send(proc string, kind model.Kind, req model.Request) model.Result {
	s.t.Helper()
	res, err := model.Send(s.ctx, s.rec.Proc(proc), model.Op{Kind: kind, Req: req})
	require.NoError(s.t, err)
	return res
}

// ok sends a request that must succeed.
func (s *scenario) ok(proc string, kind model.Kind, req model.Request) model.Response {
	s.t.Helper()
	res := s.send(proc, kind, req)
	require.True(s.t, res.Succeeded(), "%s %s: %+v", proc, kind, res)
	return res.Resp
}

// history is what was recorded, marked with the protocol spoken.
func (s *scenario) history(name string) histories.History {
	h := s.rec.History()
	h.Name, h.TransactionsVersion = name, s.target.TransactionsVersion()
	return h
}

// session is a producer's (transactional id, producer id, epoch).
type session struct {
	txnID string
	pid   int64
	epoch int16
}

func initRequest(txnID string) model.Request {
	r := model.NewRequest()
	r.TransactionalID = txnID
	return r
}

func (s session) request() model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = s.txnID, s.pid, s.epoch
	return r
}

func (s session) addPartitions(ps ...model.Partition) model.Request {
	r := s.request()
	r.Partitions = ps
	return r
}

func (s session) produce(p model.Partition, seq int32, keys ...string) model.Request {
	r := s.request()
	r.Partition, r.Sequence = p, seq
	for _, k := range keys {
		r.Records = append(r.Records, model.Record{Key: k, Value: "fare of " + k})
	}
	return r
}

func (s session) endTxn(commit bool) model.Request {
	r := s.request()
	r.Commit = commit
	return r
}

func fetchRequest(p model.Partition, iso model.Isolation) model.Request {
	r := model.NewRequest()
	r.Partition, r.Offset, r.Isolation = p, 0, iso
	return r
}

func keysOf(records []model.FetchedRecord) []string {
	var keys []string
	for _, r := range records {
		keys = append(keys, r.Key)
	}
	return keys
}

// lose sends a request of proc whose answer is lost on the way back: the
// broker applies it, the history shows it never returning.
func (s *scenario) lose(proc string, kind model.Kind, req model.Request) {
	s.t.Helper()
	s.lossy.dropNext.Store(true)
	res := s.send(proc, kind, req)
	require.False(s.t, res.Answered)
}

// lossyBroker passes requests to b and can drop the next answer.
type lossyBroker struct {
	b        model.Broker
	dropNext atomic.Bool
}

func (l *lossyBroker) call(ctx context.Context, kind model.Kind, req model.Request) model.Result {
	res, err := model.Send(ctx, l.b, model.Op{Kind: kind, Req: req})
	if err != nil || l.dropNext.Swap(false) {
		return model.NoAnswer()
	}
	return res
}

func (l *lossyBroker) InitProducerID(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.InitProducerID, r)
}
func (l *lossyBroker) AddPartitions(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.AddPartitions, r)
}
func (l *lossyBroker) Produce(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.Produce, r)
}
func (l *lossyBroker) AddOffsets(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.AddOffsets, r)
}
func (l *lossyBroker) TxnOffsetCommit(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.TxnOffsetCommit, r)
}
func (l *lossyBroker) EndTxn(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.EndTxn, r)
}
func (l *lossyBroker) JoinGroup(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.JoinGroup, r)
}
func (l *lossyBroker) LeaveGroup(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.LeaveGroup, r)
}
func (l *lossyBroker) OffsetFetch(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.OffsetFetch, r)
}
func (l *lossyBroker) Fetch(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.Fetch, r)
}
func (l *lossyBroker) OffsetCommit(ctx context.Context, r model.Request) model.Result {
	return l.call(ctx, model.OffsetCommit, r)
}

func joinRequest(group, member string, partitions ...model.Partition) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID, r.Partitions = group, member, partitions
	return r
}

func (s session) addOffsets(group string) model.Request {
	r := s.request()
	r.Group = group
	return r
}

func (s session) commitOffsets(group, member string, generation int32, offsets map[model.Partition]int64) model.Request {
	r := s.request()
	r.Group, r.MemberID, r.GenerationID, r.Offsets = group, member, generation, offsets
	return r
}

func offsetFetchRequest(group string, p model.Partition) model.Request {
	r := model.NewRequest()
	r.Group, r.Partition, r.RequireStable = group, p, true
	return r
}

// begin initialises a transactional producer and, under transactions v1,
// registers partitions in its first transaction (v2 adds them on produce).
func (s *scenario) begin(proc, txnID string, partitions ...model.Partition) session {
	s.t.Helper()
	got := s.ok(proc, model.InitProducerID, initRequest(txnID))
	ses := session{txnID, got.ProducerID, got.Epoch}
	if len(partitions) > 0 && s.target.TransactionsVersion() == 1 {
		s.ok(proc, model.AddPartitions, ses.addPartitions(partitions...))
	}
	return ses
}

// silence stops the member's heartbeats, as a process paused as a whole
// (a stop-the-world garbage collection) stops them.
func (t *Target) silence(id string) {
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	if m, ok := t.members[id]; ok {
		m.alive = 0
	}
}
