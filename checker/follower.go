package checker

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Follower judges a history while a recorder writes it, as CheckFile
// judges a whole file: each operation once, in call order, through the
// same streamed search (streamSearch) and the same invariants
// (invariantStream). Its caller reads the file and gives it each
// operation (Add) and each "complete_before" mark (Judge) as they are
// written (docs/history-format.md). A mark T says that every operation
// called before T is in the file. So Judge hands on the operations
// called before T, in call order, ties by id; the rest wait for a later
// mark. What it holds is what CheckFile holds: the operations that wait,
// the search's open window and state, and what the folds keep.
//
// Judge returns what each check finds as soon as it is final, so that
// a violation shows within seconds of the operation that made it:
//
//   - A fold that names violations before the end (earlyFold) is asked
//     after each mark.
//   - The search judges a window once an operation called after it is
//     handed on. When no order places a window, the window may still be
//     placed from another end state of an earlier one, or under the
//     other transaction protocol. So the Follower reads the file again,
//     and searches the cut at the mark (Cut) whole, as Check does. That
//     search's violation is the one reported, with its reason. When it
//     finds an order, the Follower searches on under the protocol the
//     search has not tried, or, with both tried, leaves linearizability
//     to the end.
//
// Finish gives the verdicts at the end, as CheckFile gives them for the
// same file.
type Follower struct {
	path       string
	header     histories.History // the header before the ops, Ops nil
	opts       Options
	ctx        context.Context // the search's, for the call under way
	search     *streamSearch   // nil until the protocol is known
	undecided  []*histories.Op // the operations handed on before it is
	version    int             // the transaction protocol the search runs
	tried      map[int]bool    // the protocols the search has run
	invariants *invariantStream
	waiting    callHeap // the operations read, not yet handed on
	mark       int64    // the latest mark judged
	marked     bool
	handed     int           // the operations handed on
	searching  time.Duration // the time the search took so far
	// found are the violations reported so far, by check.
	found map[string][]Violation
	// linDone: the search's failure was explained, or left to the end.
	linDone bool
}

// followNever is the return of an operation that may take effect at any
// time after its call: after every call and return a recording will hold.
// CheckFile takes one past the file's latest instant, which gives the
// search the same order of events.
const followNever = math.MaxInt64 / 2

// NewFollower follows the history file at path, whose header (all but
// its ops) is header.
func NewFollower(path string, header histories.History, opts Options) *Follower {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	opts.Visualize = false
	header.Ops = nil
	f := &Follower{path: path, header: header, opts: opts, ctx: context.Background(), tried: map[int]bool{}, found: map[string][]Violation{}}
	f.invariants = newInvariantStream(header, newPassProgress(opts.Progress))
	// The folds keep what a history that keeps to Kafka's order still
	// needs. Without the fetches to come, which only a whole file tells,
	// they keep every record a fetch may still read.
	f.invariants.bound()
	if header.TransactionsVersion != 0 {
		f.startSearch(header.TransactionsVersion)
	}
	return f
}

// followUndecided is how many operations the search waits for, at most,
// for an end_txn that shows the transaction protocol.
const followUndecided = 10_000

// toSearch gives op to the search. The search starts under the protocol
// that CheckFile tries first: transactions v2 when an end_txn answer is
// signed (signsV2), v1 otherwise. CheckFile knows that from its first
// reading of the file. The follower waits for the first successful
// end_txn, which shows it, holding the operations before it, at most
// followUndecided of them.
func (f *Follower) toSearch(op *histories.Op) {
	if f.search == nil {
		f.undecided = append(f.undecided, op)
		decides := op.Kind == model.EndTxn && op.Result.Succeeded()
		if !decides && len(f.undecided) < followUndecided {
			return
		}
		f.startSearch(versionsSigned(f.header, signsV2(op))[0])
		for _, o := range f.undecided {
			f.search.add(o)
		}
		f.undecided = nil
		return
	}
	f.search.add(op)
}

// startSearch begins the search again, from the empty cluster, under the
// transaction protocol version.
func (f *Follower) startSearch(version int) {
	f.version, f.tried[version] = version, true
	m := porcupineModel(modelOptions(f.header, version, f.opts), f.header.Topics, true, f.opts.AllowCodes)
	f.search = newStreamSearch(f.ctx, m, f.header, followNever, phaseReport(f.opts.Progress, Linearizable))
}

