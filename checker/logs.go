package checker

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// What a record's transaction came to, as LogEntry.Status says it.
const (
	RecordCommitted = "committed"
	RecordAborted   = "aborted"
	RecordOpen      = "open" // its transaction is open, or its end was never answered
)

// LogEntry is what one offset of a partition log holds, as far as the
// history tells: a record seen in a produce's answer or a fetch, or a
// COMMIT or ABORT marker, which no operation shows and which is inferred
// from the transaction that ended.
type LogEntry struct {
	Offset int64
	Marker bool // a control record; Commit says which
	Commit bool
	// Epoch is the marker's epoch, or the epoch the record was produced
	// with (model.NoEpoch when only a fetch showed it).
	Epoch      int16
	ProducerID int64
	Key        string // a record's; "" for a marker
	Status     string // a record's: RecordCommitted, RecordAborted or RecordOpen
	// Conflict is set when operations showed two different records here.
	Conflict bool
	// Ops are the operations that show the entry: for a record, those that
	// wrote or read it; for a marker, the one that ended its transaction.
	Ops []int
}

// PartitionLog is one partition's log as the history shows it.
type PartitionLog struct {
	Partition model.Partition
	Entries   []LogEntry // known offsets only, in order; gaps are offsets nothing showed
	// HighWatermark and LastStableOffset are the ones the last fetch of the
	// partition answered, model.NoOffset when none did.
	HighWatermark, LastStableOffset int64
	FetchedBy                       int // that fetch's id, -1 when none
}

// Logs works out every partition's log from h: records from produce answers
// and fetches, each coloured by the fate of its transaction as the
// invariants judge it, and the markers of the transactions that ended.
func Logs(h histories.History) []PartitionLog {
	a := analyze(h)
	logs := map[model.Partition]*PartitionLog{}
	logOf := func(p model.Partition) *PartitionLog {
		if logs[p] == nil {
			logs[p] = &PartitionLog{Partition: p, HighWatermark: model.NoOffset, LastStableOffset: model.NoOffset, FetchedBy: -1}
		}
		return logs[p]
	}
	for _, at := range sortedSlots(a.records) {
		l := logOf(at.partition)
		l.Entries = append(l.Entries, a.recordEntry(a.records[at]))
	}
	for _, op := range inCallOrder(h.Ops) {
		if op.Kind == model.Fetch && op.Result.Succeeded() {
			l := logOf(op.Req.Partition)
			l.HighWatermark, l.LastStableOffset, l.FetchedBy = op.Result.Resp.HighWatermark, op.Result.Resp.LastStableOffset, op.ID
		}
	}
	for _, m := range a.markers() {
		logOf(m.partition).placeMarker(m, a)
	}
	out := make([]PartitionLog, 0, len(logs))
	for _, p := range slices.Sorted(maps.Keys(logs)) {
		out = append(out, *logs[p])
	}
	return out
}

func sortedSlots(idx recordIndex) []slot {
	slots := make([]slot, 0, len(idx))
	for s := range idx {
		slots = append(slots, s)
	}
	sort.Slice(slots, func(i, j int) bool {
		if slots[i].partition != slots[j].partition {
			return slots[i].partition < slots[j].partition
		}
		return slots[i].offset < slots[j].offset
	})
	return slots
}

// recordEntry is the entry of one slot, from every sighting of it.
func (a *analysis) recordEntry(seen []sighting) LogEntry {
	first := seen[0]
	e := LogEntry{Offset: first.offset, Epoch: model.NoEpoch, ProducerID: first.producerID, Key: first.key, Status: RecordOpen}
	var keys []string
	for _, s := range seen {
		e.Ops = append(e.Ops, s.op)
		if !s.sameRecord(first) {
			e.Conflict = true
		}
		if !slices.Contains(keys, s.key) {
			keys = append(keys, s.key)
		}
	}
	e.Key = strings.Join(keys, " / ")
	if w, ok := a.writerOf(seen); ok {
		e.Epoch, e.ProducerID = w.Req.Epoch, w.Req.ProducerID
		e.Status = a.statusOf(w)
	} else if a.readCommitted(seen) {
		e.Status = RecordCommitted // a read_committed fetch returned it
	}
	return e
}

