package checker

import (
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// slot is one offset of one partition.
type slot struct {
	partition model.Partition
	offset    int64
}

// sighting is a record at a slot as one operation showed it: a produce's
// acknowledgement or a fetch's result.
type sighting struct {
	slot
	op         int
	key, value string
	producerID int64 // model.NoProducerID when the operation did not say
}

// sameRecord reports whether two sightings can be the same record. A
// producer id only one side knows does not tell them apart.
func (s sighting) sameRecord(o sighting) bool {
	if s.key != o.key || s.value != o.value {
		return false
	}
	return s.producerID == model.NoProducerID || o.producerID == model.NoProducerID || s.producerID == o.producerID
}

// producedRecords is where a successful produce's records landed: record i
// at base_offset + i.
func producedRecords(op histories.Op) []sighting {
	if op.Kind != model.Produce || !op.Result.Succeeded() || op.Result.Resp.BaseOffset < 0 {
		return nil
	}
	out := make([]sighting, 0, len(op.Req.Records))
	for i, rec := range op.Req.Records {
		at := slot{op.Req.Partition, op.Result.Resp.BaseOffset + int64(i)}
		out = append(out, sighting{slot: at, op: op.ID, key: rec.Key, value: rec.Value, producerID: op.Req.ProducerID})
	}
	return out
}

// fetchedRecords is what a successful fetch returned.
func fetchedRecords(op histories.Op) []sighting {
	if op.Kind != model.Fetch || !op.Result.Succeeded() {
		return nil
	}
	out := make([]sighting, 0, len(op.Result.Resp.Records))
	for _, rec := range op.Result.Resp.Records {
		at := slot{op.Req.Partition, rec.Offset}
		out = append(out, sighting{slot: at, op: op.ID, key: rec.Key, value: rec.Value, producerID: rec.ProducerID})
	}
	return out
}

// isReadCommitted reports whether op is a successful read_committed fetch.
func isReadCommitted(op histories.Op) bool {
	return op.Kind == model.Fetch && op.Req.Isolation == model.ReadCommitted && op.Result.Succeeded()
}

// recordIndex holds every sighting of every slot, each slot's in call order.
type recordIndex map[slot][]sighting

// indexRecords gathers the slots that produce acknowledgements and fetch
// results (of either isolation) name. A produce that repeats an earlier
// batch that may have landed (model.Batch) names no slot: a broker answers
// it as a duplicate, with the offset of the records first sent under it.
func indexRecords(h histories.History) recordIndex {
	idx := recordIndex{}
	landed := map[model.Batch]bool{}
	for _, op := range inCallOrder(h.Ops) {
		sightings := append(producedRecords(op), fetchedRecords(op)...)
		if op.Kind == model.Produce && op.Req.ProducerID != model.NoProducerID {
			id := model.BatchOf(op.Req)
			repeat := landed[id]
			landed[id] = landed[id] || op.Result.Succeeded() || op.Result.Undecided()
			if repeat {
				continue
			}
		}
		for _, s := range sightings {
			idx[s.slot] = append(idx[s.slot], s)
		}
	}
	return idx
}

// writersOf lists the produce operations that may have written the record a
// fetch returned: the ones acknowledged at its slot with the same record,
// or else the ones with no acknowledgement (an answer lost, or taken as a
// duplicate) that sent a record like it to the same partition before the
// fetch returned.
func (a *analysis) writersOf(read sighting, fetch histories.Op) []histories.Op {
	var acked []histories.Op
	for _, s := range a.records[read.slot] {
		if w := a.byID.get(s.op); w.Kind == model.Produce && s.sameRecord(read) {
			acked = append(acked, w)
		}
	}
	if len(acked) > 0 {
		return acked
	}
	var maybe []histories.Op
	for _, w := range a.h.Ops {
		if w.Kind == model.Produce && mayHaveWrittenUnacked(w) && w.Req.Partition == read.partition &&
			w.Call <= fetch.Return && sendsRecord(w, read) {
			maybe = append(maybe, w)
		}
	}
	return maybe
}

// mayHaveWrittenUnacked reports whether a produce may have written records
// at offsets its answer does not name.
func mayHaveWrittenUnacked(op histories.Op) bool {
	return op.Result.Undecided() || model.ClassOf(op.Kind, op.Result.Err) == model.Duplicate
}

// sendsRecord reports whether produce op sent a record like read.
func sendsRecord(op histories.Op, read sighting) bool {
	for _, rec := range op.Req.Records {
		sent := sighting{key: rec.Key, value: rec.Value, producerID: op.Req.ProducerID}
		if sent.sameRecord(read) {
			return true
		}
	}
	return false
}
