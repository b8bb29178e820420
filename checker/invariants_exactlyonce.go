package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// exactlyOnceFold checks exactly-once: each trip is carried by at most one
// committed record per topic, as read_committed reads and committed writes
// show (no duplicate); read_committed readers see every committed record
// wherever a read covered its offset (no lost write); and one offset never
// holds two records (inconsistent offsets).
//
// It holds, for every offset the history shows a record at, the first
// record seen there, and each committed write's record with its call and
// its place in the write. It holds the first committed record of each
// trip in each topic, the offsets each read_committed fetch covered but
// did not return, and pairs them with the committed records inside them
// (lost writes). Bounded (bound), it forgets what a history that keeps to
// Kafka's order no longer needs (forgetRead). It tells a repeat's
// answer from a new write by the batches that may have landed
// (landedBatches, which it shares with no-aborted-read). Until its
// transaction ends, it holds each transactional produce's records; until
// no record shown earlier can still come, it holds each committed record
// a read or a commit showed.
type exactlyOnceFold struct {
	seq     int // operations come so far
	batches *landedBatches
	// produces are the transactional produces that have not joined
	// their transaction yet.
	produces map[int]comeProduce
	logs     map[model.Partition]*slotLog
	// open are the records of each open transaction's produces, and the
	// calls of the end_txns that joined it.
	open map[*txn]*openWrites
	// shown are the committed records shown, until every record shown
	// before them has come (evidence.before).
	shown evidenceHeap
	// firstShown is the first committed record of each trip, by topic.
	firstShown map[string]map[string]shownFirst
	// partitions numbers the partitions, for shownFirst.
	partitions []model.Partition
	numbered   map[model.Partition]int32
	// doubled are the offsets whose record was found a second copy of a
	// trip.
	doubled map[slot]bool
	// skipped are the offsets the read_committed fetches covered but did
	// not return, and committed the records of the writes that committed,
	// by partition, until they are paired (lost).
	skipped   map[model.Partition][]skippedRange
	committed map[model.Partition][]committedRecord
	// lost are the committed records found in a range a fetch skipped.
	lost         []lostWrite
	duplicates   []foldedViolation // in the order of the records shown
	inconsistent []foldedViolation // in call order
	told         int               // duplicates early has returned
	toldOffsets  int               // inconsistent early has returned
	// ahead tells the lowest offset the fetches still to come read; nil
	// when the fold was not told (readAhead).
	ahead *fetchesAhead
	// bounded is what the fold keeps to forget, nil when it keeps
	// everything.
	bounded *exactlyOnceBound
}

// exactlyOnceBound is what a bounded exactlyOnceFold knows of what it
// forgot.
type exactlyOnceBound struct {
	forgot string // the first operation that needed what was forgotten, and why
	next   int    // the operation at which it forgets next
	// rangesTo is the highest offset of a skipped range forgotten, by
	// partition.
	rangesTo map[model.Partition]int64
	// trips are the fingerprints of the trips whose first committed
	// record was forgotten, and tripsDropped how many were since the
	// maps of trips were made.
	trips        tripPrints
	tripsDropped int
}

// The bounded exactlyOnceFold's limits. Tests set them at their smallest,
// so that many histories make it forget.
var (
	// exactlyOnceMargin is how many offsets below a partition's highest
	// sighted the fold keeps the first record of, even when no fetch
	// still to come reads them, for a produce answered a little late.
	exactlyOnceMargin int64 = 1 << 12
	// exactlyOnceEvery is the fewest operations between two times the
	// fold forgets. It waits for an eighth as many as it holds when that
	// is more, so that forgetting costs a constant for each operation.
	exactlyOnceEvery = 1 << 12
)

// slotLog is what the fold holds of one partition's offsets.
type slotLog struct {
	at map[int64]firstRecord
	// highest is the highest offset sighted, when sighted says one was;
	// below is the lowest offset still held: the first records below it
	// were forgotten (math.MinInt64 when none was).
	highest int64
	sighted bool
	below   int64
	dropped int // first records forgotten since at was made
}

// firstRecord is the first record seen at an offset.
type firstRecord struct {
	key, value   string
	op           int
	producerID   int64
	inconsistent bool // already reported as holding two records
}

// committedRecord is a committed write's record, as a lost write names it.
type committedRecord struct {
	offset  int64
	key     string
	op      int
	call    int64
	index   int32
	endedBy int
}

// openWrites is what an open transaction has written, as the fold waits for
// its fate.
type openWrites struct {
	records []writtenInTxn
	ends    map[int]int64 // end_txns that joined it: id -> call
}

