package recorder

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// tap is one tapped connection with no broker behind it: the test writes
// the client's request frames and feeds the broker's response frames.
type tap struct {
	t      *testing.T
	client *Client
	conn   net.Conn
	in     *bytes.Buffer // what Read returns
	rec    *histories.Recorder
	corr   int32
}

func newWire(t *testing.T) *tap {
	rec := histories.NewRecorder(nil, nil)
	client := New("W1", Config{Observer: rec, Cluster: fakeCluster{}, Logf: t.Logf})
	in := &bytes.Buffer{}
	return &tap{t: t, client: client, conn: client.Tap(&fakeConn{in: in}), in: in, rec: rec}
}

// fakeCluster names the history's topics, ids and groups with the prefix
// "fencecheck-" on the cluster, whose topics trips and fares have two
// partitions each; its time runs at a hundredth of the history's. It
// knows the ids of tripsID and of otherID, a topic the history does not
// hold.
type fakeCluster struct{}

var tripsID, otherID = [16]byte{1}, [16]byte{2}

func (fakeCluster) Name(cluster string) (string, bool) {
	return strings.CutPrefix(cluster, "fencecheck-")
}
func (fakeCluster) Partitions(topic string) int32 {
	return map[string]int32{"trips": 2, "fares": 2}[topic]
}
func (fakeCluster) Millis(ms int32) int64 { return int64(ms) * 100 }
func (fakeCluster) TopicByID(_ context.Context, id [16]byte) (string, bool) {
	name, ok := map[[16]byte]string{tripsID: "fencecheck-trips", otherID: "other"}[id]
	return name, ok
}

// send writes req as a client does, at version v, and returns its
// correlation id.
func (w *tap) send(req kmsg.Request, v int16) int32 {
	w.t.Helper()
	req.SetVersion(v)
	w.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo")).AppendRequest(nil, req, w.corr)
	// Written in two pieces: a frame may span writes.
	_, err := w.conn.Write(frame[:5])
	require.NoError(w.t, err)
	_, err = w.conn.Write(frame[5:])
	require.NoError(w.t, err)
	return w.corr
}

// answer feeds the response to the request corr, at version v, as a
// broker frames it.
func (w *tap) answer(corr int32, resp kmsg.Response, v int16) {
	w.t.Helper()
	resp.SetVersion(v)
	body := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() {
		body = append(body, 0) // no header tags
	}
	body = resp.AppendTo(body)
	w.in.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	w.in.Write(body)
	buf := make([]byte, 3) // read in small pieces, as a frame may span reads
	for w.in.Len() > 0 {
		_, err := w.conn.Read(buf)
		require.NoError(w.t, err)
	}
}

func (w *tap) ops() []histories.Op { return w.rec.History().Ops }

type fakeConn struct {
	net.Conn
	in *bytes.Buffer
}

func (f *fakeConn) Write(b []byte) (int, error) { return len(b), nil }
func (f *fakeConn) Read(b []byte) (int, error)  { return f.in.Read(b) }
func (f *fakeConn) Close() error                { return nil }

// TestRecorderReadsTransactionalRequests: a client's InitProducerId,
// Produce (one operation per partition, each on a lane of its own) and
// EndTxn are read off the wire with their fields in the model's names
// and time, and the API version of the request they came in; a partition
// the broker did not take (misrouted) is left out.
func TestRecorderReadsTransactionalRequests(t *testing.T) {
	w := newWire(t)
	init := kmsg.NewPtrInitProducerIDRequest()
	id := "fencecheck-ctp-w1"
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 3000
	corr := w.send(init, 4)
	initResp := kmsg.NewPtrInitProducerIDResponse()
	initResp.ProducerID, initResp.ProducerEpoch = 7, 2
	w.answer(corr, initResp, 4)

	produce := twoPartitionProduce(id, func(p int) wire.ProducerBatch {
		return wire.ProducerBatch{ProducerID: 7, Epoch: 2, FirstSequence: int32(p), Transactional: true,
			Records: []model.Record{{Key: []string{"trip-a01", "trip-b01"}[p], Value: "fare"}}}
	})
	corr = w.send(produce, 12)
	produceResp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "fencecheck-fares"
	ok, misrouted := kmsg.NewProduceResponseTopicPartition(), kmsg.NewProduceResponseTopicPartition()
	ok.Partition, ok.BaseOffset = 0, 40
	misrouted.Partition, misrouted.ErrorCode = 1, kerr.NotLeaderForPartition.Code
	rt.Partitions = []kmsg.ProduceResponseTopicPartition{ok, misrouted}
	produceResp.Topics = []kmsg.ProduceResponseTopic{rt}
	w.answer(corr, produceResp, 12)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, 7, 2, true
	corr = w.send(end, 5)
	endResp := kmsg.NewPtrEndTxnResponse()
	endResp.ProducerID, endResp.ProducerEpoch = 7, 3
	w.answer(corr, endResp, 5)

	ops := w.ops()
	require.Len(t, ops, 3)
	require.Equal(t, model.InitProducerID, ops[0].Kind)
	require.Equal(t, "W1", ops[0].Proc)
	require.Equal(t, "ctp-w1", ops[0].Req.TransactionalID)
	require.Equal(t, int64(300000), ops[0].Req.TimeoutMs, "3 s at a time scale of 0.01")
	require.Equal(t, model.NoProducerID, ops[0].Req.ProducerID)
	require.Equal(t, int64(7), ops[0].Result.Resp.ProducerID)
	require.Equal(t, int16(2), ops[0].Result.Resp.Epoch)

	require.Equal(t, model.Produce, ops[1].Kind)
	require.Equal(t, "W1", ops[1].Proc, "the misrouted partition's lane W1.2 was in flight beside it")
	require.Equal(t, model.Partition("fares-0"), ops[1].Req.Partition)
	require.Equal(t, "ctp-w1", ops[1].Req.TransactionalID)
	require.Equal(t, []model.Record{{Key: "trip-a01", Value: "fare"}}, ops[1].Req.Records)
	require.Equal(t, int64(40), ops[1].Result.Resp.BaseOffset)
	require.True(t, ops[1].Returned)

	require.Equal(t, model.EndTxn, ops[2].Kind)
	require.True(t, ops[2].Req.Commit)
	require.Equal(t, int16(3), ops[2].Result.Resp.Epoch, "v5 answers the epoch the producer goes on with")

	for i, want := range []int16{4, 12, 5} {
		got, known := ops[i].APIVersion.Number()
		require.True(t, known, "op %d carries the version it was read at", i)
		require.Equal(t, want, got, "op %d: the request header's version", i)
	}
}

// TestRecorderKnowsTheTransactionProtocolSpoken: EndTxn at version 5 or
// later is transactions v2 (KIP-890), an older one v1, whatever the
// broker could speak; a client that spoke both has no one protocol.
func TestRecorderKnowsTheTransactionProtocolSpoken(t *testing.T) {
	endTxnAt := func(w *tap, version int16) {
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch = "fencecheck-ctp-w1", 7, 2
		w.answer(w.send(end, version), kmsg.NewPtrEndTxnResponse(), version)
	}
	w := newWire(t)
	require.Equal(t, 0, w.client.TransactionsVersion(), "no EndTxn yet")
	endTxnAt(w, 3)
	require.Equal(t, 1, w.client.TransactionsVersion())
	endTxnAt(w, 3)
	require.Equal(t, 1, w.client.TransactionsVersion())
	endTxnAt(w, 5)
	require.Equal(t, 0, w.client.TransactionsVersion(), "both spoken")

	w = newWire(t)
	endTxnAt(w, 5)
	require.Equal(t, 2, w.client.TransactionsVersion())
}

