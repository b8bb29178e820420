//go:build !checkeronly

package impl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// heartbeat sends a ConsumerGroupHeartbeat to the broker or to the model,
// through model.Send (both are model.ConsumerGroupHeartbeaters).
func heartbeat(b model.Target, r model.Request) model.Result {
	res, err := model.Send(context.Background(), b, model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r})
	if err != nil {
		panic(err)
	}
	return res
}

// joinConsumerReq is a member's join: epoch 0, its subscription, nothing
// owned.
func joinConsumerReq(group, memberID string, topics ...string) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMs = group, memberID, model.JoinMemberEpoch, 60_000
	r.SubscribedTopics, r.OwnedPartitions = &topics, &[]model.Partition{}
	return r
}

// beatReq is a member's heartbeat at epoch, with the partitions it owns.
func beatReq(group, memberID string, epoch int32, owned ...model.Partition) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID, r.MemberEpoch = group, memberID, epoch
	if owned == nil {
		owned = []model.Partition{}
	}
	r.OwnedPartitions = &owned
	return r
}

// assignmentOf is the assignment an answer gives, nil when it left it out.
func assignmentOf(r model.Result) []model.Partition {
	if r.Resp.MemberAssignment == nil {
		return nil
	}
	return *r.Resp.MemberAssignment
}

// consumerConversation is a short conversation with a KIP-848 group, as
// recorded: each request goes to the broker and into the history.
type consumerConversation struct {
	t   *testing.T
	b   *Broker
	rec *histories.Recorder
}

func (c consumerConversation) beat(proc string, r model.Request) model.Result {
	end := c.rec.Observe(proc, "", model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r})
	res := c.b.ConsumerGroupHeartbeat(context.Background(), r)
	end(res)
	require.True(c.t, res.Succeeded(), "%s's heartbeat %+v: %s", proc, r, res.Err)
	return res
}

func (c consumerConversation) send(proc string, kind model.Kind, r model.Request) model.Result {
	return send(c.rec.Proc(proc), kind, r)
}

// consumerMutantCases are the conversations that catch the mutants of
// KIP-848 consumer groups, as the kip848-consumers scenario does too. On the correct broker every check holds; with
// the mutant the checker finds it.
var consumerMutantCases = map[string]func(c consumerConversation){
	// W2 joins while W1 owns every partition of trips. Its target takes
	// trips-2 from W1, which W1 has not revoked yet: W2 must wait for it.
	"assign-before-revoke": func(c consumerConversation) {
		w1 := c.beat("W1", joinConsumerReq("workers", "w1", "trips"))
		require.Equal(c.t, []model.Partition{"trips-0", "trips-1", "trips-2"}, assignmentOf(w1))
		w2 := c.beat("W2", joinConsumerReq("workers", "w2", "trips"))
		if c.b.bugs.has(assignBeforeRevoke) {
			return
		}
		require.Empty(c.t, assignmentOf(w2), "trips-2 is W1's until it revokes it")
		revoking := c.beat("W1", beatReq("workers", "w1", 1, "trips-0", "trips-1", "trips-2"))
		require.Equal(c.t, []model.Partition{"trips-0", "trips-1"}, assignmentOf(revoking))
		require.Equal(c.t, int32(1), revoking.Resp.MemberEpoch, "a member that begins revoking stays at its epoch")
		waiting := c.beat("W2", beatReq("workers", "w2", 2))
		require.Nil(c.t, waiting.Resp.MemberAssignment, "W1 still owns trips-2")
		released := c.beat("W1", beatReq("workers", "w1", 1, "trips-0", "trips-1"))
		require.Equal(c.t, int32(2), released.Resp.MemberEpoch)
		moved := c.beat("W2", beatReq("workers", "w2", 2))
		require.Equal(c.t, []model.Partition{"trips-2"}, assignmentOf(moved))
	},
	// trips-2 moves from W1 to W2. W1, a zombie of epoch 1, commits
	// trips-2's offset in its transaction: the commit must be fenced.
	"txn-commit-accepts-stale-member-epoch": func(c consumerConversation) {
		c.beat("W1", joinConsumerReq("workers", "w1", "trips"))
		c.beat("W2", joinConsumerReq("workers", "w2", "trips"))
		c.beat("W1", beatReq("workers", "w1", 1, "trips-0", "trips-1", "trips-2"))
		c.beat("W1", beatReq("workers", "w1", 1, "trips-0", "trips-1"))
		moved := c.beat("W2", beatReq("workers", "w2", 2))
		require.Equal(c.t, []model.Partition{"trips-2"}, assignmentOf(moved))
		s := sessionOf(c.send("W1", model.InitProducerID, initReq("t1", 0)))
		zombie := c.send("W1", model.TxnOffsetCommit, commitOffsetsReq("t1", s, "workers", "w1", 1, map[model.Partition]int64{"trips-2": 7}))
		if !c.b.bugs.has(txnCommitAcceptsStaleMemberEpoch) {
			require.Equal(c.t, model.IllegalGeneration, zombie.Err, "epoch 1 is no longer W1's")
		}
	},
}

