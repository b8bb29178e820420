package workload

import (
	"fmt"

	"github.com/fencecheck/fencecheck/model"
)

// fareWriter writes the fare of each trip of its shard in a transaction of
// its own (seed 000). On start it learns which trips are already committed
// by reading its output partition read_committed after InitProducerId, which
// has fenced any older owner of its transactional.id and aborted its open
// transaction; the read is complete only once nothing is hidden from it
// (see restored). An idempotent-only writer (seed 001) has no transaction
// and cannot do that: it relies on its source, which re-delivers every trip
// it did not see acknowledged.
type fareWriter struct {
	producer
	shard *shard
	phase writerPhase
	trip  string // the trip in hand
	read  int64  // restore: the next offset to read
	// committed are the trips this writer knows committed: read back on
	// start, and its own commits since.
	committed map[string]bool
	v2        bool // transactions v2: partitions are added by the produce itself
}

type writerPhase int

const (
	writerInit writerPhase = iota
	writerRestore
	writerAwaitStable // restore: waiting for another producer's transaction to end
	writerBegin
	writerProduce
	writerCommit
	writerAbort
	writerClosed
)

// shard is one unit of ownership: its trips, its output partition, and
// what its source saw acknowledged.
type shard struct {
	trips []string
	out   model.Partition
	acked map[string]bool // idempotent writers: trips the source will not re-deliver
}

func newFareWriter(s *shard, txnID string, v2 bool) *fareWriter {
	return &fareWriter{producer: newProducer(txnID), shard: s, v2: v2, committed: map[string]bool{}}
}

func (w *fareWriter) transactional() bool { return w.txnID != "" }

func (w *fareWriter) closed() bool { return w.phase == writerClosed }

func (w *fareWriter) idle() bool { return w.phase == writerBegin && w.nextTrip() == "" }

// txnMayEnd tells a writer waiting for a complete restore read that
// something happened that can end an open transaction: it reads again.
func (w *fareWriter) txnMayEnd() {
	if w.phase == writerAwaitStable {
		w.phase = writerRestore
	}
}

func (w *fareWriter) inTxn() bool { return w.phase == writerProduce || w.phase == writerCommit }

func (w *fareWriter) next() (model.Op, bool) {
	switch w.phase {
	case writerInit:
		return w.initOp(), true
	case writerRestore:
		r := model.NewRequest()
		r.Partition, r.Offset, r.Isolation = w.shard.out, w.read, model.ReadCommitted
		return model.Op{Kind: model.Fetch, Req: r}, true
	case writerBegin:
		if w.trip = w.nextTrip(); w.trip == "" {
			return model.Op{}, false // the shard is done
		}
		if w.transactional() && !w.v2 {
			return w.addPartitionsOp(w.shard.out), true
		}
		w.phase = writerProduce
		return w.next()
	case writerProduce:
		return w.produceOp(w.shard.out, w.trip, fmt.Sprintf("fare of %s", w.trip)), true
	case writerCommit:
		return w.endTxnOp(true), true
	case writerAbort:
		return w.endTxnOp(false), true
	}
	return model.Op{}, false
}

// nextTrip is the first trip not yet done: committed in the output (as the
// restore read it) or acknowledged to the source.
func (w *fareWriter) nextTrip() string {
	for _, t := range w.shard.trips {
		if !w.shard.acked[t] && !w.committed[t] {
			return t
		}
	}
	return ""
}

func (w *fareWriter) learn(op model.Op, res model.Result) {
	if !react(op, res, func() { w.phase = writerClosed }, w.recover) {
		return
	}
	switch op.Kind {
	case model.InitProducerID:
		w.takeGrant(res.Resp)
		w.phase, w.read = writerBegin, 0
		if w.transactional() {
			w.phase, w.committed = writerRestore, map[string]bool{}
		}
	case model.Fetch:
		w.restored(res.Resp)
	case model.AddPartitions:
		w.phase = writerProduce
	case model.Produce:
		w.seqs[op.Req.Partition]++
		w.phase = writerCommit
		if !w.transactional() {
			w.shard.acked[w.trip] = true
			w.phase = writerBegin
		}
	case model.EndTxn:
		w.takeGrant(res.Resp)
		if op.Req.Commit {
			w.committed[w.trip] = true
		}
		w.phase = writerBegin
	}
}

// restored takes what a restore fetch read: trips already committed.
//
// A read_committed fetch returns nothing at or past the partition's last
// stable offset (KIP-98; Kafka's UnifiedLog.read bounds a TXN_COMMITTED
// read by the last stable offset), and a transaction still open anywhere
// in the partition holds that offset at its first record. Between it and
// the high watermark may lie a trip this writer's earlier incarnation
// committed after another producer's transaction began there (the
// adversary's, which it never ends). A read that reaches a last stable
// offset below the high watermark is therefore not complete: a writer
// that took it for complete wrote such a trip again and broke
// exactly-once (adversary, transactions v2, 20,000 interleavings; the
// shape is TestRestoreWaitsForAnOpenTransaction).
//
// So the restore goes on until a read reaches a last stable offset equal
// to the high watermark. A read that stops short of the last stable
// offset is followed at once by the next (a broker may answer a prefix).
// One that reaches it below the high watermark makes the writer wait,
// sending nothing, as a long-polling consumer's fetch waits in Kafka's
// purgatory until the last stable offset moves (DelayedFetch.tryComplete
// takes a TXN_COMMITTED fetch's end offset to be the last stable offset).
// The run wakes it (txnMayEnd) when something that can end a transaction
// has happened: an EndTxn or a transactional InitProducerId arriving from
// any process, a clock tick (Kafka's
// TransactionCoordinator.abortTimedOutTransactions aborts what outlived
// its timeout), a broker restart (a coordinator loading its log sends the markers of a
// transaction it was ending). It then reads again from where it stopped,
// and waits again if nothing moved. The quiet phase's last tick passes
// every timeout the scenarios ask for, so the wait ends there at the
// latest.
func (w *fareWriter) restored(resp model.Response) {
	for _, rec := range resp.Records {
		w.committed[rec.Key] = true
		w.read = rec.Offset + 1
	}
	switch {
	case len(resp.Records) > 0 && w.read < resp.LastStableOffset:
		// More below the last stable offset: read on.
	case resp.LastStableOffset < resp.HighWatermark:
		w.phase = writerAwaitStable
	default:
		w.phase = writerBegin
	}
}

// recover handles an abortable error: abort the transaction and begin the
// trip again; a refused abort means there was nothing to abort.
func (w *fareWriter) recover(op model.Op, res model.Result) {
	switch {
	case !w.transactional():
		w.phase = writerInit // a new producer id, as Kafka's idempotent producer resets
	case op.Kind == model.EndTxn && !op.Req.Commit:
		w.phase = writerBegin
	default:
		w.phase = writerAbort
	}
}