// TestRecorderJoinThenSync: a new member's JoinGroup that only learns its
// id and the JoinGroup that joins are one join_group, the JoinGroup alone
// (join_only), with the member's timeouts and protocols. Each SyncGroup
// is a sync_group of its own, REBALANCE_IN_PROGRESS included, and the
// leader's carries its assignment of every member.
func TestRecorderJoinThenSync(t *testing.T) {
	w := newWire(t)
	join := func(member string, code int16, gen int32, leader string) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType, req.SessionTimeoutMillis = "fencecheck-fare-workers", member, "consumer", 1000
		req.RebalanceTimeoutMillis = 3000
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"fencecheck-trips"}
		protocol := kmsg.NewJoinGroupRequestProtocol()
		protocol.Name, protocol.Metadata = "cooperative-sticky", meta.AppendTo(nil)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol}
		corr := w.send(req, 9)
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.MemberID, resp.Generation, resp.LeaderID = code, "m1", gen, leader
		if code == 0 {
			resp.ProtocolType, resp.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("cooperative-sticky")
		}
		w.answer(corr, resp, 9)
	}
	assignment := func(partitions ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "fencecheck-trips", partitions
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{at}
		return a.AppendTo(nil)
	}
	sync := func(gen int32, code int16, leads bool, assigned ...int32) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = "fencecheck-fare-workers", "m1", gen
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("cooperative-sticky") // v5+
		if leads {
			for member, share := range map[string][]int32{"m1": {1}, "m2": {0}} {
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID, a.MemberAssignment = member, assignment(share...)
				req.GroupAssignment = append(req.GroupAssignment, a)
			}
		}
		corr := w.send(req, 5)
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = code
		if assigned != nil {
			resp.MemberAssignment = assignment(assigned...)
		}
		w.answer(corr, resp, 5)
	}
	join("", kerr.MemberIDRequired.Code, -1, "")
	require.Empty(t, w.ops(), "the join goes on with the member id")
	join("m1", 0, 1, "m1")
	sync(1, kerr.RebalanceInProgress.Code, true)
	join("m1", 0, 2, "m1")
	sync(2, 0, true, 1)

	ops := w.ops()
	require.Len(t, ops, 4)
	j := ops[0]
	require.Equal(t, model.JoinGroup, j.Kind)
	require.True(t, j.Req.JoinOnly)
	require.Equal(t, "fare-workers", j.Req.Group)
	require.Empty(t, j.Req.MemberID, "a new member")
	require.Equal(t, []model.Partition{"trips-0", "trips-1"}, j.Req.Partitions)
	require.Equal(t, int64(100000), j.Req.SessionTimeoutMs)
	require.Equal(t, int64(300000), j.Req.RebalanceTimeoutMs)
	require.Equal(t, "consumer", j.Req.ProtocolType)
	require.Equal(t, []model.Protocol{{Name: "cooperative-sticky", Topics: []string{"trips"}}}, j.Req.Protocols)
	require.True(t, j.Result.Succeeded())
	require.Equal(t, "m1", j.Result.Resp.MemberID)
	require.Equal(t, int32(1), j.Result.Resp.GenerationID)
	require.Equal(t, "m1", j.Result.Resp.Leader)
	require.Empty(t, j.Result.Resp.Assignment, "a JoinGroup assigns nothing")
	require.Equal(t, "cooperative-sticky", j.Result.Resp.Protocol)
	require.Equal(t, "consumer", j.Result.Resp.ProtocolType)

	s := ops[1]
	require.Equal(t, model.SyncGroup, s.Kind)
	require.Equal(t, int32(1), s.Req.GenerationID)
	require.Equal(t, map[string][]model.Partition{"m1": {"trips-1"}, "m2": {"trips-0"}}, s.Req.Assignments)
	require.Equal(t, model.RebalanceInProgress, s.Result.Err)
	require.Equal(t, "consumer", s.Req.ProtocolType)
	require.Equal(t, "cooperative-sticky", s.Req.Protocol)

	require.Equal(t, model.JoinGroup, ops[2].Kind)
	require.Equal(t, "m1", ops[2].Req.MemberID)
	require.Equal(t, int32(2), ops[2].Result.Resp.GenerationID)
	require.Equal(t, model.SyncGroup, ops[3].Kind)
	require.True(t, ops[3].Result.Succeeded())
	require.Equal(t, []model.Partition{"trips-1"}, ops[3].Result.Resp.Assignment)
}

// TestRecorderLostAnswers: a request in flight when its connection closes
// never returned, but a join goes on (its member asks again) and ends when
// a JoinGroup answers; only a member that joined is recorded leaving.
func TestRecorderLostAnswers(t *testing.T) {
	w := newWire(t)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.MemberID, commit.Generation = "fencecheck-ctp-w1", "fencecheck-fare-workers", "m1", 3
	commit.ProducerID, commit.ProducerEpoch = 7, 0
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "fencecheck-trips"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 1, 12
	ct.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{cp}
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{ct}
	w.send(commit, 5)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID = "fencecheck-fare-workers", "m1"
	w.send(join, 9)
	require.NoError(t, w.conn.Close())

	corr := w.send(join, 9) // again, once reconnected
	joined := kmsg.NewPtrJoinGroupResponse()
	joined.MemberID, joined.Generation = "m1", 4
	w.answer(corr, joined, 9)
	for _, member := range []string{"m9", "m1"} {
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = "fencecheck-fare-workers"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = member
		leave.Members = []kmsg.LeaveGroupRequestMember{m}
		w.answer(w.send(leave, 5), kmsg.NewPtrLeaveGroupResponse(), 5)
	}
	w.client.Close()

	ops := w.ops()
	require.Len(t, ops, 3)
	require.Equal(t, model.TxnOffsetCommit, ops[0].Kind)
	require.Equal(t, map[model.Partition]int64{"trips-1": 12}, ops[0].Req.Offsets)
	require.Equal(t, int32(3), ops[0].Req.GenerationID)
	require.Equal(t, "W1", ops[0].Proc)
	require.False(t, ops[0].Returned)
	require.Equal(t, model.JoinGroup, ops[1].Kind)
	require.Equal(t, "W1.2", ops[1].Proc, "in flight beside the commit")
	require.Equal(t, "W1", ops[1].Process(), "a lane of W1")
	require.Equal(t, "W1", ops[0].Process())
	require.True(t, ops[1].Result.Succeeded())
	require.Equal(t, int32(4), ops[1].Result.Resp.GenerationID)
	require.Empty(t, ops[1].Result.Resp.Assignment)
	require.Equal(t, model.LeaveGroup, ops[2].Kind)
	require.Equal(t, "m1", ops[2].Req.MemberID)
}

// TestRecorderOffsetFetchPerPartition: an OffsetFetch of several partitions
// (the list-of-groups shape) is one offset_fetch per partition, each
// answered by its own partition's code.
func TestRecorderOffsetFetchPerPartition(t *testing.T) {
	w := newWire(t)
	req := offsetFetchOfTwoPartitions()
	req.RequireStable = true
	corr := w.send(req, 9)

	resp := kmsg.NewPtrOffsetFetchResponse()
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = "fencecheck-fare-workers"
	rt := kmsg.NewOffsetFetchResponseGroupTopic()
	rt.Topic = "fencecheck-trips"
	unstable, committed := kmsg.NewOffsetFetchResponseGroupTopicPartition(), kmsg.NewOffsetFetchResponseGroupTopicPartition()
	unstable.Partition, unstable.Offset, unstable.ErrorCode = 0, -1, kerr.UnstableOffsetCommit.Code
	committed.Partition, committed.Offset = 1, 12
	rt.Partitions = []kmsg.OffsetFetchResponseGroupTopicPartition{unstable, committed}
	rg.Topics = []kmsg.OffsetFetchResponseGroupTopic{rt}
	resp.Groups = []kmsg.OffsetFetchResponseGroup{rg}
	w.answer(corr, resp, 9)

	ops := w.ops()
	require.Len(t, ops, 2)
	for i, op := range ops {
		require.Equal(t, model.OffsetFetch, op.Kind)
		require.Equal(t, "fare-workers", op.Req.Group)
		require.True(t, op.Req.RequireStable)
		require.Equal(t, model.Partition(fmt.Sprintf("trips-%d", i)), op.Req.Partition)
	}
	require.Equal(t, model.UnstableOffsetCommit, ops[0].Result.Err)
	require.True(t, ops[1].Result.Succeeded())
	require.Equal(t, int64(12), ops[1].Result.Resp.Offset)
}