// TestConsumerGroupMutantsAreCaught: each KIP-848 mutant is caught by
// its conversation, judged by the checker as a recorded history, by
// linearizable and by the invariants that state its bug
// (invariantsCatching); without the mutant every check holds. The kip848-consumers scenario catches
// them too (TestMutantsAreCaught, which writes histories/mutants/).
func TestConsumerGroupMutantsAreCaught(t *testing.T) {
	require.Subset(t, slices.Collect(maps.Keys(Mutants)), slices.Collect(maps.Keys(consumerMutantCases)),
		"each conversation is of a known mutant")
	for name, conversation := range consumerMutantCases {
		t.Run(name, func(t *testing.T) {
			correct := recordConversation(t, conversation, nil)
			report := checker.Check(correct, checker.Options{})
			require.True(t, report.Held(), "the correct broker: %v", report.Verdicts)

			mutated := recordConversation(t, conversation, map[string]bool{name: true})
			report = checker.Check(mutated, checker.Options{})
			require.False(t, report.Held(), "%s was not caught: %s", name, Mutants[name])
			require.Contains(t, report.Violated(), "linearizable")
			for _, check := range invariantsCatching[name] {
				require.Contains(t, report.Violated(), check, "%s is not caught by %s: %s", name, check, report.Verdict(check))
			}
			t.Logf("%s: caught by %v", name, report.Violated())
		})
	}
}

func recordConversation(t *testing.T, conversation func(consumerConversation), mutants map[string]bool) histories.History {
	b := New(Config{TxnVersion: 2, Mutants: mutants})
	rec := histories.NewRecorder(b, nil)
	conversation(consumerConversation{t: t, b: b, rec: rec})
	h := rec.History()
	h.TransactionsVersion = 2
	return h
}

// TestPropertyConsumerGroupHeartbeat sends random conversations of
// several members of a KIP-848 group to the broker: joins (static and
// dynamic, with ids of their own or none), heartbeats with what each
// member owns (at times a stale or a future epoch, no owned partitions,
// a new subscription), leaves with -1 and -2, stray heartbeats, ticks past
// the session and rebalance timeouts, restarts, and transactional offset
// commits under the members' epochs, at times to a group that is full.
// Every answer must be one the model accepts (model.Check), one at a
// time.
func TestPropertyConsumerGroupHeartbeat(t *testing.T) {
	rapid.Check(t, consumerGroupProperty(nil))
}

