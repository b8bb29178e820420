package checker

import (
	"context"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// acceptAll is a model every step fits, so that a test sees the windows
// the search cuts whatever the operations say.
var acceptAll = porcupine.Model{
	Init:        func() any { return 0 },
	StepContext: func(_ context.Context, s, _, _ any) (bool, any) { return true, s },
	Equal:       func(a, b any) bool { return a == b },
	Hash:        func(any) uint64 { return 0 },
}

// streamedWindows are the windows streamSearch cuts h into, as ids, and
// its verdict.
func streamedWindows(t *testing.T, m porcupine.Model, h histories.History) ([][]int, porcupine.CheckResult, *streamSearch) {
	t.Helper()
	s := newStreamSearch(t.Context(), m, h, neverOf(h), nil)
	var windows [][]int
	s.onCut = func(w window) {
		var ids []int
		for _, o := range w {
			ids = append(ids, o.Input.(*histories.Op).ID)
		}
		windows = append(windows, ids)
	}
	for _, op := range inCallOrderCopy(h.Ops) {
		s.add(&op)
	}
	return windows, s.finish(), s
}

// TestStreamSearchCutsAsWindowsOf: read in call order, a history is cut
// where windowsOf cuts it, a touch of one process's requests included.
func TestStreamSearchCutsAsWindowsOf(t *testing.T) {
	h := histories.History{Ops: []histories.Op{
		{ID: 0, Proc: "A", Call: 0, Return: 5, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 1, Proc: "A", Call: 5, Return: 7, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 2, Proc: "B", Call: 7, Return: 9, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 3, Proc: "B", Call: 9, Return: 9, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 4, Proc: "B", Call: 9, Return: 11, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 5, Proc: "B", Call: 11, Return: 12, Returned: true, Op: model.Op{Kind: model.Tick}},
		{ID: 6, Proc: "B", Call: 13, Return: 14, Returned: true, Op: model.Op{Kind: model.Produce}},
	}}
	for i := range h.Ops {
		h.Ops[i].Result = model.OK(model.NewResponse())
	}
	windows, result, _ := streamedWindows(t, acceptAll, h)
	require.Equal(t, porcupine.Ok, result)
	require.Equal(t, [][]int{{0}, {1, 2}, {3, 4, 5}, {6}}, windows)
}

// TestStreamSearchDropsWhatIsJudged: a long sequential history is judged a
// window of one operation at a time, and none is held after; a request
// that never returned keeps every operation after its call in one window,
// because any of them may have seen its effect.
func TestStreamSearchDropsWhatIsJudged(t *testing.T) {
	var h histories.History
	for i := range 2_000 {
		h.Ops = append(h.Ops, histories.Op{ID: i, Proc: "A", Call: int64(2 * i), Return: int64(2*i + 1), Returned: true,
			Op: model.Op{Kind: model.Produce}, Result: model.OK(model.NewResponse())})
	}
	_, result, s := streamedWindows(t, acceptAll, h)
	require.Equal(t, porcupine.Ok, result)
	require.Equal(t, 1, s.widest)
	require.Equal(t, 2_000, s.judged)
	require.Empty(t, s.window)

	h.Ops[10].Returned, h.Ops[10].Return, h.Ops[10].Result = false, 0, model.NoAnswer()
	h.Ops[10].Proc = "B"
	windows, result, s := streamedWindows(t, acceptAll, h)
	require.Equal(t, porcupine.Ok, result)
	require.Len(t, windows, 11, "ten windows of one, then one from the call that never returned to the end")
	require.Equal(t, 2_000-10, s.widest)
}

// TestStreamSearchStopsAtAWindowNoStatePlaces: once a window fits no
// order, the search says so, and takes nothing after.
func TestStreamSearchStopsAtAWindowNoStatePlaces(t *testing.T) {
	refuseThird := acceptAll
	refuseThird.StepContext = func(_ context.Context, s, in, _ any) (bool, any) {
		return in.(*histories.Op).ID != 2, s
	}
	var h histories.History
	for i := range 10 {
		h.Ops = append(h.Ops, histories.Op{ID: i, Proc: "A", Call: int64(2 * i), Return: int64(2*i + 1), Returned: true,
			Op: model.Op{Kind: model.Produce}, Result: model.OK(model.NewResponse())})
	}
	windows, result, s := streamedWindows(t, refuseThird, h)
	require.Equal(t, porcupine.Illegal, result)
	require.Len(t, windows, 3)
	require.Equal(t, 3, s.judged)
}
