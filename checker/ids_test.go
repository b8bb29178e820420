package checker_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestIdsAreNames: an operation's id is its name (docs/history-format.md),
// not its place in time, so a history judges the same whatever names its
// operations carry: every saved history, its ids reversed, and with its
// first successful end_txn named 0 (a tool may number operations in any
// order, and 0 is a name like the others). Each check holds or breaks alike,
// and breaks first at an operation called at the same time (among operations
// called at one instant, the lowest id is named first). For linearizable and
// error-codes, which judge by the model along a legal order, only the status
// is compared: of several orders as long, the one whose ids come first is
// taken (longestOf), so that the operation named does not vary from run to
// run.
func TestIdsAreNames(t *testing.T) {
	var files []string
	for _, dir := range []string{"canonical", "mutants", "clients", "kfake"} {
		found, err := filepath.Glob(filepath.Join("..", "histories", dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, found, dir)
		files = append(files, found...)
	}
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		want := firstBreaches(h, checker.Check(h, checker.Options{}))
		for name, rename := range map[string]func(histories.History) map[int]int{"reversed": reversedIDs, "end_txn named 0": endTxnNamedZero} {
			renamed := withIDs(h, rename(h))
			require.Equal(t, want, firstBreaches(renamed, checker.Check(renamed, checker.Options{})), "%s, ids %s", file, name)
		}
	}
}

// breach is how a check ended on a history: its status, and when the
// operation it first broke at was called.
type breach struct {
	status checker.Status
	at     int64
}

func firstBreaches(h histories.History, r checker.Report) map[string]breach {
	calls := map[int]int64{}
	for _, op := range h.Ops {
		calls[op.ID] = op.Call
	}
	out := map[string]breach{}
	for _, v := range r.Verdicts {
		b := breach{status: v.Status}
		if len(v.Violations) > 0 && v.Check != checker.Linearizable && v.Check != checker.ErrorCodes {
			b.at = calls[v.Violations[0].Op]
		}
		out[v.Check] = b
	}
	return out
}

// withIDs is h with each operation's id renamed.
func withIDs(h histories.History, rename map[int]int) histories.History {
	out := h
	out.Ops = make([]histories.Op, len(h.Ops))
	for i, op := range h.Ops {
		if id, ok := rename[op.ID]; ok {
			op.ID = id
		}
		out.Ops[i] = op
	}
	return out
}

func reversedIDs(h histories.History) map[int]int {
	highest := 0
	for _, op := range h.Ops {
		highest = max(highest, op.ID)
	}
	rename := map[int]int{}
	for _, op := range h.Ops {
		rename[op.ID] = highest - op.ID
	}
	return rename
}

// endTxnNamedZero swaps the names of the first successful end_txn and of
// the operation named 0.
func endTxnNamedZero(h histories.History) map[int]int {
	for _, op := range h.Ops {
		if op.Kind == model.EndTxn && op.Result.Succeeded() {
			return map[int]int{op.ID: 0, 0: op.ID}
		}
	}
	return nil
}
