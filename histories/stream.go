package histories

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/fencecheck/fencecheck/model"
)

// A Stream is a history file read one operation at a time, in call
// order, so that a long recording is judged without holding it whole.
//
// It reads the file twice. The first pass (OpenStream) checks the
// document's syntax and keeps only a summary: the top-level members,
// wherever they stand, the number of operations, the ids, and the lag.
// It reads of each operation only its id and its times, and leaves the
// rest of the operation to the second pass, which decodes it and names
// what is wrong as Load does. The lag is
// how far back in time an operation's call may lie behind a call read
// before it in the file, because a recorder writes each operation as it
// ends. The second pass (Each) decodes the operations again and hands
// them on in call order. It holds back only the operations that a later
// one in the file may still come before: those called within the lag of
// the latest call read, or at or after the latest "complete_before"
// mark (docs/history-format.md). A file written in call order has a lag
// of 0, so the pass holds one operation at a time.
type Stream struct {
	path   string
	header History
	ops    int   // operations that decode, up to a break
	lag    int64 // the largest lag of a call behind one read before it
	end    int64 // the latest call or return, math.MinInt64 for none
	// light is a first pass that read each operation's id and times
	// alone: the second pass decodes the rest, so it may find an
	// operation that does not decode.
	light bool
	// broken is where the document stops being JSON, when it does: the
	// operations before it are handed on, and then this error.
	broken *BrokenError
	// peakHeld is the most operations the last Each held at once.
	peakHeld int
}

// StreamOptions tune OpenStream.
type StreamOptions struct {
	// Progress is told the operations read by the first pass, as
	// LoadWithProgress tells its own.
	Progress func(ops int)
	// Visit, when set, is given each operation the first pass reads, in
	// the order of the file. It must not keep op. The first pass then
	// decodes every operation in full, which costs as much again as the
	// second pass.
	Visit func(op *Op)
	// Find, when set, is given the operations of the kinds in FindKinds,
	// in the order of the file. Once it returns true for an operation,
	// it is given no more of that operation's kind. It must not keep op.
	// The first pass decodes only these in full.
	Find      func(op *Op) bool
	FindKinds []model.Kind
	// Names, when set, is given each operation the first pass reads, in
	// the order of the file. The operation holds its id, kind and times,
	// whether it succeeded, and the members that name what it acts on:
	// the request's transactional_id, group, partition, partitions and
	// producer_id, and the answer's producer_id and records. It must not
	// keep op. It costs far less than Visit, because the first pass then
	// reads no other member (an operation Find is given is read in full).
	Names func(op *Op)
}

// finder hands StreamOptions.Find the operations of the kinds it still
// wants.
type finder struct {
	find  func(op *Op) bool
	kinds []model.Kind // the kinds still wanted
}

func newFinder(opts StreamOptions) *finder {
	if opts.Find == nil {
		return &finder{}
	}
	return &finder{find: opts.Find, kinds: slices.Clone(opts.FindKinds)}
}

// done says that no kind is wanted any more.
func (f *finder) done() bool { return len(f.kinds) == 0 }

func (f *finder) wants(kind model.Kind) bool { return slices.Contains(f.kinds, kind) }

// give hands op to Find, and drops its kind once Find has it.
func (f *finder) give(op *Op) {
	if f.find(op) {
		f.kinds = slices.DeleteFunc(f.kinds, func(k model.Kind) bool { return k == op.Kind })
	}
}

