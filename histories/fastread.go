package histories

import (
	"errors"
	"io"
)

// The fast reading of a document walks its bytes itself, in place of
// encoding/json's Decoder, whose tokens and copies were a third of the
// time a long history took to read. It checks the syntax of every value
// as encoding/json does, and no more loosely. Whatever it does not
// expect (a syntax error, an escape in a member name, "ops" that is not
// an array) makes it give up with errFallback, so that the general
// reading (streamDocument) reads the document and names what is wrong.
// So the fast reading never decides an error: it finds the operations of
// a valid document, in any layout, or it gives up.

// errFallback is the fast reading giving up: the general reading decides.
var errFallback = errors.New("the fast reading gives up")

// maxFastDepth is the deepest nesting the fast reading follows. An
// operation nests a few levels; deeper documents go to the general
// reading, which has encoding/json's own limit.
const maxFastDepth = 200

// scanStatus is what skipValue found.
type scanStatus int

const (
	scanOK    scanStatus = iota
	scanShort            // the bytes end before the value does
	scanBad              // not a JSON value
)

// skipValue is the index just past the JSON value that starts at b[i],
// checked as encoding/json's scanner checks it: strings without control
// characters and with valid escapes, numbers as the grammar writes them,
// the three literals, and objects and arrays of these.
func skipValue(b []byte, i, depth int) (int, scanStatus) {
	if i >= len(b) {
		return i, scanShort
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		return skipContainer(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return i, scanBad
}

// skipContainer is skipValue of the object or array at b[i].
func skipContainer(b []byte, i, depth int) (int, scanStatus) {
	if depth >= maxFastDepth {
		return i, scanBad
	}
	object := b[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	if i = skipSpace(b, i+1); i >= len(b) {
		return i, scanShort
	}
	if b[i] == closing {
		return i + 1, scanOK
	}
	for {
		var st scanStatus
		if object {
			if b[i] != '"' {
				return i, scanBad
			}
			if i, st = skipString(b, i); st != scanOK {
				return i, st
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, scanShort
			}
			if b[i] != ':' {
				return i, scanBad
			}
			i = skipSpace(b, i+1)
		}
		if i, st = skipValue(b, i, depth+1); st != scanOK {
			return i, st
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, scanShort
		}
		switch b[i] {
		case ',':
			if i = skipSpace(b, i+1); i >= len(b) {
				return i, scanShort
			}
		case closing:
			return i + 1, scanOK
		default:
			return i, scanBad
		}
	}
}

// skipString is skipValue of the string at b[i].
func skipString(b []byte, i int) (int, scanStatus) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, scanOK
		case c < 0x20:
			return j, scanBad
		case c == '\\':
			if j+1 >= len(b) {
				return j, scanShort
			}
			j++
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if j+k >= len(b) {
						return j, scanShort
					}
					if !isHex(b[j+k]) {
						return j, scanBad
					}
				}
				j += 4
			default:
				return j, scanBad
			}
		}
	}
	return len(b), scanShort
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber is skipValue of the number at b[i]. A number that runs to
// the end of b is short: more digits may follow.
func skipNumber(b []byte, i int) (int, scanStatus) {
	j := i
	if b[j] == '-' {
		j++
	}
	digits := func() (int, scanStatus) {
		start := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		switch {
		case j >= len(b):
			return j, scanShort
		case j == start:
			return j, scanBad
		}
		return j, scanOK
	}
	if j >= len(b) {
		return j, scanShort
	}
	switch {
	case b[j] == '0':
		if j++; j >= len(b) {
			return j, scanShort
		}
	case b[j] >= '1' && b[j] <= '9':
		if _, st := digits(); st != scanOK {
			return j, st
		}
	default:
		return j, scanBad
	}
	if b[j] == '.' {
		j++
		if _, st := digits(); st != scanOK {
			return j, st
		}
	}
	if b[j] == 'e' || b[j] == 'E' {
		if j++; j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if _, st := digits(); st != scanOK {
			return j, st
		}
	}
	return j, scanOK
}

// skipLiteral is skipValue of the literal word at b[i].
func skipLiteral(b []byte, i int, word string) (int, scanStatus) {
	for k := 0; k < len(word); k++ {
		if i+k >= len(b) {
			return i + k, scanShort
		}
		if b[i+k] != word[k] {
			return i + k, scanBad
		}
	}
	return i + len(word), scanOK
}

