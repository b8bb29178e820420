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
	// recognised.
	kind model.Kind
	req  model.Request
}

// grantOf is the session op hands out, if any: a successful
// init_producer_id of a transactional.id (KIP-98), a successful end_txn that
// names the next session (KIP-890), or the coordinator's timeout abort,
// which bumps the epoch.
func grantOf(op histories.Op) (transactionalID string, g grant, ok bool) {
	resp := op.Result.Resp
	g = grant{op: op.ID, at: op.Return, producerID: resp.ProducerID, epoch: resp.Epoch, verb: "returned", kind: op.Kind, req: op.Req}
	switch {
	case op.Kind == model.TimeoutAbort && resp.TransactionalID != "":
		// The session it moved on from, which a retry names.
		g.req = model.NewRequest()
		g.req.TransactionalID, g.req.ProducerID, g.req.Epoch = resp.TransactionalID, resp.ProducerID, resp.Epoch-1
		g.at, g.verb = op.Call, "bumped to"
		return resp.TransactionalID, g, true
	case op.Kind == model.InitProducerID && op.Req.TransactionalID != "" && op.Result.Succeeded():
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
	for _, op := range h.Ops {
		if id, g, ok := grantOf(op); ok {
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

// supersedes reports whether g hands out a session newer than key: a higher
// epoch of the same producer id, or another producer id granted after key's
// (the epoch ran out, KIP-360).
func supersedes(g grant, key sessionKey, grants []grant) bool {
	if g.producerID == key.producerID {
		return g.epoch > key.epoch
	}
	for _, earlier := range grants {
		if earlier.producerID == key.producerID && earlier.at < g.at {
			return true
		}
	}
	return false
}

// checkOneLiveProducer: once a transactional.id's newer session was handed
// out, no request of an older session sent after that succeeds (compare the
// request's call to the grant's return), and no record of an older epoch
// lands after one of a newer epoch.
func checkOneLiveProducer(a *analysis) Verdict {
	violations := append(staleSessions(a.h), staleRecords(a)...)
	return a.verdict(OneLiveProducer, firstPerOp(violations))
}

// staleSessions finds requests that succeeded for a session already superseded.
func staleSessions(h histories.History) []Violation {
	grants := grantsByID(h)
	var violations []Violation
	for _, op := range h.Ops {
		key, ok := sessionOf(op)
		if !ok {
			continue
		}
		for _, g := range grants[key.transactionalID] {
			if g.at < op.Call && supersedes(g, key, grants[key.transactionalID]) && !retriesBump(op, g) {
				violations = append(violations, Violation{Op: op.ID, Related: []int{g.op},
					Reason: fmt.Sprintf("%s accepted after op %d %s %s for %s",
						sessionName(key.producerID, key.epoch, g.producerID), g.op, g.verb,
						sessionName(g.producerID, g.epoch, key.producerID), key.transactionalID)})
				break
			}
		}
	}
	return violations
}

// retriesBump reports whether op is a retry of the request that made g
// (model.RetriesGrant), answered the same session.
func retriesBump(op histories.Op, g grant) bool {
	resp := op.Result.Resp
	return model.RetriesGrant(op.Kind, op.Req, g.kind, g.req) &&
		resp.ProducerID == g.producerID && resp.Epoch == g.epoch
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
	for _, op := range a.h.Ops {
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
		epoch := a.byID[s.op].Req.Epoch
		if newest == nil || epoch > a.byID[newest.op].Req.Epoch {
			newest = s
			continue
		}
		if newerEpoch := a.byID[newest.op].Req.Epoch; epoch < newerEpoch {
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