// OpenStream reads the history document at path once, for its summary,
// and checks it against the rules of docs/history-format.md as Load
// does, with one exception. Two requests of one process that overlap
// are found by Each, in call order, not here.
//
// A document cut short or corrupted inside "ops" is no error here when
// the operations before the break load: Each hands them on, then
// returns the *BrokenError.
func OpenStream(path string, opts StreamOptions) (*Stream, error) {
	s := &Stream{path: path}
	if opts.Visit == nil {
		switch err := s.lightPass(opts); {
		case err == nil:
			return s, nil
		case !errors.Is(err, errFallback):
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		*s = Stream{path: path}
	}
	if err := s.firstPass(opts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Header is the history's top-level members, with no operations.
func (s *Stream) Header() History { return s.header }

// Len is the number of operations Each hands on.
func (s *Stream) Len() int { return s.ops }

// Lag is the largest lag the first pass found: how far an operation's
// call lies behind the latest call read before it in the file.
func (s *Stream) Lag() int64 { return s.lag }

// End is the latest instant in the file: the largest call or return of
// an operation (an operation that never returned has a return of 0), or
// math.MinInt64 when there is none.
func (s *Stream) End() int64 { return s.end }

// Broken is where the document stops being JSON, or nil.
func (s *Stream) Broken() *BrokenError { return s.broken }

func (s *Stream) firstPass(opts StreamOptions) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	in := bufio.NewReaderSize(f, 1<<20)
	if !startsObject(in) {
		_, err := loadWhole(in)
		return cmpNonNil(err, errors.New("document must be an object"))
	}
	ids := idSet{}
	var dup *duplicate
	latest := int64(math.MinInt64)
	s.end = math.MinInt64
	fd := newFinder(opts)
	each := func(i int, _ int64, _ json.RawMessage, op *Op) error {
		if dup == nil && !ids.add(op.ID) {
			dup = &duplicate{at: i, id: op.ID}
		}
		if op.Call >= latest {
			latest = op.Call
		} else {
			s.lag = max(s.lag, latest-op.Call)
		}
		s.end = max(s.end, op.Call, op.Return)
		s.ops++
		if opts.Visit != nil {
			opts.Visit(op)
		}
		if opts.Names != nil {
			opts.Names(op)
		}
		if fd.wants(op.Kind) {
			fd.give(op)
		}
		return nil
	}
	dec := json.NewDecoder(in)
	dec.UseNumber()
	doc, err := streamDocument(dec, opts.Progress, 0, each)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the document began, so it was cut short
	}
	var broken *BrokenError
	switch {
	case errors.As(err, &broken):
		s.broken = broken
	case errors.Is(err, errOpsTwice):
		return err
	case err != nil:
		return fmt.Errorf("not a JSON document: %w", err)
	default:
		if _, err := dec.Token(); err != io.EOF {
			return errors.New("more data after the JSON document")
		}
	}
	header, err := doc.history()
	if err == nil && dup != nil {
		err = s.duplicateError(*dup)
	}
	if err != nil {
		if broken != nil {
			return broken // as Load: the operations before it do not load
		}
		return err
	}
	s.header = header
	return nil
}

// lightPass is the first pass of a document the fast reading reads
// (fastread.go), which reads of each operation its id, its call and its
// return. Anything else than a valid document whose ids are unique and
// whose header loads makes it return errFallback, so that firstPass
// reads the document whole and names what is wrong as Load does.
func (s *Stream) lightPass(opts StreamOptions) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	ids := idSet{}
	latest := int64(math.MinInt64)
	s.end = math.MinInt64
	fd := newFinder(opts)
	var members rawObject
	var skim Op // the operation Names is given, filled again each time
	err = readBehind(func(each func(int, int64, []byte) error) error { return walkFast(f, &members, each) }, func(i int, raw []byte) error {
		var room [16]rawMember
		m, ok := splitMembers(raw, room[:0])
		if !ok {
			return errFallback
		}
		var id int
		var call, ret int64
		if take(m, "", "id", always, number[int]{&id, opIDs}) != nil ||
			take(m, "", "call", always, number[int64]{&call, anyInt}) != nil ||
			take(m, "", "return", optional, number[int64]{&ret, anyInt}) != nil ||
			!ids.add(id) {
			return errFallback
		}
		if call >= latest {
			latest = call
		} else {
			s.lag = max(s.lag, latest-call)
		}
		s.end = max(s.end, call, ret)
		s.ops++
		if !fd.done() || opts.Names != nil {
			kind, plain := plainString(m.value("type"))
			if !plain {
				return errFallback
			}
			if err := giveLight(i, id, call, ret, model.Kind(kind), raw, m, fd, opts.Names, &skim); err != nil {
				return err
			}
		}
		if opts.Progress != nil && s.ops%progressEvery == 0 {
			opts.Progress(s.ops)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.Progress != nil && s.ops%progressEvery != 0 {
		opts.Progress(s.ops)
	}
	doc := streamedDocument{members: members, isArray: true}
	if s.header, err = doc.history(); err != nil {
		return errFallback
	}
	s.light = true
	return nil
}

// giveLight hands the operation raw, whose top-level members are m, to
// Find when it wants the kind and to names when set. It decodes the
// operation in full for Find, and skims it into skim for names alone.
func giveLight(i, id int, call, ret int64, kind model.Kind, raw []byte, m rawObject, fd *finder, names func(*Op), skim *Op) error {
	if fd.wants(kind) {
		op, err := decodeOp(i, raw)
		if err != nil {
			return errFallback
		}
		fd.give(&op)
		if names != nil {
			names(&op)
		}
		return nil
	}
	if names == nil {
		return nil
	}
	if err := skimOp(skim, id, call, ret, kind, m); err != nil {
		if *skim, err = decodeOp(i, raw); err != nil {
			return errFallback
		}
	}
	names(skim)
	return nil
}

func cmpNonNil(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// duplicate is an id used twice: the place of its second use.
type duplicate struct {
	at, id int
}

// errFound stops a reading once it has found what it looked for.
var errFound = errors.New("found")

// duplicateError is Load's error for an id used twice, with the place of
// its first use, which a third reading finds (the first pass keeps a
// bit for each id, not its place).
func (s *Stream) duplicateError(d duplicate) error {
	first := -1
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	dec.UseNumber()
	_, err = streamDocument(dec, nil, 0, func(i int, _ int64, _ json.RawMessage, op *Op) error {
		if op.ID == d.id {
			first = i
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		return fmt.Errorf("the file changed while it was read: %v", err)
	}
	return fmt.Errorf("ops[%d]: \"id\" %d is used twice (also ops[%d])", d.at, d.id, first)
}

// idSet is a set of operation ids: a bit for each small non-negative
// one, so that the ids of a long history take a bit each, and a map for
// the others.
type idSet struct {
	bits  []uint64
	other map[int]bool
}

// bitsUpTo is the first id the set keeps in its map: 16 MB of bits at
// most.
const bitsUpTo = 1 << 27

// add adds id and reports whether it was new.
func (s *idSet) add(id int) bool {
	if id < 0 || id >= bitsUpTo {
		if s.other == nil {
			s.other = map[int]bool{}
		}
		if s.other[id] {
			return false
		}
		s.other[id] = true
		return true
	}
	word := id / 64
	for word >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, max(len(s.bits), 16))...)
	}
	if s.bits[word]&(1<<(id%64)) != 0 {
		return false
	}
	s.bits[word] |= 1 << (id % 64)
	return true
}

// Each reads the file again and gives each operation to each, in call
// order, operations called at one instant by id. each may keep op: it is
// its own copy. Each returns the first error of each, or an error of the
// file: two requests of one process that overlap, a file that changed
// since OpenStream, or, once every operation before it was handed on,
// the *BrokenError of a document cut short or corrupted.
func (s *Stream) Each(each func(op *Op) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := reorder{lag: s.lag, each: each, overlaps: overlaps{}, mark: math.MinInt64, latest: math.MinInt64}
	defer func() { s.peakHeld = r.peak }()
	if s.light {
		return s.eachDecoded(f, &r)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	dec.UseNumber()
	_, err = streamDocument(dec, nil, 0, func(i int, _ int64, raw json.RawMessage, op *Op) error {
		if i >= s.ops {
			return errors.New("the file changed while it was read: it has more operations")
		}
		return r.push(raw, op)
	})
	var broken *BrokenError
	switch {
	case s.broken != nil && errors.As(err, &broken) && broken.Index == s.broken.Index:
	case err != nil:
		var fromEach *eachError
		if errors.As(err, &fromEach) && !fromEach.ours {
			return fromEach.err
		}
		if fromEach != nil {
			err = fromEach.err
		}
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if err := r.release(math.MaxInt64, true); err != nil {
		var fromEach *eachError
		if errors.As(err, &fromEach) && !fromEach.ours {
			return fromEach.err
		}
		return fmt.Errorf("%s: %w", s.path, fromEach.err)
	}
	if err := r.overlaps.finish(); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if s.broken != nil {
		return fmt.Errorf("%s: %w", s.path, s.broken)
	}
	return nil
}

// eachError is an error of Each's caller, passed through the reading.
type eachError struct {
	err  error
	ours bool // an error of the file's, found while handing on
}

func (e *eachError) Error() string { return e.err.Error() }

// reorder is the buffer of the second pass: the operations read that a
// later one in the file may still come before, earliest first.
type reorder struct {
	held     opHeap
	lag      int64
	mark     int64 // the latest complete_before read
	latest   int64 // the latest call read
	done     *Op   // the last operation handed on
	each     func(*Op) error
	overlaps overlaps
	peak     int // the most operations held at once
}

// completeBeforeKey is how the mark of docs/history-format.md begins.
var completeBeforeKey = []byte(`"complete_before"`)

func (r *reorder) push(raw json.RawMessage, op *Op) error {
	o := new(Op)
	*o = *op
	return r.hold(raw, o)
}

// hold is push of an operation that is the reorder's own.
func (r *reorder) hold(raw json.RawMessage, o *Op) error {
	if r.done != nil && callOrder(o, r.done) < 0 {
		return &eachError{fmt.Errorf("op %d: called at %d, but op %d, called at %d, came before it in the file with a complete_before mark that rules it out",
			o.ID, o.Call, r.done.ID, r.done.Call), true}
	}
	heap.Push(&r.held, o)
	r.peak = max(r.peak, r.held.Len())
	r.latest = max(r.latest, o.Call)
	if bytes.Contains(raw, completeBeforeKey) {
		if m, ok := splitMembers(raw, nil); ok {
			if n, err := strconv.ParseInt(string(m.value("complete_before")), 10, 64); err == nil {
				r.mark = max(r.mark, n)
			}
		}
	}
	return r.release(max(r.mark, r.latest-r.lag), false)
}

// release hands on every operation held that was called before until
// (all of them, with all).
func (r *reorder) release(until int64, all bool) error {
	for r.held.Len() > 0 && (all || r.held[0].Call < until) {
		op := heap.Pop(&r.held).(*Op)
		if err := r.overlaps.add(op); err != nil {
			return &eachError{err, true}
		}
		r.done = op
		if err := r.each(op); err != nil {
			return &eachError{err, false}
		}
	}
	return nil
}

// callOrder orders operations by call, then by id.
func callOrder(a, b *Op) int {
	switch {
	case a.Call != b.Call:
		return cmp.Compare(a.Call, b.Call)
	default:
		return a.ID - b.ID
	}
}

type opHeap []*Op

func (h opHeap) Len() int           { return len(h) }
func (h opHeap) Less(i, j int) bool { return callOrder(h[i], h[j]) < 0 }
func (h opHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *opHeap) Push(x any)        { *h = append(*h, x.(*Op)) }
func (h *opHeap) Pop() any {
	old := *h
	op := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return op
}

// overlaps is checkOverlap done in call order, one process at a time:
// for each process, the requests called at its latest instant, and the
// one before them in checkProcOverlap's order.
type overlaps map[string]*procRequests

type procRequests struct {
	instant  []span64 // the requests called at one instant
	prev     span64
	havePrev bool
}

// span64 is what the overlap check needs of a request.
type span64 struct {
	id        int
	call, end int64
	ret       int64
	returned  bool
	proc      string
}

func (o overlaps) add(op *Op) error {
	if !op.Kind.IsRequest() {
		return nil
	}
	p := o[op.Proc]
	if p == nil {
		p = &procRequests{}
		o[op.Proc] = p
	}
	if len(p.instant) > 0 && p.instant[0].call != op.Call {
		if err := p.flush(); err != nil {
			return err
		}
	}
	p.instant = append(p.instant, span64{id: op.ID, call: op.Call, end: endOf(op), ret: op.Return, returned: op.Returned, proc: op.Proc})
	return nil
}

// flush checks the requests of the latest instant, in the order of
// sortByCallThenEnd.
func (p *procRequests) flush() error {
	sort.SliceStable(p.instant, func(i, j int) bool { return p.instant[i].end < p.instant[j].end })
	for _, next := range p.instant {
		if op := p.prev; p.havePrev && op.returned && next.call < op.ret {
			return fmt.Errorf("op %d: proc %q: called at %d while its op %d (call %d, return %d) was running; a process's operations do not overlap",
				next.id, op.proc, next.call, op.id, op.call, op.ret)
		}
		p.prev, p.havePrev = next, true
	}
	p.instant = p.instant[:0]
	return nil
}

// finish checks what each process has left, the processes in order of
// their names, as checkOverlap does.
func (o overlaps) finish() error {
	for _, proc := range sortedKeys(o) {
		if err := o[proc].flush(); err != nil {
			return err
		}
	}
	return nil
}

// decodeChunk is how many operations go to a decoding goroutine at once.
const decodeChunk = 256

// chunk is operations of the file in a row, decoded on a goroutine of
// their own: their text, and once done is closed, what each decodes to.
type chunk struct {
	first int     // the index in "ops" of the first
	text  []byte  // their raw texts, one after the other
	ends  []int   // where each text ends in text
	ops   []*Op   // the operations, nil where one does not decode
	errs  []error // why one does not decode
	err   error   // the reading stopped here: errFallback, or a file that changed
	done  chan struct{}
}

func (c *chunk) raw(j int) []byte {
	start := 0
	if j > 0 {
		start = c.ends[j-1]
	}
	return c.text[start:c.ends[j]:c.ends[j]]
}

func (c *chunk) decode() {
	c.ops = make([]*Op, len(c.ends))
	c.errs = make([]error, len(c.ends))
	for j := range c.ends {
		op := new(Op)
		if *op, c.errs[j] = decodeOp(c.first+j, c.raw(j)); c.errs[j] == nil {
			c.ops[j] = op
		}
	}
	close(c.done)
}

// eachDecoded is the second pass after a light first pass. One goroutine
// reads the file into chunks of operations, as many goroutines as the
// program has processors decode them, and the chunks come back to r in
// the order of the file, so that what Each hands on does not depend on
// the number of processors.
//
// The first pass has read only ids and times, so an operation may not
// decode. As Load names such an operation before any overlap, an
// overlap found here is kept while the rest of the file is decoded, and
// returned only when every operation decodes.
func (s *Stream) eachDecoded(f *os.File, r *reorder) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, 2*workers+2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.decode()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		send := func(c *chunk) bool {
			if c.err == nil {
				select {
				case work <- c:
				case <-stop:
					return false
				}
			} else {
				close(c.done)
			}
			select {
			case ordered <- c:
				return true
			case <-stop:
				return false
			}
		}
		c := &chunk{done: make(chan struct{})}
		err := walkFast(f, nil, func(i int, _ int64, raw []byte) error {
			if i >= s.ops {
				return errors.New("the file changed while it was read: it has more operations")
			}
			c.text = append(c.text, raw...)
			c.ends = append(c.ends, len(c.text))
			if len(c.ends) < decodeChunk {
				return nil
			}
			if !send(c) {
				return errFound // stopped
			}
			c = &chunk{first: i + 1, done: make(chan struct{}), text: make([]byte, 0, len(c.text))}
			return nil
		})
		if len(c.ends) > 0 && !send(c) {
			return
		}
		switch {
		case errors.Is(err, errFound):
		case errors.Is(err, errFallback):
			send(&chunk{err: errors.New("the file changed while it was read: it is no longer the document it was")})
		case err != nil:
			send(&chunk{err: err})
		}
	}()
	var kept error // an error of the file's found while handing on
	n := 0
	for c := range ordered {
		<-c.done
		if c.err != nil {
			return fmt.Errorf("%s: %w", s.path, c.err)
		}
		for j, op := range c.ops {
			n++
			if op == nil {
				return fmt.Errorf("%s: %w", s.path, c.errs[j])
			}
			if kept != nil {
				continue
			}
			if err := r.hold(c.raw(j), op); err != nil {
				fromEach := err.(*eachError)
				if !fromEach.ours {
					return fromEach.err
				}
				kept = fromEach.err
			}
		}
	}
	if kept != nil {
		return fmt.Errorf("%s: %w", s.path, kept)
	}
	if n != s.ops {
		return fmt.Errorf("%s: the file changed while it was read: it has fewer operations", s.path)
	}
	if err := r.release(math.MaxInt64, true); err != nil {
		fromEach := err.(*eachError)
		if !fromEach.ours {
			return fromEach.err
		}
		return fmt.Errorf("%s: %w", s.path, fromEach.err)
	}
	if err := r.overlaps.finish(); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}
