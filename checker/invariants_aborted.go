package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// noAbortedReadFold checks no-aborted-read: a read_committed fetch never
// returns a record of an aborted transaction, nor of one still open when
// the fetch returned (Jepsen's G1a). A record whose writer the history
// cannot name is left to the other checks.
//
// A read is judged at the end, because a writer named at its slot may be
// called after it, and its transaction's fate is decided later still. So
// the fold holds an entry for each record produced (its slot, key, value,
// producer id, operation, call and transaction), for each record a
// read_committed fetch returned, and for each produce that may have
// written at offsets its answer does not name. It also holds each batch
// that may have landed, to tell a repeat's answer from a new write
// (landedBatches, which it shares with exactly-once). Bounded, it drops
// each read as soon as it is known to hold (bound), and the records no
// fetch still to come reads and no read that waits needs (compact).
type noAbortedReadFold struct {
	batches *landedBatches
	repeat  map[int]bool // the transactional produces waiting for their transaction, and whether each repeats a batch
	acked   recordsBySlot
	repeats recordsBySlot
	unacked map[model.Partition][]unackedWrite
	reads   []committedRead
	// fetched, when set, names the partitions some fetch of the history
	// reads: a record elsewhere is never read, so it is not kept.
	fetched *model.Reads
	// bounded: a read known to be fine is not kept (bound).
	bounded bool
	// rescanAt is how many reads may wait before those that have turned
	// out fine are dropped.
	rescanAt int
	// ahead, when bounded, tells the lowest offset the fetches still to
	// come read, so that the records below it and below every read
	// that waits are dropped (compact).
	ahead *fetchesAhead
	// droppedBelow is, for each partition, the offset below which every
	// record was dropped.
	droppedBelow map[model.Partition]int64
	// now is the call of the operation that came last.
	now int64
	// compactAt is, for each partition, how many records it may hold
	// before the next compact.
	compactAt map[model.Partition]int
	// forgot names the first read that needed a dropped record.
	forgot string
}

// compactRecordsAt is the fewest records of one partition a bounded
// noAbortedReadFold holds before it drops those no read still needs
// (compact); after each, twice as many as it kept.
var compactRecordsAt = 1024

func (f *noAbortedReadFold) readAhead(ahead *fetchesAhead) { f.ahead = ahead }

// lowestFrom is the lowest offset of p that the fetches called at or
// after at read from: math.MaxInt64 when none is still to come. It
// changes nothing, so that the streamed search may share the stairs.
func (f *fetchesAhead) lowestFrom(p model.Partition, at int64) int64 {
	st := f.stairs[p]
	i := sort.Search(len(st), func(i int) bool { return st[i].call >= at })
	if i == len(st) {
		return math.MaxInt64
	}
	return st[i].offset
}

// compact drops p's records below both the lowest offset the fetches
// still to come read and the lowest offset of a read that waits. No
// fetch returns a record below its own offset, so no later read needs
// them; a read below one is a fetch that breaks that, and the fold
// records that it needed what it dropped.
func (f *noAbortedReadFold) compact(p model.Partition) {
	floor := f.ahead.lowestFrom(p, f.now)
	for _, r := range f.reads {
		if r.partition == p {
			floor = min(floor, r.offset)
		}
	}
	if floor > f.droppedBelow[p] {
		f.droppedBelow[p] = floor
	}
	floor = f.droppedBelow[p]
	kept := 0
	for _, x := range []recordsBySlot{f.acked, f.repeats} {
		c := x[p]
		if c == nil {
			continue
		}
		old := c.records
		delete(x, p)
		for _, r := range old {
			if r.offset >= floor {
				x.insert(r.writtenRecordAt)
			}
		}
		if n := x[p]; n != nil {
			kept += len(n.records)
		}
	}
	f.compactAt[p] = max(compactRecordsAt, 2*kept)
}

// fineReadsRescanAt is the fewest reads a bounded noAbortedReadFold lets
// wait before it looks again for those that have turned out fine.
var fineReadsRescanAt = 64

// bound makes the fold keep no read that is known to be fine whatever
// comes later (boundedFold): a writer acknowledged at its slot wrote the
// same record outside a transaction, or in one committed by a commit
// called by the read's return. Other writers at the slot may still come,
// but a read with one visible writer holds (uncommittedRead), and a
// committed transaction's fate and commit call never change. The other
// reads wait, and are looked at again when a transaction commits, once
// their number has doubled since the last look. The verdict is the same,
// because a read that holds names nothing, so the fold forgets nothing.
func (f *noAbortedReadFold) bound() {
	f.bounded = true
	f.rescanAt = fineReadsRescanAt
	f.droppedBelow = map[model.Partition]int64{}
	f.compactAt = map[model.Partition]int{}
}

func (f *noAbortedReadFold) forgotten() string { return f.forgot }