// TestPropertyConsumerGroupHeartbeatCatchesAssignBeforeRevoke: the
// property fails on a broker that gives a partition before its owner
// revoked it.
func TestPropertyConsumerGroupHeartbeatCatchesAssignBeforeRevoke(t *testing.T) {
	// rapid keeps a failure's draws under testdata/rapid/, and replays
	// them first the next time: this failure is wanted, so none is kept.
	failures := filepath.Join("testdata", "rapid", t.Name())
	require.NoError(t, os.RemoveAll(failures))
	t.Cleanup(func() {
		_ = os.RemoveAll(failures)
		// The folders above go too when nothing else is in them.
		_ = os.Remove(filepath.Dir(failures))
		_ = os.Remove(filepath.Dir(filepath.Dir(failures)))
	})
	caught := &failureOf{TB: t}
	rapid.Check(caught, consumerGroupProperty(map[string]bool{"assign-before-revoke": true}))
	require.True(t, caught.failed, "the property held on assign-before-revoke")
	require.Contains(t, caught.report, "consumer-partition-not-released")
}

// failureOf is a test that records its failure instead of failing, so
// that a test can require a property to fail.
type failureOf struct {
	testing.TB
	failed bool
	report string
}

func (f *failureOf) Fatalf(format string, args ...any) {
	f.failed, f.report = true, fmt.Sprintf(format, args...)
}

func (f *failureOf) Errorf(format string, args ...any) { f.Fatalf(format, args...) }
func (f *failureOf) Error(args ...any)                 { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *failureOf) Fatal(args ...any)                 { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *failureOf) Fail()                             { f.failed = true }
func (f *failureOf) FailNow()                          { f.failed = true }
func (f *failureOf) Failed() bool                      { return f.failed }
func (f *failureOf) Logf(string, ...any)               {}
func (f *failureOf) Log(...any)                        {}

// consumerGroupProperty is the property, against a broker with mutants.
// Each run draws how many partitions a topic has, how long a member's
// session lasts and how many members the group takes
// (group.consumer.max.size; 0 is no limit).
func consumerGroupProperty(mutants map[string]bool) func(*rapid.T) {
	return func(rt *rapid.T) {
		partitions := rapid.SampledFrom([]int{3, 1, 2, 5}).Draw(rt, "topicPartitions")
		sessionMs := rapid.SampledFrom([]int64{0, 10_000}).Draw(rt, "sessionMs")
		maxSize := rapid.SampledFrom([]int{0, 2, 3}).Draw(rt, "consumerGroupMaxSize")
		run := &consumerRun{
			b: New(Config{TxnVersion: 2, Mutants: mutants, TopicPartitions: partitions, ConsumerSessionTimeoutMs: sessionMs,
				ConsumerGroupMaxSize: maxSize}),
			state: model.Init(model.Options{TxnVersion: 2, ConsumerSessionTimeoutMs: sessionMs, ConsumerGroupMaxSize: maxSize}),
			rec:   histories.NewRecorder(nil, nil),
		}
		for i := range 4 {
			run.clients = append(run.clients, &consumerClient{
				name:     fmt.Sprintf("m%d", i),
				instance: rapid.SampledFrom([]string{"", "", "i1", "i2"}).Draw(rt, "instance"),
			})
		}
		rt.Repeat(run.actions())
		// The conversation, as recorded, holds one-owner. A history does
		// not say the session timeout, so the check takes Kafka's
		// default: a shorter one ends sessions at ticks it cannot know.
		if sessionMs == 0 {
			if v := checker.CheckOne(run.rec.History(), checker.OneOwner); v.Status == checker.Violated {
				rt.Fatalf("the conversation breaks %s", v)
			}
		}
	}
}

const consumerGroupName = "cg"

var consumerTopics = []string{"t", "u"}

// consumerRun is one conversation: the broker, the model's state after
// every answer so far, and what each client learnt.
type consumerRun struct {
	b       *Broker
	state   model.State
	clients []*consumerClient
	// txn is the transactional producer that commits offsets, once it
	// has a session.
	txn    session
	hasTxn bool
	// rec records the conversation, as a history to judge.
	rec *histories.Recorder
}

// consumerClient is one consumer, as it knows itself.
type consumerClient struct {
	name, instance string
	// id and epoch are the member id and epoch the answers gave; joined
	// says the client is a member, as far as it knows.
	id     string
	epoch  int32
	joined bool
	// told is its assignment as last answered; owns what it has not
	// released yet (told, and what it was told to revoke).
	told, owns []model.Partition
	topics     []string
}

