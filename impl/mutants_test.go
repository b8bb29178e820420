//go:build !checkeronly

package impl

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

func TestParseMutants(t *testing.T) {
	all, err := ParseMutants("all")
	require.NoError(t, err)
	require.Len(t, all, len(mutantNames))
	require.ElementsMatch(t, slices.Collect(maps.Keys(Mutants)), mutantNames[:])

	some, err := ParseMutants(" hanging-txn, no-epoch-check ,")
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"hanging-txn": true, "no-epoch-check": true}, some)

	none, err := ParseMutants("")
	require.NoError(t, err)
	require.Empty(t, none)

	_, err = ParseMutants("no-epoch-check,typo")
	require.ErrorContains(t, err, `unknown mutant "typo"`)
	require.ErrorContains(t, err, "late-endtxn-hits-next-txn")

	require.Panics(t, func() { New(Config{Mutants: map[string]bool{"typo": true}}) })
}

// mutantCase is a short conversation whose last answer a mutant changes.
type mutantCase struct {
	version int
	script  func(b model.Target) model.Result
}

// insideMarkerWindow are the cases that run with the marker window
// (Config.AsyncMarkers): their mutant bites only there.
var insideMarkerWindow = map[string]bool{"next-txn-before-markers": true}

var p0 = model.Partition("out-0")

// mutantCases shows, for each mutant, where its switch bites.
var mutantCases = map[string]mutantCase{
	// A zombie's write lands in the new owner's transaction.
	"no-epoch-check": {1, func(b model.Target) model.Result {
		zombie := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		owner := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", owner, p0))
		send(b, model.Produce, produceReq("t", owner, p0, 0, "new"))
		return send(b, model.Produce, produceReq("t", zombie, p0, 0, "zombie"))
	}},
	// The old owner's transaction stays open: no ABORT marker, the last
	// stable offset stays at its first record.
	"init-keeps-txn-open": {1, func(b model.Target) model.Result {
		old := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", old, p0))
		send(b, model.Produce, produceReq("t", old, p0, 0, "a"))
		send(b, model.InitProducerID, initReq("t", 0))
		return send(b, model.Fetch, fetchReq(p0, 0, model.ReadCommitted))
	}},
	// The ABORT marker carried epoch 1; a leader that did not learn it
	// takes epoch 0's next sequence.
	"leader-ignores-marker-epoch": {1, func(b model.Target) model.Result {
		old := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", old, p0))
		send(b, model.Produce, produceReq("t", old, p0, 0, "a"))
		send(b, model.InitProducerID, initReq("t", 0))
		return send(b, model.Produce, produceReq("", old, p0, 1, "b"))
	}},
	// Under KIP-890 the next transaction's epoch starts again at sequence
	// 0; matched by sequence alone it looks like a retry and is lost.
	"dedup-ignores-epoch": {2, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.Produce, produceReq("t", s, p0, 0, "a"))
		next := sessionOf(send(b, model.EndTxn, endTxnReq("t", s, true)))
		return send(b, model.Produce, produceReq("t", next, p0, 0, "b"))
	}},
	// Seed 002: the zombie consumer of generation 1 commits after the
	// rebalance to generation 2.
	"offsets-ignore-generation": {1, func(b model.Target) model.Result {
		zombie := send(b, model.JoinGroup, joinReq("g", "", 0, inputs...)).Resp
		send(b, model.JoinGroup, joinReq("g", "", 0, inputs...))
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddOffsets, addOffsetsReq("t", s, "g"))
		offsets := map[model.Partition]int64{"in-0": 5}
		return send(b, model.TxnOffsetCommit, commitOffsetsReq("t", s, "g", zombie.MemberID, zombie.GenerationID, offsets))
	}},
	// A member fenced by a rebalance commits plainly under its old
	// generation: the offsets move backward for the new owner.
	"plain-commit-ignores-generation": {2, func(b model.Target) model.Result {
		zombie := send(b, model.JoinGroup, joinReq("g", "", 0, inputs...)).Resp
		send(b, model.JoinGroup, joinReq("g", "", 0, inputs...))
		commit := model.NewRequest()
		commit.Group, commit.MemberID, commit.GenerationID = "g", zombie.MemberID, zombie.GenerationID
		commit.Offsets = map[model.Partition]int64{"in-0": 5}
		return send(b, model.OffsetCommit, commit)
	}},
	// A restarted static member takes the instance over; the process it
	// replaced commits under its old member id.
	"replaced-instance-commits": {2, func(b model.Target) model.Result {
		static := joinReq("g", "", 0, inputs...)
		static.InstanceID = "w1"
		zombie := send(b, model.JoinGroup, static).Resp
		send(b, model.JoinGroup, static)
		commit := model.NewRequest()
		commit.Group, commit.MemberID, commit.GenerationID, commit.InstanceID = "g", zombie.MemberID, zombie.GenerationID, "w1"
		commit.Offsets = map[model.Partition]int64{"in-0": 5}
		return send(b, model.OffsetCommit, commit)
	}},
	// W2 joins while W1 holds every partition of t: W2's target takes t-2
	// from W1, which has not revoked it. The model's own assignor moves
	// only partitions its logs hold (none of t), and the broker's gives
	// nothing yet.
	"assign-before-revoke": {2, func(b model.Target) model.Result {
		heartbeat(b, joinConsumerReq("cg", "w1", "t"))
		return heartbeat(b, joinConsumerReq("cg", "w2", "t"))
	}},
	// W1 moves on to epoch 2 (a new subscription), then commits under
	// epoch 1 the offset of u-0, which it did not hold then.
	"txn-commit-accepts-stale-member-epoch": {2, func(b model.Target) model.Result {
		w1 := heartbeat(b, joinConsumerReq("cg", "w1", "t"))
		resubscribe := beatReq("cg", "w1", w1.Resp.MemberEpoch)
		resubscribe.SubscribedTopics = &[]string{"t", "u"}
		heartbeat(b, resubscribe)
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		return send(b, model.TxnOffsetCommit, commitOffsetsReq("t", s, "cg", "w1", w1.Resp.MemberEpoch, map[model.Partition]int64{"u-0": 5}))
	}},
	"read-committed-ignores-aborts": {1, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", s, p0))
		send(b, model.Produce, produceReq("t", s, p0, 0, "a"))
		send(b, model.EndTxn, endTxnReq("t", s, false))
		return send(b, model.Fetch, fetchReq(p0, 0, model.ReadCommitted))
	}},
	"lso-ignores-open-txn": {1, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", s, p0))
		send(b, model.Produce, produceReq("t", s, p0, 0, "a"))
		return send(b, model.Fetch, fetchReq(p0, 0, model.ReadCommitted))
	}},
	// The producer that let its transaction expire is not fenced.
	"timeout-abort-keeps-epoch": {1, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 1_000)))
		send(b, model.AddPartitions, addPartitionsReq("t", s, p0))
		b.Tick(2_000)
		return send(b, model.AddPartitions, addPartitionsReq("t", s, p0))
	}},
	// Seed 001's retry after a broker restart: the rebuilt table knows the
	// batch; a lost table writes it twice.
	"restart-loses-producer-state": {1, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("", 0)))
		send(b, model.Produce, produceReq("", s, p0, 0, "a"))
		b.Restart()
		return send(b, model.Produce, produceReq("", s, p0, 0, "a"))
	}},
	"reinit-keeps-epoch": {1, func(b model.Target) model.Result {
		send(b, model.InitProducerID, initReq("t", 0))
		return send(b, model.InitProducerID, initReq("t", 0))
	}},
	// KAFKA-17754: the first transaction's EndTxn, delayed, arrives while
	// the second is open and commits it.
	"late-endtxn-hits-next-txn": {2, func(b model.Target) model.Result {
		first := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.Produce, produceReq("t", first, p0, 0, "a"))
		second := sessionOf(send(b, model.EndTxn, endTxnReq("t", first, true)))
		send(b, model.Produce, produceReq("t", second, p0, 0, "b"))
		return send(b, model.EndTxn, endTxnReq("t", first, false))
	}},
	// The fenced session's abort closes the new owner's transaction.
	"marker-matches-pid-only": {1, func(b model.Target) model.Result {
		zombie := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		owner := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", owner, p0))
		send(b, model.Produce, produceReq("t", owner, p0, 0, "a"))
		return send(b, model.EndTxn, endTxnReq("t", zombie, false))
	}},
	// KAFKA-14402: a write to a partition never added to the transaction.
	"hanging-txn": {1, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.AddPartitions, addPartitionsReq("t", s, "out-1"))
		return send(b, model.Produce, produceReq("t", s, p0, 0, "a"))
	}},
	// The next transaction's write lands before the last one's marker.
	"next-txn-before-markers": {2, func(b model.Target) model.Result {
		s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
		send(b, model.Produce, produceReq("t", s, p0, 0, "a"))
		next := sessionOf(send(b, model.EndTxn, endTxnReq("t", s, true)))
		return send(b, model.Produce, produceReq("t", next, p0, 0, "b"))
	}},
}