// writtenInTxn is a record of a transactional produce.
type writtenInTxn struct {
	slot
	key    string
	op     int
	seq    int
	call   int64
	ret    int64
	index  int32
	repeat bool // the produce repeats a batch that may have landed
	late   bool // answered at or below a skipped range forgotten
}

// evidence is a committed record as an operation showed it: a
// read_committed fetch that returned it, or the operation that committed a
// write of it (the write itself when it was not transactional).
type evidence struct {
	slot
	key     string
	by      int   // the operation that shows the record committed
	byCall  int64 // its call
	written bool  // shown by a committed write, not by a read
	at      int64 // when it showed it: the fetch's return, or the later of the write's and the commit's
	seq     int   // the place of the fetch or the write among the operations
	index   int   // the record's place in them
}

// before orders evidence as the records were shown: by at, then by the
// operation that shows them, then as the operations came.
func (e evidence) before(o evidence) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	if e.by != o.by {
		return e.by < o.by
	}
	if e.seq != o.seq {
		return e.seq < o.seq
	}
	return e.index < o.index
}

type evidenceHeap []evidence

func (h evidenceHeap) Len() int           { return len(h) }
func (h evidenceHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h evidenceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evidenceHeap) Push(x any)        { *h = append(*h, x.(evidence)) }
func (h *evidenceHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// shownFirst is the first committed record of a trip, as a duplicate
// names it: its partition by number, its offset, the operation that
// showed it and how.
type shownFirst struct {
	partition int32
	written   bool
	offset    int64
	by        int
}

// comeProduce is a transactional produce waiting to join its transaction:
// its place among the operations, whether it repeats a batch, whether it
// was answered at or below a skipped range forgotten, and the offsets
// its answer names.
type comeProduce struct {
	seq         int
	repeat      bool
	late        bool
	partition   model.Partition
	first, last int64
}

// skippingFetch is a read_committed fetch that covered offsets it did not
// return.
type skippingFetch struct {
	op       int
	call     int64
	ret      int64
	from, to int64 // its start and the highest offset it returned
}

// skippedRange is offsets from to to, both included, that a fetch covered
// but did not return.
type skippedRange struct {
	fetch    skippingFetch
	from, to int64
}

// lostWrite is a committed record in a range a fetch skipped.
type lostWrite struct {
	fetch skippingFetch
	w     committedRecord
	p     model.Partition
}

func newExactlyOnceFold(histories.History) invariantFold {
	return &exactlyOnceFold{logs: map[model.Partition]*slotLog{},
		produces: map[int]comeProduce{}, open: map[*txn]*openWrites{}, firstShown: map[string]map[string]shownFirst{}, numbered: map[model.Partition]int32{}, doubled: map[slot]bool{},
		skipped: map[model.Partition][]skippedRange{}, committed: map[model.Partition][]committedRecord{}}
}

func (f *exactlyOnceFold) readAhead(ahead *fetchesAhead) { f.ahead = ahead }

// bound makes the fold forget what no operation of a history that keeps
// to Kafka's order can look at again (forgetRead).
func (f *exactlyOnceFold) bound() {
	f.bounded = &exactlyOnceBound{rangesTo: map[model.Partition]int64{}}
}

func (f *exactlyOnceFold) forgotten() string {
	if f.bounded == nil {
		return ""
	}
	return f.bounded.forgot
}

// forget notes that an operation needed what the fold forgot, and why.
func (f *exactlyOnceFold) forget(why string) {
	if f.bounded.forgot == "" {
		f.bounded.forgot = why
	}
}

func (f *exactlyOnceFold) add(op *histories.Op) {
	// Every record shown before op's call has come: one shown later is
	// shown at op's call or after.
	f.shownBefore(op.Call)
	seq := f.seq
	f.seq++
	if f.bounded != nil && seq >= f.bounded.next {
		f.forgetRead(op.Call)
	}
	switch {
	case op.Kind == model.Produce:
		f.produced(op, seq)
	case op.Kind == model.Fetch && op.Result.Succeeded():
		f.fetched(op, seq)
	}
}

// produced takes a produce's records: their offsets, and, when it is not
// transactional, its write, committed when acknowledged.
func (f *exactlyOnceFold) produced(op *histories.Op, seq int) {
	repeat := f.batches.repeats(op)
	records := producedRecords(*op)
	if len(records) == 0 {
		return
	}
	if !repeat {
		// A repeat's answer names the offsets of the batch it repeats.
		for _, s := range records {
			f.sighted(s, op.Call)
		}
	}
	late := f.late(records, repeat)
	if op.Req.TransactionalID != "" {
		f.produces[op.ID] = comeProduce{seq: seq, repeat: repeat, late: late, partition: op.Req.Partition,
			first: records[0].offset, last: records[len(records)-1].offset}
		return // its records wait for its transaction (joined)
	}
	for i, s := range records {
		f.committedWrite(committedRecord{offset: s.offset, key: s.key, op: op.ID, call: op.Call, index: int32(i), endedBy: -1}, s.partition, late)
		if !repeat {
			heap.Push(&f.shown, evidence{slot: s.slot, key: s.key, by: op.ID, byCall: op.Call, written: true, at: op.Return, seq: seq, index: i})
		}
	}
}

// fetched takes a fetch's records: their offsets, and, when it reads
// committed, the records it shows committed and the offsets it skipped.
func (f *exactlyOnceFold) fetched(op *histories.Op, seq int) {
	records := fetchedRecords(*op)
	for _, s := range records {
		f.sighted(s, op.Call)
	}
	if op.Req.Isolation != model.ReadCommitted {
		return
	}
	for i, s := range records {
		heap.Push(&f.shown, evidence{slot: s.slot, key: s.key, by: op.ID, byCall: op.Call, at: op.Return, seq: seq, index: i})
	}
	f.skips(op, records)
}

// skips keeps the offsets a read_committed fetch covered, from its start
// to the highest offset it returned, but did not return.
func (f *exactlyOnceFold) skips(op *histories.Op, records []sighting) {
	offsets := make([]int64, 0, len(records))
	for _, s := range records {
		offsets = append(offsets, s.offset)
	}
	slices.Sort(offsets)
	from := op.Req.Offset
	if len(offsets) == 0 {
		return
	}
	fetch := skippingFetch{op: op.ID, call: op.Call, ret: op.Return, from: op.Req.Offset, to: offsets[len(offsets)-1]}
	p := op.Req.Partition
	for _, o := range offsets {
		if o > from {
			f.skipped[p] = append(f.skipped[p], skippedRange{fetch: fetch, from: from, to: o - 1})
		}
		from = max(from, o+1)
	}
}

// sighted compares a record an operation called at call showed with the
// first one seen at its offset, or keeps it when it is the first.
func (f *exactlyOnceFold) sighted(s sighting, call int64) {
	l := f.logs[s.partition]
	if l == nil {
		l = &slotLog{at: map[int64]firstRecord{}, below: math.MinInt64}
		f.logs[s.partition] = l
	}
	if s.offset < l.below {
		f.forget(fmt.Sprintf("op %d shows %s offset %d, below offset %d, under which the first records were forgotten",
			s.op, s.partition, s.offset, l.below))
		return
	}
	if !l.sighted || s.offset > l.highest {
		l.highest, l.sighted = s.offset, true
	}
	first, seen := l.at[s.offset]
	if !seen {
		l.at[s.offset] = firstRecord{key: s.key, value: s.value, op: s.op, producerID: s.producerID}
		return
	}
	was := sighting{slot: s.slot, op: first.op, key: first.key, value: first.value, producerID: first.producerID}
	if first.inconsistent || s.sameRecord(was) {
		return
	}
	first.inconsistent = true
	l.at[s.offset] = first
	f.inconsistent = append(f.inconsistent, foldedViolation{call: call, Violation: Violation{Op: s.op, Related: []int{was.op},
		Reason: fmt.Sprintf("%s offset %d holds %s, but op %d showed %s there",
			s.partition, s.offset, recordName(s), was.op, recordName(was))}})
}

// committedWrite keeps a committed write's record for the fetches that
// may have skipped it. late: the record was answered at or below a
// skipped range that was forgotten, which it may belong to.
func (f *exactlyOnceFold) committedWrite(r committedRecord, p model.Partition, late bool) {
	if late {
		f.forget(fmt.Sprintf("op %d's record at %s offset %d committed at or below offset %d, up to which the ranges read_committed fetches skipped were forgotten",
			r.op, p, r.offset, f.bounded.rangesTo[p]))
	}
	f.committed[p] = append(f.committed[p], r)
}

// late reports whether a produce answered records at or below a skipped
// range the fold forgot. A produce called after the range's fetch
// returned is answered above it, unless it repeats a batch: then its
// offsets are the batch's, and late only when no open transaction holds
// them, because a range over a record an open transaction holds is
// never forgotten.
func (f *exactlyOnceFold) late(records []sighting, repeat bool) bool {
	if f.bounded == nil {
		return false
	}
	for _, s := range records {
		if to, ok := f.bounded.rangesTo[s.partition]; ok && s.offset <= to && !(repeat && f.holdsOpen(s.slot)) {
			return true
		}
	}
	return false
}

// holdsOpen reports whether a record of an open transaction is at at.
// It looks at every such record, so it is asked only of a repeat.
func (f *exactlyOnceFold) holdsOpen(at slot) bool {
	for _, c := range f.produces {
		if c.partition == at.partition && c.first <= at.offset && at.offset <= c.last {
			return true
		}
	}
	for _, w := range f.open {
		for _, r := range w.records {
			if r.slot == at {
				return true
			}
		}
	}
	return false
}

func (f *exactlyOnceFold) useBatches(b *landedBatches) { f.batches = b }

func (f *exactlyOnceFold) joined(op *histories.Op, t *txn) {
	switch op.Kind {
	case model.EndTxn:
		w := f.openOf(t)
		w.ends[op.ID] = op.Call
	case model.Produce:
		come, ok := f.produces[op.ID]
		if !ok {
			return // it wrote nothing
		}
		delete(f.produces, op.ID)
		w := f.openOf(t)
		for i, s := range producedRecords(*op) {
			w.records = append(w.records, writtenInTxn{slot: s.slot, key: s.key, op: op.ID, seq: come.seq,
				call: op.Call, ret: op.Return, index: int32(i), repeat: come.repeat, late: come.late})
		}
	}
}

func (f *exactlyOnceFold) openOf(t *txn) *openWrites {
	w := f.open[t]
	if w == nil {
		w = &openWrites{ends: map[int]int64{}}
		f.open[t] = w
	}
	return w
}

func (f *exactlyOnceFold) closed(t *txn) {
	w := f.open[t]
	delete(f.open, t)
	if w == nil || t.fate != fateCommitted {
		return
	}
	byCall := w.ends[t.endedBy]
	for _, r := range w.records {
		f.committedWrite(committedRecord{offset: r.offset, key: r.key, op: r.op, call: r.call, index: r.index, endedBy: t.endedBy}, r.partition, r.late)
		if !r.repeat {
			heap.Push(&f.shown, evidence{slot: r.slot, key: r.key, by: t.endedBy, byCall: byCall, written: true,
				at: max(t.commitReturn, r.ret), seq: r.seq, index: int(r.index)})
		}
	}
}

func (f *exactlyOnceFold) calledBefore(instant int64) { f.shownBefore(instant) }

// shownBefore judges, in the order they were shown, the committed records
// shown before the instant at: no record shown later can come before them.
func (f *exactlyOnceFold) shownBefore(at int64) {
	for f.shown.Len() > 0 && f.shown[0].at < at {
		f.judgeShown(heap.Pop(&f.shown).(evidence))
	}
}

// judgeShown finds a trip carried by a second committed record of one
// topic (Jepsen's duplicate): seen at two offsets by read_committed
// fetches, or written at two offsets by writes that committed, which every
// read_committed reader of the topic will see. A duplicate is reported at
// the operation that completed the evidence: the fetch that saw the second
// record, or the commit of the second write.
func (f *exactlyOnceFold) judgeShown(e evidence) {
	topic := topicOf(e.partition)
	trips := f.firstShown[topic]
	if trips == nil {
		trips = map[string]shownFirst{}
		f.firstShown[topic] = trips
	}
	first, seen := trips[e.key]
	if !seen && f.bounded != nil && f.bounded.trips.has(tripPrint(topic, e.key)) {
		f.forget(fmt.Sprintf("op %d shows %s committed at %s offset %d, and the first committed record of %s in %s was forgotten",
			e.by, e.key, e.partition, e.offset, e.key, topic))
		return
	}
	if !seen {
		trips[e.key] = shownFirst{partition: f.number(e.partition), offset: e.offset, by: e.by, written: e.written}
		return
	}
	at := slot{f.partitions[first.partition], first.offset}
	if at == e.slot || f.doubled[e.slot] {
		return
	}
	f.doubled[e.slot] = true
	f.duplicates = append(f.duplicates, foldedViolation{call: e.byCall, Violation: duplicate(topic, at, first, e)})
}

// number is p's number among the partitions.
func (f *exactlyOnceFold) number(p model.Partition) int32 {
	n, ok := f.numbered[p]
	if !ok {
		n = int32(len(f.partitions))
		f.partitions = append(f.partitions, p)
		f.numbered[p] = n
	}
	return n
}

// duplicate is the violation of again, a second committed record of a
// trip, after first, at its slot at.
func duplicate(topic string, at slot, first shownFirst, again evidence) Violation {
	how := "read committed"
	if first.written || again.written {
		how = "committed"
	}
	v := Violation{Op: again.by, Reason: fmt.Sprintf("%s %s twice in %s: at %s offset %d and at %s offset %d",
		again.key, how, topic, at.partition, at.offset, again.partition, again.offset)}
	if first.by != again.by {
		verb := "read"
		if first.written {
			verb = "committed"
		}
		v.Related = []int{first.by}
		v.Reason += fmt.Sprintf(" (op %d %s the first)", first.by, verb)
	}
	return v
}

// early returns the duplicates and the inconsistent offsets found since
// its last call. A lost write is known only at the end, because a write
// may commit at an offset a fetch skipped at any time.
func (f *exactlyOnceFold) early() []foldedViolation {
	found := slices.Concat(f.duplicates[f.told:], f.inconsistent[f.toldOffsets:])
	f.told, f.toldOffsets = len(f.duplicates), len(f.inconsistent)
	return found
}

func (f *exactlyOnceFold) verdict() Verdict {
	for f.shown.Len() > 0 { // every one, those shown at the clock's last instant too
		f.judgeShown(heap.Pop(&f.shown).(evidence))
	}
	// As the violations were listed before their sort by call: the
	// duplicates, the lost writes, then the inconsistent offsets.
	violations := slices.Concat(f.duplicates, f.lostWrites(), f.inconsistent)
	return foldedVerdict(ExactlyOnce, violations)
}

// lostWrites finds read_committed fetches that returned offsets on both
// sides of a committed record but not the record itself: each fetch's in
// the call order of the writes, then by the records' place in them.
func (f *exactlyOnceFold) lostWrites() []foldedViolation {
	for p, ranges := range f.skipped {
		f.pair(p, ranges, f.sortedCommitted(p))
	}
	clear(f.skipped)
	found := f.lost
	slices.SortFunc(found, func(a, b lostWrite) int {
		return cmp.Or(cmp.Compare(a.fetch.call, b.fetch.call), cmp.Compare(a.fetch.op, b.fetch.op),
			cmp.Compare(a.w.call, b.w.call), cmp.Compare(a.w.op, b.w.op), cmp.Compare(a.w.index, b.w.index))
	})
	violations := make([]foldedViolation, len(found))
	for i, l := range found {
		related := []int{l.w.op}
		if l.w.endedBy >= 0 {
			related = append(related, l.w.endedBy)
		}
		violations[i] = foldedViolation{call: l.fetch.call, Violation: Violation{Op: l.fetch.op, Related: related,
			Reason: fmt.Sprintf("%s committed at %s offset %d (op %d) missing from a read_committed fetch of offsets %d to %d",
				l.w.key, l.p, l.w.offset, l.w.op, l.fetch.from, l.fetch.to)}}
	}
	return violations
}

// pair keeps as lost each record of committed, which is sorted by offset,
// that one of ranges covers.
func (f *exactlyOnceFold) pair(p model.Partition, ranges []skippedRange, committed []committedRecord) {
	for _, r := range ranges {
		from, _ := slices.BinarySearchFunc(committed, r.from, func(w committedRecord, o int64) int { return cmp.Compare(w.offset, o) })
		for _, w := range committed[from:] {
			if w.offset > r.to {
				break
			}
			f.lost = append(f.lost, lostWrite{fetch: r.fetch, w: w, p: p})
		}
	}
}

// sortedCommitted is the committed records of partition p held, sorted
// by offset.
func (f *exactlyOnceFold) sortedCommitted(p model.Partition) []committedRecord {
	committed := f.committed[p]
	slices.SortFunc(committed, func(a, b committedRecord) int {
		return cmp.Or(cmp.Compare(a.offset, b.offset), cmp.Compare(a.call, b.call), cmp.Compare(a.op, b.op), cmp.Compare(a.index, b.index))
	})
	return committed
}

// recordName is a record as reasons name it: key, value and producer id.
func recordName(s sighting) string {
	name := s.key
	if s.value != "" {
		name += fmt.Sprintf(" (%q)", s.value)
	}
	return fmt.Sprintf("%s of producer id %d", name, s.producerID)
}