func (c *consumerClient) reset() {
	c.joined, c.epoch, c.told, c.owns = false, 0, nil, nil
}

func (run *consumerRun) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Join":           run.join,
		"Heartbeat":      run.heartbeat,
		"Leave":          run.leave,
		"StrayHeartbeat": run.stray,
		"Tick": func(rt *rapid.T) {
			ms := rapid.SampledFrom([]int64{1_000, 5_000, 20_000, 30_000, 46_000, 70_000}).Draw(rt, "ms")
			run.b.Tick(ms)
			run.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
			run.state, _ = model.Check(run.state, model.Op{Kind: model.Tick, Req: model.Request{Ms: ms}}, model.Result{})
		},
		"Restart": func(*rapid.T) {
			run.b.Restart()
			run.rec.Fault("broker", model.BrokerRestart, model.NewRequest())
			run.state, _ = model.Check(run.state, model.Op{Kind: model.BrokerRestart}, model.Result{})
		},
		"CommitOffsets": run.commit,
		"ChangeTopic":   run.changeTopic,
	}
}

// changeTopic is an admin's CreateTopics, CreatePartitions or
// DeleteTopics of a topic the members subscribe to (topics.go).
func (run *consumerRun) changeTopic(rt *rapid.T) {
	kind := rapid.SampledFrom([]model.Kind{model.CreatePartitions, model.CreatePartitions, model.DeleteTopics,
		model.CreateTopics}).Draw(rt, "topicChange")
	r := model.NewRequest()
	r.Topic = rapid.SampledFrom(consumerTopics).Draw(rt, "topic")
	if kind != model.DeleteTopics {
		r.PartitionCount = int32(rapid.IntRange(1, 7).Draw(rt, "count"))
	}
	op := model.Op{Kind: kind, Req: r}
	end := run.rec.Observe("admin", "", op)
	res := run.b.TopicAdmin(kind, r)
	end(res)
	run.judge(rt, op, res)
}

// judge requires the model to accept the broker's answer to op.
func (run *consumerRun) judge(rt *rapid.T, op model.Op, res model.Result) {
	before := run.state
	next, err := model.Check(run.state, op, res)
	var refused *model.Disallowed
	if errors.As(err, &refused) {
		rt.Fatalf("the model refuses the broker's answer (%s)\nstate: %v\nrequest: %s %+v\nanswer: %+v\n%v", refused.Rule, before, op.Kind, op.Req, res, err)
	}
	if err != nil {
		rt.Fatalf("judging %s: %v", op.Kind, err)
	}
	run.state = next
}

func (run *consumerRun) beat(rt *rapid.T, proc string, r model.Request) model.Result {
	op := model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
	end := run.rec.Observe(proc, "", op)
	res := run.b.ConsumerGroupHeartbeat(context.Background(), r)
	end(res)
	run.judge(rt, op, res)
	return res
}

func (run *consumerRun) join(rt *rapid.T) {
	c := rapid.SampledFrom(run.clients).Draw(rt, "client")
	id := c.name
	if c.joined {
		// A member that joins again under its own id.
		id = c.id
	} else if rapid.Bool().Draw(rt, "coordinatorChoosesID") {
		id = ""
	}
	topics := rapid.SliceOfNDistinct(rapid.SampledFrom(consumerTopics), 1, len(consumerTopics), rapid.ID).Draw(rt, "topics")
	r := joinConsumerReq(consumerGroupName, id, topics...)
	r.InstanceID = c.instance
	r.RebalanceTimeoutMs = rapid.SampledFrom([]int64{1_000, 10_000, 60_000}).Draw(rt, "rebalanceMs")
	r.ServerAssignor = rapid.SampledFrom([]string{"", "", "range", "uniform", "sticky"}).Draw(rt, "assignor")
	res := run.beat(rt, c.name, r)
	if res.Succeeded() {
		c.reset()
		c.joined, c.id, c.topics = true, res.Resp.MemberID, topics
		c.learn(res)
	}
}

