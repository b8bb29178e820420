package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// grant is the moment a session (producer id, epoch) of a transactional.id
// became current, as a client could know it.
type grant struct {
	op         int
	at         int64 // when it became known: the return of the answer, or a timeout_abort's call
	producerID int64
	epoch      int16
	verb       string // how op made it current, for reasons
	// kind and req are the request that made it current (for a timeout
	// abort, the session it moved on from), so that a retry of it is
	// recognised. req keeps only what model.RetriesGrant compares, as a
	// long history has a grant for every few operations.
	kind model.Kind
	req  grantRequest
	proc string // the process it was handed to
}

// grantRequest is what model.RetriesGrant reads of the request that made a
// grant.
type grantRequest struct {
	transactionalID string
	producerID      int64
	epoch           int16
	commit          bool
}

func grantRequestOf(r model.Request) grantRequest {
	return grantRequest{r.TransactionalID, r.ProducerID, r.Epoch, r.Commit}
}

func (g grantRequest) request() model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch, r.Commit = g.transactionalID, g.producerID, g.epoch, g.commit
	return r
}

// grantOf is the session op hands out, if any: a successful
// init_producer_id of a transactional.id (KIP-98), a successful end_txn that
// names the next session (KIP-890), or the coordinator's timeout abort,
// which bumps the epoch.
func grantOf(op *histories.Op) (transactionalID string, g grant, ok bool) {
	resp := &op.Result.Resp
	g = grant{op: op.ID, at: op.Return, producerID: resp.ProducerID, epoch: resp.Epoch, verb: "returned", kind: op.Kind, req: grantRequestOf(op.Req), proc: op.Process()}
	switch {
	case op.Kind == model.TimeoutAbort && resp.TransactionalID != "":
		// The session it moved on from, which a retry names.
		g.req = grantRequest{transactionalID: resp.TransactionalID, producerID: resp.ProducerID, epoch: resp.Epoch - 1}
		g.at, g.verb = op.Call, "bumped to"
		return resp.TransactionalID, g, true
	case op.Kind == model.InitProducerID && op.Req.TransactionalID != "" && op.Result.Succeeded() && !op.Req.KeepPreparedTxn:
		// An init that keeps a prepared transaction (KIP-939) hands out
		// a client identity but leaves the transaction's own alive, and
		// Kafka still takes its requests until the transaction ends
		// (TransactionCoordinatorTest#shouldValidateEpochsCorrectlyWithDualIdentity,
		// trunk); so it is no grant here, and the model judges it.
		return op.Req.TransactionalID, g, true
	case op.Kind == model.EndTxn && op.Req.TransactionalID != "" && op.Result.Succeeded() && resp.ProducerID != model.NoProducerID:
		return op.Req.TransactionalID, g, true
	}
	return "", grant{}, false
}

// sessionOf is the session a successful request of a transactional.id
// carries. An init_producer_id carries one when the producer bumps its own
// epoch (KIP-360).
func sessionOf(op histories.Op) (sessionKey, bool) {
	key := sessionKey{op.Req.TransactionalID, op.Req.ProducerID, op.Req.Epoch}
	if key.transactionalID == "" || key.producerID == model.NoProducerID || !op.Result.Succeeded() {
		return key, false
	}
	switch op.Kind {
	case model.AddPartitions, model.Produce, model.AddOffsets, model.TxnOffsetCommit, model.EndTxn, model.InitProducerID:
		return key, true
	}
	return key, false
}

