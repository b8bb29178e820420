package checker

import (
	"context"
	"testing"
	"time"

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

// firstEndWrong is a model whose state is the id of the last of the first
// two operations placed, and whose last operation, lastID, fits only the
// state 0. Operations 0 and 1 overlap, so they form one window, whose
// first order found (0 then 1) ends in 1: the wrong state, which only
// the last window tells.
func firstEndWrong(lastID int) porcupine.Model {
	m := acceptAll
	m.StepContext = func(_ context.Context, s, in, _ any) (bool, any) {
		switch id := in.(*histories.Op).ID; {
		case id < 2:
			return true, id
		case id == lastID:
			return s == 0, s
		}
		return true, s
	}
	return m
}

// wrongFirstEnd is two overlapping operations, then between sequential
// ones, then the one that fits only the state their other order leaves.
func wrongFirstEnd(between int) histories.History {
	var h histories.History
	add := func(proc string, call, ret int64) {
		h.Ops = append(h.Ops, histories.Op{ID: len(h.Ops), Proc: proc, Call: call, Return: ret, Returned: true,
			Op: model.Op{Kind: model.Produce}, Result: model.OK(model.NewResponse())})
	}
	add("A", 0, 10)
	add("B", 1, 11)
	for i := range between {
		add("A", int64(20+2*i), int64(21+2*i))
	}
	add("A", int64(20+2*between), int64(21+2*between))
	return h
}

// TestStreamSearchComesBackToAnEarlierWindow: the first end state of a
// window is the wrong one, and a later window tells. The streamed search
// comes back to the window's other end state and finds the order, so
// CheckFile, which searches the whole history only when the streamed
// search finds none, does not.
func TestStreamSearchComesBackToAnEarlierWindow(t *testing.T) {
	for _, between := range []int{0, 5} {
		h := wrongFirstEnd(between)
		m := firstEndWrong(len(h.Ops) - 1)
		ops := porcupineOps(h)
		first, ok := endsOf(t.Context(), m, windowsOf(ops)[0], m.Init(), false).next()
		require.True(t, ok)
		require.Equal(t, 1, first, "the first end state found is the wrong one")

		windows, result, s := streamedWindows(t, m, h)
		require.Equal(t, porcupine.Ok, result, "between=%d", between)
		require.Len(t, windows, 2+between)
		require.Equal(t, 1, s.cameBack)
		require.Equal(t, 0, s.state)
		require.Equal(t, porcupine.Ok, checkWindowed(m, ops, DefaultTimeout, nil).result)
	}
}

// TestStreamSearchComesBackNoFurtherThanItKeeps: a window that needs a
// return further back than keptWindows is not placed by the streamed
// search, so CheckFile searches the whole history, which finds the order.
// One window less, and the streamed search finds it.
func TestStreamSearchComesBackNoFurtherThanItKeeps(t *testing.T) {
	for _, c := range []struct {
		between int
		want    porcupine.CheckResult
	}{{keptWindows - 1, porcupine.Ok}, {keptWindows, porcupine.Illegal}} {
		h := wrongFirstEnd(c.between)
		m := firstEndWrong(len(h.Ops) - 1)
		_, result, s := streamedWindows(t, m, h)
		require.Equal(t, c.want, result, "%d windows between", c.between)
		require.LessOrEqual(t, len(s.kept), keptWindows)
		require.Equal(t, porcupine.Ok, checkWindowed(m, porcupineOps(h), DefaultTimeout, nil).result)
	}
}

// TestStreamSearchKeepsWithinItsBound: the windows kept never pass
// keptWindows or keptOps, and the newest is dropped last.
func TestStreamSearchKeepsWithinItsBound(t *testing.T) {
	s := newStreamSearch(t.Context(), acceptAll, histories.History{}, 0, nil)
	sizes := []int{1, 1, 3_000, 1, 2_000, 1, 5_000, 1}
	for i := range 200 {
		sizes = append(sizes, 1+i%3)
	}
	for i, n := range sizes {
		s.keep(keptWindow{ops: make(window, n), ends: &listedEnds{i}})
		total := 0
		for _, k := range s.kept {
			total += len(k.ops)
		}
		require.Equal(t, total, s.keptLen)
		require.LessOrEqual(t, len(s.kept), keptWindows)
		require.LessOrEqual(t, s.keptLen, keptOps)
		if n <= keptOps {
			require.Equal(t, &listedEnds{i}, s.kept[len(s.kept)-1].ends, "window %d is kept", i)
		} else {
			require.Empty(t, s.kept, "a window wider than keptOps is not kept")
		}
	}
	require.Len(t, s.kept, keptWindows)
}

// TestStreamSearchComingBackHonoursTheTimeOut: once the time is up, coming
// back stops, and the verdict is Unknown.
func TestStreamSearchComingBackHonoursTheTimeOut(t *testing.T) {
	h := wrongFirstEnd(3)
	m := firstEndWrong(len(h.Ops) - 1)
	ctx, cancel := context.WithCancel(t.Context())
	s := newStreamSearch(ctx, m, h, neverOf(h), nil)
	ops := inCallOrderCopy(h.Ops)
	for i := range ops[:len(ops)-1] {
		s.add(&ops[i])
	}
	cancel()
	s.add(&ops[len(ops)-1])
	require.Equal(t, porcupine.Unknown, s.finish())
	require.Equal(t, 0, s.cameBack)
}

// sequential is n operations of one process, one after another.
func sequential(n int) histories.History {
	var h histories.History
	for i := range n {
		h.Ops = append(h.Ops, histories.Op{ID: i, Proc: "A", Call: int64(2 * i), Return: int64(2*i + 1), Returned: true,
			Op: model.Op{Kind: model.Produce}, Result: model.OK(model.NewResponse())})
	}
	return h
}

// TestStreamSearchTimeOutCountsSearchingOnly: the time the search waits
// for the next operation (a slow reading) does not count against its
// time-out, so a search that waits longer than its budget, and searches
// for less, is still Ok. A deadline on the context, as CheckFile had,
// ends it Unknown.
func TestStreamSearchTimeOutCountsSearchingOnly(t *testing.T) {
	h := sequential(8)
	ops := inCallOrderCopy(h.Ops)
	const budget = 200 * time.Millisecond
	run := func(s *streamSearch) porcupine.CheckResult {
		for i := range ops {
			time.Sleep(budget / 4) // the reading's time
			s.add(&ops[i])
		}
		return s.finish()
	}
	s := newStreamSearch(t.Context(), acceptAll, h, neverOf(h), nil)
	s.limit(budget)
	require.Equal(t, porcupine.Ok, run(s))
	require.Less(t, time.Duration(s.clock.spent.Load()), budget)

	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	require.Equal(t, porcupine.Unknown, run(newStreamSearch(ctx, acceptAll, h, neverOf(h), nil)))
}

// TestStreamSearchTimeOutStopsASlowSearch: a search whose steps take
// longer than its budget ends Unknown.
func TestStreamSearchTimeOutStopsASlowSearch(t *testing.T) {
	slow := acceptAll
	slow.StepContext = func(_ context.Context, s, _, _ any) (bool, any) {
		time.Sleep(20 * time.Millisecond)
		return true, s
	}
	h := sequential(15)
	s := newStreamSearch(t.Context(), slow, h, neverOf(h), nil)
	s.limit(100 * time.Millisecond)
	for _, op := range inCallOrderCopy(h.Ops) {
		s.add(&op)
	}
	require.Equal(t, porcupine.Unknown, s.finish())
	require.GreaterOrEqual(t, time.Duration(s.clock.spent.Load()), 100*time.Millisecond)
}
