package checker

import (
	"fmt"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// landedBatches tells whether a produce repeats a batch that may have
// landed (model.Batch): a broker answers such a repeat as a duplicate,
// with the offset of the records first sent under it, so its answer names
// no new record. The stream works it out once for every fold that needs
// it (batchUser), before they see the produce.
//
// Unbounded, it holds each batch that may have landed, in 24 bytes,
// because a retry of any of them may come later. Bounded (bound), it
// keeps per producer id and partition the batches of the newest epoch
// that landed, the last landedBatchesKept of them, as a Kafka leader
// keeps the last five (model.Batch, NUM_BATCHES_TO_RETAIN) and drops the
// older epoch's on a new one. A produce that may repeat a batch it
// dropped, and whose answer names records, is one it cannot judge: it
// says so (forgotten).
type landedBatches struct {
	partitions map[model.Partition]int32
	landed     map[batchKey]struct{} // unbounded
	runs       map[batchWriter]*batchRun
	bounded    bool
	forgot     string
	// op and repeat are the produce that came last, and whether it
	// repeats a batch.
	op     int
	repeat bool
}

// landedBatchesKept is how many batches of its newest epoch a bounded
// landedBatches keeps per producer id and partition. A variable, so that
// a test can make it small and have the saved histories forget.
var landedBatchesKept = 32

// batchKey is a model.Batch with its partition numbered.
type batchKey struct {
	producerID  int64
	partition   int32
	epoch       int16
	first, last int32
}

// batchWriter is a producer id in a numbered partition.
type batchWriter struct {
	producerID int64
	partition  int32
}

// batchRun is what a bounded landedBatches keeps of one producer id's
// batches in one partition.
type batchRun struct {
	epoch int16 // the newest epoch of a batch that may have landed
	// batches are that epoch's, in the order they landed, the last
	// landedBatchesKept.
	batches [][2]int32
	// older: a batch of an older epoch may have landed, and is dropped.
	older bool
	// dropped: a batch of epoch was dropped; the highest first sequence
	// among those dropped is droppedFirst.
	dropped      bool
	droppedFirst int32
}

// batchUser is a fold that needs to know which produces repeat a batch.
type batchUser interface {
	useBatches(*landedBatches)
}

func newLandedBatches() *landedBatches {
	return &landedBatches{partitions: map[model.Partition]int32{}, landed: map[batchKey]struct{}{}, op: -1}
}

// bound makes it keep, per producer id and partition, only the newest
// epoch's last landedBatchesKept batches. Called before the first
// operation.
func (b *landedBatches) bound() {
	b.bounded, b.landed, b.runs = true, nil, map[batchWriter]*batchRun{}
}

// forgotten names the first produce that named records while it may have
// repeated a batch bound dropped; "" when none did.
func (b *landedBatches) forgotten() string { return b.forgot }

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
	if b.bounded {
		b.addBounded(op, key)
		return
	}
	_, b.repeat = b.landed[key]
	if !b.repeat && (op.Result.Succeeded() || op.Result.Undecided()) {
		b.landed[key] = struct{}{}
	}
}

// addBounded is add when bounded. The batches it keeps are some of those
// that landed, and it knows which it dropped: a batch it keeps is
// repeated, as when it keeps them all; one it never dropped is not; one
// it may have dropped is unknown. The folds read a repeat only of a
// produce whose answer names records (producedRecords), so only such a
// produce needs the answer; a refused or undecided one (a zombie's, a
// retry's) makes nothing forgotten.
func (b *landedBatches) addBounded(op *histories.Op, key batchKey) {
	w := batchWriter{key.producerID, key.partition}
	seqs := [2]int32{key.first, key.last}
	run := b.runs[w]
	unknown := false
	switch {
	case run == nil || key.epoch > run.epoch:
	case key.epoch == run.epoch:
		for _, s := range run.batches {
			if s == seqs {
				b.repeat = true
				break
			}
		}
		unknown = !b.repeat && run.dropped && key.first <= run.droppedFirst
	default:
		unknown = run.older
	}
	if unknown && op.Result.Succeeded() && op.Result.Resp.BaseOffset >= 0 && len(op.Req.Records) > 0 && b.forgot == "" {
		b.forgot = fmt.Sprintf("op %d: produce of producer id %d epoch %d, sequences %d to %d, named records, and the batch it may repeat was dropped (the newest epoch's last %d batches are kept)",
			op.ID, key.producerID, key.epoch, key.first, key.last, landedBatchesKept)
	}
	if b.repeat || !op.Result.Succeeded() && !op.Result.Undecided() {
		return
	}
	switch {
	case run == nil:
		b.runs[w] = &batchRun{epoch: key.epoch, batches: [][2]int32{seqs}}
	case key.epoch > run.epoch:
		run.epoch, run.batches, run.older, run.dropped = key.epoch, append(run.batches[:0], seqs), true, false
	case key.epoch == run.epoch:
		if len(run.batches) >= landedBatchesKept {
			run.droppedFirst = max(run.droppedFirst, run.batches[0][0])
			if !run.dropped {
				run.droppedFirst = run.batches[0][0]
			}
			run.dropped = true
			run.batches = append(run.batches[:0], run.batches[1:]...)
		}
		run.batches = append(run.batches, seqs)
	default:
		run.older = true
	}
}

// repeats reports whether the produce op, the one that came last, repeats
// a batch that may have landed.
func (b *landedBatches) repeats(op *histories.Op) bool {
	return b.op == op.ID && b.repeat
}
