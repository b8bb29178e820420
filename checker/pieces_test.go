package checker_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// cores runs f at each GOMAXPROCS and restores the one it found.
func cores(t *testing.T, procs []int, f func(procs int)) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, p := range procs {
		runtime.GOMAXPROCS(p)
		f(p)
	}
}

// The pieces of a history of independent transactional ids, searched on
// one core and on four, give the same result: the same verdict, piece,
// window, place and start states.
func TestPiecesSameOnEveryCore(t *testing.T) {
	h := independentHistory(4_000, 8, 3)
	require.Len(t, checker.Pieces(h), 8, "one piece per transactional id")
	var outcomes []checker.SearchOutcome
	cores(t, []int{1, 4}, func(int) { outcomes = append(outcomes, checker.SearchWindowed(h)) })
	require.Equal(t, "Ok", outcomes[0].Result)
	require.NotEmpty(t, outcomes[0].Window)
	require.Equal(t, outcomes[0], outcomes[1])
}

// When two pieces fail, the search names the first in partition order at
// every core count, though the later one fails sooner (its wrong answer
// is near its start, the earlier one's near its end). When only the later
// one fails, it is named.
func TestFirstFailingPieceInOrder(t *testing.T) {
	clean := independentHistory(8_000, 8, 5)
	pieces := checker.Pieces(clean)
	require.Len(t, pieces, 8)
	first := wrongOffset(t, clean, pieces[0], true)
	later := wrongOffset(t, clean, pieces[1], false)
	cases := []struct {
		name  string
		wrong []int
		named int
	}{{"both", []int{first, later}, first}, {"later only", []int{later}, later}}
	for _, c := range cases {
		h := clean
		h.Ops = slices.Clone(clean.Ops)
		for _, id := range c.wrong {
			h.Ops[id].Result.Resp.BaseOffset++
		}
		var outcomes []checker.SearchOutcome
		cores(t, []int{1, 2, 4}, func(procs int) {
			got := checker.SearchWindowed(h)
			require.Equal(t, "Illegal", got.Result, "%s at GOMAXPROCS %d", c.name, procs)
			require.Contains(t, got.Window, c.named, "%s at GOMAXPROCS %d", c.name, procs)
			outcomes = append(outcomes, got)
		})
		require.Equal(t, outcomes[0], outcomes[1], c.name)
		require.Equal(t, outcomes[0], outcomes[2], c.name)
	}
}

// Pieces searched at once tell their progress one call at a time, and the
// count told never goes down. After the last call fewer than every
// operations are left untold, at one core as at four.
func TestPiecesProgress(t *testing.T) {
	const every = 100
	h := independentHistory(4_000, 8, 3)
	var last []int
	cores(t, []int{1, 4}, func(procs int) {
		told, err := checker.SearchProgress(h, every)
		require.NoError(t, err, "GOMAXPROCS %d", procs)
		require.Greater(t, len(told), 10, "GOMAXPROCS %d", procs)
		for i := 1; i < len(told); i++ {
			require.GreaterOrEqual(t, told[i]-told[i-1], every, "GOMAXPROCS %d: %v", procs, told)
		}
		last = append(last, told[len(told)-1])
	})
	require.Less(t, max(last[0], last[1])-min(last[0], last[1]), every, "%v", last)
}

// wrongOffset is the id of a succeeded produce of the piece: the last of
// them, or the first.
func wrongOffset(t *testing.T, h histories.History, piece []int, last bool) int {
	t.Helper()
	if last {
		piece = slices.Clone(piece)
		slices.Reverse(piece)
	}
	for _, id := range piece {
		if op := h.Ops[id]; op.Kind == model.Produce && op.Result.Succeeded() {
			return id
		}
	}
	t.Fatal("no succeeded produce in the piece")
	return 0
}
