package checker

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// PhaseRead is the phase of CheckFile's first reading of the file, which
// checks the document and learns its header and its size.
const PhaseRead = "read"

// CheckFile runs every check on the history file at path, as Check does
// on the history LoadFile reads, but reads the file as a stream
// (histories.Stream) in place of holding it. It reads the file twice:
// once to check it and learn its header, and once to judge it, handing
// each operation in call order to the linearizability search, which
// drops each window once it is judged (streamSearch), and to the
// invariants.
//
// Its Report holds the header and only the operations its violations
// name, which is what the verdicts' lines need. The whole history is
// checked again, as Check checks it, in three cases: when the streamed
// search finds no order, because it comes back only to the last windows
// it judged, and only the whole search comes back to every end state and
// explains a violation; when an invariant needed what its bounded fold
// forgot (boundedFold), which only a history that breaks Kafka's order
// does; and with Options.Visualize, whose drawing needs the whole
// history. The check then holds the whole history.
//
// A document cut short or corrupted inside "ops" is judged up to where
// it breaks: the Report is that of the operations before, and the error
// is the *histories.BrokenError. Any other error comes with no Report.
func CheckFile(path string, opts Options) (Report, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Visualize {
		return checkWhole(path, opts, "")
	}
	var signed bool
	reads, ahead := model.NewReads(), newFetchesAhead()
	find := func(op *histories.Op) bool {
		if op.Kind == model.Fetch {
			noteRead(reads, op)
			ahead.note(op)
			return false // every fetch is wanted
		}
		signed = signsV2(op)
		return signed
	}
	if opts.Progress != nil {
		opts.Progress(PhaseRead, 0)
	}
	pieces := newPieceMap()
	stream, err := histories.OpenStream(path, histories.StreamOptions{Progress: phaseReport(opts.Progress, PhaseRead),
		Find: find, FindKinds: []model.Kind{model.EndTxn, model.Fetch}, Names: pieces.note})
	if err != nil {
		return Report{}, err
	}
	// The instant after everything, when an undecided request may take
	// effect, as porcupineOps has it.
	var never int64
	if stream.Len() > 0 {
		never = max(0, stream.End()+1)
	}
	header := stream.Header()
	// The likelier protocol only: an order found under it is a verdict,
	// and when none is found the whole search tries both.
	// The model keeps only the records the history's fetches read, so that
	// a log no fetch reads holds no record (model.Reads).
	mopts := modelOptions(header, versionsSigned(header, signed)[0], opts)
	mopts.Reads = reads
	m := porcupineModel(mopts, header.Topics, true, opts.AllowCodes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if opts.Progress != nil {
		opts.Progress(Linearizable, 0)
	}
	progress := opts.Progress
	if progress != nil && runtime.GOMAXPROCS(0) > 1 {
		// The search and the invariants tell their progress from
		// goroutines of their own.
		var mu sync.Mutex
		progress = func(phase string, done int) {
			mu.Lock()
			defer mu.Unlock()
			opts.Progress(phase, done)
		}
	}
	search := newSearch(ctx, m, header, never, pieces, opts.Timeout, ahead, phaseReport(progress, Linearizable))
	invariants := newInvariantLanes(header, newPassProgress(progress))
	invariants.onlyRead(reads)
	invariants.readAhead(ahead)
	invariants.bound()
	err = judgeInTurn(stream, append(search.judges(), invariants.judges()...)...)
	var broken *histories.BrokenError
	if err != nil && !errors.As(err, &broken) {
		return Report{}, err
	}
	// The streamed search and the bounded folds each come back only so
	// far; when either needed to go further, the whole check decides. The
	// folds judge some operations only at the end, so they are asked
	// what they forgot after their verdicts.
	judged := invariants.verdicts()
	if search.finish() != porcupine.Ok {
		return checkWhole(path, opts, "the streamed search found no order within the windows it keeps")
	}
	if why := invariants.forgotten(); why != "" {
		return checkWhole(path, opts, why)
	}
	verdicts := append([]Verdict{held(Linearizable)}, judged...)
	verdicts = append(verdicts, held(ErrorCodes))
	report := Report{History: header, Verdicts: verdicts, Allow: opts.Allow, AllowCodes: opts.AllowCodes,
		lin: linearizability{verdict: held(Linearizable), codes: held(ErrorCodes), model: m, judged: search.judged()}}
	if named := namedOps(verdicts); len(named) > 0 {
		if report.History.Ops, err = opsNamed(stream, named); err != nil && !errors.As(err, &broken) {
			return Report{}, err
		}
	}
	return report, brokenOrNil(broken)
}

// linSearch is the streamed linearizability search of CheckFile: one
// search, or one per piece (pieceSearches).
type linSearch interface {
	judges() []func(*histories.Op)
	finish() porcupine.CheckResult
	judged() int
}

// newSearch is the streamed search of a history whose pieces the first
// reading learned: one search when it is one piece, and one per piece
// otherwise. The time-out bounds the time spent searching, not the
// reading's, and each piece's search is bounded by its own length.
func newSearch(ctx context.Context, m porcupine.Model, header histories.History, never int64, pieces *pieceMap,
	timeout time.Duration, ahead *fetchesAhead, progress func(int)) linSearch {
	if pieces.number() > 1 && searchPiecesApart {
		return newPieceSearches(pieces, searchLanes(), withBudget(ctx, m, header, never, timeout, ahead), progress)
	}
	search := newStreamSearch(ctx, m, header, never, progress)
	search.ahead = ahead
	search.limit(timeout * time.Duration(1+(pieces.globals+slices.Max(append(pieces.sizes, 0)))/timeoutOps))
	return oneSearch{search}
}

// searchPiecesApart is whether a history of several pieces gets a search
// per piece. A variable, so that tests compare with one search.
var searchPiecesApart = true

// oneSearch is the streamed search of a history of one piece.
type oneSearch struct{ *streamSearch }

func (s oneSearch) judges() []func(*histories.Op) { return []func(*histories.Op){s.add} }
func (s oneSearch) judged() int                   { return s.streamSearch.judged }

// brokenOrNil is broken as an error, nil when it is.
func brokenOrNil(broken *histories.BrokenError) error {
	if broken == nil {
		return nil
	}
	return broken
}

// checkWhole is CheckFile by LoadFile and Check: the whole history held.
// why, when not "", is told to opts.Slower.
func checkWhole(path string, opts Options, why string) (Report, error) {
	if why != "" && opts.Slower != nil {
		opts.Slower(why)
	}
	var progress func(int)
	if opts.Progress != nil {
		progress = phaseReport(opts.Progress, PhaseRead)
		opts.Progress(PhaseRead, 0)
	}
	h, err := histories.LoadFileWithProgress(path, progress)
	var broken *histories.BrokenError
	switch {
	case errors.As(err, &broken) && broken.Before != nil:
		h, broken.Before = *broken.Before, nil
	case err != nil:
		return Report{}, err
	}
	return Check(h, opts), brokenOrNil(broken)
}

// namedOps are the ids of the operations the violations of verdicts name.
func namedOps(verdicts []Verdict) map[int]bool {
	named := map[int]bool{}
	for _, v := range verdicts {
		for _, viol := range v.Violations {
			named[viol.Op] = true
			for _, id := range viol.Related {
				named[id] = true
			}
		}
	}
	return named
}

// opsNamed reads stream once more for the operations named, in call order.
func opsNamed(stream *histories.Stream, named map[int]bool) ([]histories.Op, error) {
	var ops []histories.Op
	err := stream.Each(func(op *histories.Op) error {
		if named[op.ID] {
			ops = append(ops, *op)
		}
		return nil
	})
	return ops, err
}

// judgeBatch is how many operations the reading hands the judging at once.
const judgeBatch = 1024

// judgeInTurn gives each judge every operation of stream in call order.
// The judges run on goroutines of their own, so that reading the next
// operations and judging the last ones take a core each. With more than
// one processor each judge has a goroutine of its own (the search and
// the invariants' lanes are separate passes over the same operations,
// which they only read); with one, the judges take each operation in turn on
// one goroutine. A judge sees the same operations in the same order
// either way, so that the verdicts do not depend on the number of
// processors. The operations pass in batches, and at most four wait for
// each judge, so that what is held stays a few thousand operations.
func judgeInTurn(stream *histories.Stream, judges ...func(*histories.Op)) error {
	lanes := [][]func(*histories.Op){judges}
	if runtime.GOMAXPROCS(0) > 1 {
		lanes = nil
		for _, judge := range judges {
			lanes = append(lanes, []func(*histories.Op){judge})
		}
	}
	var wg sync.WaitGroup
	channels := make([]chan []*histories.Op, len(lanes))
	for i, lane := range lanes {
		channels[i] = make(chan []*histories.Op, 4)
		wg.Add(1)
		go func(batches <-chan []*histories.Op) {
			defer wg.Done()
			for batch := range batches {
				for _, op := range batch {
					for _, judge := range lane {
						judge(op)
					}
				}
			}
		}(channels[i])
	}
	hand := func(batch []*histories.Op) {
		for _, c := range channels {
			c <- batch
		}
	}
	batch := make([]*histories.Op, 0, judgeBatch)
	err := stream.Each(func(op *histories.Op) error {
		if batch = append(batch, op); len(batch) == judgeBatch {
			hand(batch)
			batch = make([]*histories.Op, 0, judgeBatch)
		}
		return nil
	})
	if len(batch) > 0 {
		hand(batch)
	}
	for _, c := range channels {
		close(c)
	}
	wg.Wait()
	return err
}
