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
// It holds every session handed out (a grant), because a zombie of any
// older session may still write; and for each produced record its offset,
// epoch, operation and call (32 bytes), because the records of one
// producer in one partition are judged in the order of their offsets,
// which a later answer may fill in below.
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
	told    int          // the stale ones early returned
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

func (f *oneLiveProducerFold) add(op *histories.Op) {
	f.knownBefore(op.Call)
	if key, ok := sessionOf(*op); ok && f.byID[key.transactionalID] != nil {
		if g, stale := f.byID[key.transactionalID].supersededBefore(*op, key); stale {
			f.judged[op.ID] = true
			f.stale = append(f.stale, foldedViolation{call: op.Call, Violation: Violation{Op: op.ID, Related: []int{g.op},
				Reason: fmt.Sprintf("%s accepted after op %d %s %s for %s",
					sessionName(key.producerID, key.epoch, g.producerID), g.op, g.verb,
					sessionName(g.producerID, g.epoch, key.producerID), key.transactionalID)}})
		}
	}
	if id, g, ok := grantOf(op); ok {
		heap.Push(&f.pending, pendingGrant{g, id, f.seq})
	}
	f.seq++
	if op.Kind == model.Produce && op.Result.Succeeded() && op.Result.Resp.BaseOffset >= 0 {
		w := producerInPartition{op.Req.Partition, op.Req.ProducerID}
		for i := range op.Req.Records {
			f.written[w] = append(f.written[w], writtenRecord{offset: op.Result.Resp.BaseOffset + int64(i), call: op.Call, op: op.ID, epoch: op.Req.Epoch})
		}
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

// early returns the stale requests found since its last call. Each is
// final, because the grants it is judged by became known before its call,
// and every operation to come is called at or after it.
func (f *oneLiveProducerFold) early() []foldedViolation {
	found := f.stale[f.told:]
	f.told = len(f.stale)
	return found
}

func (f *oneLiveProducerFold) verdict() Verdict {
	violations := f.stale
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

func sortedWriters(written map[producerInPartition][]writtenRecord) []producerInPartition {
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
	slices.SortStableFunc(written, func(a, b writtenRecord) int { return cmp.Compare(a.offset, b.offset) })
	var violations []foldedViolation
	var newest *writtenRecord
	for i := range written {
		s := &written[i]
		if newest == nil || s.epoch > newest.epoch {
			newest = s
			continue
		}
		if s.epoch < newest.epoch {
			violations = append(violations, foldedViolation{call: s.call, Violation: Violation{Op: s.op, Related: []int{newest.op},
				Reason: fmt.Sprintf("producer id %d epoch %d record at %s offset %d lands after op %d wrote epoch %d at offset %d",
					w.producerID, s.epoch, w.partition, s.offset, newest.op, newest.epoch, newest.offset)}})
		}
	}
	return violations
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
