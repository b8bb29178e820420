package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A cut keeps the operations called before its instant, and takes away
// the answers that came at or after it, keeping their requests.
func TestCutKeepsWhatWasCalledBeforeItsInstant(t *testing.T) {
	b, ids := seed000()
	b.h.Trips = []string{"trip-9001"}
	cut := Cut(b.h, 32003)
	require.Len(t, cut.Ops, len(b.h.Ops)-1, "B's commit, called at 32004, is not in the cut")
	for _, op := range cut.Ops {
		require.Less(t, op.Call, int64(32003))
		if op.Returned {
			require.Less(t, op.Return, int64(32003))
		}
	}
	produce := cut.Ops[ids["B produce"]]
	require.False(t, produce.Returned, "B's produce returned at the instant: in flight to the end")
	require.False(t, produce.Result.Answered)
	require.Equal(t, []model.Record{{Key: "trip-9001"}}, produce.Req.Records, "its request is kept")
	require.True(t, b.h.Ops[ids["B produce"]].Returned, "the history cut is left as it was")
	require.Nil(t, cut.Trips, "a cut is no end of the run")
}

// The violation of a zombie's write shows in every cut after its answer,
// and in none before; progress, whose trips a cut has not finished, is
// skipped.
func TestCheckCutReportsWhatTheCutShows(t *testing.T) {
	b, _ := seed000()
	zombie := b.produce("A", 41000, 41001, fw0, "fares-2", 44, "trip-9002")
	b.h.Trips = []string{"trip-9001", "trip-9003"}
	require.Equal(t, Violated, Check(b.h, Options{}).Verdict(Progress).Status, "trip-9003 is never committed")

	before := CheckCut(b.h, 41001, Options{})
	require.Equal(t, OK, before.Verdict(OneLiveProducer).Status, "the zombie's answer came at the cut's instant")
	require.Equal(t, Skipped, before.Verdict(Progress).Status)

	after := CheckCut(b.h, 41002, Options{})
	v := after.Verdict(OneLiveProducer)
	require.Equal(t, Violated, v.Status)
	require.Equal(t, zombie, v.Violations[0].Op)
	require.Equal(t, Skipped, after.Verdict(Progress).Status)
}