// oneLiveProducerFold checks one-live-producer: once a transactional.id's
// newer session was handed out, no request of an older session sent after
// that succeeds (compare the request's call to the grant's return), and no
// record of an older epoch lands after one of a newer epoch.
//
// Unbounded, it holds every session handed out (a grant), because a
// zombie of any older session may still write; and for each produced
// record its offset, epoch, operation and call (32 bytes), because the
// records of one producer in one partition are judged in the order of
// their offsets, which a later answer may fill in below.
//
// Bounded (bound), it keeps per transactional.id the last
// liveGrantsKept sessions handed out, and per producer id and partition
// the liveRecordsKept records of the highest offsets. It folds the lower
// records, in offset order, into the newest record below them, as the
// walk at the end would. An operation that needs what it dropped (a
// successful request of a session a dropped grant may supersede, a grant
// that may repeat a dropped session, a record at or below the folded
// offsets) is one it cannot judge: it says so (forgotten).
type oneLiveProducerFold struct {
	seq int
	// pending are the grants whose moment is not yet before the call of
	// the operations to come, in the order they become known.
	pending grantHeap
	byID    map[string]*grantIndex
	seen    map[string]map[[2]int64]bool // each transactional.id's sessions handed out
	written map[producerInPartition][]writtenRecord
	stale   []foldedViolation
	judged  map[int]bool // the operations already found stale
	told    int          // stale that early has returned
	// bounded: only the newest grants and records are kept, in kept and
	// writers rather than byID, seen and written.
	bounded bool
	kept    map[string]*keptGrants
	writers map[producerInPartition]*keptRecords
	// regressed are the regressions of the records folded so far.
	regressed []foldedViolation
	forgot    string
}

// liveGrantsKept and liveRecordsKept are what a bounded one-live-producer
// keeps: the sessions handed out per transactional.id, and the records
// per producer id and partition. Variables, so that a test can make them
// small and have the saved histories forget.
var (
	liveGrantsKept  = 8
	liveRecordsKept = 256
)

// keptGrants is what a bounded one-live-producer keeps of one
// transactional.id's grants: the last liveGrantsKept sessions in the
// order they became known, and of those it dropped what a walk of every
// grant would still ask of them.
type keptGrants struct {
	grants []grant
	// pids are the producer ids of the grants kept.
	pids map[int64]*keptPID
	// maxPID is the highest producer id handed out; retired: every grant
	// of some producer id was dropped.
	maxPID  int64
	retired bool
	// dropped: some grant was dropped. The last one dropped was of
	// lastPID and became known at lastAt; the last one dropped of another
	// producer id became known at otherAt (hasOther).
	dropped         bool
	lastPID         int64
	lastAt, otherAt int64
	hasOther        bool
}

// keptPID is what a bounded one-live-producer keeps of a producer id
// whose grants it keeps some of.
type keptPID struct {
	firstAt int64 // when its first grant became known
	kept    int   // its grants kept
	// droppedEpoch is the highest epoch of its grants dropped, when
	// hasDropped.
	droppedEpoch int16
	hasDropped   bool
}

// keptRecords is what a bounded one-live-producer keeps of one producer
// id's records in one partition: the liveRecordsKept of the highest
// offsets, in offset order, ties in the order they came; and of the
// records folded below them, the newest (the first of the highest epoch)
// and the highest offset.
type keptRecords struct {
	records []writtenRecord
	folded  bool
	newest  writtenRecord
	top     int64
}

type producerInPartition struct {
	partition  model.Partition
	producerID int64
}

// writtenRecord is a produced record as staleRecords needs it.
type writtenRecord struct {
	offset int64
	call   int64
	op     int
	epoch  int16
}

func newOneLiveProducerFold(histories.History) invariantFold {
	return &oneLiveProducerFold{byID: map[string]*grantIndex{}, seen: map[string]map[[2]int64]bool{},
		written: map[producerInPartition][]writtenRecord{}, judged: map[int]bool{}}
}

// bound makes the fold keep only the newest grants and records. Called
// before the first operation.
func (f *oneLiveProducerFold) bound() {
	f.bounded, f.byID, f.seen, f.written = true, nil, nil, nil
	f.kept, f.writers = map[string]*keptGrants{}, map[producerInPartition]*keptRecords{}
}

// forgotten names the first operation that needed what the bounded fold
// dropped; "" when none did.
func (f *oneLiveProducerFold) forgotten() string { return f.forgot }

// forget records that op needed what the bounded fold dropped, when it is
// the first.
func (f *oneLiveProducerFold) forget(format string, args ...any) {
	if f.forgot == "" {
		f.forgot = fmt.Sprintf(format, args...)
	}
}

