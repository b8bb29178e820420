package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// invariantStream judges the six invariants of a history whose operations
// come one at a time, in call order, ties by id. Each check is a fold: it
// keeps what a later operation can still change, and gives its verdict at
// the end.
type invariantStream struct {
	header   histories.History // every member but Ops
	progress *passProgress
	folds    []invariantFold
	checks   []string // the checks of folds, in the order of Checks
	added    int
	// lastCall and lastID are the call and id of the operation that came
	// last, when added > 0.
	lastCall int64
	lastID   int
	// settled: every operation called before it has come (calledBefore).
	settled    int64
	hasSettled bool
	// disorder names the first operation that came out of call order;
	// the folds judge nothing after it.
	disorder string
	// txns replays the transactions for the folds that need their fates;
	// nil when none does.
	txns *txnStream
	// batches tells the folds that need it which produces repeat a
	// batch; nil when none does.
	batches *landedBatches
}

// invariantFold is one check, fed every operation in call order.
type invariantFold interface {
	add(op *histories.Op)
	verdict() Verdict
}

// earlyFold is a fold that can name some violations before the end, so
// that a recording followed while it is written (fencecheck check
// --follow) shows them within seconds of the operation that made them.
type earlyFold interface {
	invariantFold
	// early returns the violations found since its last call, each one
	// final: no later operation takes it back.
	early() []foldedViolation
}

// calledBeforeFold is a fold that waits until every operation called before
// an instant has come, and that can be told so before an operation called
// after it comes (invariantStream.calledBefore).
type calledBeforeFold interface {
	invariantFold
	// calledBefore: every operation called before instant has come.
	calledBefore(instant int64)
}

// readsAware is a fold that keeps less once it knows which partitions
// the history's fetches read (invariantStream.onlyRead).
type readsAware interface {
	invariantFold
	// onlyRead: no fetch of the history reads a partition reads does
	// not name.
	onlyRead(reads *model.Reads)
}

// aheadAware is a fold that keeps less once it can tell, at each moment,
// the lowest offset the fetches still to come read (fetchesAhead).
type aheadAware interface {
	invariantFold
	// readAhead: ahead knows every fetch of the history, and is the
	// fold's own to ask.
	readAhead(ahead *fetchesAhead)
}

// boundedFold is a fold that can keep only what a history that keeps to
// Kafka's order still needs, for example the newest sessions of a
// transactional.id rather than every session it was ever handed. A
// history that needs what such a fold forgot (a zombie of a session
// handed out long ago that succeeds, an offset answered far below the
// others) is one the fold cannot judge exactly: it says so
// (forgotten), and the file is judged again whole (CheckFile), so that
// the verdicts never depend on what was forgotten.
type boundedFold interface {
	invariantFold
	// bound: from the first operation on, keep only what a regular
	// history still needs.
	bound()
	// forgotten names the first operation that needed what the fold
	// forgot, and why; "" when none did. It is asked after verdict,
	// because some operations are judged only at the end.
	forgotten() string
}

// bound tells the folds, before the first operation, to keep only what a
// regular history still needs (boundedFold), so that the memory of a
// long check follows what is open rather than the file's length.
func (s *invariantStream) bound() {
	for _, f := range s.folds {
		if b, ok := f.(boundedFold); ok {
			b.bound()
		}
	}
	if s.batches != nil {
		s.batches.bound()
	}
}

// forgotten names the first operation a bounded fold could not judge
// because it needed what the fold forgot; "" when none did. The verdicts
// are then not to be trusted, and the history is judged whole.
func (s *invariantStream) forgotten() string {
	if s.batches != nil {
		if why := s.batches.forgotten(); why != "" {
			return why
		}
	}
	for i, f := range s.folds {
		if b, ok := f.(boundedFold); ok {
			if why := b.forgotten(); why != "" {
				return s.checks[i] + ": " + why
			}
		}
	}
	return ""
}

// onlyRead tells the folds, before the first operation, which partitions
// the history's fetches read, as a first reading of a file learns them,
// so that they keep nothing no fetch can look at.
func (s *invariantStream) onlyRead(reads *model.Reads) {
	for _, f := range s.folds {
		if r, ok := f.(readsAware); ok {
			r.onlyRead(reads)
		}
	}
}

// readAhead tells the folds, before the first operation, the fetches of
// the history, as a first reading of a file learns them, so that they
// keep no record no fetch still to come reads. Each fold asks a copy of
// its own.
func (s *invariantStream) readAhead(ahead *fetchesAhead) {
	for _, f := range s.folds {
		if r, ok := f.(aheadAware); ok {
			r.readAhead(ahead.another())
		}
	}
}

