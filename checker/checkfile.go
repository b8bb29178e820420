package checker

import (
	"context"
	"errors"
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
// searched again, as Check searches it, in two cases: when the streamed
// search finds no order, because only the whole search comes back to
// other end states and explains a violation; and with
// Options.Visualize, whose drawing needs the whole history. The check
// then holds the whole history.
//
// A document cut short or corrupted inside "ops" is judged up to where
// it breaks: the Report is that of the operations before, and the error
// is the *histories.BrokenError. Any other error comes with no Report.
func CheckFile(path string, opts Options) (Report, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Visualize {
		return checkWhole(path, opts)
	}
	var signed bool
	var never int64
	reads, ahead := model.NewReads(), newFetchesAhead()
	visit := func(op *histories.Op) {
		never = max(never, op.Call+1, op.Return+1)
		signed = signed || signsV2(op)
		noteRead(reads, op)
		ahead.note(op)
	}
	if opts.Progress != nil {
		opts.Progress(PhaseRead, 0)
	}
	stream, err := histories.OpenStream(path, histories.StreamOptions{Progress: phaseReport(opts.Progress, PhaseRead), Visit: visit})
	if err != nil {
		return Report{}, err
	}
	header := stream.Header()
	// The likelier protocol only: an order found under it is a verdict,
	// and when none is found the whole search tries both.
	// The model keeps only the records the history's fetches read, so that
	// a log no fetch reads holds no record (model.Reads).
	mopts := modelOptions(header, versionsSigned(header, signed)[0], opts)
	mopts.Reads = reads
	m := porcupineModel(mopts, header.Topics, true, opts.AllowCodes)
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout*time.Duration(1+stream.Len()/timeoutOps))
	defer cancel()
	if opts.Progress != nil {
		opts.Progress(Linearizable, 0)
	}
	search := newStreamSearch(ctx, m, header, never, phaseReport(opts.Progress, Linearizable))
	search.ahead = ahead
	invariants := newInvariantStream(header, newPassProgress(opts.Progress))
	err = judgeInTurn(stream, func(op *histories.Op) {
		search.add(op)
		invariants.add(op)
	})
	var broken *histories.BrokenError
	if err != nil && !errors.As(err, &broken) {
		return Report{}, err
	}
	if search.finish() != porcupine.Ok {
		return checkWhole(path, opts)
	}
	verdicts := append([]Verdict{held(Linearizable)}, invariants.verdicts()...)
	verdicts = append(verdicts, held(ErrorCodes))
	report := Report{History: header, Verdicts: verdicts, Allow: opts.Allow, AllowCodes: opts.AllowCodes,
		lin: linearizability{verdict: held(Linearizable), codes: held(ErrorCodes), model: m, judged: search.judged}}
	if named := namedOps(verdicts); len(named) > 0 {
		if report.History.Ops, err = opsNamed(stream, named); err != nil && !errors.As(err, &broken) {
			return Report{}, err
		}
	}
	return report, brokenOrNil(broken)
}

// brokenOrNil is broken as an error, nil when it is.
func brokenOrNil(broken *histories.BrokenError) error {
	if broken == nil {
		return nil
	}
	return broken
}

// checkWhole is CheckFile by LoadFile and Check: the whole history held.
func checkWhole(path string, opts Options) (Report, error) {
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

// judgeInTurn gives judge every operation of stream in call order, on a
// goroutine of its own, so that decoding the next operations and judging
// the last ones take a core each. The operations pass in batches, and at
// most four wait, so that what is held stays a few thousand operations.
func judgeInTurn(stream *histories.Stream, judge func(*histories.Op)) error {
	batches := make(chan []*histories.Op, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for batch := range batches {
			for _, op := range batch {
				judge(op)
			}
		}
	}()
	batch := make([]*histories.Op, 0, judgeBatch)
	err := stream.Each(func(op *histories.Op) error {
		if batch = append(batch, op); len(batch) == judgeBatch {
			batches <- batch
			batch = make([]*histories.Op, 0, judgeBatch)
		}
		return nil
	})
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	<-done
	return err
}