func (f *oneLiveProducerFold) add(op *histories.Op) {
	f.knownBefore(op.Call)
	if key, ok := sessionOf(*op); ok && f.bounded {
		if g, stale := f.supersededKept(op, key); stale {
			f.staleRequest(op, key, g)
		}
	} else if ok && f.byID[key.transactionalID] != nil {
		if g, stale := f.byID[key.transactionalID].supersededBefore(*op, key); stale {
			f.staleRequest(op, key, g)
		}
	}
	if id, g, ok := grantOf(op); ok {
		heap.Push(&f.pending, pendingGrant{g, id, f.seq})
	}
	f.seq++
	if op.Kind == model.Produce && op.Result.Succeeded() && op.Result.Resp.BaseOffset >= 0 {
		w := producerInPartition{op.Req.Partition, op.Req.ProducerID}
		for i := range op.Req.Records {
			r := writtenRecord{offset: op.Result.Resp.BaseOffset + int64(i), call: op.Call, op: op.ID, epoch: op.Req.Epoch}
			if f.bounded {
				f.keepRecord(w, r)
			} else {
				f.written[w] = append(f.written[w], r)
			}
		}
	}
}

// staleRequest reports op, a successful request of session key, accepted
// after g superseded it.
func (f *oneLiveProducerFold) staleRequest(op *histories.Op, key sessionKey, g grant) {
	f.judged[op.ID] = true
	f.stale = append(f.stale, foldedViolation{call: op.Call, Violation: Violation{Op: op.ID, Related: []int{g.op},
		Reason: fmt.Sprintf("%s accepted after op %d %s %s for %s",
			sessionName(key.producerID, key.epoch, g.producerID), g.op, g.verb,
			sessionName(g.producerID, g.epoch, key.producerID), key.transactionalID)}})
}

// supersededKept is grantIndex.supersededBefore over the grants kept. A
// walk of every grant finds the first that supersedes key, in the order
// they became known, and the dropped ones come first: so the grants kept
// give its answer when no dropped grant supersedes key. One of key's
// producer id with a higher epoch, or one of another producer id known
// after key's first grant, may; then op needs what was dropped.
func (f *oneLiveProducerFold) supersededKept(op *histories.Op, key sessionKey) (grant, bool) {
	k := f.kept[key.transactionalID]
	if k == nil {
		return grant{}, false
	}
	mine := k.pids[key.producerID]
	if mine == nil {
		// Never handed out, nothing supersedes it; unless every grant of
		// it was dropped.
		if k.retired && key.producerID <= k.maxPID {
			f.forget("op %d: a successful request of producer id %d epoch %d of %s, whose grants may have been dropped (the last %d sessions are kept)",
				op.ID, key.producerID, key.epoch, key.transactionalID, liveGrantsKept)
		}
		return grant{}, false
	}
	if mine.hasDropped && mine.droppedEpoch > key.epoch || k.droppedAfter(key.producerID, mine.firstAt) {
		f.forget("op %d: a successful request of %s of %s, which a dropped grant supersedes (the last %d sessions are kept)",
			op.ID, sessionName(key.producerID, key.epoch, -1), key.transactionalID, liveGrantsKept)
		return grant{}, false
	}
	for _, g := range k.grants {
		newer := g.epoch > key.epoch
		if g.producerID != key.producerID {
			newer = mine.firstAt < g.at
		}
		if newer && !retriesBump(*op, g) {
			return g, true
		}
	}
	return grant{}, false
}

// droppedAfter reports whether a grant of a producer id other than pid
// that became known after at was dropped. The dropped grants became known
// in order, so the last one dropped became known last, and the last one
// of another producer id than its own last among the rest.
func (k *keptGrants) droppedAfter(pid int64, at int64) bool {
	switch {
	case !k.dropped:
		return false
	case pid != k.lastPID:
		return k.lastAt > at
	}
	return k.hasOther && k.otherAt > at
}