// newInvariantStream is a stream of the history described by header, whose
// Ops are ignored, that judges every invariant.
func newInvariantStream(header histories.History, progress *passProgress) *invariantStream {
	return newInvariantLane(header, progress, Checks[1:len(Checks)-1])
}

// foldLanes are the invariants by lane. The folds of a lane share what
// the stream works out for them: which transactions committed (txnStream)
// and which produces repeat a batch (landedBatches). Two lanes share
// nothing, so that each can run on a core of its own (invariantLanes).
var foldLanes = [][]string{{ExactlyOnce, NoAbortedRead, OffsetsMonotonic, Progress}, {OneLiveProducer}, {OneOwner}}

// newInvariantLane is a stream that judges the invariants checks only,
// in the order of Checks.
func newInvariantLane(header histories.History, progress *passProgress, checks []string) *invariantStream {
	header.Ops = nil
	s := &invariantStream{header: header, progress: progress}
	var listeners txnListeners
	for _, name := range Checks[1 : len(Checks)-1] {
		if !slices.Contains(checks, name) {
			continue
		}
		s.checks = append(s.checks, name)
		f := invariantFolds[name](header)
		if l, ok := f.(txnListener); ok {
			listeners = append(listeners, l)
		}
		if u, ok := f.(batchUser); ok {
			if s.batches == nil {
				s.batches = newLandedBatches()
			}
			u.useBatches(s.batches)
		}
		s.folds = append(s.folds, f)
	}
	if len(listeners) > 0 {
		s.txns = newTxnStream(listeners)
	}
	return s
}

// invariantFolds make the checks, by name.
var invariantFolds = map[string]func(header histories.History) invariantFold{
	ExactlyOnce:      newExactlyOnceFold,
	OneOwner:         newOneOwnerFold,
	OneLiveProducer:  newOneLiveProducerFold,
	NoAbortedRead:    newNoAbortedReadFold,
	OffsetsMonotonic: newOffsetsFold,
	Progress:         newProgressFold,
}

// txnListeners tells each of its listeners in turn.
type txnListeners []txnListener

func (ls txnListeners) joined(op *histories.Op, t *txn) {
	for _, l := range ls {
		l.joined(op, t)
	}
}

func (ls txnListeners) closed(t *txn) {
	for _, l := range ls {
		l.closed(t)
	}
}

// standInOff switches the invariants off, so that a measurement shows
// what the reading and the search hold alone. Only a test sets it.
var standInOff bool

// add judges op, the next operation in call order. op is not retained.
// An operation out of that order makes every verdict unknown, because the
// folds depend on it.
func (s *invariantStream) add(op *histories.Op) {
	if standInOff || s.disorder != "" {
		return
	}
	if s.added > 0 && (op.Call < s.lastCall || op.Call == s.lastCall && op.ID <= s.lastID) {
		s.disorder = fmt.Sprintf("op %d (call %d) came after op %d (call %d): the invariants are judged in call order, ties by id",
			op.ID, op.Call, s.lastID, s.lastCall)
		return
	}
	if s.hasSettled && op.Call < s.settled {
		s.disorder = fmt.Sprintf("op %d (call %d) came after every operation called before %d was said to have come",
			op.ID, op.Call, s.settled)
		return
	}
	s.lastCall, s.lastID = op.Call, op.ID
	if s.added == 0 {
		s.progress.begin(PhaseInvariants)
		s.progress.start()
	}
	s.added++
	s.progress.passed(s.added)
	if s.txns != nil {
		s.txns.add(op)
	}
	if s.batches != nil {
		s.batches.add(op)
	}
	for _, f := range s.folds {
		f.add(op)
	}
}

// calledBefore tells the stream that every operation called before instant has
// come, as a recording followed while it is written tells by its marks,
// so that the folds judge what waited for it now rather than when the
// next operation comes. An operation called before instant that comes
// later makes every verdict unknown.
func (s *invariantStream) calledBefore(instant int64) {
	if standInOff || s.disorder != "" || s.hasSettled && instant <= s.settled {
		return
	}
	s.settled, s.hasSettled = instant, true
	if s.txns != nil {
		s.txns.replayUpTo(instant - 1)
	}
	for _, f := range s.folds {
		if sf, ok := f.(calledBeforeFold); ok {
			sf.calledBefore(instant)
		}
	}
}

// earlyViolation is a violation an earlyFold named before the end.
type earlyViolation struct {
	check string
	Violation
}

