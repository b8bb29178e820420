package histories

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
)

// Writer writes a history as it is recorded, in the layout of Save: the
// header first, then each operation in the order it is given, on a line
// of its own, then the end of the document at Close. A recording that
// goes on for hours is never held in memory.
//
// Write only queues an operation. A goroutine of the writer's encodes
// the queue and writes it out, so that a recording process does not wait
// for either. It starts once the oldest operation queued has waited
// flushEvery, or once drainAt operations wait, whichever comes first.
// Waking it for each operation would cost the recording process a
// system call each time. It writes whenever it has caught up with the
// queue, or has 64 KiB to write. So the file is behind by about
// flushEvery. A recording cut short (its recorder killed) has lost only
// those operations: what is in the file is the history up to then,
// whole operations but for the last line, without the document's
// closing "]}". Flush and Close write out the queue first.
//
// The queue holds at most maxQueued operations. Write waits for room, so
// that a slow disk slows the recording rather than filling memory.
//
// The operations are written as they end, so not in id order, which the
// format allows. Unlike Save, Writer does not validate the history as a
// whole (it never holds it): a recorder that breaks a rule is found by
// the loader.
//
// It is safe for concurrent use.
type Writer struct {
	w io.Writer

	mu      sync.Mutex
	queue   []Op
	spare   []Op         // the queue's last backing array, for reuse
	before  []int64      // each queued op's complete_before, noMark for none
	spareB  []int64      // before's last backing array, for reuse
	n       int          // ops taken from the queue
	running bool         // a drain goroutine is at work
	timer   *time.Timer  // starts a drain; nil while none is set
	buf     bytes.Buffer // the drain's, kept for the next one
	room    sync.Cond
	idle    sync.Cond
	err     error
}

const (
	// maxQueued bounds the operations waiting to be written.
	maxQueued = 4096
	// drainAt is how many operations wait before a drain starts at
	// once, and flushEvery how long the first may wait otherwise.
	drainAt    = 512
	flushEvery = 20 * time.Millisecond
	// writeAt is how much encoded history a drain writes at once, at
	// most about; it writes less when it has caught up.
	writeAt = 64 << 10
)

// NewWriter starts a document on w with h's header (its ops are ignored).
func NewWriter(w io.Writer, h History) (*Writer, error) {
	hw := &Writer{w: w}
	hw.room.L, hw.idle.L = &hw.mu, &hw.mu
	var buf bytes.Buffer
	writeHeader(&buf, h)
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw, hw.write(buf.Bytes())
}

// Write queues op, or reports the first error the writer met. It waits
// while the queue is full.
func (hw *Writer) Write(op Op) error { return hw.WriteMarked(op, noMark) }

// WriteMarked is Write for a recorder that knows which operations have
// ended: every operation called before the instant completeBefore has
// been given to the writer before op, or is op, or is left out of the
// history for good. The last operation of each batch written carries it,
// as the member "complete_before", so that a reader following the file
// as it grows knows up to when it holds every operation
// (docs/history-format.md).
func (hw *Writer) WriteMarked(op Op, completeBefore int64) error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for hw.err == nil && len(hw.queue) >= maxQueued {
		hw.room.Wait()
	}
	if hw.err != nil {
		return hw.err
	}
	if !op.Kind.IsFault() && !op.Kind.IsRequest() {
		hw.err = fmt.Errorf("histories: op %d: %q is not an operation type", op.ID, op.Kind)
		return hw.err
	}
	hw.queue = append(hw.queue, op)
	hw.before = append(hw.before, completeBefore)
	switch {
	case hw.running: // the drain at work takes it too
	case len(hw.queue) >= drainAt:
		hw.startDrain()
	case hw.timer == nil:
		hw.timer = time.AfterFunc(flushEvery, hw.drainLate)
	}
	return nil
}

// startDrain starts a drain of what is queued; the caller holds hw.mu.
func (hw *Writer) startDrain() {
	if hw.timer != nil {
		hw.timer.Stop()
		hw.timer = nil
	}
	if hw.running || len(hw.queue) == 0 {
		return
	}
	hw.running = true
	go hw.drain()
}

// drainLate starts a drain once the oldest operation queued has waited
// flushEvery.
func (hw *Writer) drainLate() {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.timer = nil
	hw.startDrain()
}

// drain encodes and writes the queue until it is empty. One drain runs
// at a time, so the operations go out in the order they were queued.
func (hw *Writer) drain() {
	buf := &hw.buf
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for len(hw.queue) > 0 && hw.err == nil {
		batch, before, first := hw.queue, hw.before, hw.n
		hw.queue, hw.spare = hw.spare[:0], nil
		hw.before, hw.spareB = hw.spareB[:0], nil
		hw.n += len(batch)
		hw.room.Broadcast()
		hw.mu.Unlock()
		for i := range batch {
			writeOp(buf, first+i, &batch[i])
			batch[i] = Op{} // let the garbage collector have it
		}
		if last := before[len(before)-1]; last != noMark {
			writeCompleteBefore(buf, last)
		}
		hw.mu.Lock()
		hw.spare, hw.spareB = batch[:0], before[:0]
		if buf.Len() >= writeAt || len(hw.queue) == 0 {
			hw.mu.Unlock()
			_, err := hw.w.Write(buf.Bytes())
			hw.mu.Lock()
			buf.Reset()
			hw.noteWriteErr(err)
		}
	}
	if hw.err != nil {
		hw.queue, hw.before = nil, nil // what is left is lost; Write reports it
	}
	hw.running = false
	hw.room.Broadcast()
	hw.idle.Broadcast()
}

// Flush waits until every operation given so far is written, and
// reports the first error the writer met.
func (hw *Writer) Flush() error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.waitIdle()
	return hw.err
}

// waitIdle writes out the queue and waits until it is written; the
// caller holds hw.mu.
func (hw *Writer) waitIdle() {
	hw.startDrain()
	for hw.running {
		hw.idle.Wait()
	}
}

// Close ends the document, with the top-level fields of end that only
// the end of a recording knows (its trips, its output topics), after the
// ops; it reports the first error the writer met. Nothing can be written
// after it.
func (hw *Writer) Close(end History) error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.waitIdle()
	if hw.err != nil {
		return hw.err
	}
	var buf bytes.Buffer
	writeTrailer(&buf, hw.n, end)
	err := hw.write(buf.Bytes())
	hw.err = errClosed
	hw.room.Broadcast()
	return err
}

var errClosed = errors.New("histories: the writer is closed")

// write writes b while no drain runs; the caller holds hw.mu.
func (hw *Writer) write(b []byte) error {
	_, err := hw.w.Write(b)
	hw.noteWriteErr(err)
	return hw.err
}

// noteWriteErr keeps the first error of a write; the caller holds hw.mu.
func (hw *Writer) noteWriteErr(err error) {
	if err != nil && hw.err == nil {
		hw.err = fmt.Errorf("histories: writing the history: %w", err)
	}
}

// noMark is the complete_before of an operation written without one.
const noMark = math.MinInt64

// writeCompleteBefore adds the member "complete_before" to the operation
// that b ends with.
func writeCompleteBefore(b *bytes.Buffer, at int64) {
	b.Truncate(b.Len() - 1) // the operation's closing brace
	b.WriteString(`, "complete_before": `)
	b.WriteString(strconv.FormatInt(at, 10))
	b.WriteByte('}')
}
