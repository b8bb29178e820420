package checker

import (
	"slices"
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