// keepGrant adds g, a grant of id that became known after every grant
// kept, unless its session was handed out already; and drops the oldest
// grant kept beyond liveGrantsKept.
func (f *oneLiveProducerFold) keepGrant(id string, g grant) {
	k := f.kept[id]
	if k == nil {
		k = &keptGrants{pids: map[int64]*keptPID{}, maxPID: g.producerID}
		f.kept[id] = k
	}
	for _, kg := range k.grants {
		if kg.producerID == g.producerID && kg.epoch == g.epoch {
			return // handed out already
		}
	}
	mine := k.pids[g.producerID]
	switch {
	case mine == nil && k.retired && g.producerID <= k.maxPID:
		f.forget("op %d: %s handed out producer id %d epoch %d, whose earlier grants may have been dropped (the last %d sessions are kept)",
			g.op, id, g.producerID, g.epoch, liveGrantsKept)
	case mine != nil && mine.hasDropped && g.epoch <= mine.droppedEpoch:
		f.forget("op %d: %s handed out producer id %d epoch %d, at or below a session dropped (the last %d sessions are kept)",
			g.op, id, g.producerID, g.epoch, liveGrantsKept)
	}
	if mine == nil {
		mine = &keptPID{firstAt: g.at}
		k.pids[g.producerID] = mine
	}
	mine.kept++
	k.maxPID = max(k.maxPID, g.producerID)
	k.grants = append(k.grants, g)
	if len(k.grants) <= liveGrantsKept {
		return
	}
	old := k.grants[0]
	k.grants = append(k.grants[:0], k.grants[1:]...)
	if k.dropped && old.producerID != k.lastPID {
		k.otherAt, k.hasOther = k.lastAt, true
	}
	k.dropped, k.lastPID, k.lastAt = true, old.producerID, old.at
	was := k.pids[old.producerID]
	if was.kept--; was.kept == 0 {
		delete(k.pids, old.producerID)
		k.retired = true
		return
	}
	if !was.hasDropped || old.epoch > was.droppedEpoch {
		was.droppedEpoch, was.hasDropped = old.epoch, true
	}
}

// keepRecord adds r, a record of w, among the records kept in offset
// order, and folds the lowest beyond liveRecordsKept into the newest
// below, reporting its regression as epochRegressions would. A record at
// or below an offset folded would have been walked among them.
func (f *oneLiveProducerFold) keepRecord(w producerInPartition, r writtenRecord) {
	k := f.writers[w]
	if k == nil {
		k = &keptRecords{}
		f.writers[w] = k
	}
	if k.folded && r.offset <= k.top {
		f.forget("op %d: producer id %d's record at %s offset %d lands at or below offset %d, whose records were folded (the last %d are kept)",
			r.op, w.producerID, w.partition, r.offset, k.top, liveRecordsKept)
	}
	at := len(k.records)
	for at > 0 && k.records[at-1].offset > r.offset {
		at--
	}
	k.records = slices.Insert(k.records, at, r)
	if len(k.records) <= liveRecordsKept {
		return
	}
	s := k.records[0]
	k.records = k.records[1:]
	k.top = s.offset
	switch {
	case !k.folded || s.epoch > k.newest.epoch:
		k.folded, k.newest = true, s
	case s.epoch < k.newest.epoch && !f.judged[s.op]:
		f.judged[s.op] = true
		f.regressed = append(f.regressed, regression(w, s, k.newest))
	}
}

// knownBefore adds to the indexes the grants that became known before the
// instant call: every one whose operation was called by then has come.
// Each session counts once, at the first grant of it (an answer that names
// a session already handed out, a retry's or an empty abort's under
// KIP-890, makes nothing newer, and what is a retry is judged against the
// request that first made it).
func (f *oneLiveProducerFold) knownBefore(call int64) {
	for f.pending.Len() > 0 && f.pending[0].at < call {
		p := heap.Pop(&f.pending).(pendingGrant)
		if f.bounded {
			f.keepGrant(p.transactionalID, p.grant)
			continue
		}
		seen := f.seen[p.transactionalID]
		if seen == nil {
			seen = map[[2]int64]bool{}
			f.seen[p.transactionalID] = seen
			f.byID[p.transactionalID] = newGrantIndex(nil)
		}
		session := [2]int64{p.producerID, int64(p.epoch)}
		if !seen[session] {
			seen[session] = true
			f.byID[p.transactionalID].add(p.grant)
		}
	}
}