// TestRecorderOffsetFetchOfAllPartitions: an OffsetFetch whose topics are
// null (an admin's listConsumerGroupOffsets) is one offset_fetch of all
// partitions. Its answer lists the history's partitions at their offsets
// and those answered UNSTABLE_OFFSET_COMMIT; a topic the history does not
// hold is left out. An empty topic list asks for nothing.
func TestRecorderOffsetFetchOfAllPartitions(t *testing.T) {
	w := newWire(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "fencecheck-fare-workers"
	none := kmsg.NewOffsetFetchRequestGroup()
	none.Group, none.Topics = "fencecheck-fare-workers", []kmsg.OffsetFetchRequestGroupTopic{}
	req.Groups = []kmsg.OffsetFetchRequestGroup{all, none}
	corr := w.send(req, 9)

	resp := kmsg.NewPtrOffsetFetchResponse()
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = "fencecheck-fare-workers"
	trips, other := kmsg.NewOffsetFetchResponseGroupTopic(), kmsg.NewOffsetFetchResponseGroupTopic()
	trips.Topic, other.Topic = "fencecheck-trips", "someone-elses"
	unstable, committed := kmsg.NewOffsetFetchResponseGroupTopicPartition(), kmsg.NewOffsetFetchResponseGroupTopicPartition()
	unstable.Partition, unstable.Offset, unstable.ErrorCode = 0, -1, kerr.UnstableOffsetCommit.Code
	committed.Partition, committed.Offset = 1, 12
	trips.Partitions = []kmsg.OffsetFetchResponseGroupTopicPartition{unstable, committed}
	other.Partitions = []kmsg.OffsetFetchResponseGroupTopicPartition{committed}
	rg.Topics = []kmsg.OffsetFetchResponseGroupTopic{trips, other}
	resp.Groups = []kmsg.OffsetFetchResponseGroup{rg}
	w.answer(corr, resp, 9)

	ops := w.ops()
	require.Len(t, ops, 1)
	op := ops[0]
	require.Equal(t, model.OffsetFetch, op.Kind)
	require.True(t, op.Req.AllPartitions)
	require.Empty(t, op.Req.Partition)
	require.True(t, op.Req.RequireStable)
	require.True(t, op.Result.Succeeded())
	require.Equal(t, map[model.Partition]int64{"trips-1": 12}, op.Result.Resp.FetchedOffsets)
	require.Equal(t, []model.Partition{"trips-0"}, op.Result.Resp.Unstable)
}

// TestRecorderOffsetFetchOfAllPartitionsOneGroup: the one-group shape
// (v2 to v7) with topics null is a fetch of all partitions too, and the
// group's error is its answer.
func TestRecorderOffsetFetchOfAllPartitionsOneGroup(t *testing.T) {
	w := newWire(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "fencecheck-fare-workers"
	corr := w.send(req, 7)

	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	w.answer(corr, resp, 7)

	ops := w.ops()
	require.Len(t, ops, 1)
	require.True(t, ops[0].Req.AllPartitions)
	require.Equal(t, model.GroupAuthorizationFailed, ops[0].Result.Err)
}

// TestRecorderOffsetFetchOfAllPartitionsBelowZero: a listing at a
// negative offset, which the format cannot hold, leaves the answer
// undecided, so that the history still loads.
func TestRecorderOffsetFetchOfAllPartitionsBelowZero(t *testing.T) {
	w := newWire(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "fencecheck-fare-workers"
	corr := w.send(req, 7)

	resp := kmsg.NewPtrOffsetFetchResponse()
	topic := kmsg.NewOffsetFetchResponseTopic()
	topic.Topic = "fencecheck-trips"
	none := kmsg.NewOffsetFetchResponseTopicPartition()
	none.Partition, none.Offset = 0, -1
	topic.Partitions = []kmsg.OffsetFetchResponseTopicPartition{none}
	resp.Topics = []kmsg.OffsetFetchResponseTopic{topic}
	w.answer(corr, resp, 7)

	ops := w.ops()
	require.Len(t, ops, 1)
	require.True(t, ops[0].Result.Undecided(), "%+v", ops[0].Result)
	var saved bytes.Buffer
	require.NoError(t, histories.Save(&saved, histories.History{Ops: ops}))
	_, err := histories.Load(&saved)
	require.NoError(t, err)
}

// TestRecorderOffsetFetchOfAMember: an OffsetFetch v9+ of a KIP-848
// consumer group's member is recorded with its member id and epoch, and
// the group's STALE_MEMBER_EPOCH answers each partition.
func TestRecorderOffsetFetchOfAMember(t *testing.T) {
	w := newWire(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = "fencecheck-fare-workers", kmsg.StringPtr("member-1"), 7
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = "fencecheck-trips", []int32{0}
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
	admin := kmsg.NewOffsetFetchRequestGroup()
	admin.Group, admin.Topics = "fencecheck-fare-workers", []kmsg.OffsetFetchRequestGroupTopic{gt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g, admin}
	corr := w.send(req, 9)

	resp := kmsg.NewPtrOffsetFetchResponse()
	stale := kmsg.NewOffsetFetchResponseGroup()
	stale.Group, stale.ErrorCode = "fencecheck-fare-workers", kerr.StaleMemberEpoch.Code
	resp.Groups = []kmsg.OffsetFetchResponseGroup{stale}
	w.answer(corr, resp, 9)

	ops := w.ops()
	require.Len(t, ops, 2)
	require.Equal(t, "member-1", ops[0].Req.MemberID)
	require.Equal(t, int32(7), ops[0].Req.MemberEpoch)
	require.Equal(t, model.StaleMemberEpoch, ops[0].Result.Err)
	require.Empty(t, ops[1].Req.MemberID, "an admin's fetch names no member")
}

// TestRecorderUnansweredRejoin: a member's rejoin that the broker never
// answered is recorded unanswered when its client goes; a new member's
// join that only learned its id is left out.
func TestRecorderUnansweredRejoin(t *testing.T) {
	w := newWire(t)
	rejoin := kmsg.NewPtrJoinGroupRequest()
	rejoin.Group, rejoin.MemberID = "fencecheck-fare-workers", "m1"
	w.send(rejoin, 9)
	fresh := kmsg.NewPtrJoinGroupRequest()
	fresh.Group = "fencecheck-fare-workers"
	corr := w.send(fresh, 9)
	required := kmsg.NewPtrJoinGroupResponse()
	required.ErrorCode, required.MemberID = kerr.MemberIDRequired.Code, "m2"
	w.answer(corr, required, 9)
	require.NoError(t, w.conn.Close())
	w.client.Close()

	ops := w.ops()
	require.Len(t, ops, 1)
	require.Equal(t, model.JoinGroup, ops[0].Kind)
	require.Equal(t, "m1", ops[0].Req.MemberID)
	require.False(t, ops[0].Returned)
}

// wireConn is a connection that keeps what is written to it, and tells
// when it is closed.
type wireConn struct {
	net.Conn
	mu      sync.Mutex
	written []byte
	closed  chan struct{}
}

func newWireConn() *wireConn { return &wireConn{closed: make(chan struct{})} }

func (w *wireConn) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written = append(w.written, b...)
	return len(b), nil
}

func (w *wireConn) Read([]byte) (int, error)    { <-w.closed; return 0, io.EOF }
func (w *wireConn) SetDeadline(time.Time) error { return nil }

func (w *wireConn) Close() error {
	select {
	case <-w.closed:
	default:
		close(w.closed)
	}
	return nil
}

func (w *wireConn) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.written...)
}

// A delayed request never reaches the broker on its own connection,
// which is cut as it goes out (the operation never returned); it is
// delivered later, byte for byte, on a connection of its own.
func TestDelayedRequestArrivesLateOnAConnectionOfItsOwn(t *testing.T) {
	conns := make(chan *wireConn, 2)
	dial := func(context.Context, string, string) (net.Conn, error) {
		c := newWireConn()
		conns <- c
		return c, nil
	}
	rec := histories.NewRecorder(nil, nil)
	client := New("W1", Config{Observer: rec, Cluster: fakeCluster{}, Logf: t.Logf})
	conn, err := client.Dial(dial)(context.Background(), "tcp", "broker-1:9092")
	require.NoError(t, err)
	first := <-conns

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "fencecheck-ctp-w1", 7, 2, true
	end.SetVersion(4)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo")).AppendRequest(nil, end, 1)
	client.DelayNext(50 * time.Millisecond)
	_, err = conn.Write(frame)
	require.NoError(t, err)

	select {
	case <-first.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection was not cut")
	}
	require.Empty(t, first.bytes(), "the request did not go out on its connection")
	require.NoError(t, conn.Close()) // as the client does with a broken connection
	var late *wireConn
	select {
	case late = <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("the delayed request was never delivered")
	}
	require.Eventually(t, func() bool { return bytes.Equal(frame, late.bytes()) }, 5*time.Second, time.Millisecond)
	late.Close()

	ops := rec.History().Ops
	require.Len(t, ops, 1)
	require.Equal(t, model.EndTxn, ops[0].Kind)
	require.False(t, ops[0].Returned, "its answer never came back")
}

// fetchOf is a Fetch of trips' partitions at their offsets, in session
// id at epoch.
func fetchOf(id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SessionID, req.SessionEpoch, req.IsolationLevel = id, epoch, 1
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = "fencecheck-trips"
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = p, offsets[p]
		topic.Partitions = append(topic.Partitions, rp)
	}
	req.Topics = []kmsg.FetchRequestTopic{topic}
	if len(forget) > 0 {
		f := kmsg.NewFetchRequestForgottenTopic()
		f.Topic, f.Partitions = "fencecheck-trips", forget
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{f}
	}
	return req
}