// docReader is a document read in large pieces, for the fast reading.
// A value it hands on is a slice of its buffer, good until it reads on.
type docReader struct {
	r    io.Reader
	buf  []byte
	pos  int   // the next byte to read, in buf
	base int64 // the offset in the document of buf[0]
	eof  bool  // r has no more (or failed)
}

func newDocReader(r io.Reader) *docReader {
	return &docReader{r: r, buf: make([]byte, 0, 1<<20)}
}

// offset is the offset in the document of the next byte to read.
func (d *docReader) offset() int64 { return d.base + int64(d.pos) }

// fill reads more of the document, keeping what is not read yet; false
// when there is no more.
func (d *docReader) fill() bool {
	if d.eof {
		return false
	}
	if d.pos > 0 {
		n := copy(d.buf, d.buf[d.pos:])
		d.buf = d.buf[:n]
		d.base += int64(d.pos)
		d.pos = 0
	}
	if len(d.buf) == cap(d.buf) {
		grown := make([]byte, len(d.buf), 2*cap(d.buf))
		copy(grown, d.buf)
		d.buf = grown
	}
	for {
		n, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+n]
		if err != nil {
			d.eof = true
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// next is the next byte that is not blank, which it does not read; false
// at the end of the document.
func (d *docReader) next() (byte, bool) {
	for {
		d.pos = skipSpace(d.buf, d.pos)
		if d.pos < len(d.buf) {
			return d.buf[d.pos], true
		}
		if !d.fill() {
			return 0, false
		}
	}
}

// value reads the JSON value that begins at the next byte that is not
// blank; false when there is none there.
func (d *docReader) value() ([]byte, bool) {
	if _, ok := d.next(); !ok {
		return nil, false
	}
	for {
		end, st := skipValue(d.buf, d.pos, 0)
		switch {
		case st == scanOK:
			raw := d.buf[d.pos:end:end]
			d.pos = end
			return raw, true
		case st == scanBad || !d.fill():
			return nil, false
		}
	}
}

// walkFast reads the document from r as streamDocument does: its
// top-level members but "ops" into members (when not nil), and each
// operation to op, with its index and the offset after which it begins
// (as Decoder.InputOffset gives it). raw is good only until op returns.
// It returns errFallback when the general reading must decide, and any
// error of op.
func walkFast(r io.Reader, members *rawObject, op func(i int, at int64, raw []byte) error) error {
	d := newDocReader(r)
	if c, ok := d.next(); !ok || c != '{' {
		return errFallback
	}
	d.pos++
	c, ok := d.next()
	if !ok {
		return errFallback
	}
	sawOps := false
	for c != '}' {
		raw, ok := d.value()
		if !ok || raw[0] != '"' {
			return errFallback
		}
		name, plain := plainString(raw)
		if !plain {
			return errFallback
		}
		name = string([]byte(name)) // a copy: reading on moves raw
		if c, ok = d.next(); !ok || c != ':' {
			return errFallback
		}
		d.pos++
		if name == "ops" {
			if sawOps {
				return errFallback
			}
			sawOps = true
			if err := walkOps(d, op); err != nil {
				return err
			}
		} else {
			raw, ok := d.value()
			if !ok {
				return errFallback
			}
			if members != nil {
				members.set(name, append([]byte(nil), raw...))
			}
		}
		if c, ok = d.next(); !ok {
			return errFallback
		}
		switch c {
		case ',':
			d.pos++
			if c, ok = d.next(); !ok || c != '"' {
				return errFallback
			}
		case '}':
		default:
			return errFallback
		}
	}
	d.pos++
	if !sawOps {
		return errFallback // the general reading names what is missing
	}
	if _, more := d.next(); more {
		return errFallback // more data after the document: the general reading says so
	}
	return nil
}

// walkOps reads the array of "ops", giving each element to op.
func walkOps(d *docReader, op func(i int, at int64, raw []byte) error) error {
	if c, ok := d.next(); !ok || c != '[' {
		return errFallback
	}
	d.pos++
	at := d.offset()
	c, ok := d.next()
	if !ok {
		return errFallback
	}
	if c == ']' {
		d.pos++
		return nil
	}
	for i := 0; ; i++ {
		raw, ok := d.value()
		if !ok {
			return errFallback
		}
		if err := op(i, at, raw); err != nil {
			return err
		}
		at = d.offset()
		if c, ok = d.next(); !ok {
			return errFallback
		}
		d.pos++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return errFallback
		}
	}
}