// early returns the requests found accepted after a newer session was
// handed out since its last call: each is final when found. A record of
// an older epoch found after one of a newer epoch is known only at the
// end, because a later answer may fill in the offsets below it.
func (f *oneLiveProducerFold) early() []foldedViolation {
	found := f.stale[f.told:]
	f.told = len(f.stale)
	return found
}

func (f *oneLiveProducerFold) verdict() Verdict {
	violations := f.stale
	if f.bounded {
		// Each operation's records are one writer's, so its violations
		// are ordered alike whichever walk found them.
		violations = append(slices.Clip(violations), f.regressed...)
		for _, w := range sortedWriters(f.writers) {
			k := f.writers[w]
			var below *writtenRecord
			if k.folded {
				below = &k.newest
			}
			for _, v := range epochRegressionsAbove(w, k.records, below) {
				if !f.judged[v.Op] {
					f.judged[v.Op] = true
					violations = append(violations, v)
				}
			}
		}
		return foldedVerdict(OneLiveProducer, violations)
	}
	for _, w := range sortedWriters(f.written) {
		for _, v := range epochRegressions(w, f.written[w]) {
			if !f.judged[v.Op] {
				f.judged[v.Op] = true
				violations = append(violations, v)
			}
		}
	}
	return foldedVerdict(OneLiveProducer, violations)
}

func sortedWriters[V any](written map[producerInPartition]V) []producerInPartition {
	ws := make([]producerInPartition, 0, len(written))
	for w := range written {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b producerInPartition) int {
		if c := cmp.Compare(a.partition, b.partition); c != 0 {
			return c
		}
		return cmp.Compare(a.producerID, b.producerID)
	})
	return ws
}

// pendingGrant is a grant of a transactional.id waiting for its moment.
type pendingGrant struct {
	grant
	transactionalID string
	seq             int // its operation's place in the stream
}

// grantHeap orders grants by the moment they became known, ties in the
// order of their operations.
type grantHeap []pendingGrant

func (h grantHeap) Len() int { return len(h) }
func (h grantHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h grantHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *grantHeap) Push(x any)   { *h = append(*h, x.(pendingGrant)) }
func (h *grantHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}

// grantIndex finds, among one transactional.id's grants in the order they
// became known, the first that supersedes a session, without walking them
// all for every request (a long history has a grant for every few).
type grantIndex struct {
	grants []grant
	// byPID lists each producer id's grants (their places in grants) with
	// the highest epoch handed out to it so far, which only grows, so the
	// first grant of a newer epoch is found by binary search.
	byPID map[int64][]pidGrant
	// otherPIDFrom[i] is the first place after i whose producer id is not
	// that of grants[i].
	otherPIDFrom []int
}

type pidGrant struct {
	at       int // place in grants
	maxEpoch int16
}

func newGrantIndex(gs []grant) *grantIndex {
	x := &grantIndex{byPID: map[int64][]pidGrant{}}
	for _, g := range gs {
		x.add(g)
	}
	return x
}

// add appends g, which became known after every grant the index holds.
// The last run of one producer id has no other producer id after it yet:
// its otherPIDFrom is the index's length, which no walk passes.
func (x *grantIndex) add(g grant) {
	i := len(x.grants)
	if i > 0 && x.grants[i-1].producerID != g.producerID {
		for j := i - 1; j >= 0 && x.grants[j].producerID == x.grants[i-1].producerID; j-- {
			x.otherPIDFrom[j] = i
		}
	}
	x.grants, x.otherPIDFrom = append(x.grants, g), append(x.otherPIDFrom, maxInt)
	list := x.byPID[g.producerID]
	top := g.epoch
	if len(list) > 0 {
		top = max(top, list[len(list)-1].maxEpoch)
	}
	x.byPID[g.producerID] = append(list, pidGrant{i, top})
}

const maxInt = int(^uint(0) >> 1)

// supersededBefore is the first grant that superseded key before op was
// called and that op does not merely retry, as a walk of the grants in
// order would find it.
func (x *grantIndex) supersededBefore(op histories.Op, key sessionKey) (grant, bool) {
	i := x.firstSuperseding(key)
	for ; i < len(x.grants) && x.grants[i].at < op.Call; i++ {
		g := x.grants[i]
		if x.supersedes(g, key) && !retriesBump(op, g) {
			return g, true
		}
	}
	return grant{}, false
}