// fetched is a Fetch answer of session id with partition p's records
// keys, written at offset from by producer 7 in one transaction, which
// aborted when aborted.
func fetched(id, p int32, from int64, aborted bool, keys ...string) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = id
	var records []model.Record
	for _, k := range keys {
		records = append(records, model.Record{Key: k, Value: "a trip"})
	}
	raw := wire.ProducerBatch{ProducerID: 7, Transactional: true, Records: records}.Encode()
	binary.BigEndian.PutUint64(raw[:8], uint64(from))
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.HighWatermark, rp.LastStableOffset = p, from+int64(len(keys))+1, from+int64(len(keys))+1
	rp.RecordBatches = raw
	if aborted {
		a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		a.ProducerID, a.FirstOffset = 7, from
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{a}
	}
	topic := kmsg.NewFetchResponseTopic()
	topic.Topic, topic.Partitions = "fencecheck-trips", []kmsg.FetchResponseTopicPartition{rp}
	resp.Topics = []kmsg.FetchResponseTopic{topic}
	return resp
}

// TestRecorderFetchSessions: a fetch is an operation per partition the
// answer carries, read from where the fetch session (KIP-227) has it: a
// full request starts session 9 at trips-0 offset 0 and trips-1 offset 3;
// the incremental one lists only trips-0, moved to 2, and its answer
// carries only trips-1, read from 3, where the session left it. A
// read_committed fetch drops what the answer lists as aborted.
func TestRecorderFetchSessions(t *testing.T) {
	w := newWire(t)
	corr := w.send(fetchOf(0, 0, map[int32]int64{0: 0, 1: 3}), 12)
	full := fetched(9, 0, 0, false, "trip-1", "trip-2")
	full.Topics[0].Partitions = append(full.Topics[0].Partitions, fetched(9, 1, 3, true, "trip-x").Topics[0].Partitions...)
	w.answer(corr, full, 12)
	corr = w.send(fetchOf(9, 1, map[int32]int64{0: 2}), 12)
	w.answer(corr, fetched(9, 1, 3, false, "trip-3"), 12)
	corr = w.send(fetchOf(9, 2, nil, 1), 12)
	w.answer(corr, fetched(9, 1, 4, false, "trip-9"), 12) // forgotten: not a read of this session

	var reads []string
	for _, op := range w.ops() {
		require.Equal(t, model.Fetch, op.Kind)
		require.Equal(t, model.ReadCommitted, op.Req.Isolation)
		reads = append(reads, fmt.Sprintf("%s@%d %v hw %d", op.Req.Partition, op.Req.Offset, keysOf(op.Result.Resp.Records), op.Result.Resp.HighWatermark))
	}
	require.Equal(t, []string{
		"trips-0@0 [trip-1 trip-2] hw 3",
		"trips-1@3 [] hw 5",
		"trips-1@3 [trip-3] hw 5",
	}, reads)
}

func keysOf(records []model.FetchedRecord) []string {
	keys := []string{}
	for _, r := range records {
		keys = append(keys, r.Key)
	}
	return keys
}

// TestRecorderHeartbeats: a member's heartbeat is recorded with its
// answer, REBALANCE_IN_PROGRESS too; one sent before the member has an id
// or a generation is not a member's, and is left out.
func TestRecorderHeartbeats(t *testing.T) {
	w := newWire(t)
	for _, tc := range []struct {
		member string
		gen    int32
		code   int16
	}{{"m1", 3, 0}, {"m1", 3, kerr.RebalanceInProgress.Code}, {"m1", 2, kerr.IllegalGeneration.Code}, {"", -1, 0}} {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = "fencecheck-fare-workers", tc.member, tc.gen
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = tc.code
		w.answer(w.send(req, 4), resp, 4)
	}
	var got []string
	for _, op := range w.ops() {
		require.Equal(t, model.Heartbeat, op.Kind)
		got = append(got, fmt.Sprintf("%s gen %d: %s", op.Req.MemberID, op.Req.GenerationID, op.Result.Err))
	}
	require.Equal(t, []string{"m1 gen 3: ", "m1 gen 3: REBALANCE_IN_PROGRESS", "m1 gen 2: ILLEGAL_GENERATION"}, got)
}

// Two transactional ids in one client are two producers sharing a
// client.id (librdkafka names every instance "rdkafka"): each
// transactional id but the first is a process of its own, on lanes of its
// own, whose client is the one they share; what carries no transactional
// id stays the client's.
func TestRecorderTellsProducersSharingAClientIDApart(t *testing.T) {
	rec := histories.NewRecorder(nil, nil)
	client := New("rdkafka", Config{Observer: rec, Cluster: fakeCluster{}, Logf: t.Logf})
	w := &tap{t: t, client: client, in: &bytes.Buffer{}, rec: rec}
	w.conn = client.Tap(&fakeConn{in: w.in})
	var corrs []int32 // all in flight at once
	for _, id := range []string{"fencecheck-a", "fencecheck-a", "fencecheck-b", "fencecheck-c", "fencecheck-b"} {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = &id
		corrs = append(corrs, w.send(init, 4))
	}
	corrs = append(corrs, w.send(kmsg.NewPtrInitProducerIDRequest(), 4)) // idempotent: the client's
	for _, corr := range corrs {
		w.answer(corr, kmsg.NewPtrInitProducerIDResponse(), 4)
	}
	var got []string
	for _, op := range w.ops() {
		got = append(got, op.Proc+" "+op.Client)
	}
	require.Equal(t, []string{"rdkafka ", "rdkafka.2 rdkafka", "rdkafka[b] rdkafka", "rdkafka[c] rdkafka", "rdkafka[b].2 rdkafka", "rdkafka.3 rdkafka"}, got)
}

