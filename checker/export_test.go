package checker

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TxnStreamDiff lets the external tests hold the transaction stream to
// analyzeTxns on their synthetic histories.
var TxnStreamDiff = txnStreamDiff

// SearchOutcome is the windowed search's result as the external tests
// compare it: the verdict, the operation ids of the piece and the window
// the search stopped at, the window's place, and the hashes of the states
// it may start in.
type SearchOutcome struct {
	Result string
	Piece  []int
	Window []int
	At     int
	Starts []uint64
}

// SearchWindowed is checkWindowed's outcome on h under transactions v1,
// every answer judged exactly.
func SearchWindowed(h histories.History) SearchOutcome {
	m := porcupineModel(modelOptions(h, 1, Options{}), h.Topics, true, nil)
	res := checkWindowed(m, porcupineOps(h), time.Minute, nil)
	out := SearchOutcome{Result: string(res.result), At: res.at}
	for _, o := range res.piece {
		out.Piece = append(out.Piece, o.Input.(*histories.Op).ID)
	}
	for _, o := range res.window {
		out.Window = append(out.Window, o.Input.(*histories.Op).ID)
	}
	for _, s := range res.starts {
		out.Starts = append(out.Starts, model.Hash(s.(model.State)))
	}
	return out
}

// Pieces are the operation ids of each piece the search cuts h into, in
// the order it searches them.
func Pieces(h histories.History) [][]int {
	var pieces [][]int
	for _, piece := range partition(porcupineOps(h)) {
		pieces = append(pieces, opIDsOf(piece))
	}
	return pieces
}

// opIDsOf are the ids of the history's operations that ops are.
func opIDsOf(ops []porcupine.Operation) []int {
	var ids []int
	for _, o := range ops {
		ids = append(ids, o.Input.(*histories.Op).ID)
	}
	return ids
}

// SearchProgress is what checkWindowed tells its progress callback on h,
// told every every operations, in the order it tells them. It fails when
// two calls overlap.
func SearchProgress(h histories.History, every int) ([]int, error) {
	m := porcupineModel(modelOptions(h, 1, Options{}), h.Topics, true, nil)
	var (
		told    []int
		inside  atomic.Bool
		overlap error
	)
	report := func(done int) {
		if !inside.CompareAndSwap(false, true) {
			overlap = errors.New("two progress calls at once")
			return
		}
		told = append(told, done)
		inside.Store(false)
	}
	searchWindowed(m, porcupineOps(h), time.Minute, &progressCount{report: report, every: every, next: every})
	return told, overlap
}
