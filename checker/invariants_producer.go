package checker

import (
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
	// recognised. req points into the history, as a long one has a grant
	// for every few operations.
	kind model.Kind
	req  *model.Request
	proc string // the process it was handed to
}

// grantOf is the session op hands out, if any: a successful
// init_producer_id of a transactional.id (KIP-98), a successful end_txn that
// names the next session (KIP-890), or the coordinator's timeout abort,
// which bumps the epoch.
func grantOf(op *histories.Op) (transactionalID string, g grant, ok bool) {
	resp := &op.Result.Resp
	g = grant{op: op.ID, at: op.Return, producerID: resp.ProducerID, epoch: resp.Epoch, verb: "returned", kind: op.Kind, req: &op.Req, proc: op.Process()}
	switch {
	case op.Kind == model.TimeoutAbort && resp.TransactionalID != "":
		// The session it moved on from, which a retry names.
		moved := model.NewRequest()
		moved.TransactionalID, moved.ProducerID, moved.Epoch = resp.TransactionalID, resp.ProducerID, resp.Epoch-1
		g.req = &moved
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

// grantsByID lists each transactional.id's grants in the order they became
// known, each session once: an answer that names a session already handed
// out (a retry's, or an empty abort's under KIP-890) makes nothing newer,
// and what is a retry is judged against the request that first made it.
func grantsByID(h histories.History) map[string][]grant {
	grants := map[string][]grant{}
	for i := range h.Ops {
		if id, g, ok := grantOf(&h.Ops[i]); ok {
			grants[id] = append(grants[id], g)
		}
	}
	for id, gs := range grants {
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].at < gs[j].at })
		seen := map[[2]int64]bool{}
		grants[id] = slices.DeleteFunc(gs, func(g grant) bool {
			session := [2]int64{g.producerID, int64(g.epoch)}
			again := seen[session]
			seen[session] = true
			return again
		})
	}
	return grants
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

// checkOneLiveProducer: once a transactional.id's newer session was handed
// out, no request of an older session sent after that succeeds (compare the
// request's call to the grant's return), and no record of an older epoch
// lands after one of a newer epoch.
func checkOneLiveProducer(a *analysis) Verdict {
	violations := append(staleSessions(a.h, a.progress), staleRecords(a)...)
	return a.verdict(OneLiveProducer, firstPerOp(violations))
}

// staleSessions finds requests that succeeded for a session already superseded.
func staleSessions(h histories.History, progress *passProgress) []Violation {
	grants := grantsByID(h)
	indexes := map[string]*grantIndex{}
	for id, gs := range grants {
		indexes[id] = newGrantIndex(gs)
	}
	var violations []Violation
	for _, op := range counted(progress, slices.All(h.Ops)) {
		key, ok := sessionOf(op)
		if !ok || indexes[key.transactionalID] == nil {
			continue
		}
		if g, stale := indexes[key.transactionalID].supersededBefore(op, key); stale {
			violations = append(violations, Violation{Op: op.ID, Related: []int{g.op},
				Reason: fmt.Sprintf("%s accepted after op %d %s %s for %s",
					sessionName(key.producerID, key.epoch, g.producerID), g.op, g.verb,
					sessionName(g.producerID, g.epoch, key.producerID), key.transactionalID)})
		}
	}
	return violations
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
	x := &grantIndex{grants: gs, byPID: map[int64][]pidGrant{}, otherPIDFrom: make([]int, len(gs))}
	for i, g := range gs {
		list := x.byPID[g.producerID]
		top := g.epoch
		if len(list) > 0 {
			top = max(top, list[len(list)-1].maxEpoch)
		}
		x.byPID[g.producerID] = append(list, pidGrant{i, top})
	}
	for i := len(gs) - 1; i >= 0; i-- {
		switch {
		case i == len(gs)-1:
			x.otherPIDFrom[i] = len(gs)
		case gs[i+1].producerID != gs[i].producerID:
			x.otherPIDFrom[i] = i + 1
		default:
			x.otherPIDFrom[i] = x.otherPIDFrom[i+1]
		}
	}
	return x
}

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
	return again && (model.RetriesGrant(op.Kind, op.Req, g.kind, *g.req) || (op.Process() == g.proc && g.proc != ""))
}

// sessionName is "epoch E", or "producer id P epoch E" when the producer id
// differs from the one it is compared with.
func sessionName(producerID int64, epoch int16, other int64) string {
	if producerID == other {
		return fmt.Sprintf("epoch %d", epoch)
	}
	return fmt.Sprintf("producer id %d epoch %d", producerID, epoch)
}

// staleRecords finds produced records of a producer that land, in one
// partition, after a record the same producer wrote at a newer epoch.
func staleRecords(a *analysis) []Violation {
	type writer struct {
		partition  model.Partition
		producerID int64
	}
	byWriter := map[writer][]sighting{}
	for _, op := range counted(a.progress, slices.All(a.h.Ops)) {
		for _, s := range producedRecords(op) {
			w := writer{s.partition, s.producerID}
			byWriter[w] = append(byWriter[w], s)
		}
	}
	var violations []Violation
	for _, written := range byWriter {
		violations = append(violations, a.epochRegressions(written)...)
	}
	return violations
}

// epochRegressions walks one producer's records in one partition by offset
// and reports each record whose epoch is older than one below it.
func (a *analysis) epochRegressions(written []sighting) []Violation {
	sort.SliceStable(written, func(i, j int) bool { return written[i].offset < written[j].offset })
	var violations []Violation
	var newest *sighting
	for i := range written {
		s := &written[i]
		epoch := a.byID.get(s.op).Req.Epoch
		if newest == nil || epoch > a.byID.get(newest.op).Req.Epoch {
			newest = s
			continue
		}
		if newerEpoch := a.byID.get(newest.op).Req.Epoch; epoch < newerEpoch {
			violations = append(violations, Violation{Op: s.op, Related: []int{newest.op},
				Reason: fmt.Sprintf("producer id %d epoch %d record at %s offset %d lands after op %d wrote epoch %d at offset %d",
					s.producerID, epoch, s.partition, s.offset, newest.op, newerEpoch, newest.offset)})
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