// fine reports whether read holds whatever comes later (bound).
func (f *noAbortedReadFold) fine(read committedRead) bool {
	return f.acked.any(read.slot, func(w writtenRecordAt) bool {
		return w.sameRecord(read.sighting) && (w.txn == nil || w.txn.fate == fateCommitted && w.txn.commitCall <= read.ret)
	})
}

// dropFine drops the reads that have turned out fine, once enough wait.
func (f *noAbortedReadFold) dropFine() {
	if len(f.reads) < f.rescanAt {
		return
	}
	f.reads = slices.DeleteFunc(f.reads, f.fine)
	f.rescanAt = max(fineReadsRescanAt, 2*len(f.reads))
}

func (f *noAbortedReadFold) onlyRead(reads *model.Reads) { f.fetched = reads }

// unread says that no fetch of the history reads p, as far as the fold
// knows.
func (f *noAbortedReadFold) unread(p model.Partition) bool {
	if f.fetched == nil {
		return false
	}
	_, read := f.fetched.Lowest(p)
	return !read
}

// writtenRecordAt is a produced record as a read is judged against it.
type writtenRecordAt struct {
	sighting
	call int64
	txn  *txn // nil when not transactional
}

// unackedWrite is a produce that may have written records at offsets its
// answer does not name.
type unackedWrite struct {
	op         int
	call       int64
	producerID int64
	records    []model.Record
	txn        *txn
}

// committedRead is a record a read_committed fetch returned.
type committedRead struct {
	sighting
	call, ret int64
}

func newNoAbortedReadFold(histories.History) invariantFold {
	return &noAbortedReadFold{repeat: map[int]bool{}, acked: recordsBySlot{},
		repeats: recordsBySlot{}, unacked: map[model.Partition][]unackedWrite{}}
}

func (f *noAbortedReadFold) add(op *histories.Op) {
	f.now = op.Call
	if op.Kind == model.Produce {
		repeat := f.batches.repeats(op)
		if op.Req.TransactionalID != "" {
			f.repeat[op.ID] = repeat // until it joins its transaction
		} else {
			f.written(op, repeat, nil)
		}
	}
	if isReadCommitted(*op) {
		for _, s := range fetchedRecords(*op) {
			read := committedRead{sighting: s, call: op.Call, ret: op.Return}
			if below, dropped := f.droppedBelow[s.partition]; dropped && s.offset < below {
				if f.forgot == "" {
					f.forgot = fmt.Sprintf("op %d read %s offset %d, below offset %d, whose records the bounded fold dropped",
						op.ID, s.partition, s.offset, below)
				}
				continue
			}
			if f.bounded && f.fine(read) {
				continue
			}
			f.reads = append(f.reads, read)
		}
	}
}

func (f *noAbortedReadFold) useBatches(b *landedBatches) { f.batches = b }

func (f *noAbortedReadFold) joined(op *histories.Op, t *txn) {
	if repeat, ok := f.repeat[op.ID]; ok && op.Kind == model.Produce {
		delete(f.repeat, op.ID)
		f.written(op, repeat, t)
	}
}

func (f *noAbortedReadFold) closed(t *txn) {
	if f.bounded && t.fate == fateCommitted {
		f.dropFine()
	}
}

// written keeps a produce's records, in the call order of the produces (a
// transactional one comes when it joins its transaction).
func (f *noAbortedReadFold) written(op *histories.Op, repeat bool, t *txn) {
	if f.unread(op.Req.Partition) {
		return
	}
	into := f.acked
	if repeat {
		into = f.repeats
	}
	below, dropped := f.droppedBelow[op.Req.Partition]
	for _, s := range producedRecords(*op) {
		if dropped && s.offset < below {
			continue // no read still to come needs it
		}
		into.insert(writtenRecordAt{sighting: s, call: op.Call, txn: t})
	}
	if f.bounded && f.ahead != nil {
		if c := into[op.Req.Partition]; c != nil && len(c.records) >= max(f.compactAt[op.Req.Partition], compactRecordsAt) {
			f.compact(op.Req.Partition)
		}
	}
	if mayHaveWrittenUnacked(*op) {
		list := f.unacked[op.Req.Partition]
		w := unackedWrite{op: op.ID, call: op.Call, producerID: op.Req.ProducerID, records: slices.Clone(op.Req.Records), txn: t}
		at := len(list)
		for at > 0 && (list[at-1].call > w.call || list[at-1].call == w.call && list[at-1].op > w.op) {
			at--
		}
		f.unacked[op.Req.Partition] = slices.Insert(list, at, w)
	}
}

// recordsBySlot are produced records by partition and offset, each
// offset's in call order, ties by id. An offset's records are a chain
// through one slice per partition, because most offsets have one record
// and a slice for each would cost more than the record.
type recordsBySlot map[model.Partition]*slotChains

type slotChains struct {
	head    map[int64]int32 // offset -> its first record in records
	records []chainedRecord
}

