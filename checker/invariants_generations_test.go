package checker

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// scannedGenerations judges h's commits as generationsFold did before it
// kept each group apart and indexed the member epochs: each commit
// against a copy of every group operation called by its call, in call
// order. It is the reference the fold must agree with.
func scannedGenerations(h histories.History) []foldedViolation {
	ops := append([]histories.Op(nil), h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var all histories.History
	consumerGroups := map[string]bool{}
	for _, op := range ops {
		switch op.Kind {
		case model.JoinGroup, model.SyncGroup, model.ConsumerGroupHeartbeat:
			all.Ops = append(all.Ops, op)
			if op.Kind == model.ConsumerGroupHeartbeat {
				consumerGroups[op.Req.Group] = true
			}
		}
	}
	var out []foldedViolation
	for _, commit := range ops {
		if (commit.Kind != model.TxnOffsetCommit && commit.Kind != model.OffsetCommit) || !commit.Result.Succeeded() {
			continue
		}
		var seen histories.History
		for _, op := range all.Ops {
			if op.Call <= commit.Call {
				seen.Ops = append(seen.Ops, op)
			}
		}
		classic, consumer := staleGeneration, staleMemberEpoch
		if commit.Req.GenerationID < 0 {
			classic, consumer = zombieOverload, zombieMemberOverload
		}
		judge := classic
		if consumerGroups[commit.Req.Group] {
			judge = consumer
		}
		if v, stale := judge(seen, commit); stale {
			out = append(out, foldedViolation{call: commit.Call, Violation: v})
		}
	}
	return out
}

// foldedGenerations judges h's commits with generationsFold, fed in call
// order as the offsets fold feeds it.
func foldedGenerations(h histories.History) []foldedViolation {
	ops := append([]histories.Op(nil), h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	g := generationsFold{commits: map[int]bool{}, consumerGroups: map[string]bool{}}
	for i := range ops {
		g.add(&ops[i])
	}
	return g.violations()
}

// groupHistory draws a history of two groups' operations: heartbeats,
// joins and syncs of three clients, and their commits at drawn epochs,
// with calls that tie and answers that return out of call order.
func groupHistory(t *rapid.T) histories.History {
	b := &historyBuilder{}
	groups := []string{"g", "h"}
	members := []string{"w1", "w2", "w3"}
	parts := []model.Partition{"trips-0", "trips-1", "trips-2"}
	var call int64
	n := rapid.IntRange(1, 40).Draw(t, "ops")
	for range n {
		call += rapid.Int64Range(0, 2).Draw(t, "gap")
		ret := call + rapid.Int64Range(1, 8).Draw(t, "took")
		i := rapid.IntRange(0, len(members)-1).Draw(t, "member")
		proc, member := fmt.Sprintf("W%d", i+1), members[i]
		group := rapid.SampledFrom(groups).Draw(t, "group")
		epoch := rapid.Int32Range(-1, 5).Draw(t, "epoch")
		var id int
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 0, 1:
			var assigned []model.Partition
			for _, p := range parts {
				if rapid.Bool().Draw(t, "assigned") {
					assigned = append(assigned, p)
				}
			}
			id = b.consumerHeartbeat(proc, call, ret, group, member, max(epoch, 0), assigned...)
			if rapid.IntRange(0, 5).Draw(t, "no assignment") == 0 {
				b.op(id).Result.Resp.MemberAssignment = nil
			}
		case 2:
			id = b.joinGroup(proc, call, ret, group, max(epoch, 1), rapid.SampledFrom(parts).Draw(t, "assigned"))
		default:
			id = b.plainCommit(proc, call, ret, group, member, epoch, rapid.SampledFrom(parts).Draw(t, "partition"), 1)
		}
		if rapid.IntRange(0, 9).Draw(t, "refused") == 0 {
			b.fail(id, model.StaleMemberEpoch)
		}
	}
	return b.h
}

// The fold's index answers as the scan of every group operation does, on
// drawn histories of classic and consumer groups; some of them must hold
// stale commits, so that the comparison is of something.
func TestGenerationsFoldAgreesWithTheScan(t *testing.T) {
	stale := 0
	rapid.Check(t, func(t *rapid.T) {
		h := groupHistory(t)
		want := scannedGenerations(h)
		stale += len(want)
		require.Equal(t, want, foldedGenerations(h))
	})
	require.Positive(t, stale, "no drawn history held a stale commit")
}

// A commit is stale once the committer's answer at a newer epoch has
// returned before the commit's call, and not while it is in flight: the
// index takes in an answer by its return, whatever its call.
func TestGenerationsFoldTakesAnswersByTheirReturn(t *testing.T) {
	b := &historyBuilder{}
	b.consumerHeartbeat("W1", 0, 1, "g", "w1", 1, "trips-0", "trips-1")
	b.consumerHeartbeat("W2", 2, 3, "g", "w2", 2, "trips-1")
	b.consumerHeartbeat("W1", 4, 20, "g", "w1", 2, "trips-0") // returns late
	inFlight := b.plainCommit("W1", 10, 11, "g", "w1", 1, "trips-1", 9)
	stale := b.plainCommit("W1", 21, 22, "g", "w1", 1, "trips-1", 9)
	got := foldedGenerations(b.h)
	require.Equal(t, scannedGenerations(b.h), got)
	require.Len(t, got, 1)
	require.Equal(t, stale, got[0].Op)
	require.NotEqual(t, inFlight, got[0].Op)
	require.Equal(t, "offset_commit of consumer group g for trips-1 at member epoch 1 accepted from w1, "+
		"after op 2 moved it to epoch 2 and op 1 gave trips-1 to w2 at epoch 2", got[0].Reason)
}

// pipelineGroup is n operations of one consumer group as a pipeline's
// workers make them: each round every worker heartbeats and commits its
// partitions' offsets at its member epoch, and every restartEvery rounds
// a worker comes back as a new member, so that the epochs move on and the
// partitions move between members.
func pipelineGroup(n, workers, partitions, restartEvery int) histories.History {
	b := &historyBuilder{}
	members := make([]string, workers)
	for w := range members {
		members[w] = fmt.Sprintf("w%d-0", w)
	}
	var epoch int32 = 1
	var call int64
	for round := 0; len(b.h.Ops) < n; round++ {
		if round > 0 && round%restartEvery == 0 {
			w := (round / restartEvery) % workers
			members[w] = fmt.Sprintf("w%d-%d", w, round)
			epoch++
		}
		for w, member := range members {
			var mine []model.Partition
			for p := w; p < partitions; p += workers {
				mine = append(mine, model.Partition(fmt.Sprintf("trips-%d", (p+round/restartEvery)%partitions)))
			}
			proc := fmt.Sprintf("W%d", w)
			b.consumerHeartbeat(proc, call, call+3, "fare-workers", member, epoch, mine...)
			for _, p := range mine {
				b.plainCommit(proc, call+1, call+4, "fare-workers", member, epoch, p, int64(round))
			}
			call += 2
		}
	}
	return b.h
}

// BenchmarkGenerationsFold judges a pipeline group's commits; the time
// per operation should not grow with the history:
//
//	go test -run '^$' -bench GenerationsFold ./checker/
func BenchmarkGenerationsFold(b *testing.B) {
	for _, n := range []int{20_000, 80_000} {
		h := pipelineGroup(n, 4, 8, 50)
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			for range b.N {
				if v := foldedGenerations(h); len(v) != 0 {
					b.Fatalf("a correct group's commit was found stale: %v", v[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(h.Ops)), "ns/history-op")
		})
	}
}
