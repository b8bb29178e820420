package checker

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestReadsChangeNoVerdict: on every saved history, and on a copy of each
// history with a fetch whose first record's key is altered, the windowed
// search finds the same result, stopping at the same window, whether the
// model keeps every record or only those the history's fetches read
// (model.Reads). It does under each transaction protocol, asking for an
// order that explains every answer exactly and for one that explains the
// effects.
func TestReadsChangeNoVerdict(t *testing.T) {
	var fetching, dropping, altered, illegal int
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue
		}
		cases := []histories.History{h}
		if bad, ok := withAlteredFetch(h); ok {
			cases = append(cases, bad)
			altered++
		}
		for i, c := range cases {
			reads := readsOf(c.Ops)
			if reads.String() != "" {
				fetching++
			}
			if keepsLess(c, reads) {
				dropping++
			}
			ops := porcupineOps(c)
			for _, version := range txnVersions(c) {
				for _, strict := range []bool{true, false} {
					opts := modelOptions(c, version, Options{})
					all := checkWindowed(porcupineModel(opts, c.Topics, strict, nil), ops, time.Minute, nil)
					opts.Reads = reads
					some := checkWindowed(porcupineModel(opts, c.Topics, strict, nil), ops, time.Minute, nil)
					require.Equal(t, all.result, some.result, "%s (case %d), version %d, strict %v", file, i, version, strict)
					require.Equal(t, all.at, some.at, "%s (case %d): the window the search stopped at", file, i)
					require.Equal(t, len(all.piece), len(some.piece), "%s (case %d): the piece the search stopped in", file, i)
					if i == 1 {
						require.NotEqual(t, porcupine.Ok, all.result, "%s: a fetch's altered record is found", file)
						illegal++
					}
				}
			}
		}
	}
	t.Logf("%d cases with a fetch, %d keeping less, %d altered, %d illegal searches", fetching, dropping, altered, illegal)
	// The saved histories hold both kinds of partition, so that the test
	// compares logs that keep records with logs that keep none.
	require.Greater(t, fetching, 10, "histories with a fetch")
	require.Greater(t, dropping, 20, "histories with offsets no fetch reads")
	require.Greater(t, altered, 10, "histories with a fetch's record altered")
	require.Greater(t, illegal, 10)
}

// keepsLess reports whether some produce of h writes to a partition below
// the lowest offset the fetches of h read there.
func keepsLess(h histories.History, reads *model.Reads) bool {
	for _, op := range h.Ops {
		if op.Op.Kind != model.Produce || !op.Result.Succeeded() {
			continue
		}
		if from, read := reads.Lowest(op.Op.Req.Partition); !read || op.Result.Resp.BaseOffset < from {
			return true
		}
	}
	return false
}

// withAlteredFetch is h with the key of the first record a fetch returned
// changed, so that no broker could have answered it; false when no fetch
// of h returned a record.
func withAlteredFetch(h histories.History) (histories.History, bool) {
	for i, op := range h.Ops {
		if op.Op.Kind != model.Fetch || !op.Returned || len(op.Result.Resp.Records) == 0 {
			continue
		}
		ops := slices.Clone(h.Ops)
		records := slices.Clone(op.Result.Resp.Records)
		records[0].Key += "-altered"
		ops[i].Result.Resp.Records = records
		h.Ops = ops
		return h, true
	}
	return h, false
}

// TestForgettingChangesNoVerdict: on every saved history, and on the copy
// with a fetch's record altered, the streamed search finds the same
// result whether or not it tells the model, after every window, the
// offsets the fetches still to come read from (fetchesAhead). It does
// under each transaction protocol.
func TestForgettingChangesNoVerdict(t *testing.T) {
	forgot := 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue
		}
		cases := []histories.History{h}
		if bad, ok := withAlteredFetch(h); ok {
			cases = append(cases, bad)
		}
		for i, c := range cases {
			for _, version := range txnVersions(c) {
				opts := modelOptions(c, version, Options{})
				plain := newStreamSearch(t.Context(), porcupineModel(opts, c.Topics, true, nil), c, neverOf(c), nil)
				ahead := newFetchesAhead()
				for j := range c.Ops {
					ahead.note(&c.Ops[j])
				}
				opts.Reads = readsOf(c.Ops)
				forgetting := newStreamSearch(t.Context(), porcupineModel(opts, c.Topics, true, nil), c, neverOf(c), nil)
				forgetting.ahead, forgetting.forgetEvery = ahead, 1
				for _, op := range inCallOrderCopy(c.Ops) {
					plain.add(&op)
					forgetting.add(&op)
				}
				require.Equal(t, plain.finish(), forgetting.finish(), "%s (case %d), version %d", file, i, version)
				require.Equal(t, plain.judged, forgetting.judged, "%s (case %d): operations judged", file, i)
				if len(ahead.stairs) > 0 {
					forgot++
				}
			}
		}
	}
	require.Greater(t, forgot, 50, "searches that told the model of fetches to come")
}

// TestFetchesAheadIsALowerBound: for fetches noted in any order of their
// calls, the offset fetchesAhead gives for a moment is the lowest that
// the fetches called at or after it read, until a partition has more than
// maxStairs stairs. Then it is at most that, never more, and for a
// consumer that reads on it lags by no more than a stair's fetches, about
// 8 in maxStairs of them, at any moment of the history.
func TestFetchesAheadIsALowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 3))
	for round := range 200 {
		n := 1 + rng.IntN(50)
		if round%100 == 0 {
			n = 40 * maxStairs
		}
		var ops []histories.Op
		for i := range n {
			r := model.NewRequest()
			r.Partition, r.Offset = "p-0", rng.Int64N(int64(2*n))-1
			call := rng.Int64N(int64(2 * n))
			if n > maxStairs {
				r.Offset, call = int64(i), int64(i) // a consumer reading on
			}
			ops = append(ops, histories.Op{ID: i, Call: call, Op: model.Op{Kind: model.Fetch, Req: r}})
		}
		ahead := newFetchesAhead()
		for i := range ops {
			ahead.note(&ops[i])
		}
		require.LessOrEqual(t, len(ahead.stairs["p-0"]), maxStairs)
		// lowest[i] is the lowest offset of the fetches byCall[i:] read.
		byCall := slices.SortedFunc(slices.Values(ops), func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) })
		lowest := make([]int64, len(byCall)+1)
		lowest[len(byCall)] = math.MaxInt64
		for i := len(byCall) - 1; i >= 0; i-- {
			lowest[i] = min(lowest[i+1], max(byCall[i].Op.Req.Offset, 0))
		}
		for at := int64(-1); at <= int64(2*n)+1; at++ {
			want := lowest[sort.Search(len(byCall), func(i int) bool { return byCall[i].Call >= at })]
			got := lowestAhead(ahead, "p-0", at)
			if n > maxStairs && (got > want || want-got > int64(8*n/maxStairs)) || n <= maxStairs && got != want {
				t.Fatalf("round %d, %d fetches, at %d: %d, want %d", round, n, at, got, want)
			}
		}
	}
}

// lowestAhead is the offset fetchesAhead gives p at a moment, asked
// afresh.
func lowestAhead(f *fetchesAhead, p model.Partition, at int64) int64 {
	st := f.stairs[p]
	if i := sort.Search(len(st), func(i int) bool { return st[i].call >= at }); i < len(st) {
		return st[i].offset
	}
	return math.MaxInt64
}
