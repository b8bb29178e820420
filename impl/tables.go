package impl

import (
	"sort"

	"github.com/fencecheck/fencecheck/model"
)

// dedupWindow is how many batches per producer a leader remembers for
// duplicate detection (KIP-98, max.in.flight.requests.per.connection=5).
const dedupWindow = 5

// producerState is what a partition leader knows of one producer id.
type producerState struct {
	epoch int16
	// window holds the last n batches, oldest first.
	window [dedupWindow]batchSeq
	n      int
	// txnFirst is the first offset of the open transaction, or NoOffset.
	txnFirst int64
	// lastTimestamp is when its last batch or marker was written here
	// (expiry.go).
	lastTimestamp int64
}

// batchSeq is what the leader remembers of one batch.
type batchSeq struct {
	firstSeq, lastSeq int32
	base              int64
}

func (pe *producerState) forget() { pe.n = 0 }

func (pe *producerState) remember(b batchSeq) {
	if pe.n == dedupWindow {
		copy(pe.window[:], pe.window[1:])
		pe.n--
	}
	pe.window[pe.n] = b
	pe.n++
}

// duplicate is the remembered batch with exactly these sequences, if any.
func (pe *producerState) duplicate(first, last int32) (batchSeq, bool) {
	for _, b := range pe.window[:pe.n] {
		if b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchSeq{}, false
}

// nextSeq is the sequence the producer must send next.
func (pe *producerState) nextSeq() int32 {
	if pe.n == 0 {
		return 0
	}
	return model.IncrementSequence(pe.window[pe.n-1].lastSeq, 1)
}

// openTxns is the partition's open transactions in the order they began,
// which is also the order of their first offsets: a transaction begins at
// the log end. The head is the earliest, so the last stable offset is read
// in O(1); a closed transaction leaves the queue when it reaches the head.
type openTxns struct {
	queue []openTxn
	head  int
}

type openTxn struct {
	first      int64
	producerID int64
}

func (o *openTxns) push(first, producerID int64) {
	o.queue = append(o.queue, openTxn{first: first, producerID: producerID})
}

func (o *openTxns) earliest() (int64, bool) {
	if o.head == len(o.queue) {
		return 0, false
	}
	return o.queue[o.head].first, true
}

// dropClosed pops the transactions at the head that their producers have
// since closed, so that the head is open again.
func (o *openTxns) dropClosed(producers map[int64]*producerState) {
	for o.head < len(o.queue) {
		t := o.queue[o.head]
		if pe, ok := producers[t.producerID]; ok && pe.txnFirst == t.first {
			break
		}
		o.head++
	}
	if o.head > 64 && o.head*2 > len(o.queue) {
		o.queue = append(o.queue[:0], o.queue[o.head:]...)
		o.head = 0
	}
}

// abortedTxn is a range of the log aborted by one producer: its records in
// [first, marker) are not committed.
type abortedTxn struct {
	producerID    int64
	first, marker int64
	// stable is the last stable offset once the ABORT was written. It only
	// grows along the index, so a search can stop at the first entry whose
	// stable offset reaches its upper bound: every later transaction began
	// at or above it (Kafka's TransactionIndex.collectAbortedTxns).
	stable int64
}

// abortedIndex is the aborted-transaction index, in marker order, so that
// read_committed fetches need not rescan the log.
type abortedIndex struct{ txns []abortedTxn }

func (x *abortedIndex) add(t abortedTxn) { x.txns = append(x.txns, t) }

// overlapping is the aborted transactions with records in [start, limit),
// sorted by first offset. Its cost does not depend on the aborts below
// start (a binary search skips them) nor on those above limit (the stable
// offsets stop the scan).
func (x *abortedIndex) overlapping(start, limit int64) []abortedTxn {
	var found []abortedTxn
	for i := sort.Search(len(x.txns), func(i int) bool { return x.txns[i].marker > start }); i < len(x.txns); i++ {
		t := x.txns[i]
		if t.first < limit {
			found = append(found, t)
		}
		if t.stable >= limit {
			break
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].first < found[j].first })
	return found
}

// abortFilter tells which batches of a fetch belong to aborted
// transactions, walking them in offset order as Kafka's consumer does: a
// producer's aborted range is active from its first offset to its marker.
type abortFilter struct {
	pending []abortedTxn // by first offset
	next    int
	active  map[int64]abortedTxn // by producer id
}

func newAbortFilter(aborted []abortedTxn) *abortFilter {
	f := &abortFilter{pending: aborted}
	if len(aborted) > 0 {
		f.active = map[int64]abortedTxn{}
	}
	return f
}

// aborted reports whether b, the next batch in offset order, was aborted.
// A producer's ranges never overlap (one open transaction at a time), so
// the latest begun is the only one that can hold b.
func (f *abortFilter) aborted(b batch) bool {
	for ; f.next < len(f.pending) && f.pending[f.next].first <= b.base; f.next++ {
		t := f.pending[f.next]
		f.active[t.producerID] = t
	}
	t, ok := f.active[b.producerID]
	return ok && b.base < t.marker
}

// keep reports whether a fetch returns records of b at all.
func keep(b batch, f *abortFilter) bool {
	return !b.control && b.count > 0 && (f == nil || !f.aborted(b))
}