type chainedRecord struct {
	writtenRecordAt
	next int32 // the offset's next record; -1 for none
}

// insert puts w among its offset's records, after those called before it
// and after the other records of its own produce.
func (x recordsBySlot) insert(w writtenRecordAt) {
	c := x[w.partition]
	if c == nil {
		c = &slotChains{head: map[int64]int32{}}
		x[w.partition] = c
	}
	n := int32(len(c.records))
	c.records = append(c.records, chainedRecord{writtenRecordAt: w, next: -1})
	head, ok := c.head[w.offset]
	if !ok || c.records[head].after(w) {
		if ok {
			c.records[n].next = head
		}
		c.head[w.offset] = n
		return
	}
	at := head
	for next := c.records[at].next; next >= 0 && !c.records[next].after(w); next = c.records[at].next {
		at = next
	}
	c.records[n].next, c.records[at].next = c.records[at].next, n
}

// after reports whether r comes after w in call order, ties by id.
func (r chainedRecord) after(w writtenRecordAt) bool {
	return r.call > w.call || r.call == w.call && r.op > w.op
}

// any reports whether one of the records at slot s is one fn accepts.
func (x recordsBySlot) any(s slot, fn func(writtenRecordAt) bool) bool {
	c := x[s.partition]
	if c == nil {
		return false
	}
	i, ok := c.head[s.offset]
	if !ok {
		return false
	}
	for ; i >= 0; i = c.records[i].next {
		if fn(c.records[i].writtenRecordAt) {
			return true
		}
	}
	return false
}

// at is the records at slot s, in call order.
func (x recordsBySlot) at(s slot) []writtenRecordAt {
	c := x[s.partition]
	if c == nil {
		return nil
	}
	i, ok := c.head[s.offset]
	if !ok {
		return nil
	}
	var out []writtenRecordAt
	for ; i >= 0; i = c.records[i].next {
		out = append(out, c.records[i].writtenRecordAt)
	}
	return out
}

func (f *noAbortedReadFold) verdict() Verdict {
	var violations []foldedViolation
	for _, read := range f.reads {
		if v, bad := f.uncommittedRead(read); bad {
			violations = append(violations, foldedViolation{call: read.call, Violation: v})
		}
	}
	return foldedVerdict(NoAbortedRead, violations)
}

// uncommittedRead reports a record that no writer it may come from had
// committed, or begun to commit, by the time the fetch returned.
func (f *noAbortedReadFold) uncommittedRead(read committedRead) (Violation, bool) {
	writers := f.writersOf(read)
	if len(writers) == 0 {
		return Violation{}, false
	}
	visible := func(w writtenRecordAt) bool { return w.txn == nil || w.txn.visibleBy(read.ret) }
	if slices.ContainsFunc(writers, visible) {
		return Violation{}, false
	}
	for _, w := range f.repeats.at(read.slot) {
		if w.call <= read.ret && w.sameRecord(read.sighting) && visible(w) {
			return Violation{}, false
		}
	}
	w := writers[0]
	t := w.txn
	related := []int{w.op}
	state := "still open when the fetch returned"
	if t.fate == fateAborted {
		related = append(related, t.endedBy)
		state = fmt.Sprintf("aborted by op %d", t.endedBy)
	}
	return Violation{Op: read.op, Related: related,
		Reason: fmt.Sprintf("read_committed fetch returned %s at %s offset %d, written by op %d in a transaction of %s (producer id %d, epoch %d) %s",
			read.key, read.partition, read.offset, w.op, t.transactionalID, t.producerID, t.epoch, state)}, true
}

// writersOf lists the produces that may have written the record a fetch
// returned: the ones acknowledged at its slot with the same record, or else
// the ones with no acknowledgement (an answer lost, or taken as a
// duplicate) that sent a record like it to the same partition before the
// fetch returned.
func (f *noAbortedReadFold) writersOf(read committedRead) []writtenRecordAt {
	var acked []writtenRecordAt
	for _, w := range f.acked.at(read.slot) {
		if w.sameRecord(read.sighting) {
			acked = append(acked, w)
		}
	}
	if len(acked) > 0 {
		return acked
	}
	var maybe []writtenRecordAt
	for _, w := range f.unacked[read.partition] {
		if w.call > read.ret {
			break
		}
		if sent, ok := w.sent(read.sighting); ok {
			maybe = append(maybe, writtenRecordAt{sighting: sent, call: w.call, txn: w.txn})
		}
	}
	return maybe
}

// sent is the record like read that w sent, if it sent one.
func (w unackedWrite) sent(read sighting) (sighting, bool) {
	for _, rec := range w.records {
		s := sighting{op: w.op, key: rec.Key, value: rec.Value, producerID: w.producerID}
		if s.sameRecord(read) {
			return s, true
		}
	}
	return sighting{}, false
}
