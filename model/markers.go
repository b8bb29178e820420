package model

import (
	"cmp"
	"maps"
	"slices"
)

// The marker window. Kafka answers EndTxn once PrepareCommit or
// PrepareAbort is in the transaction log, and only then sends the markers:
// one to each partition of the transaction, and one to each group's
// __consumer_offsets partition (TransactionCoordinator.endTransaction,
// sendTxnMarkersCallback; TransactionMarkerChannelManager). Until a
// partition's marker lands, its last stable offset stays at the
// transaction's first offset and other producers' records are written
// before the marker. Until a group's marker lands, the transaction's
// offsets are pending: OffsetFetch answers the old offset, or
// UNSTABLE_OFFSET_COMMIT with require_stable. Each lands on its own.
//
// The model's own answer (Apply) writes them at once, a timing Kafka may
// take, unless Options.AsyncMarkers asks for the window: then they land at
// LandMarkers, a tick or a restart, or just before the next request of
// their transactional id. Judging a broker (Check), the model keeps them
// in flight, past ticks and restarts too, and lands them only when an
// answer needs them: CheckContext tries again with the markers the request
// touches landed. A marker may land at any moment, so taking it as late as
// the answers allow loses nothing, but for one case: an answer that was
// lost leaves its effect placed before the markers still in flight.
//
// Kafka's tests: TransactionMarkerChannelManagerTest, UnifiedLogTest#
// testFetchUpToLastStableOffset, TransactionCoordinatorTest's
// PrepareCommit and PrepareAbort cases (testdata/kafka/).

// MarkersInFlight reports whether any transaction's markers are in
// flight in s.
func MarkersInFlight(s State) bool {
	for _, t := range s.txns {
		if t.markersInFlight() {
			return true
		}
	}
	return false
}

// markersInFlight reports whether t's ended transaction still has a
// marker to write or a group's offsets to settle.
func (t txnMeta) markersInFlight() bool { return len(t.unwritten) > 0 || len(t.unsettled) > 0 }

// lazyMarkers reports whether an ended transaction's markers stay in
// flight rather than land at once.
func (st *step) lazyMarkers() bool {
	o := st.s.opts
	return o.AsyncMarkers || ((st.got != nil || st.judging) && (o.MarkerWindow || o.WallClock))
}

// waitForMarkers is what a request of t's transactional id meets while
// markers are in flight: CONCURRENT_TRANSACTIONS, if the broker said so,
// or else the markers, which the coordinator completes before it takes
// the request on (TransactionCoordinator: a pending transition or
// PrepareCommit/PrepareAbort answers CONCURRENT_TRANSACTIONS).
func (st *step) waitForMarkers(id string, t txnMeta) (txnMeta, *outcome) {
	if st.stillCompleting(t) {
		out := refuse("markers-pending", ConcurrentTransactions, "the last transaction of %s may still be writing its markers (KIP-98)", id)
		return t, &out
	}
	if t.markersInFlight() {
		t = st.land(t, t.unwritten, t.unsettled)
		st.s.setTxn(id, t)
	}
	return t, nil
}

// land writes t's markers to the partitions given and settles the groups
// given, and returns t without them in flight.
func (st *step) land(t txnMeta, parts []Partition, groups []string) txnMeta {
	commit := t.phase == CompleteCommit
	for _, p := range parts {
		st.writeMarker(p, t.markerPID, t.markerEpoch, commit)
	}
	pending := maps.Clone(t.pending)
	for _, name := range groups {
		if len(pending[name]) > 0 {
			st.settle(name, pending[name], commit)
		}
		delete(pending, name)
	}
	t.unwritten = without(t.unwritten, parts)
	t.unsettled = without(t.unsettled, groups)
	t.pending = pending
	if len(t.unsettled) == 0 {
		t.pending = nil
	}
	if !t.markersInFlight() {
		t.completedAt, t.pendingShownAt = 0, 0
	}
	return t
}

// lastCompletion is the completedAt of the transaction that ended last
// among those with markers in flight, 0 when none has.
func (s State) lastCompletion() int64 {
	var last int64
	for _, t := range s.txns {
		last = max(last, t.completedAt)
	}
	return last
}

