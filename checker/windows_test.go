package checker

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestWindowsExplainAsTheWholeHistory: on every saved history that is not
// linearizable, the explanation drawn from the window no state can place
// (the one large histories get) names the operation, and the length of the
// legal order before it, that porcupine's search of the whole history
// names.
func TestWindowsExplainAsTheWholeHistory(t *testing.T) {
	var files []string
	for _, dir := range []string{"canonical", "mutants", "kfake"} {
		found, err := filepath.Glob(filepath.Join("..", "histories", dir, "*.json"))
		require.NoError(t, err)
		files = append(files, found...)
	}
	violated := 0
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		ops := porcupineOps(h)
		version := txnVersions(h)[0]
		m := porcupineModel(model.Options{TxnVersion: version}, nil, false, nil)
		search := checkWindowed(m, ops, time.Minute, nil)
		if search.result != porcupine.Illegal {
			continue
		}
		violated++
		whole := explain(m, search, h, ops, time.Minute)
		windowed := explainWindow(m, search, time.Minute)
		require.Equal(t, whole.Op, windowed.Op, "%s: %s\nvs %s", file, whole.Reason, windowed.Reason)
		require.Equal(t, whole.Reason, windowed.Reason, file)
	}
	require.NotZero(t, violated)
}

// TestWindowsOf: a cut needs a gap; an answer at the instant of the next
// call keeps the window open (porcupine takes them as concurrent).
func TestWindowsOf(t *testing.T) {
	h := histories.History{Ops: []histories.Op{
		{ID: 0, Proc: "A", Call: 0, Return: 5, Returned: true},
		{ID: 1, Proc: "B", Call: 5, Return: 7, Returned: true},
		{ID: 2, Proc: "A", Call: 8, Return: 9, Returned: true},
		{ID: 3, Proc: "A", Call: 10, Return: 10, Returned: true},
		{ID: 4, Proc: "B", Call: 11},
		{ID: 5, Proc: "A", Call: 12, Return: 13, Returned: true},
	}}
	for i := range h.Ops {
		h.Ops[i].Kind = model.Tick
	}
	var sizes []int
	for _, w := range windowsOf(porcupineOps(h)) {
		sizes = append(sizes, len(w))
	}
	require.Equal(t, []int{2, 1, 1, 1, 1}, sizes)
}

// TestWindowsCutWhereOneProcessTouches: one process's request called at
// the instant its previous one returned comes after it, so the window is
// cut there. Another process, a fault, or an answer at the instant of its
// own call at that instant leaves the order open, and the window with it.
func TestWindowsCutWhereOneProcessTouches(t *testing.T) {
	h := histories.History{Ops: []histories.Op{
		{ID: 0, Proc: "A", Call: 0, Return: 5, Returned: true, Op: model.Op{Kind: model.Produce}},
		{ID: 1, Proc: "A", Call: 5, Return: 7, Returned: true, Op: model.Op{Kind: model.Produce}},   // cut before: A touches A
		{ID: 2, Proc: "B", Call: 7, Return: 9, Returned: true, Op: model.Op{Kind: model.Produce}},   // none: B after A
		{ID: 3, Proc: "B", Call: 9, Return: 9, Returned: true, Op: model.Op{Kind: model.Produce}},   // cut before
		{ID: 4, Proc: "B", Call: 9, Return: 11, Returned: true, Op: model.Op{Kind: model.Produce}},  // none: 3 answered at its call
		{ID: 5, Proc: "B", Call: 11, Return: 12, Returned: true, Op: model.Op{Kind: model.Tick}},    // none: a tick
		{ID: 6, Proc: "B", Call: 13, Return: 14, Returned: true, Op: model.Op{Kind: model.Produce}}, // cut before: a gap
	}}
	for i := range h.Ops {
		h.Ops[i].Result = model.OK(model.NewResponse()) // answered: an undecided request stays in flight
	}
	var windows [][]int
	for _, w := range windowsOf(porcupineOps(h)) {
		windows = append(windows, opIDsOf(w))
	}
	require.Equal(t, [][]int{{0}, {1, 2}, {3, 4, 5}, {6}}, windows)
}