func (run *consumerRun) heartbeat(rt *rapid.T) {
	c := rapid.SampledFrom(run.clients).Draw(rt, "client")
	if !c.joined {
		return
	}
	if rapid.Bool().Draw(rt, "revokeFirst") {
		c.owns = common(c.owns, c.told)
	}
	r := model.NewRequest()
	r.Group, r.MemberID, r.InstanceID = consumerGroupName, c.id, c.instance
	r.MemberEpoch = c.epoch + rapid.SampledFrom([]int32{0, 0, 0, 0, -1, 1}).Draw(rt, "epochOff")
	if r.MemberEpoch < 1 {
		r.MemberEpoch = c.epoch
	}
	if rapid.IntRange(0, 5).Draw(rt, "sendOwned") > 0 {
		owned := slices.Clone(c.owns)
		r.OwnedPartitions = &owned
	}
	if rapid.IntRange(0, 5).Draw(rt, "resubscribe") == 0 {
		topics := rapid.SliceOfNDistinct(rapid.SampledFrom(consumerTopics), 1, len(consumerTopics), rapid.ID).Draw(rt, "topics")
		r.SubscribedTopics = &topics
		c.topics = topics
	}
	if rapid.IntRange(0, 5).Draw(rt, "full") == 0 {
		// A full request, as a client sends after an error.
		r.RebalanceTimeoutMs = 60_000
		topics := slices.Clone(c.topics)
		r.SubscribedTopics = &topics
	}
	res := run.beat(rt, c.name, r)
	switch {
	case res.Succeeded():
		c.learn(res)
	case res.Err == model.FencedMemberEpoch || res.Err == model.UnknownMemberID:
		// The client gives up its partitions and joins again.
		c.reset()
	}
}

// learn takes a heartbeat's answer: the epoch, and the assignment when
// it was sent. New partitions are owned at once; the ones taken away
// stay owned until the client revokes them.
func (c *consumerClient) learn(res model.Result) {
	c.epoch = res.Resp.MemberEpoch
	if res.Resp.MemberAssignment != nil {
		c.told = slices.Clone(*res.Resp.MemberAssignment)
		for _, p := range c.told {
			if !slices.Contains(c.owns, p) {
				c.owns = append(c.owns, p)
			}
		}
		slices.Sort(c.owns)
	}
}

func (run *consumerRun) leave(rt *rapid.T) {
	c := rapid.SampledFrom(run.clients).Draw(rt, "client")
	if !c.joined {
		return
	}
	r := model.NewRequest()
	r.Group, r.MemberID, r.InstanceID, r.MemberEpoch = consumerGroupName, c.id, c.instance, model.LeaveMemberEpoch
	if c.instance != "" && rapid.Bool().Draw(rt, "staticLeave") {
		r.MemberEpoch = model.StaticLeaveMemberEpoch
	}
	if run.beat(rt, c.name, r).Succeeded() {
		c.reset()
	}
}

// stray is a heartbeat no client of the group would send: an unknown
// member or group, a malformed request.
func (run *consumerRun) stray(rt *rapid.T) {
	r := model.NewRequest()
	r.Group = rapid.SampledFrom([]string{consumerGroupName, "nobody"}).Draw(rt, "group")
	r.MemberID = rapid.SampledFrom([]string{"", "ghost", "m0", "consumer-0"}).Draw(rt, "member")
	r.MemberEpoch = rapid.Int32Range(-3, 4).Draw(rt, "epoch")
	r.InstanceID = rapid.SampledFrom([]string{"", "i1"}).Draw(rt, "instance")
	if rapid.Bool().Draw(rt, "owned") {
		r.OwnedPartitions = &[]model.Partition{}
	}
	if rapid.Bool().Draw(rt, "subscribed") {
		r.SubscribedTopics, r.RebalanceTimeoutMs = &[]string{"t"}, 5_000
	}
	run.beat(rt, "stray", r)
}