// byCompletion sorts transactional ids by when their transactions ended.
func (s State) byCompletion(ids []string) []string {
	slices.SortStableFunc(ids, func(a, b string) int { return cmp.Compare(s.txns[a].completedAt, s.txns[b].completedAt) })
	return ids
}

// settle makes a group's pending offsets real on a COMMIT, or drops them
// on an ABORT (KIP-447). A committed offset whose record was written after
// the pending one stays: Kafka keeps the most recent record, not the last
// marker (4.x OffsetMetadataManager.replayEndTransactionMarker,
// "offsetAndMetadata.recordOffset > existingOffsetAndMetadata.recordOffset";
// 3.9 GroupMetadata.completePendingTxnOffsetCommit, olderThan; tests:
// OffsetMetadataManagerTest#testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset,
// core GroupMetadataManagerTest#testLoadWithCommittedAndAbortedAndPendingTransactionalOffsetCommits).
func (st *step) settle(name string, offsets map[Partition]pendingOffset, commit bool) {
	g := st.s.groups[name]
	if commit {
		g = g.clonedCommitted()
		for p, o := range offsets {
			if at, ok := g.committedAt[p]; ok && at > o.at {
				continue
			}
			g.committed[p], g.committedAt[p], g.committedTime[p] = o.offset, o.at, o.time
			g = g.withMetadata(map[Partition]int64{p: o.offset}, map[Partition]string{p: o.metadata})
		}
	}
	st.s.setGroup(name, g.settling(offsets))
}