// supersedes reports whether g hands out a session newer than key: a
// higher epoch of the same producer id, or another producer id granted
// after key's first grant (the epoch ran out, KIP-360).
func (x *grantIndex) supersedes(g grant, key sessionKey) bool {
	if g.producerID == key.producerID {
		return g.epoch > key.epoch
	}
	mine := x.byPID[key.producerID]
	return len(mine) > 0 && x.grants[mine[0].at].at < g.at
}

// firstSuperseding is the place of the first grant that supersedes key: a
// higher epoch of its producer id, or another producer id handed out after
// one of key's (len(grants) when none does).
func (x *grantIndex) firstSuperseding(key sessionKey) int {
	first := len(x.grants)
	mine := x.byPID[key.producerID]
	if j := sort.Search(len(mine), func(j int) bool { return mine[j].maxEpoch > key.epoch }); j < len(mine) {
		first = mine[j].at
	}
	if len(mine) > 0 {
		since := x.grants[mine[0].at].at
		j := sort.Search(len(x.grants), func(j int) bool { return x.grants[j].at > since })
		if j < len(x.grants) && x.grants[j].producerID == key.producerID {
			j = x.otherPIDFrom[j]
		}
		first = min(first, j)
	}
	return first
}

// retriesBump reports whether op is a retry of the request that made g
// (model.RetriesGrant), answered the same session; or a request of the
// process g was handed to, naming the epoch before, answered g's session
// again: Kafka 4 answers a retry-shaped request at the epoch it moved on
// from with the current session (lastProducerEpoch), which hands out
// nothing new, whatever moved it on (a timeout abort the history may not
// show). Another process answered that session is a second live producer.
func retriesBump(op histories.Op, g grant) bool {
	resp := op.Result.Resp
	again := resp.ProducerID == g.producerID && resp.Epoch == g.epoch
	return again && (model.RetriesGrant(op.Kind, op.Req, g.kind, g.req.request()) || (op.Process() == g.proc && g.proc != ""))
}

// sessionName is "epoch E", or "producer id P epoch E" when the producer id
// differs from the one it is compared with.
func sessionName(producerID int64, epoch int16, other int64) string {
	if producerID == other {
		return fmt.Sprintf("epoch %d", epoch)
	}
	return fmt.Sprintf("producer id %d epoch %d", producerID, epoch)
}

// epochRegressions walks one producer's records in one partition by offset
// and reports each record whose epoch is older than one below it.
func epochRegressions(w producerInPartition, written []writtenRecord) []foldedViolation {
	return epochRegressionsAbove(w, written, nil)
}

// epochRegressionsAbove is epochRegressions of records whose offsets are
// above those of records already walked, whose newest is below (nil when
// none were).
func epochRegressionsAbove(w producerInPartition, written []writtenRecord, below *writtenRecord) []foldedViolation {
	slices.SortStableFunc(written, func(a, b writtenRecord) int { return cmp.Compare(a.offset, b.offset) })
	var violations []foldedViolation
	newest := below
	for i := range written {
		s := &written[i]
		if newest == nil || s.epoch > newest.epoch {
			newest = s
			continue
		}
		if s.epoch < newest.epoch {
			violations = append(violations, regression(w, *s, *newest))
		}
	}
	return violations
}

// regression reports record s, which lands after newest, of a newer epoch.
func regression(w producerInPartition, s, newest writtenRecord) foldedViolation {
	return foldedViolation{call: s.call, Violation: Violation{Op: s.op, Related: []int{newest.op},
		Reason: fmt.Sprintf("producer id %d epoch %d record at %s offset %d lands after op %d wrote epoch %d at offset %d",
			w.producerID, s.epoch, w.partition, s.offset, newest.op, newest.epoch, newest.offset)}}
}

// firstPerOp keeps the first violation reported for each operation.
func firstPerOp(violations []Violation) []Violation {
	seen := map[int]bool{}
	var kept []Violation
	for _, v := range violations {
		if !seen[v.Op] {
			seen[v.Op] = true
			kept = append(kept, v)
		}
	}
	return kept
}