// Add takes an operation read from the file, in the order of the file.
// An operation called before a mark already judged breaks that mark's
// promise, and is an error.
func (f *Follower) Add(op histories.Op) error {
	if f.marked && op.Call < f.mark {
		return fmt.Errorf("op %d is called at %d, but came after the mark complete_before %d, which says every operation called before it came earlier",
			op.ID, op.Call, f.mark)
	}
	heap.Push(&f.waiting, &op)
	return nil
}

// Judge hands on, in call order, the operations called before the mark
// completeBefore, and returns each check whose violations grew since the
// last call: its verdict with every violation found so far. Each
// violation is final: the whole history shows it too.
func (f *Follower) Judge(completeBefore int64) []Verdict {
	if !f.marked || completeBefore > f.mark {
		f.mark, f.marked = completeBefore, true
	}
	f.handOn(f.mark)
	f.invariants.calledBefore(f.mark)
	var grew []Verdict
	if f.search != nil && f.search.result == porcupine.Illegal && !f.linDone {
		grew = append(grew, f.explain()...)
	}
	grew = append(grew, f.early()...)
	return grew
}

// handOn gives the search and the invariants the operations waiting that
// were called before the instant before.
func (f *Follower) handOn(before int64) {
	if len(f.waiting) == 0 || f.waiting[0].Call >= before {
		return
	}
	f.searchWithin(func() {
		for len(f.waiting) > 0 && f.waiting[0].Call < before {
			op := heap.Pop(&f.waiting).(*histories.Op)
			began := time.Now()
			f.toSearch(op)
			f.searching += time.Since(began)
			f.invariants.add(op)
			f.handed++
		}
	})
	if f.search != nil && f.search.result == porcupine.Unknown {
		f.linDone = true
	}
}

// searchWithin runs search under what is left of the search's time: as
// CheckFile's, the time-out for each 100,000 operations, here of those
// read so far, less the time the search took before. The search keeps
// no context of its own between calls, because a window is judged under
// the time of the call that judges it.
func (f *Follower) searchWithin(search func()) {
	budget := f.opts.Timeout*time.Duration(1+(f.handed+len(f.waiting))/timeoutOps) - f.searching
	ctx, cancel := context.WithTimeout(context.Background(), max(budget, 0))
	defer cancel()
	f.ctx = ctx
	if f.search != nil {
		f.search.ctx = ctx
	}
	search()
	f.ctx = context.Background()
	if f.search != nil {
		f.search.ctx = f.ctx
	}
}

// explain searches the whole cut at the mark once the streamed search
// found no order: it reports the cut's violations of linearizable and
// error-codes, which the whole history shows too, or, when the cut has an
// order, runs the search again under the protocol it has not tried.
func (f *Follower) explain() []Verdict {
	h, err := histories.LoadFile(f.path)
	var broken *histories.BrokenError
	switch {
	case errors.As(err, &broken) && broken.Before != nil:
		h = *broken.Before
	case err != nil:
		f.linDone = true // judged at the end, as CheckFile judges it
		return nil
	}
	cut := Cut(h, f.mark)
	lin := checkLinearizable(cut, f.opts)
	var grew []Verdict
	for _, v := range []Verdict{lin.verdict, lin.codes} {
		if v.Status == Violated && len(f.found[v.Check]) == 0 {
			f.found[v.Check] = v.Violations
			grew = append(grew, v)
		}
	}
	if len(grew) > 0 || lin.verdict.Status != OK {
		f.linDone = true
		return grew
	}
	other := 3 - f.version
	if f.header.TransactionsVersion != 0 || f.tried[other] {
		f.linDone = true
		return nil
	}
	// The cut has an order, and the other protocol may find it window by
	// window: search again, from the start, what was handed on so far.
	f.startSearch(other)
	f.searchWithin(func() {
		for _, i := range callOrder(h.Ops) {
			if h.Ops[i].Call >= f.mark {
				break
			}
			began := time.Now()
			f.search.add(&h.Ops[i])
			f.searching += time.Since(began)
		}
	})
	if f.search.result == porcupine.Illegal {
		return f.explain()
	}
	return nil
}

// early asks the folds for the violations they found since the last
// call, and returns each check whose violations grew.
func (f *Follower) early() []Verdict {
	var grew []string
	for _, v := range f.invariants.early() {
		if slices.ContainsFunc(f.found[v.check], func(w Violation) bool { return w.Op == v.Op }) {
			continue
		}
		if !slices.Contains(grew, v.check) {
			grew = append(grew, v.check)
		}
		f.found[v.check] = append(f.found[v.check], v.Violation)
	}
	verdicts := make([]Verdict, len(grew))
	for i, check := range grew {
		verdicts[i] = Verdict{Check: check, Status: Violated, Violations: f.found[check]}
	}
	return verdicts
}

