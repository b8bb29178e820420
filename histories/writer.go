package histories

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Writer writes a history as it is recorded, in the layout of Save: the
// header first, then each operation as it is given, on a line of its own
// and written at once, then the end of the document at Close. A recording
// that goes on for hours is never held in memory, and one cut short (its
// recorder killed) has lost only the operations not yet written: what is
// in the file is the history up to then, whole operations but for the
// last line, without the document's closing "]}".
//
// The operations are written as they end, so not in id order, which the
// format allows. Unlike Save, Writer does not validate the history as a
// whole (it never holds it): a recorder that breaks a rule is found by
// the loader.
//
// It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	n   int // ops written
	buf bytes.Buffer
	err error
}

// NewWriter starts a document on w with h's header (its ops are ignored).
func NewWriter(w io.Writer, h History) (*Writer, error) {
	hw := &Writer{w: w}
	writeHeader(&hw.buf, h)
	return hw, hw.flush()
}

// Write writes op, or reports the first error the writer met.
func (hw *Writer) Write(op Op) error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.err != nil {
		return hw.err
	}
	if !op.Kind.IsFault() && !op.Kind.IsRequest() {
		hw.err = fmt.Errorf("histories: op %d: %q is not an operation type", op.ID, op.Kind)
		return hw.err
	}
	writeOp(&hw.buf, hw.n, &op)
	hw.n++
	return hw.flush()
}

// Close ends the document, with the top-level fields of end that only
// the end of a recording knows (its trips, its output topics), after the
// ops; it reports the first error the writer met. Nothing can be written
// after it.
func (hw *Writer) Close(end History) error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.err != nil {
		return hw.err
	}
	writeTrailer(&hw.buf, hw.n, end)
	err := hw.flush()
	hw.err = errClosed
	return err
}

var errClosed = errors.New("histories: the writer is closed")

// flush writes what is buffered; the caller holds hw.mu.
func (hw *Writer) flush() error {
	_, err := hw.w.Write(hw.buf.Bytes())
	hw.buf.Reset()
	if err != nil {
		hw.err = fmt.Errorf("histories: writing the history: %w", err)
	}
	return hw.err
}