// invariantsCatching are the invariant checks, beyond linearizable, that
// state a mutant's bug, so that its conversation must break them too
// (TestConsumerGroupMutantsAreCaught): a check that stops catching its
// bug fails there.
var invariantsCatching = map[string][]string{
	// Two members hold trips-2 at once.
	"assign-before-revoke": {checker.OneOwner},
}

func TestInvariantsCatchingNameKnownMutants(t *testing.T) {
	for name, checks := range invariantsCatching {
		require.Contains(t, Mutants, name)
		require.Subset(t, checker.Checks, checks, "%s", name)
		require.Contains(t, consumerMutantCases, name, "%s needs a conversation that shows it", name)
	}
}

// TestEachMutantIsLive shows that each switch changes an answer where it
// should: without it the broker answers as the model does, with it not.
func TestEachMutantIsLive(t *testing.T) {
	require.Len(t, mutantCases, len(Mutants))
	for name, c := range mutantCases {
		t.Run(name, func(t *testing.T) {
			async := insideMarkerWindow[name]
			want := c.script(model.NewBroker(model.Options{TxnVersion: c.version, AsyncMarkers: async}))
			correct := c.script(New(Config{TxnVersion: c.version, AsyncMarkers: async}))
			require.Equal(t, want, correct, "without the mutant the broker answers as the model")
			mutated := c.script(New(Config{TxnVersion: c.version, AsyncMarkers: async, Mutants: map[string]bool{name: true}}))
			require.NotEqual(t, classOrAnswer(correct), classOrAnswer(mutated), "%s changes nothing here", name)
		})
	}
}

// classOrAnswer is what tells two answers apart for a client: the class of
// a refusal, or the whole answer of a success. A script does not name the
// request it answers, so a refusal's class is given for every request.
func classOrAnswer(r model.Result) any {
	if r.Succeeded() {
		return r.Resp
	}
	classes := make([]model.Class, len(model.Kinds))
	for i, k := range model.Kinds {
		classes[i] = model.ClassOf(k, r.Err)
	}
	return classes
}