// closingConn notes that it was closed.
type closingConn struct {
	fakeConn
	closed bool
}

func (c *closingConn) Close() error { c.closed = true; return nil }

// Without a recording, a produce goes out unread; a fault armed for the
// next request still meets it.
func TestUnrecordedClientStillTakesFaults(t *testing.T) {
	client := New("W1", Config{Cluster: fakeCluster{}, Logf: t.Logf})
	raw := &closingConn{fakeConn: fakeConn{in: &bytes.Buffer{}}}
	conn := client.Tap(raw)
	corr := int32(0)
	produce := func() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.SetVersion(9)
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "fencecheck-trips"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = wire.ProducerBatch{ProducerID: 7, Records: []model.Record{{Key: "trip-a01"}}}.Encode()
		topic.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = []kmsg.ProduceRequestTopic{topic}
		corr++
		_, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, corr))
		require.NoError(t, err)
	}
	produce()
	require.False(t, raw.closed)
	client.LoseNextAnswer()
	produce()
	require.True(t, raw.closed, "the answer to the produce is lost")
}

// With AnswersAfterForwarding, an answer is read when the connection's
// next Read begins, or before the client's next request, so that the
// request goes on the lane the answer freed, as it does without it.
func TestAnswersReadAfterForwarding(t *testing.T) {
	rec := histories.NewRecorder(nil, nil)
	client := New("W1", Config{Observer: rec, Cluster: fakeCluster{}, Logf: t.Logf, AnswersAfterForwarding: true})
	in := &bytes.Buffer{}
	w := &tap{t: t, client: client, conn: client.Tap(&fakeConn{in: in}), in: in, rec: rec}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.Commit = "fencecheck-ctp-w1", 7, true
	for range 2 {
		corr := w.send(end, 3)
		w.answer(corr, kmsg.NewPtrEndTxnResponse(), 3)
	}
	ops := w.ops()
	require.Len(t, ops, 1, "the second answer is not read yet")
	require.Equal(t, "W1", ops[0].Proc)
	require.NoError(t, w.conn.Close())
	ops = w.ops()
	require.Len(t, ops, 2, "read at Close")
	require.Equal(t, "W1", ops[1].Proc, "the lane the first answer freed")
	require.True(t, ops[1].Returned)
	require.Less(t, ops[0].Return, ops[1].Call)
}