// commit is a transactional offset commit of a member, under its epoch or
// a neighbour of it, of a partition it was told it owns or of another.
func (run *consumerRun) commit(rt *rapid.T) {
	if !run.hasTxn || rapid.IntRange(0, 4).Draw(rt, "newSession") == 0 {
		init := initReq("tx", 0)
		res := send(run.b, model.InitProducerID, init)
		run.judge(rt, model.Op{Kind: model.InitProducerID, Req: init}, res)
		if !res.Succeeded() {
			return
		}
		run.txn, run.hasTxn = sessionOf(res), true
	}
	c := rapid.SampledFrom(run.clients).Draw(rt, "client")
	p := rapid.SampledFrom([]model.Partition{"t-0", "t-1", "t-2", "u-0"}).Draw(rt, "partition")
	epoch := c.epoch + rapid.SampledFrom([]int32{0, 0, -1, 1}).Draw(rt, "epochOff")
	r := commitOffsetsReq("tx", run.txn, consumerGroupName, c.id, epoch, map[model.Partition]int64{p: 1})
	res := send(run.b, model.TxnOffsetCommit, r)
	run.judge(rt, model.Op{Kind: model.TxnOffsetCommit, Req: r}, res)
	if rapid.Bool().Draw(rt, "endTxn") {
		end := endTxnReq("tx", run.txn, rapid.Bool().Draw(rt, "commit"))
		res := send(run.b, model.EndTxn, end)
		run.judge(rt, model.Op{Kind: model.EndTxn, Req: end}, res)
		if res.Succeeded() {
			run.txn = sessionOf(res)
		}
	}
}

// TestConsumerGroupRestartKeepsGroups: a restart rebuilds every consumer
// group from the log, as it was, and starts its members' sessions again.
func TestConsumerGroupRestartKeepsGroups(t *testing.T) {
	b := New(Config{TxnVersion: 2})
	w1 := heartbeat(b, joinConsumerReq("g", "", "t"))
	w2 := heartbeat(b, joinConsumerReq("g", "", "t"))
	require.NotEqual(t, w1.Resp.MemberID, w2.Resp.MemberID)
	b.Tick(40_000)
	b.Restart()
	b.Tick(40_000)
	// Both sessions started again at the restart, so neither ended.
	res := heartbeat(b, beatReq("g", w1.Resp.MemberID, w1.Resp.MemberEpoch, "t-0", "t-1", "t-2"))
	require.True(t, res.Succeeded(), "%s", res.Err)
	require.Equal(t, []model.Partition{"t-0", "t-1"}, assignmentOf(res), "W2 joined: t-2 is revoked")
	// A new member's id is none given before the restart.
	w3 := heartbeat(b, joinConsumerReq("g", "", "t"))
	require.True(t, w3.Succeeded())
	require.NotContains(t, []string{w1.Resp.MemberID, w2.Resp.MemberID}, w3.Resp.MemberID)
	b.Tick(50_000)
	gone := heartbeat(b, beatReq("g", w1.Resp.MemberID, 1, "t-0", "t-1"))
	require.Equal(t, model.UnknownMemberID, gone.Err, "the session ended")
	require.True(t, strings.HasPrefix(w3.Resp.MemberID, "consumer-"))
}

// consumeKIP848 is a member of a KIP-848 group that heartbeats beats
// times, owning what it was told, and joins again when it is fenced.
func consumeKIP848(b *Broker, member string, beats int) {
	var epoch int32
	var owned []model.Partition
	for range beats {
		r := joinConsumerReq("kip848", member, "t")
		if epoch > 0 {
			r = beatReq("kip848", member, epoch, owned...)
		}
		res := b.ConsumerGroupHeartbeat(context.Background(), r)
		if !res.Succeeded() {
			epoch, owned = 0, nil
			continue
		}
		epoch = res.Resp.MemberEpoch
		if res.Resp.MemberAssignment != nil {
			owned = slices.Clone(*res.Resp.MemberAssignment)
		}
	}
}
