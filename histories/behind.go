package histories

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// behindBatch is how many operations readBehind hands on at once.
const behindBatch = 512

// rawBatch is a batch of operations as the document writes them, copied
// out of the reading's buffer, which reading on moves.
type rawBatch struct {
	first int    // the place in "ops" of the first operation
	buf   []byte // the operations, one after the other
	ends  []int  // where each operation ends in buf
}

// errBehind stops a walk once the operations it handed on have failed.
var errBehind = errors.New("stopped: the operations read before failed")

// readBehind runs walk, which hands each operation's place and raw
// value to the function it is given, and gives each operation to each,
// in the order read. With more than one processor, each runs on a
// goroutine of its own, a few batches behind the reading, so that
// reading the document and looking into its operations take a core
// each. The first error, each's or walk's, in the order of the
// operations, is returned.
func readBehind(walk func(func(i int, at int64, raw []byte) error) error, each func(i int, raw []byte) error) error {
	if runtime.GOMAXPROCS(0) == 1 {
		return walk(func(i int, _ int64, raw []byte) error { return each(i, raw) })
	}
	batches, free := make(chan *rawBatch, 4), make(chan *rawBatch, 6)
	var failed atomic.Bool
	var eachErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for b := range batches {
			if eachErr == nil {
				eachErr = b.give(each)
				failed.Store(eachErr != nil)
			}
			b.buf, b.ends = b.buf[:0], b.ends[:0]
			select {
			case free <- b:
			default: // never full: at most six batches are made
			}
		}
	}()
	b := &rawBatch{}
	walkErr := walk(func(i int, _ int64, raw []byte) error {
		if failed.Load() {
			return errBehind
		}
		if len(b.ends) == 0 {
			b.first = i
		}
		b.buf = append(b.buf, raw...)
		b.ends = append(b.ends, len(b.buf))
		if len(b.ends) == behindBatch {
			batches <- b
			select {
			case b = <-free:
			default:
				b = &rawBatch{}
			}
		}
		return nil
	})
	if len(b.ends) > 0 {
		batches <- b
	}
	close(batches)
	wg.Wait()
	if eachErr != nil {
		return eachErr
	}
	return walkErr
}

// give hands each operation of b to each, and stops at the first error.
func (b *rawBatch) give(each func(i int, raw []byte) error) error {
	start := 0
	for k, end := range b.ends {
		if err := each(b.first+k, b.buf[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}