// TestRecorderPlainOffsetCommits: a consumer's OffsetCommit outside a
// transaction is an offset_commit with the member and generation it sent
// and an offset per partition, refused by the first partition's refusal;
// a simple consumer's carries no member and generation -1.
func TestRecorderPlainOffsetCommits(t *testing.T) {
	w := newWire(t)
	for _, tc := range []struct {
		member string
		gen    int32
		code   int16
	}{{"m1", 3, 0}, {"m1", 2, kerr.IllegalGeneration.Code}, {"", -1, 0}, {"m1", 3, kerr.RebalanceInProgress.Code}} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.MemberID, req.Generation = "fencecheck-fare-auditors", tc.member, tc.gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "fencecheck-trips"
		for p := range int32(2) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 10+int64(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp := kmsg.NewPtrOffsetCommitResponse()
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = "fencecheck-trips"
		for p := range int32(2) {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, tc.code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = []kmsg.OffsetCommitResponseTopic{st}
		w.answer(w.send(req, 8), resp, 8)
	}
	var got []string
	for _, op := range w.ops() {
		require.Equal(t, model.OffsetCommit, op.Kind)
		require.Equal(t, "fare-auditors", op.Req.Group)
		require.Equal(t, map[model.Partition]int64{"trips-0": 10, "trips-1": 11}, op.Req.Offsets)
		got = append(got, fmt.Sprintf("%q gen %d: %s", op.Req.MemberID, op.Req.GenerationID, op.Result.Err))
	}
	require.Equal(t, []string{`"m1" gen 3: `, `"m1" gen 2: ILLEGAL_GENERATION`, `"" gen -1: `, `"m1" gen 3: REBALANCE_IN_PROGRESS`}, got)
}

// TestRecorderStaticMember: a static member's group.instance.id (KIP-345)
// is recorded on each of the six requests that carry it, and a fenced
// instance's answer is FENCED_INSTANCE_ID.
func TestRecorderStaticMember(t *testing.T) {
	w := newWire(t)
	instance := "pricer-1"
	group := "fencecheck-fare-pricers"

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID, join.ProtocolType = group, &instance, "consumer"
	joined := kmsg.NewPtrJoinGroupResponse()
	joined.MemberID, joined.Generation, joined.LeaderID = "m1", 1, "m1"
	w.answer(w.send(join, 5), joined, 5)

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation, sync.InstanceID = group, "m1", 1, &instance
	w.answer(w.send(sync, 3), kmsg.NewPtrSyncGroupResponse(), 3)

	beat := kmsg.NewPtrHeartbeatRequest()
	beat.Group, beat.MemberID, beat.Generation, beat.InstanceID = group, "m1", 1, &instance
	fenced := kmsg.NewPtrHeartbeatResponse()
	fenced.ErrorCode = kerr.FencedInstanceID.Code
	w.answer(w.send(beat, 3), fenced, 3)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 7
	commit.Group, commit.MemberID, commit.Generation, commit.InstanceID = group, "m1", 1, &instance
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "fencecheck-trips"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 10
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	w.answer(w.send(commit, 7), kmsg.NewPtrOffsetCommitResponse(), 7)

	txnID := "fencecheck-t"
	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.TransactionalID, txn.Group, txn.ProducerID = txnID, group, 7
	txn.MemberID, txn.Generation, txn.InstanceID = "m1", 1, &instance
	w.answer(w.send(txn, 3), kmsg.NewPtrTxnOffsetCommitResponse(), 3)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = group
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = "m1", &instance
	leave.Members = []kmsg.LeaveGroupRequestMember{m}
	w.answer(w.send(leave, 3), kmsg.NewPtrLeaveGroupResponse(), 3)

	var got []string
	for _, op := range w.ops() {
		got = append(got, fmt.Sprintf("%s %s %q %s", op.Kind, op.Req.MemberID, op.Req.InstanceID, op.Result.Err))
	}
	require.Equal(t, []string{
		`join_group  "pricer-1" `,
		`sync_group m1 "pricer-1" `,
		`heartbeat m1 "pricer-1" FENCED_INSTANCE_ID`,
		`offset_commit m1 "pricer-1" `,
		`txn_offset_commit m1 "pricer-1" `,
		`leave_group m1 "pricer-1" `,
	}, got)
}

// cgTopics is a ConsumerGroupHeartbeat's list of partitions by topic id.
func cgTopics(byID map[[16]byte][]int32) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range [][16]byte{tripsID, otherID, {9}} {
		if ps, ok := byID[id]; ok {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
	}
	return out
}

// TestRecorderConsumerGroupHeartbeats: KIP-848's ConsumerGroupHeartbeat
// is a consumer_group_heartbeat, with its lists' null (unchanged) told
// from empty, topic ids named, the topics the history does not hold left
// out, timeouts in the history's time, and refusals by name. A topic id
// the cluster cannot name leaves the heartbeat recorded, its answer
// undecided and the reason logged; a misrouted one is left out.
func TestRecorderConsumerGroupHeartbeats(t *testing.T) {
	w := newWire(t)
	var logged []string
	w.client.cfg.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	str := func(s string) *string { return &s }
	beat := func(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatRequest {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.Topics = "fencecheck-trip-readers", "m1", epoch, owned
		return req
	}
	answer := func(code int16, epoch int32, assigned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.ErrorCode, resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = code, str("m1"), epoch, 50
		if assigned != nil {
			resp.Assignment = &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
			for _, t := range assigned {
				resp.Assignment.Topics = append(resp.Assignment.Topics,
					kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
		return resp
	}

	join := beat(0, cgTopics(nil))
	join.InstanceID, join.RebalanceTimeoutMillis, join.ServerAssignor = str("reader-a"), 600, str("range")
	join.SubscribedTopicNames = []string{"fencecheck-trips", "other"}
	w.answer(w.send(join, 1), answer(0, 4, cgTopics(map[[16]byte][]int32{tripsID: {0, 1}, otherID: {0}})), 1)
	keepalive := beat(4, nil)
	w.answer(w.send(keepalive, 1), answer(0, 4, nil), 1)
	w.answer(w.send(beat(4, cgTopics(map[[16]byte][]int32{tripsID: {1}})), 1), answer(kerr.FencedMemberEpoch.Code, -1, nil), 1)
	w.answer(w.send(beat(4, nil), 1), answer(kerr.NotCoordinator.Code, -1, nil), 1) // misrouted
	w.answer(w.send(beat(5, cgTopics(map[[16]byte][]int32{{9}: {0}})), 1), answer(0, 5, nil), 1)
	w.answer(w.send(beat(5, cgTopics(map[[16]byte][]int32{{9}: {0}})), 1), answer(kerr.FencedMemberEpoch.Code, -1, nil), 1)
	w.answer(w.send(beat(5, nil), 1), answer(0, 6, cgTopics(map[[16]byte][]int32{{9}: {0}})), 1)
	w.answer(w.send(beat(-1, nil), 1), answer(0, -1, nil), 1)

	ops := w.ops()
	require.Len(t, ops, 7)
	for _, op := range ops {
		require.Equal(t, model.ConsumerGroupHeartbeat, op.Kind)
		require.Equal(t, "trip-readers", op.Req.Group)
		require.Equal(t, "m1", op.Req.MemberID)
	}
	j := ops[0]
	require.Equal(t, int32(0), j.Req.MemberEpoch)
	require.Equal(t, "reader-a", j.Req.InstanceID)
	require.Equal(t, int64(60000), j.Req.RebalanceTimeoutMs)
	require.Equal(t, "range", j.Req.ServerAssignor)
	require.Equal(t, &[]string{"trips"}, j.Req.SubscribedTopics, "a topic the history does not hold is left out")
	require.Equal(t, &[]model.Partition{}, j.Req.OwnedPartitions, "an empty list is none, not unchanged")
	require.True(t, j.Result.Succeeded())
	require.Equal(t, "m1", j.Result.Resp.MemberID)
	require.Equal(t, int32(4), j.Result.Resp.MemberEpoch)
	require.Equal(t, int64(5000), j.Result.Resp.HeartbeatIntervalMs)
	require.Equal(t, &[]model.Partition{"trips-0", "trips-1"}, j.Result.Resp.MemberAssignment)

	k := ops[1]
	require.Nil(t, k.Req.SubscribedTopics, "null is unchanged")
	require.Nil(t, k.Req.OwnedPartitions, "null is unchanged")
	require.Zero(t, k.Req.RebalanceTimeoutMs, "-1 is unchanged")
	require.Nil(t, k.Result.Resp.MemberAssignment, "no assignment: unchanged")

	require.Equal(t, &[]model.Partition{"trips-1"}, ops[2].Req.OwnedPartitions)
	require.Equal(t, model.FencedMemberEpoch, ops[2].Result.Err)

	for _, op := range ops[3:5] {
		require.Nil(t, op.Req.OwnedPartitions, "owned partitions of an unknown topic id cannot be written")
		require.Equal(t, model.RequestTimedOut, op.Result.Err, "so the answer is undecided, a refusal's too")
	}
	require.Equal(t, model.RequestTimedOut, ops[5].Result.Err, "an assignment of an unknown topic id is undecided")
	require.Len(t, logged, 3)
	for _, line := range logged {
		require.Contains(t, line, "topic id CQAAAAAAAAAAAAAAAAAAAA names no topic the recorder knows")
	}

	require.Equal(t, int32(-1), ops[6].Req.MemberEpoch)
	require.Equal(t, int32(-1), ops[6].Result.Resp.MemberEpoch)
}

// A produce's batch of many records is read beside the request going on,
// and a small one as its answer is recorded: either way, it is in the
// history whole by the time its answer is. A batch whose records do not
// read as its header counts them is left out, as one whose header does
// not read is.
func TestProducedRecordsAreReadAfterTheProduceWentOn(t *testing.T) {
	w := newWire(t)
	batch := func(n, claimed int) ([]model.Record, []byte) {
		var records []model.Record
		for i := range n {
			records = append(records, model.Record{Key: fmt.Sprintf("trip-%03d", i), Value: "fare"})
		}
		raw := wire.ProducerBatch{ProducerID: 7, Records: records}.Encode()
		// The header claims claimed records, with its CRC made right.
		const numRecordsAt, crcEnd = 57, 21
		binary.BigEndian.PutUint32(raw[numRecordsAt:], uint32(claimed))
		binary.BigEndian.PutUint32(raw[crcEnd-4:crcEnd], crc32.Checksum(raw[crcEnd:], crc32.MakeTable(crc32.Castagnoli)))
		return records, raw
	}
	large, largeRaw := batch(readBeside+36, readBeside+36)
	small, smallRaw := batch(3, 3)
	_, largeBroken := batch(readBeside+36, readBeside+37)
	_, smallBroken := batch(3, 4)

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	resp := kmsg.NewPtrProduceResponse()
	for i, topicName := range []string{"fencecheck-trips", "fencecheck-fares"} {
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = topicName
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = topicName
		for p, raw := range [][][]byte{{largeRaw, largeBroken}, {smallRaw, smallBroken}}[i] {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), raw
			topic.Partitions = append(topic.Partitions, rp)
			answer := kmsg.NewProduceResponseTopicPartition()
			answer.Partition, answer.BaseOffset = int32(p), 40
			rt.Partitions = append(rt.Partitions, answer)
		}
		produce.Topics = append(produce.Topics, topic)
		resp.Topics = append(resp.Topics, rt)
	}
	corr := w.send(produce, 9)
	w.answer(corr, resp, 9)

	ops := w.ops()
	require.Len(t, ops, 2, "the broken batches' produces are left out")
	require.Equal(t, model.Partition("trips-0"), ops[0].Req.Partition)
	require.Equal(t, large, ops[0].Req.Records)
	require.Equal(t, model.Partition("fares-0"), ops[1].Req.Partition)
	require.Equal(t, small, ops[1].Req.Records)
	for _, op := range ops {
		require.Equal(t, int64(40), op.Result.Resp.BaseOffset)
	}
}

// TestRecorderReadsInitProducerIDv6: KIP-939's InitProducerId (v6), which
// kmsg does not know, is read with its flags and the kept transaction's
// identity; a v6 answer that names none reads as -1.
func TestRecorderReadsInitProducerIDv6(t *testing.T) {
	w := newWire(t)
	send := func(corr int32, id string, enable2PC, keep bool) {
		body := binary.BigEndian.AppendUint16(nil, uint16(kmsg.InitProducerID.Int16()))
		body = binary.BigEndian.AppendUint16(body, 6)
		body = binary.BigEndian.AppendUint32(body, uint32(corr))
		body = binary.BigEndian.AppendUint16(body, 3)
		body = append(body, "kgo"...)
		body = append(body, 0) // no header tags
		body = binary.AppendUvarint(body, uint64(len(id)+1))
		body = append(body, id...)
		body = binary.BigEndian.AppendUint32(body, 3000)
		body = binary.BigEndian.AppendUint64(body, ^uint64(0)) // producer id -1
		body = binary.BigEndian.AppendUint16(body, ^uint16(0)) // epoch -1
		body = append(body, flagByte(enable2PC), flagByte(keep), 0)
		_, err := w.conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
		require.NoError(t, err)
	}
	answer := func(corr int32, pid int64, epoch int16, ongoingPID int64, ongoingEpoch int16) {
		body := binary.BigEndian.AppendUint32(nil, uint32(corr))
		body = append(body, 0)                        // no header tags
		body = binary.BigEndian.AppendUint32(body, 0) // throttle
		body = binary.BigEndian.AppendUint16(body, 0) // no error
		body = binary.BigEndian.AppendUint64(body, uint64(pid))
		body = binary.BigEndian.AppendUint16(body, uint16(epoch))
		body = binary.BigEndian.AppendUint64(body, uint64(ongoingPID))
		body = binary.BigEndian.AppendUint16(body, uint16(ongoingEpoch))
		body = append(body, 0)
		w.in.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
		w.in.Write(body)
		buf := make([]byte, 3)
		for w.in.Len() > 0 {
			_, err := w.conn.Read(buf)
			require.NoError(t, err)
		}
	}
	send(1, "fencecheck-ctp-w1", true, true)
	answer(1, 7, 3, 7, 2)
	send(2, "fencecheck-ctp-w1", true, false)
	answer(2, 7, 4, -1, -1)

	ops := w.ops()
	require.Len(t, ops, 2)
	require.Equal(t, model.InitProducerID, ops[0].Kind)
	require.Equal(t, "ctp-w1", ops[0].Req.TransactionalID)
	require.True(t, ops[0].Req.Enable2PC)
	require.True(t, ops[0].Req.KeepPreparedTxn)
	require.Equal(t, model.NoProducerID, ops[0].Req.ProducerID)
	require.True(t, ops[0].Result.Succeeded())
	require.Equal(t, int64(7), ops[0].Result.Resp.ProducerID)
	require.Equal(t, int16(3), ops[0].Result.Resp.Epoch)
	require.Equal(t, int64(7), ops[0].Result.Resp.OngoingTxnProducerID)
	require.Equal(t, int16(2), ops[0].Result.Resp.OngoingTxnEpoch)
	require.True(t, ops[1].Req.Enable2PC)
	require.False(t, ops[1].Req.KeepPreparedTxn)
	require.Equal(t, int16(4), ops[1].Result.Resp.Epoch)
	require.Equal(t, model.NoProducerID, ops[1].Result.Resp.OngoingTxnProducerID)
	require.Equal(t, model.NoEpoch, ops[1].Result.Resp.OngoingTxnEpoch)
}

func flagByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// TestRecorderReadsEmptyTransactionalIDs: an empty transactional id, which
// Kafka refuses, is recorded as one; a null one on InitProducerId is an
// idempotent producer's.
func TestRecorderReadsEmptyTransactionalIDs(t *testing.T) {
	w := newWire(t)
	empty := ""
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = &empty
	corr := w.send(init, 4)
	initResp := kmsg.NewPtrInitProducerIDResponse()
	initResp.ErrorCode, initResp.ProducerID, initResp.ProducerEpoch = kerr.InvalidRequest.Code, -1, -1
	w.answer(corr, initResp, 4)
	corr = w.send(kmsg.NewPtrInitProducerIDRequest(), 4)
	initResp = kmsg.NewPtrInitProducerIDResponse()
	initResp.ProducerID, initResp.ProducerEpoch = 9, 0
	w.answer(corr, initResp, 4)
	end := kmsg.NewPtrEndTxnRequest()
	end.ProducerID, end.ProducerEpoch = 9, 0
	corr = w.send(end, 3)
	endResp := kmsg.NewPtrEndTxnResponse()
	endResp.ErrorCode = kerr.InvalidRequest.Code
	w.answer(corr, endResp, 3)

	ops := w.ops()
	require.Len(t, ops, 3)
	require.True(t, ops[0].Req.EmptyTransactionalID)
	require.Equal(t, model.InvalidRequest, ops[0].Result.Err)
	require.False(t, ops[1].Req.EmptyTransactionalID, "a null id is an idempotent producer's")
	require.Equal(t, model.EndTxn, ops[2].Kind)
	require.True(t, ops[2].Req.EmptyTransactionalID)
}

// An operation left out (here a produce to a partition the broker did
// not take) is told to the observer, so that it does not hold back the
// instant before which a streamed history is whole (complete_before).
func TestLeftOutOperationsAreToldToTheObserver(t *testing.T) {
	w := newWire(t)
	var out bytes.Buffer
	stream, err := histories.NewWriter(&out, histories.History{})
	require.NoError(t, err)
	w.rec.Stream(stream)

	id := "fencecheck-ctp-w1"
	produce := twoPartitionProduce(id, func(int) wire.ProducerBatch {
		return wire.ProducerBatch{ProducerID: 7, Epoch: 2, FirstSequence: 0, Transactional: true,
			Records: []model.Record{{Key: "trip-a01"}}}
	})
	corr := w.send(produce, 12) // two operations, called at 1 and 2
	produceResp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "fencecheck-fares"
	ok, misrouted := kmsg.NewProduceResponseTopicPartition(), kmsg.NewProduceResponseTopicPartition()
	ok.Partition, ok.BaseOffset = 0, 40
	misrouted.Partition, misrouted.ErrorCode = 1, kerr.NotLeaderForPartition.Code
	rt.Partitions = []kmsg.ProduceResponseTopicPartition{ok, misrouted}
	produceResp.Topics = []kmsg.ProduceResponseTopic{rt}
	w.answer(corr, produceResp, 12) // the first returns at 3, the second is left out

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, 7, 2, true
	corr = w.send(end, 5)                          // called at 4
	w.answer(corr, kmsg.NewPtrEndTxnResponse(), 5) // returns at 5
	require.NoError(t, stream.Flush())
	marks := regexp.MustCompile(`"complete_before": ([0-9]+)}`).FindAllStringSubmatch(out.String(), -1)
	require.NotEmpty(t, marks, out.String())
	require.Equal(t, "5", marks[len(marks)-1][1], "nothing is in flight once the commit returned: %s", out.String())
}

// An admin's DeleteRecords (KIP-107) is one delete_records per partition,
// each answered by its partition's code and low watermark. A partition
// misrouted after the leader moved its log start offset is recorded, as
// undecided; an offset the format cannot hold is not.
func TestRecorderDeleteRecords(t *testing.T) {
	w := newWire(t)
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "fencecheck-fares"
	for _, p := range []struct {
		partition int32
		offset    int64
	}{{0, 5}, {1, -1}, {2, 9}, {3, -2}} {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p.partition, p.offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.DeleteRecordsRequestTopic{rt}
	resp := kmsg.NewPtrDeleteRecordsResponse()
	st := kmsg.NewDeleteRecordsResponseTopic()
	st.Topic = "fencecheck-fares"
	for _, p := range []struct {
		partition int32
		low       int64
		code      int16
	}{{0, 5, 0}, {1, 12, 0}, {2, -1, kerr.NotLeaderForPartition.Code}, {3, -1, kerr.OffsetOutOfRange.Code}} {
		sp := kmsg.NewDeleteRecordsResponseTopicPartition()
		sp.Partition, sp.LowWatermark, sp.ErrorCode = p.partition, p.low, p.code
		st.Partitions = append(st.Partitions, sp)
	}
	resp.Topics = []kmsg.DeleteRecordsResponseTopic{st}
	w.answer(w.send(req, 2), resp, 2)
	var got []string
	for _, op := range w.ops() {
		require.Equal(t, model.DeleteRecords, op.Kind)
		got = append(got, fmt.Sprintf("%s before %d: %q low %d", op.Req.Partition, op.Req.Offset, op.Result.Err, op.Result.Resp.LowWatermark))
	}
	require.Equal(t, []string{`fares-0 before 5: "" low 5`, `fares-1 before -1: "" low 12`,
		`fares-2 before 9: "NOT_LEADER_OR_FOLLOWER" low -1`}, got)
}

// An IncrementalAlterConfigs that sets transaction.partition.verification
// .enable in the brokers' cluster-wide default is an alter_config with
// its answer; a broker's own override, a DELETE, a value that is not a
// boolean and a validate-only request are not recorded.
func TestRecorderAlterConfig(t *testing.T) {
	w := newWire(t)
	alter := func(broker, value string, op kmsg.IncrementalAlterConfigOp, validate bool, code int16) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validate
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, broker
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = model.PartitionVerificationConfig, op, &value
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{cfg}
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = kmsg.ConfigResourceTypeBroker, broker, code
		resp.Resources = []kmsg.IncrementalAlterConfigsResponseResource{rr}
		w.answer(w.send(req, 1), resp, 1)
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	alter("", "false", set, false, 0)
	alter("", " TRUE ", set, false, kerr.ClusterAuthorizationFailed.Code)
	alter("1", "false", set, false, 0)
	alter("", "false", del, false, 0)
	alter("", "maybe", set, false, 0)
	alter("", "true", set, true, 0)
	var got []string
	for _, op := range w.ops() {
		require.Equal(t, model.AlterConfig, op.Kind)
		got = append(got, fmt.Sprintf("%v: %q", op.Req.PartitionVerification, op.Result.Err))
	}
	require.Equal(t, []string{`false: ""`, `true: "CLUSTER_AUTHORIZATION_FAILED"`}, got)
}

// A produce whose transactional batches carry two producer ids, or two
// epochs of one, is marked mixed_producers on each partition's op, as
// Kafka refuses the whole request; batches of one producer are not.
func TestRecorderMarksMixedProducers(t *testing.T) {
	for name, c := range map[string]struct {
		pids   [2]int64
		epochs [2]int16
		mixed  bool
	}{
		"one producer":         {pids: [2]int64{7, 7}, epochs: [2]int16{2, 2}},
		"two producer ids":     {pids: [2]int64{7, 8}, epochs: [2]int16{2, 2}, mixed: true},
		"two epochs of one id": {pids: [2]int64{7, 7}, epochs: [2]int16{2, 3}, mixed: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWire(t)
			produce := twoPartitionProduce("fencecheck-ctp-w1", func(p int) wire.ProducerBatch {
				return wire.ProducerBatch{ProducerID: c.pids[p], Epoch: c.epochs[p], Transactional: true,
					Records: []model.Record{{Key: "trip", Value: "fare"}}}
			})
			resp := kmsg.NewPtrProduceResponse()
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = "fencecheck-fares"
			for p := range 2 {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = int32(p), kerr.InvalidProducerIDMapping.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = []kmsg.ProduceResponseTopic{rt}
			w.answer(w.send(produce, 12), resp, 12)
			ops := w.ops()
			require.Len(t, ops, 2)
			for _, op := range ops {
				require.Equal(t, c.mixed, op.Req.MixedProducers, "%s", op.Req.Partition)
				require.Equal(t, model.InvalidProducerIDMapping, op.Result.Err)
			}
		})
	}
}

// twoPartitionProduce is a transactional Produce of id to partitions 0 and
// 1 of fencecheck-fares, each partition's batch made by batch.
func twoPartitionProduce(id string, batch func(partition int) wire.ProducerBatch) *kmsg.ProduceRequest {
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID, produce.Acks = &id, -1
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "fencecheck-fares"
	for p := range 2 {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), batch(p).Encode()
		topic.Partitions = append(topic.Partitions, rp)
	}
	produce.Topics = []kmsg.ProduceRequestTopic{topic}
	return produce
}

// An admin's CreateTopics, CreatePartitions and DeleteTopics are one op
// per topic, each answered by its topic's code. A validate-only request,
// a count left to the broker's default, a topic named by its id alone
// and a topic outside the run's names are not recorded.
func TestRecorderTopicAdmin(t *testing.T) {
	w := newWire(t)
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, c := range []struct {
		topic string
		count int32
	}{{"fencecheck-fares", 3}, {"fencecheck-audit", -1}, {"other", 2}, {"fencecheck-trips", 4}} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions = c.topic, c.count
		create.Topics = append(create.Topics, ct)
	}
	created := kmsg.NewPtrCreateTopicsResponse()
	for _, c := range []struct {
		topic string
		code  int16
	}{{"fencecheck-fares", 0}, {"fencecheck-audit", 0}, {"other", 0}, {"fencecheck-trips", kerr.TopicAlreadyExists.Code}} {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = c.topic, c.code
		created.Topics = append(created.Topics, rt)
	}
	w.answer(w.send(create, 5), created, 5)

	dry := kmsg.NewPtrCreatePartitionsRequest()
	dry.ValidateOnly = true
	grow := kmsg.NewPtrCreatePartitionsRequest()
	pt := kmsg.NewCreatePartitionsRequestTopic()
	pt.Topic, pt.Count = "fencecheck-fares", 6
	dry.Topics, grow.Topics = []kmsg.CreatePartitionsRequestTopic{pt}, []kmsg.CreatePartitionsRequestTopic{pt}
	grown := kmsg.NewPtrCreatePartitionsResponse()
	gt := kmsg.NewCreatePartitionsResponseTopic()
	gt.Topic = "fencecheck-fares"
	grown.Topics = []kmsg.CreatePartitionsResponseTopic{gt}
	w.answer(w.send(dry, 3), grown, 3)
	w.answer(w.send(grow, 3), grown, 3)

	del := kmsg.NewPtrDeleteTopicsRequest()
	fares := "fencecheck-fares"
	byName, byID := kmsg.NewDeleteTopicsRequestTopic(), kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic, byID.TopicID = &fares, [16]byte{1}
	del.Topics = []kmsg.DeleteTopicsRequestTopic{byName, byID}
	deleted := kmsg.NewPtrDeleteTopicsResponse()
	dt := kmsg.NewDeleteTopicsResponseTopic()
	dt.Topic, dt.ErrorCode = &fares, kerr.TopicDeletionDisabled.Code
	deleted.Topics = []kmsg.DeleteTopicsResponseTopic{dt}
	w.answer(w.send(del, 6), deleted, 6)

	var got []string
	for _, op := range w.ops() {
		got = append(got, fmt.Sprintf("%s %s %d: %q", op.Kind, op.Req.Topic, op.Req.PartitionCount, op.Result.Err))
	}
	require.Equal(t, []string{`create_topics fares 3: ""`, `create_topics trips 4: "TOPIC_ALREADY_EXISTS"`,
		`create_partitions fares 6: ""`, `delete_topics fares 0: "TOPIC_DELETION_DISABLED"`}, got)
}

// offsetFetchOfTwoPartitions is an OffsetFetch of fencecheck-trips 0 and 1
// for the fare workers' group.
func offsetFetchOfTwoPartitions() *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "fencecheck-fare-workers"
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = "fencecheck-trips", []int32{0, 1}
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return req
}
