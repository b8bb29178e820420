package checker

import (
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// landedBatches tells whether a produce repeats a batch that may have
// landed (model.Batch): a broker answers such a repeat as a duplicate,
// with the offset of the records first sent under it, so its answer names
// no new record. The stream works it out once for every fold that needs
// it (batchUser), before they see the produce.
//
// It holds each batch that may have landed, in 24 bytes, because a retry
// of any of them may come later.
type landedBatches struct {
	partitions map[model.Partition]int32
	landed     map[batchKey]struct{}
	// op and repeat are the produce that came last, and whether it
	// repeats a batch.
	op     int
	repeat bool
}

// bound is a no-op until landedBatches forgets anything.
func (b *landedBatches) bound() {}

// forgotten is "": landedBatches forgets nothing yet.
func (b *landedBatches) forgotten() string { return "" }

// batchKey is a model.Batch with its partition numbered.
type batchKey struct {
	producerID  int64
	partition   int32
	epoch       int16
	first, last int32
}

// batchUser is a fold that needs to know which produces repeat a batch.
type batchUser interface {
	useBatches(*landedBatches)
}

func newLandedBatches() *landedBatches {
	return &landedBatches{partitions: map[model.Partition]int32{}, landed: map[batchKey]struct{}{}, op: -1}
}

// add takes the next operation in call order.
func (b *landedBatches) add(op *histories.Op) {
	if op.Kind != model.Produce {
		return
	}
	b.op, b.repeat = op.ID, false
	if op.Req.ProducerID == model.NoProducerID {
		return
	}
	id := model.BatchOf(op.Req)
	p, ok := b.partitions[id.Partition]
	if !ok {
		p = int32(len(b.partitions))
		b.partitions[id.Partition] = p
	}
	key := batchKey{producerID: id.ProducerID, partition: p, epoch: id.Epoch, first: id.FirstSeq, last: id.LastSeq}
	_, b.repeat = b.landed[key]
	if !b.repeat && (op.Result.Succeeded() || op.Result.Undecided()) {
		b.landed[key] = struct{}{}
	}
}

// repeats reports whether the produce op, the one that came last, repeats
// a batch that may have landed.
func (b *landedBatches) repeats(op *histories.Op) bool {
	return b.op == op.ID && b.repeat
}
