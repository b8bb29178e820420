package workload

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A worker refused its committed offset as unstable asks again only once
// a transaction may have ended: before, nothing could have changed the
// answer, and on a broker whose clock is the wall clock, dozens of polls
// in a row ran out the transaction's timeout that the model's clock kept
// (FINDINGS.md, round 9).
func TestAWorkerWaitsForAnUnstableOffset(t *testing.T) {
	w := newWorker("fare-worker-A", "fare-workers", []model.Partition{"trips-0"},
		func(model.Partition) model.Partition { return "fares-ctp-0" }, true, true)
	w.step, w.Unknown, w.Position = workerFetchOffsets, []model.Partition{"trips-0"}, map[model.Partition]int64{}
	op, ok := w.next()
	require.True(t, ok)
	require.Equal(t, model.OffsetFetch, op.Kind)

	w.learn(op, model.Fail(model.UnstableOffsetCommit))
	_, ok = w.next()
	require.False(t, ok, "nothing could have made the offset stable yet")

	w.txnMayEnd()
	again, ok := w.next()
	require.True(t, ok, "a transaction may have ended: it asks again")
	require.Equal(t, op, again)
	resp := model.NewResponse()
	resp.Offset = 1
	w.learn(again, model.OK(resp))
	require.Equal(t, workerRead, w.step)
	require.Equal(t, int64(1), w.Position["trips-0"])
}

// A worker that joins again into the same generation and assignment before
// it fetched its committed offsets still fetches them: reading from its
// empty positions would read from 0 and process trips a second time.
func TestARejoinInTheSameGenerationStillFetchesOffsets(t *testing.T) {
	w := newWorker("fare-worker-A", "fare-workers", []model.Partition{"trips-0"},
		func(model.Partition) model.Partition { return "fares-ctp-0" }, true, true)
	answer := model.NewResponse()
	answer.MemberID, answer.GenerationID, answer.Assignment = "member-1", 7, []model.Partition{"trips-0"}
	w.joined(answer)
	require.Equal(t, workerFetchOffsets, w.step)

	w.joined(answer) // an init, then a rejoin answered the same, came first
	op, ok := w.next()
	require.True(t, ok)
	require.Equal(t, model.OffsetFetch, op.Kind, "the committed offset is still unknown")
	committed := model.NewResponse()
	committed.Offset = 1
	w.learn(op, model.OK(committed))
	require.Equal(t, int64(1), w.Position["trips-0"])
}