// Followed says how far the following has come: the operations handed
// on, the latest mark, and the operations that wait for a later one.
func (f *Follower) Followed() (handed int, mark int64, waiting int) {
	return f.handed, f.mark, len(f.waiting)
}

// Finish gives the verdicts once the document is ended, with end its
// header (the top-level members written after the ops as well), or, with
// end nil, once the following stops before the document is ended. It
// judges every operation added, as CheckFile judges the file then, and
// gives the same verdicts. It reads the file again when a violation
// names operations (the Report holds them, as CheckFile's does), and
// when the members after the ops change the progress check. When no
// order explains the history, it is CheckFile.
func (f *Follower) Finish(end *histories.History) (Report, error) {
	f.handOn(math.MaxInt64)
	if f.search == nil {
		// No end_txn shows the protocol: the likelier one, v1.
		f.startSearch(versionsSigned(f.header, false)[0])
		f.searchWithin(func() {
			for _, o := range f.undecided {
				f.search.add(o)
			}
		})
		f.undecided = nil
	}
	var result porcupine.CheckResult
	f.searchWithin(func() { result = f.search.finish() })
	if result != porcupine.Ok {
		return CheckFile(f.path, f.opts)
	}
	// The folds judge some operations only at the end, so they are asked
	// what they forgot after their verdicts, as CheckFile asks them.
	judged := f.invariants.verdicts()
	if why := f.invariants.forgotten(); why != "" {
		if f.opts.Slower != nil {
			f.opts.Slower(why)
		}
		return CheckFile(f.path, f.opts)
	}
	header := f.header
	if end != nil {
		header = *end
		header.Ops = nil
	}
	verdicts := append([]Verdict{held(Linearizable)}, judged...)
	verdicts = append(verdicts, held(ErrorCodes))
	report := Report{History: header, Verdicts: verdicts, Allow: f.opts.Allow, AllowCodes: f.opts.AllowCodes,
		lin: linearizability{verdict: held(Linearizable), codes: held(ErrorCodes), model: f.search.m, judged: f.search.judged}}
	progressLate := !standInOff && f.invariants.disorder == "" &&
		(!slices.Equal(header.Trips, f.header.Trips) || !slices.Equal(header.OutputTopics, f.header.OutputTopics) ||
			(header.Trips == nil) != (f.header.Trips == nil))
	named := namedOps(verdicts)
	if !progressLate && len(named) == 0 {
		return report, nil
	}
	return f.readAgain(report, progressLate, named)
}

// readAgain reads the file once more for the operations the verdicts
// name and, when late, to judge progress with the trips that only the
// end of the document gives.
func (f *Follower) readAgain(report Report, late bool, named map[int]bool) (Report, error) {
	stream, err := histories.OpenStream(f.path, histories.StreamOptions{})
	if err != nil {
		return Report{}, err
	}
	var progress invariantFold
	var txns *txnStream
	if late {
		progress = newProgressFold(report.History)
		txns = newTxnStream(progress.(txnListener))
	}
	var ops []histories.Op
	var last histories.Op // the operation called last, which progress names
	err = stream.Each(func(op *histories.Op) error {
		if late {
			txns.add(op)
			progress.add(op)
			last = *op
		}
		if named[op.ID] {
			ops = append(ops, *op)
		}
		return nil
	})
	var broken *histories.BrokenError
	if err != nil && !errors.As(err, &broken) {
		return Report{}, err
	}
	if late {
		txns.finish()
		v := progress.verdict()
		report.Verdicts[slices.Index(Checks, Progress)] = v
		if v.Status == Violated && !named[v.Violations[0].Op] {
			ops = append(ops, last)
		}
	}
	report.History.Ops = ops
	return report, nil
}

// callHeap holds operations in call order, ties by id, earliest first.
type callHeap []*histories.Op

func (h callHeap) Len() int { return len(h) }
func (h callHeap) Less(i, j int) bool {
	if h[i].Call != h[j].Call {
		return h[i].Call < h[j].Call
	}
	return h[i].ID < h[j].ID
}
func (h callHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *callHeap) Push(x any)   { *h = append(*h, x.(*histories.Op)) }
func (h *callHeap) Pop() any {
	old := *h
	op := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return op
}