// writerOf is the produce that wrote a slot's first record: the one
// acknowledged there, or else one that may have written it unacknowledged.
func (a *analysis) writerOf(seen []sighting) (histories.Op, bool) {
	for _, s := range seen {
		if op := a.byID[s.op]; op.Kind == model.Produce {
			return *op, true
		}
	}
	for _, s := range seen {
		if writers := a.writersOf(s, *a.byID[s.op]); len(writers) > 0 {
			return writers[0], true
		}
	}
	return histories.Op{}, false
}

func (a *analysis) readCommitted(seen []sighting) bool {
	for _, s := range seen {
		if isReadCommitted(*a.byID[s.op]) {
			return true
		}
	}
	return false
}

// statusOf is what came of a produce's records.
func (a *analysis) statusOf(w histories.Op) string {
	if w.Req.TransactionalID == "" {
		return RecordCommitted
	}
	t := a.txnOf[w.ID]
	switch {
	case t == nil:
		return RecordOpen
	case t.fate == fateCommitted:
		return RecordCommitted
	case t.fate == fateAborted:
		return RecordAborted
	}
	return RecordOpen
}

// marker is a COMMIT or ABORT a decided transaction wrote to a partition.
type marker struct {
	partition model.Partition
	at        int64 // when its transaction ended
	commit    bool
	epoch     int16
	txn       *txn
	by        int
}

// markers are the markers of every decided transaction, in the order they
// were written: one per partition the transaction registered (KIP-98).
func (a *analysis) markers() []marker {
	var out []marker
	for _, t := range a.txns {
		if t.fate == fateUnknown || t.endedBy < 0 {
			continue
		}
		end := *a.byID[t.endedBy]
		for _, p := range a.partitionsOf(t) {
			out = append(out, marker{partition: p, at: endedAt(end), commit: t.fate == fateCommitted, epoch: markerEpoch(t, end), txn: t, by: end.ID})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// endedAt is when the operation that ended a transaction did so, as
// analyzeTxns orders it.
func endedAt(end histories.Op) int64 {
	if end.Kind == model.TimeoutAbort || !end.Returned {
		return end.Call
	}
	return end.Return
}

// markerEpoch is the epoch a transaction's markers carry: the new epoch
// when a newer session or the coordinator aborted it (seed 000: the ABORT
// at 41 carries epoch 1), the bumped one a KIP-890 end_txn answers, else
// the transaction's own.
func markerEpoch(t *txn, end histories.Op) int16 {
	resp := end.Result.Resp
	switch {
	case end.Kind == model.InitProducerID, end.Kind == model.TimeoutAbort:
		return resp.Epoch
	case end.Kind == model.EndTxn && resp.ProducerID != model.NoProducerID:
		return resp.Epoch
	}
	return t.epoch
}

// partitionsOf lists the partitions t registered: by add_partitions, or by
// a produce (implicitly under KIP-890).
func (a *analysis) partitionsOf(t *txn) []model.Partition {
	var ps []model.Partition
	add := func(p model.Partition) {
		if p != "" && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	for _, id := range t.ops {
		op := *a.byID[id]
		switch {
		case op.Kind == model.AddPartitions && op.Result.Succeeded():
			for _, p := range op.Req.Partitions {
				add(p)
			}
		case op.Kind == model.Produce && !refused(op):
			add(op.Req.Partition)
		}
	}
	return ps
}

// placeMarker puts m at the first offset nothing else holds after every
// record written before its transaction ended and after the markers
// before it: a marker is appended to the log at that moment.
func (l *PartitionLog) placeMarker(m marker, a *analysis) {
	held := map[int64]bool{}
	after := int64(-1)
	for _, e := range l.Entries {
		held[e.Offset] = true
		if e.Marker || a.writtenBefore(e, m) {
			after = max(after, e.Offset)
		}
	}
	at := after + 1
	for held[at] {
		at++
	}
	entry := LogEntry{Offset: at, Marker: true, Commit: m.commit, Epoch: m.epoch, ProducerID: m.txn.producerID, Ops: []int{m.by}}
	i, _ := slices.BinarySearchFunc(l.Entries, at, func(e LogEntry, off int64) int { return cmp.Compare(e.Offset, off) })
	l.Entries = slices.Insert(l.Entries, i, entry)
}

// writtenBefore reports whether a record entry was in the log by the time
// m's transaction ended: it is one of that transaction's, or an operation
// that showed it had returned by then.
func (a *analysis) writtenBefore(e LogEntry, m marker) bool {
	for _, id := range e.Ops {
		op := a.byID[id]
		if a.txnOf[id] == m.txn || (op.Returned && op.Return <= m.at) {
			return true
		}
	}
	return false
}