func without[T comparable](from, drop []T) []T {
	out := slices.DeleteFunc(slices.Clone(from), func(x T) bool { return slices.Contains(drop, x) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// landingOrders are the ways the markers in flight that op touches may have
// landed before it: all of op's own transactional id's, and any of the
// other transactions' at op's partition and group, in any order (the
// order decides which offset a marker takes, and which commit of a group
// is the last). The first lands them all, in the order the transactions
// ended. None when nothing op touches is in flight.
func (s State) landingOrders(op Op) [][]string {
	r := op.Req
	var must, may []string
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		t := s.txns[id]
		switch {
		case !t.markersInFlight():
		case id == r.TransactionalID:
			must = append(must, id)
		case slices.Contains(t.unwritten, r.Partition) || slices.Contains(t.unsettled, r.Group):
			may = append(may, id)
		}
	}
	if len(must)+len(may) == 0 {
		return nil
	}
	orders := [][]string{slices.Concat(must, s.byCompletion(slices.Clone(may)))}
	if len(may) <= maxOrdered {
		for _, chosen := range orderedSubsets(may) {
			if len(must)+len(chosen) > 0 {
				orders = append(orders, slices.Concat(must, chosen))
			}
		}
	}
	return orders
}

// landed are the states of landingOrders, each worked out when first
// asked for: most answers are right without any marker landed, and then
// none of them is needed.
type landed struct {
	s      State
	op     Op
	orders [][]string
	states []*State
}

func (s State) landings(op Op) *landed {
	orders := s.landingOrders(op)
	return &landed{s: s, op: op, orders: orders, states: make([]*State, len(orders))}
}

func (l *landed) len() int { return len(l.orders) }

// at is the state of the i-th order.
func (l *landed) at(i int) State {
	if l.states[i] == nil {
		st := l.s.landedInOrder(l.op, l.orders[i])
		l.states[i] = &st
	}
	return *l.states[i]
}

// maxOrdered bounds the transactions whose landing orders are all tried:
// 4 gives 64 orders at most, tried only when an answer needs a marker.
const maxOrdered = 4

// landedInOrder lands the markers op touches of the transactions named,
// one transaction after another.
func (s State) landedInOrder(op Op, ids []string) State {
	st := newStep(s, op, nil)
	r := op.Req
	for _, id := range ids {
		t := st.s.txns[id]
		parts, groups := t.unwritten, t.unsettled
		if id != r.TransactionalID {
			parts, groups = intersect(parts, r.Partition), intersect(groups, r.Group)
		}
		st.s.setTxn(id, st.land(t, parts, groups))
	}
	return st.s
}

// orderedSubsets is every subset of ids in every order, the empty one
// included.
func orderedSubsets(ids []string) [][]string {
	out := [][]string{nil}
	for i, id := range ids {
		rest := slices.Concat(ids[:i], ids[i+1:])
		for _, tail := range orderedSubsets(rest) {
			out = append(out, slices.Concat([]string{id}, tail))
		}
	}
	return out
}

func intersect[T comparable](set []T, x T) []T {
	if slices.Contains(set, x) {
		return []T{x}
	}
	return nil
}

// landedBefore is s with the markers landed that the model's own answers
// land before op, under Options.AsyncMarkers (landedAhead).
func (s State) landedBefore(op Op) State {
	if !s.opts.AsyncMarkers || !op.Kind.IsRequest() {
		return s
	}
	return s.landedAhead(op)
}

// landedAhead is s with the markers in flight landed that a write needs
// first: all of op's own transactional id's, then, in the order their
// transactions ended, every transaction's at the partition a produce
// writes to and at the group a TxnOffsetCommit writes to. The model's
// own answers take this timing under Options.AsyncMarkers; judging, an
// answer that was lost takes it (markers.go).
func (s State) landedAhead(op Op) State {
	r := op.Req
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		t := s.txns[id]
		switch {
		case !t.markersInFlight():
		case id == r.TransactionalID:
		case op.Kind == Produce && slices.Contains(t.unwritten, r.Partition),
			op.Kind == TxnOffsetCommit && slices.Contains(t.unsettled, r.Group):
			ids = append(ids, id)
		}
	}
	if t, own := s.txns[r.TransactionalID]; own && t.markersInFlight() {
		ids = append([]string{r.TransactionalID}, s.byCompletion(ids)...)
	} else {
		ids = s.byCompletion(ids)
	}
	if len(ids) == 0 {
		return s
	}
	return s.landedInOrder(op, ids)
}

// LandMarkers is s with every marker in flight landed and every group's
// offsets settled: the coordinator's markers step, under
// Options.AsyncMarkers. It is a landing the model knows happened, because
// the broker's own step says so, so it closes every group's settling
// window too (see settling). A tick and a request of the transaction's
// own id land markers when the model chooses, so they leave the window
// open.
func LandMarkers(s State) State {
	st := newStep(s, Op{}, nil)
	st.landAll()
	st.settled()
	return st.s
}

// settled closes every group's settling window: each marker has reached
// its __consumer_offsets partition and been replayed, so no offset of a
// transaction that ended is pending, and a require_stable OffsetFetch is
// answered with no error (4.x OffsetMetadataManager
// .replayEndTransactionMarker, then fetchOffsets;
// 3.9 GroupMetadataManager.handleTxnCompletion, then getOffsets; tests:
// OffsetMetadataManagerTest#testFetchOffsetsWithPendingTransactionalOffsets,
// 3.8 to 4.x; GroupCoordinatorTest#testFetchPendingTxnOffsetsWithCommit,
// 3.9).
func (st *step) settled() {
	for _, name := range slices.Sorted(maps.Keys(st.s.groups)) {
		if g := st.s.groups[name]; len(g.unsettled) > 0 {
			g.unsettled = nil
			st.s.setGroup(name, g)
		}
	}
}

// landOwnAnswer lands every marker in flight where the model's own
// answers (Options.AsyncMarkers) land them on a broker's event: a tick or
// a restart. That is one timing Kafka may take, and the one impl/ takes.
// Judging, the event lands none: they land when an answer needs them
// (CheckContext), on a tick clock as on a wall clock.
func (st *step) landOwnAnswer() {
	if st.s.opts.AsyncMarkers && !st.judging {
		st.landAll()
	}
}

// landAll lands every marker in flight, in the order the transactions
// ended.
func (st *step) landAll() {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(st.s.txns)) {
		if st.s.txns[id].markersInFlight() {
			ids = append(ids, id)
		}
	}
	for _, id := range st.s.byCompletion(ids) {
		t := st.s.txns[id]
		st.s.setTxn(id, st.land(t, t.unwritten, t.unsettled))
	}
}