// early returns the violations the folds found since its last call that
// no later operation takes back, check by check in the order of Checks.
func (s *invariantStream) early() []earlyViolation {
	if standInOff || s.disorder != "" {
		return nil
	}
	var out []earlyViolation
	for i, f := range s.folds {
		if ef, ok := f.(earlyFold); ok {
			for _, v := range ef.early() {
				out = append(out, earlyViolation{check: s.checks[i], Violation: v.Violation})
			}
		}
	}
	return out
}

// verdicts are its checks' verdicts, in the order of Checks.
func (s *invariantStream) verdicts() []Verdict {
	if standInOff {
		out := make([]Verdict, len(s.folds))
		for i := range out {
			out[i] = Verdict{Check: s.checks[i], Status: Skipped, Reason: "switched off"}
		}
		return out
	}
	if s.disorder != "" {
		out := make([]Verdict, len(s.folds))
		for i := range out {
			out[i] = Verdict{Check: s.checks[i], Status: Unknown, Reason: s.disorder}
		}
		return out
	}
	if s.txns != nil {
		s.txns.finish()
	}
	out := make([]Verdict, len(s.folds))
	for i, f := range s.folds {
		out[i] = f.verdict()
	}
	return out
}

// foldedViolation is a violation and the call of the operation it names,
// by which a verdict orders its violations.
type foldedViolation struct {
	Violation
	call int64
}

// foldedVerdict is check's verdict given its violations, breach first: by
// the call time of the operation that breaks the check, ties by its id (as
// analysis.verdict orders them).
func foldedVerdict(check string, found []foldedViolation) Verdict {
	if len(found) == 0 {
		return Verdict{Check: check, Status: OK}
	}
	slices.SortStableFunc(found, func(a, b foldedViolation) int {
		if c := cmp.Compare(a.call, b.call); c != 0 {
			return c
		}
		return cmp.Compare(a.Op, b.Op)
	})
	violations := make([]Violation, len(found))
	for i, f := range found {
		violations[i] = f.Violation
	}
	return Verdict{Check: check, Status: Violated, Violations: violations}
}

// judgeInvariants feeds h's operations to a stream in call order, ties by
// id, and returns its verdicts.
func judgeInvariants(h histories.History, progress *passProgress) []Verdict {
	s := newInvariantStream(h, progress)
	for _, i := range callOrder(h.Ops) {
		s.add(&h.Ops[i])
	}
	return s.verdicts()
}

// callOrder is the indexes of ops in call order, ties by id.
func callOrder(ops []histories.Op) []int32 {
	order := make([]int32, len(ops))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		if c := cmp.Compare(ops[i].Call, ops[j].Call); c != 0 {
			return c
		}
		return cmp.Compare(ops[i].ID, ops[j].ID)
	})
	return order
}

// invariantLanes judge the invariants in lanes (foldLanes), each fed every
// operation in call order on a goroutine of its own (judgeInTurn). Each
// fold sees what it would see in one stream, so the verdicts are the
// same whatever the number of cores.
type invariantLanes []*invariantStream

// newInvariantLanes are the lanes of the history described by header.
// The first tells progress for all: each lane sees every operation.
func newInvariantLanes(header histories.History, progress *passProgress) invariantLanes {
	lanes := make(invariantLanes, len(foldLanes))
	for i, checks := range foldLanes {
		lanes[i] = newInvariantLane(header, progress, checks)
		progress = nil
	}
	return lanes
}

// judges are the lanes' add, one for each lane.
func (ls invariantLanes) judges() []func(*histories.Op) {
	judges := make([]func(*histories.Op), len(ls))
	for i, l := range ls {
		judges[i] = l.add
	}
	return judges
}

// onlyRead, readAhead and bound tell every lane (invariantStream.onlyRead,
// readAhead, bound).
func (ls invariantLanes) onlyRead(reads *model.Reads) {
	for _, l := range ls {
		l.onlyRead(reads)
	}
}

func (ls invariantLanes) readAhead(ahead *fetchesAhead) {
	for _, l := range ls {
		l.readAhead(ahead)
	}
}

func (ls invariantLanes) bound() {
	for _, l := range ls {
		l.bound()
	}
}

// forgotten is the first lane's that is not "" (invariantStream.forgotten).
func (ls invariantLanes) forgotten() string {
	for _, l := range ls {
		if why := l.forgotten(); why != "" {
			return why
		}
	}
	return ""
}

// verdicts are every invariant's verdict, in the order of Checks.
func (ls invariantLanes) verdicts() []Verdict {
	var out []Verdict
	for _, l := range ls {
		out = append(out, l.verdicts()...)
	}
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return cmp.Compare(slices.Index(Checks, a.Check), slices.Index(Checks, b.Check))
	})
	return out
}
