package checker

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// offsetsFold checks offsets-monotonic: a group's committed offsets never
// move backward, neither as commits nor as offset_fetch answers, and no
// offset commit of a stale generation (KIP-447), or of a stale member epoch
// in a KIP-848 consumer group, succeeds. A refused commit commits nothing,
// so it is never counted, and a partition a commit's answer refused alone
// (offset metadata too large) is not counted either (model.CommittedOffsets).
//
// A commit is judged once it is known to have committed: a plain one at
// its call, a transactional one when its transaction commits. Every commit
// that returned before its call is known by then, and so is every commit
// that returned before a fetch's call. So the fold holds, for each group
// partition, one entry per committed offset and per offset_fetch answer
// above -1 (they are judged against every earlier one), the open
// transactions' offset commits, and a copy of every join_group, sync_group
// and consumer_group_heartbeat, which the generations are judged by.
//
// A fetch's finding may wait for the end, because two things it depends
// on may come later. A -1 is no regression once the group's offsets may
// have expired, and a tick called by the fetch's return may still come
// (offsetExpiry). A fetch of all partitions reads a partition it left
// out as -1 only when some commit of the history names that partition
// (fetchedPartitions), and that commit may come later. So the fold also
// holds the findings of the fetches whose verdict waits, one list each.
//
// A topic's deletion removes every group's offsets of its partitions
// (OffsetMetadataManager.onPartitionsDeleted) when the metadata image
// reaches the group coordinator, at a moment no answer bounds. So a
// commit or fetch of a partition called after a delete_topics of its
// topic was called is held to nothing before it (deleted). A fetch of all
// partitions is judged so partition by partition.
type offsetsFold struct {
	header    histories.History
	committed map[groupPartition][]committedOffset // each in the call order of its commits
	highest   map[groupPartition]int64             // the highest offset in each committed list
	fetches   map[groupPartition][]fetchedOffset   // in call order
	// parts are the partitions of each group that a commit or an answer
	// above -1 named, so that a fetch of all partitions reads them.
	parts   map[string]map[model.Partition]bool
	pending map[*txn][]pendingOffsets
	found   []foldedViolation // backward commits and fetches, as found
	told    int               // found that early has gone through
	toldOps map[int]bool      // the operations early has named
	// waiting are the fetches whose finding waits for the end.
	waiting []waitingFetch
	// expiry says when the group's offsets may have expired.
	expiry expiryClock
	// deleted is the call of each topic's first delete_topics that may
	// have taken effect (answered success or left undecided).
	deleted map[string]int64
	// generations judges the commits' generations.
	generations generationsFold
	// bounded: keep only what a regular history still needs (bound).
	bounded bool
	// floors say, for each group partition, what the bounded fold
	// dropped of its commits and answers.
	floors map[groupPartition]*offsetFloors
	// forgot names the first operation that needed what the bounded
	// fold dropped, and why.
	forgot string
}

// offsetFloors are what a bounded offsetsFold dropped of one group
// partition. It drops a commit that has returned once a commit that has
// returned is at or above it, because a later commit or fetch of a
// regular history is at or above that one. An offset_fetch answer goes
// the same way, against the answers. Each floor is the highest offset
// dropped, so that a later operation at or above it needs nothing
// dropped: only an offset above its own can be found against it.
type offsetFloors struct {
	// reached is the highest offset of a commit that had returned by
	// the latest prune, settled the highest of a settled one (a plain
	// commit's), and fetched the highest answer's.
	reached, settled, fetched int64
	// dropped is the highest offset of a commit dropped, droppedSettled
	// of a settled one, droppedFetch of an answer.
	dropped, droppedSettled, droppedFetch int64
}

// noFloor is a floor below every offset.
const noFloor = math.MinInt64

// fetchedOffset is an offset_fetch answer as a later fetch is judged by it.
type fetchedOffset struct {
	op     int
	ret    int64
	offset int64
}

// pendingOffsets is a txn_offset_commit waiting for its transaction.
type pendingOffsets struct {
	op      int
	call    int64
	offsets map[model.Partition]int64
	group   string
}

// waitingFetch is a fetch's findings, one per partition read in the order
// of the partitions, until the first that holds whatever comes later.
type waitingFetch struct {
	call     int64
	findings []fetchFinding
}

// fetchFinding is one partition's read found below an earlier one, and
// what it still depends on.
type fetchFinding struct {
	Violation
	// ret is the fetch's return; minusOne: the read is -1, so it counts
	// only if the offsets may not have expired by ret.
	ret      int64
	minusOne bool
	// unknown: a fetch of all partitions left the partition out, and no
	// commit of it was known yet, so it counts only if one comes.
	unknown bool
	gp      groupPartition
}

func newOffsetsFold(header histories.History) invariantFold {
	return &offsetsFold{header: header, committed: map[groupPartition][]committedOffset{},
		fetches: map[groupPartition][]fetchedOffset{}, parts: map[string]map[model.Partition]bool{},
		pending: map[*txn][]pendingOffsets{}, deleted: map[string]int64{}, toldOps: map[int]bool{},
		expiry:      expiryClock{wall: header.WallClock, retention: header.Expiry.OffsetsRetentionMs()},
		generations: generationsFold{commits: map[int]bool{}, consumerGroups: map[string]bool{}}}
}

// bound makes the fold keep only what a regular history still needs
// (boundedFold): the commits and answers of a group partition above the
// highest that has returned (offsetFloors), and the group operations of
// the newest generations and member epochs (groupIndex).
func (f *offsetsFold) bound() {
	f.bounded = true
	f.floors = map[groupPartition]*offsetFloors{}
	f.generations.bounded = true
}

// forgotten names the first operation that needed what the bounded fold
// dropped, and why; "" when none did.
func (f *offsetsFold) forgotten() string {
	if f.forgot != "" {
		return f.forgot
	}
	return f.generations.forgot
}

// forget records that op needed what the fold dropped, unless an earlier
// operation did.
func (f *offsetsFold) forget(op int, why string, args ...any) {
	if f.forgot == "" {
		f.forgot = fmt.Sprintf("op %d ", op) + fmt.Sprintf(why, args...)
	}
}

// floor is what the bounded fold dropped of gp, made when new.
func (f *offsetsFold) floor(gp groupPartition) *offsetFloors {
	fl := f.floors[gp]
	if fl == nil {
		fl = &offsetFloors{reached: noFloor, settled: noFloor, fetched: noFloor,
			dropped: noFloor, droppedSettled: noFloor, droppedFetch: noFloor}
		f.floors[gp] = fl
	}
	return fl
}

// known reports whether a commit of gp has been judged.
func (f *offsetsFold) known(gp groupPartition) bool {
	_, ok := f.highest[gp]
	return ok
}

// pruneCommits drops the commits of gp that a later commit or fetch of a
// regular history cannot be found below (offsetFloors). now is the latest
// call: every later commit or fetch is called at or after it, save a
// transaction's commit judged late, whose end_txn was called earlier.
// Where markers may be in flight, a fetch that does not ask for stable
// offsets is held to the settled commits alone (fetchBelowCommit), so a
// settled commit stays until a settled one that returned is at or above
// it.
func (f *offsetsFold) pruneCommits(gp groupPartition, now int64) {
	fl := f.floor(gp)
	list := f.committed[gp]
	for _, c := range list {
		if c.ret < now {
			fl.reached = max(fl.reached, c.offset)
			if c.settled {
				fl.settled = max(fl.settled, c.offset)
			}
		}
	}
	window := f.markerWindow()
	kept := list[:0]
	for _, c := range list {
		if c.ret < now && c.offset <= fl.reached && (!window || !c.settled || c.offset <= fl.settled) {
			fl.dropped = max(fl.dropped, c.offset)
			if c.settled {
				fl.droppedSettled = max(fl.droppedSettled, c.offset)
			}
			continue
		}
		kept = append(kept, c)
	}
	clear(list[len(kept):])
	f.committed[gp] = kept
}

// pruneFetches drops the answers of gp that a later fetch of a regular
// history cannot be found below, as pruneCommits does the commits.
func (f *offsetsFold) pruneFetches(gp groupPartition, now int64) {
	fl := f.floor(gp)
	list := f.fetches[gp]
	for _, e := range list {
		if e.ret < now {
			fl.fetched = max(fl.fetched, e.offset)
		}
	}
	kept := list[:0]
	for _, e := range list {
		if e.ret < now && e.offset <= fl.fetched {
			fl.droppedFetch = max(fl.droppedFetch, e.offset)
			continue
		}
		kept = append(kept, e)
	}
	f.fetches[gp] = kept
}

func (f *offsetsFold) add(op *histories.Op) {
	f.expiry.add(op)
	f.generations.add(op)
	if op.Kind == model.DeleteTopics && !(op.Result.Answered && !op.Result.Succeeded() && !op.Result.Undecided()) {
		// In call order, so the first is the earliest.
		if _, seen := f.deleted[op.Req.Topic]; !seen {
			f.deleted[op.Req.Topic] = op.Call
		}
	}
	if op.Kind == model.OffsetCommit && op.Result.Succeeded() {
		f.commit(op.Req.Group, model.CommittedOffsets(op.Req.Offsets, op.Result), op.Call, committedOffset{op: op.ID, call: op.Call, ret: op.Return, by: []int{op.ID}, settled: true})
	}
	if op.Kind == model.OffsetFetch && op.Result.Succeeded() {
		f.fetched(op)
	}
}

func (f *offsetsFold) joined(op *histories.Op, t *txn) {
	if op.Kind == model.TxnOffsetCommit && op.Result.Succeeded() {
		f.pending[t] = append(f.pending[t], pendingOffsets{op: op.ID, call: op.Call,
			offsets: model.CommittedOffsets(op.Req.Offsets, op.Result), group: op.Req.Group})
	}
}

func (f *offsetsFold) closed(t *txn) {
	if t.fate == fateCommitted {
		for _, p := range f.pending[t] {
			f.commit(p.group, p.offsets, p.call, committedOffset{op: p.op, call: t.commitCall, ret: t.commitReturn, by: []int{p.op, t.endedBy}})
		}
	}
	delete(f.pending, t)
}

// commit judges and keeps the offsets an operation called at opCall
// committed, c but for the offset itself.
func (f *offsetsFold) commit(group string, offsets map[model.Partition]int64, opCall int64, c committedOffset) {
	for _, p := range sortedPartitions(offsets) {
		gp := groupPartition{group, p}
		f.named(gp)
		c.offset = offsets[p]
		list := f.committed[gp]
		// Only an earlier offset above c's can be found, so the scan
		// is needed only below the highest (most commits move forward).
		highest, ok := f.highest[gp]
		switch {
		case !ok || c.offset >= highest || f.afterDeletion(p, c.call):
		case f.bounded && c.offset < f.floor(gp).dropped:
			f.forget(c.op, "committed offset %d of %s, below offset %d of a commit the bounded fold dropped",
				c.offset, gp, f.floor(gp).dropped)
		default:
			for _, earlier := range list {
				if earlier.ret < c.call && c.offset < earlier.offset {
					f.found = append(f.found, foldedViolation{call: opCall, Violation: Violation{Op: c.op, Related: earlier.by,
						Reason: fmt.Sprintf("%s committed offset %d after op %d had committed %d", gp, c.offset, earlier.op, earlier.offset)}})
					break
				}
			}
		}
		if f.highest == nil {
			f.highest = map[groupPartition]int64{}
		}
		if !ok || c.offset > highest {
			f.highest[gp] = c.offset
		}
		// In the call order of the commits (a transaction's commits
		// are known only when it ends).
		at := len(list)
		for at > 0 && (list[at-1].opCall > opCall || list[at-1].opCall == opCall && list[at-1].op > c.op) {
			at--
		}
		c.opCall = opCall
		f.committed[gp] = slices.Insert(list, at, c)
		if f.bounded {
			f.pruneCommits(gp, f.expiry.last)
		}
	}
}

// afterDeletion reports whether an operation of p called at call may
// follow its topic's deletion, so that no earlier offset binds it. Every
// delete_topics called before call has come by then, because the fold
// judges a commit or a fetch once every operation called before it has.
func (f *offsetsFold) afterDeletion(p model.Partition, call int64) bool {
	topic, _ := p.Topic()
	at, ok := f.deleted[topic]
	return ok && at < call
}

// named notes that gp's partition is one of its group's.
func (f *offsetsFold) named(gp groupPartition) {
	ps := f.parts[gp.group]
	if ps == nil {
		ps = map[model.Partition]bool{}
		f.parts[gp.group] = ps
	}
	ps[gp.partition] = true
}

// fetched judges an offset_fetch answer against the earlier answers and
// the commits that returned before it was called, one partition at a
// time (fetchedPartitions).
func (f *offsetsFold) fetched(op *histories.Op) {
	var w waitingFetch
	decided := false // a finding that holds whatever comes later is found
	for _, read := range f.fetchedPartitions(op) {
		gp, got := read.gp, read.offset
		if f.afterDeletion(gp.partition, op.Call) {
			continue
		}
		if f.bounded && got < f.floor(gp).droppedFetch {
			f.forget(op.ID, "read offset %d of %s, below answer %d that the bounded fold dropped", got, gp, f.floor(gp).droppedFetch)
			return
		}
		v, bad := f.fetchBelowFetch(gp, op, got)
		if !bad {
			// A fetch of all partitions with require_stable does not
			// list a partition whose only offset waits for its marker.
			settles := f.settlesBefore(op) && !(read.unlisted && f.markerWindow())
			if f.bounded {
				fl := f.floor(gp)
				floor := fl.dropped
				if !settles {
					floor = fl.droppedSettled
				}
				if got < floor {
					f.forget(op.ID, "read offset %d of %s, below offset %d of a commit the bounded fold dropped", got, gp, floor)
					return
				}
			}
			v, bad = fetchBelowCommit(gp, op.ID, op.Call, got, f.committed[gp], settles)
		}
		if got > model.NoOffset {
			// A -1 binds no later answer, because none is below it.
			f.named(gp)
			f.fetches[gp] = append(f.fetches[gp], fetchedOffset{op: op.ID, ret: op.Return, offset: got})
			if f.bounded {
				f.pruneFetches(gp, op.Call)
			}
		}
		if !bad || decided {
			continue
		}
		one := fetchFinding{Violation: v, ret: op.Return, gp: gp,
			minusOne: got == model.NoOffset, unknown: read.unlisted && !f.known(gp)}
		if one.minusOne {
			if expired, known := f.expiry.expired(one.ret); known {
				if expired {
					// The group's offsets may have expired: -1 is no
					// regression.
					continue
				}
				one.minusOne = false
			}
		}
		w.findings = append(w.findings, one)
		decided = !one.waits()
	}
	switch {
	case len(w.findings) == 0:
	case !w.findings[0].waits():
		f.found = append(f.found, foldedViolation{call: op.Call, Violation: w.findings[0].Violation})
	default:
		w.call = op.Call
		f.waiting = append(f.waiting, w)
	}
}

// waits reports whether the finding depends on what may come later.
func (x fetchFinding) waits() bool { return x.minusOne || x.unknown }

// settle judges the fetches whose findings waited, once the history has
// ended: each fetch's first finding that holds is its violation.
func (f *offsetsFold) settle() {
	for _, w := range f.waiting {
		for _, x := range w.findings {
			if x.unknown && !f.known(x.gp) {
				continue
			}
			if expired, _ := f.expiry.expired(x.ret); x.minusOne && expired {
				continue
			}
			f.found = append(f.found, foldedViolation{call: w.call, Violation: x.Violation})
			break
		}
	}
	f.waiting = nil
}

// partitionRead is one partition's offset as a fetch answered it.
type partitionRead struct {
	gp     groupPartition
	offset int64
	// unlisted: a fetch of all partitions left the partition out, which
	// reads as no offset.
	unlisted bool
}

// fetchedPartitions is fetch op as one read per partition. A fetch of all
// partitions reads each partition it listed at its offset, and each
// partition of its group that a commit names and it did not list as no
// offset (-1). A partition it listed as UNSTABLE_OFFSET_COMMIT reads
// nothing. A commit that comes later may name a partition too: the fold
// reads each partition an earlier answer named, and a finding of one
// that no commit has named yet waits for the end (offsetsFold).
func (f *offsetsFold) fetchedPartitions(op *histories.Op) []partitionRead {
	if !op.Req.AllPartitions {
		return []partitionRead{{gp: groupPartition{op.Req.Group, op.Req.Partition}, offset: op.Result.Resp.Offset}}
	}
	resp := op.Result.Resp
	seen := maps.Clone(f.parts[op.Req.Group])
	if seen == nil {
		seen = map[model.Partition]bool{}
	}
	for p := range resp.FetchedOffsets {
		seen[p] = true
	}
	var reads []partitionRead
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		if slices.Contains(resp.Unstable, p) {
			continue
		}
		read := partitionRead{gp: groupPartition{op.Req.Group, p}, offset: model.NoOffset}
		off, listed := resp.FetchedOffsets[p]
		if listed {
			read.offset = off
		}
		read.unlisted = !listed
		reads = append(reads, read)
	}
	return reads
}

// fetchBelowFetch finds an earlier answer of gp, returned before fetch op
// was called, above got.
func (f *offsetsFold) fetchBelowFetch(gp groupPartition, op *histories.Op, got int64) (Violation, bool) {
	for _, e := range f.fetches[gp] {
		if e.ret < op.Call && got < e.offset {
			return Violation{Op: op.ID, Related: []int{e.op},
				Reason: fmt.Sprintf("offset_fetch of %s returned %d after op %d returned %d", gp, got, e.op, e.offset)}, true
		}
	}
	return Violation{}, false
}

// settlesBefore reports whether a commit that returned before fetch op
// was called must show in its answer (see fetchBelowCommit).
func (f *offsetsFold) settlesBefore(op *histories.Op) bool {
	return !f.markerWindow() || op.Req.RequireStable
}

// markerWindow reports whether the history's broker may answer EndTxn
// before its markers land.
func (f *offsetsFold) markerWindow() bool { return f.header.AsyncMarkers || f.header.WallClock }

// expiryClock says whether a fetch's -1 may show an offset the group
// coordinator deleted for its age (offsets.retention.minutes,
// model/offsetexpiry.go): the history's clock may have moved by the
// retention between its first call and the fetch's return. An Empty
// group's offsets count from when it became Empty, which may be before
// the commit, so the history's start is the bound. Under ticks, the
// clock moved by the ticks called from the start to the return, ends
// included (timers.mayHaveFired).
type expiryClock struct {
	wall      bool
	retention int64
	added     bool
	start     int64 // the first call
	last      int64 // the latest call
	moved     int64 // the ticks' sum so far
	reached   bool  // moved reached the retention
	at        int64 // the call of the tick that made it reach it
}

func (e *expiryClock) add(op *histories.Op) {
	if !e.added {
		e.added, e.start = true, op.Call
	}
	e.last = op.Call
	if op.Kind != model.Tick || e.wall {
		return
	}
	e.moved = min(e.moved+op.Req.Ms, math.MaxInt64/2)
	if !e.reached && e.moved >= e.retention {
		e.reached, e.at = true, op.Call
	}
}

// expired reports whether the offsets may have expired by ret; known is
// false while a tick called by ret may still come.
func (e *expiryClock) expired(ret int64) (expired, known bool) {
	switch {
	case e.wall:
		return ret-e.start >= e.retention, true
	case e.reached:
		return ret >= e.at, true
	}
	return false, e.last > ret
}

// early returns the backward commits and fetches found since its last
// call, the first of each operation (as verdict keeps them): each is final
// when found. A fetch whose finding waits, and a commit of a stale
// generation, are known only at the end.
func (f *offsetsFold) early() []foldedViolation {
	var out []foldedViolation
	for _, v := range f.found[f.told:] {
		if !f.toldOps[v.Op] {
			f.toldOps[v.Op] = true
			out = append(out, v)
		}
	}
	f.told = len(f.found)
	return out
}

func (f *offsetsFold) verdict() Verdict {
	f.settle()
	violations := append(f.found, f.generations.violations()...)
	seen := map[int]bool{}
	kept := violations[:0]
	for _, v := range violations {
		if !seen[v.Op] {
			seen[v.Op] = true
			kept = append(kept, v)
		}
	}
	return foldedVerdict(OffsetsMonotonic, kept)
}

// generationsFold judges the generations of offset commits (see
// staleGenerations). A commit is judged once every operation called by its
// call has come, both as a classic group's and as a KIP-848 consumer
// group's, because only the end of the history says which its group is.
// Each group's operations are kept apart (groupIndex), so that a commit
// is judged against its own group's alone, and the member epochs are
// indexed, so that most commits are judged without a scan.
type generationsFold struct {
	groups         map[string]*groupIndex
	waiting        []histories.Op // commits called at the latest instant
	judged         []judgedCommit
	commits        map[int]bool
	consumerGroups map[string]bool
	// bounded: each group keeps the operations of its newest
	// generations and member epochs alone (groupIndex).
	bounded bool
	// forgot names the first commit that needed an operation a bounded
	// group dropped, and why.
	forgot string
}

type judgedCommit struct {
	group             string
	classic, consumer *foldedViolation
}

func (g *generationsFold) add(op *histories.Op) {
	if len(g.waiting) > 0 && op.Call > g.waiting[0].Call {
		g.judgeWaiting()
	}
	switch op.Kind {
	case model.JoinGroup, model.SyncGroup, model.ConsumerGroupHeartbeat:
		x := g.group(op.Req.Group)
		if g.bounded {
			if why := x.addBounded(op); why != "" && g.forgot == "" {
				g.forgot = why
			}
			break
		}
		x.add(op)
		if op.Kind == model.ConsumerGroupHeartbeat {
			if g.consumerGroups == nil {
				g.consumerGroups = map[string]bool{}
			}
			g.consumerGroups[op.Req.Group] = true
		}
	case model.TxnOffsetCommit, model.OffsetCommit:
		if op.Result.Succeeded() {
			g.waiting = append(g.waiting, *op)
		}
	}
}

// group is the index of the group named, made empty when new.
func (g *generationsFold) group(name string) *groupIndex {
	if g.groups == nil {
		g.groups = map[string]*groupIndex{}
	}
	x := g.groups[name]
	if x == nil {
		x = newGroupIndex()
		if g.bounded {
			x.bound()
		}
		g.groups[name] = x
	}
	return x
}

func (g *generationsFold) judgeWaiting() {
	for _, commit := range g.waiting {
		j := judgedCommit{group: commit.Req.Group}
		x := g.group(commit.Req.Group)
		var classic, consumer *foldedViolation
		if x.bounded {
			if why := x.needsDropped(commit); why != "" {
				if g.forgot == "" {
					g.forgot = why
				}
				continue
			}
		}
		if commit.Req.GenerationID < 0 {
			if v, stale := zombieOverloadAfter(x.classic, commit, x.lastOf(commit, model.JoinGroup)); stale {
				classic = &foldedViolation{call: commit.Call, Violation: v}
			}
			if v, stale := zombieMemberOverloadAfter(x.consumer, commit, x.lastOf(commit, model.ConsumerGroupHeartbeat)); stale {
				consumer = &foldedViolation{call: commit.Call, Violation: v}
			}
		} else {
			if v, stale := staleGeneration(x.classic, commit); stale {
				classic = &foldedViolation{call: commit.Call, Violation: v}
			}
			if v, stale := x.staleMemberEpoch(commit); stale {
				consumer = &foldedViolation{call: commit.Call, Violation: v}
			}
		}
		j.classic, j.consumer = classic, consumer
		if j.classic != nil || j.consumer != nil {
			g.judged = append(g.judged, j)
		}
	}
	g.waiting = g.waiting[:0]
}

// violations are the commits found stale, as their groups turned out.
func (g *generationsFold) violations() []foldedViolation {
	g.judgeWaiting()
	var out []foldedViolation
	for _, j := range g.judged {
		v := j.classic
		if g.consumerGroups[j.group] {
			v = j.consumer
		}
		if v != nil {
			out = append(out, *v)
		}
	}
	return out
}

// groupPartition names one partition's committed offset in one group.
type groupPartition struct {
	group     string
	partition model.Partition
}

func (gp groupPartition) String() string { return fmt.Sprintf("group %s %s", gp.group, gp.partition) }

// committedOffset is a committed offset and when it was committed. A
// txn_offset_commit's offset takes effect with its transaction's commit
// (KIP-447): from the end_txn's call, for sure by its return. A plain
// offset_commit's takes effect at its own answer.
type committedOffset struct {
	op     int
	offset int64
	// call and ret bound when the offset was committed.
	call, ret int64
	// by are the operations that committed it: the commit, and the
	// end_txn that committed its transaction.
	by []int
	// settled: a fetch called after ret must show it. A transaction's
	// offset may wait for its marker (see fetchBelowCommit); a plain one
	// never does.
	settled bool
	opCall  int64 // the call of op
}

func sortedPartitions(offsets map[model.Partition]int64) []model.Partition {
	ps := make([]model.Partition, 0, len(offsets))
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// fetchBelowCommit finds a commit that returned before fetch f was
// called with an offset above f's answer. Where markers may be in
// flight (settles false), only plain commits are held to it.
//
// A commit that returned before f was called must show in f's answer,
// unless the history's broker answers EndTxn before its markers land (the
// marker window) and f did not ask for stable offsets. Kafka then answers
// the offset the last landed marker settled, and the old one until the
// group's marker lands: a pending transactional offset shows only with
// require_stable, as UNSTABLE_OFFSET_COMMIT (4.x
// OffsetMetadataManager.fetchOffsets; 3.9 GroupMetadataManager.getOffsets;
// tests: GroupCoordinatorTest#testFetchPendingTxnOffsetsWithCommit,
// OffsetMetadataManagerTest#testFetchOffsetsWithPendingTransactionalOffsets).
func fetchBelowCommit(gp groupPartition, id int, call, got int64, committed []committedOffset, settles bool) (Violation, bool) {
	for _, c := range committed {
		if (settles || c.settled) && c.ret < call && got < c.offset {
			return Violation{Op: id, Related: c.by,
				Reason: fmt.Sprintf("offset_fetch of %s returned %d after op %d committed %d", gp, got, c.op, c.offset)}, true
		}
	}
	return Violation{}, false
}

// staleGeneration judges a commit with a generation to a classic group:
// stale when a join_group of the group had returned a newer generation
// before the commit was called. Zombie commits with no generation (the
// groupId-string overload, or a simple consumer's) are zombieOverload's,
// and commits to a KIP-848 consumer group staleMemberEpoch's.
func staleGeneration(h histories.History, commit histories.Op) (Violation, bool) {
	joins := laterJoins(h, commit, commit.Req.GenerationID)
	if len(joins) == 0 {
		return Violation{}, false
	}
	join := joins[0]
	return Violation{Op: commit.ID, Related: []int{join.ID},
		Reason: fmt.Sprintf("%s of group %s at generation %d accepted after op %d returned generation %d",
			commit.Kind, commit.Req.Group, commit.Req.GenerationID, join.ID, join.Result.Resp.GenerationID)}, true
}

// consumerGroupsOf names the groups that consumer_group_heartbeats
// joined: KIP-848 consumer groups, whose commits carry a member epoch
// where a classic group's carry a generation.
func consumerGroupsOf(h histories.History) map[string]bool {
	groups := map[string]bool{}
	for _, op := range h.Ops {
		if op.Kind == model.ConsumerGroupHeartbeat {
			groups[op.Req.Group] = true
		}
	}
	return groups
}

// staleMemberEpoch judges a commit to a KIP-848 consumer group, whose
// generation_id is the member epoch. The epochs are the group's, so they
// order the members' answers. The commit is a zombie's when, before it
// was called, the committer's own heartbeat had answered a newer epoch
// than the commit's, and another member's answer had given one of the
// committed partitions to it at a newer epoch too. The epoch is then not
// the member's, and the partition no longer is: Kafka refuses the commit
// in every release (ConsumerGroup.validateOffsetCommit:
// STALE_MEMBER_EPOCH to a plain commit, ILLEGAL_GENERATION to a
// TxnOffsetCommit, UNKNOWN_MEMBER_ID once the member is gone). KIP-1251
// takes an older epoch only for partitions the member still holds, and
// holds since that epoch. The committer's own newer epoch is needed,
// because a member that gives up the partitions of a topic it no longer
// subscribes to may stay at its epoch (CurrentAssignmentBuilder), and
// may still commit at it.
func staleMemberEpoch(h histories.History, commit histories.Op) (Violation, bool) {
	epoch := commit.Req.GenerationID
	var movedOn *histories.Op
	for i, op := range h.Ops {
		if answered, member := consumerAnswer(op, commit); answered && member == commit.Req.MemberID && op.Result.Resp.MemberEpoch > epoch {
			movedOn = &h.Ops[i]
			break
		}
	}
	if movedOn == nil {
		return Violation{}, false
	}
	given, member, p, ok := givenAbove(h, commit, epoch, func(_ histories.Op, member string) bool { return member != commit.Req.MemberID })
	if !ok {
		return Violation{}, false
	}
	return Violation{Op: commit.ID, Related: []int{movedOn.ID, given.ID},
		Reason: fmt.Sprintf("%s of consumer group %s for %s at member epoch %d accepted from %s, after op %d moved it to epoch %d and op %d gave %s to %s at epoch %d",
			commit.Kind, commit.Req.Group, p, epoch, commit.Req.MemberID, movedOn.ID, movedOn.Result.Resp.MemberEpoch, given.ID, p, member, given.Result.Resp.MemberEpoch)}, true
}

// givenAbove is the first consumer_group_heartbeat answer of commit's
// group, returned before commit was called, that gave one of the
// committed partitions to a member other(op, member) accepts, at a
// member epoch above epoch; with the member and the partition.
func givenAbove(h histories.History, commit histories.Op, epoch int32, other func(histories.Op, string) bool) (histories.Op, string, model.Partition, bool) {
	for _, op := range h.Ops {
		answered, member := consumerAnswer(op, commit)
		resp := op.Result.Resp
		if !answered || !other(op, member) || resp.MemberEpoch <= epoch || resp.MemberAssignment == nil {
			continue
		}
		for _, p := range *resp.MemberAssignment {
			if _, mine := model.CommittedOffsets(commit.Req.Offsets, commit.Result)[p]; mine {
				return op, member, p, true
			}
		}
	}
	return histories.Op{}, "", "", false
}

// zombieMemberOverload is zombieOverload for a KIP-848 consumer group,
// whose 4.x releases take the groupId-string overload unchecked
// (ConsumerGroup.validateOffsetCommit), as a simple consumer's plain
// commit is taken once the group has no members. The committer's member
// epoch is the one its client's last consumer_group_heartbeat answered
// (0 says none, so nothing is judged), and its commit is a zombie's when
// another client had been given one of its partitions at a newer epoch.
func zombieMemberOverload(h histories.History, commit histories.Op) (Violation, bool) {
	return zombieMemberOverloadAfter(h, commit, h)
}

// zombieMemberOverloadAfter is zombieMemberOverload with the client's
// last heartbeat read from lasts, which holds its heartbeats called last.
func zombieMemberOverloadAfter(h histories.History, commit histories.Op, lasts histories.History) (Violation, bool) {
	client := commit.Process()
	last, ok := lastAnswer(lasts, commit, model.ConsumerGroupHeartbeat, memberEpochOf)
	epoch := memberEpochOf(last)
	if !ok || epoch == 0 {
		return Violation{}, false
	}
	given, _, p, ok := givenAbove(h, commit, epoch, func(op histories.Op, _ string) bool { return op.Process() != client })
	if !ok {
		return Violation{}, false
	}
	return Violation{Op: commit.ID, Related: []int{last.ID, given.ID},
		Reason: fmt.Sprintf("%s of consumer group %s for %s with no member epoch (%s) accepted from %s, whose last heartbeat (op %d) answered member epoch %d, after op %d gave %s to %s at epoch %d",
			commit.Kind, commit.Req.Group, p, noGenerationName(commit.Kind), client, last.ID, epoch, given.ID, p, given.Process(), given.Result.Resp.MemberEpoch)}, true
}

func memberEpochOf(op histories.Op) int32 { return op.Result.Resp.MemberEpoch }

func generationOf(op histories.Op) int32 { return op.Result.Resp.GenerationID }

// consumerAnswer reports whether op is a consumer_group_heartbeat of
// commit's group answered before commit was called, and the member it
// answered.
func consumerAnswer(op, commit histories.Op) (bool, string) {
	if op.Kind != model.ConsumerGroupHeartbeat || !op.Result.Succeeded() || op.Req.Group != commit.Req.Group || op.Return >= commit.Call {
		return false, ""
	}
	if id := op.Result.Resp.MemberID; id != "" {
		return true, id
	}
	return true, op.Req.MemberID
}

// zombieOverload judges the groupId-string overload (generation -1), which
// carries no generation, so that the broker cannot fence its zombie (seed
// 002); the history still can. The committer's generation is the one its
// client's last join_group answered before the commit was called, and its
// commit is a zombie's when a newer generation had given one of its
// partitions to another client. A client whose last join is unanswered
// may be in any generation. A tie is no order: a join called at the
// commit's instant may be its last, and of joins called at one instant
// none is the last alone, so each must have answered, and the newest
// generation they answered is the client's. The client is the process,
// or the one whose lanes the operations are on (histories.Op.Process): a
// client joins on one lane while it commits on another.
func zombieOverload(h histories.History, commit histories.Op) (Violation, bool) {
	return zombieOverloadAfter(h, commit, h)
}

// zombieOverloadAfter is zombieOverload with the client's last join read
// from lasts, which holds its joins called last.
func zombieOverloadAfter(h histories.History, commit histories.Op, lasts histories.History) (Violation, bool) {
	client := commit.Process()
	last, ok := lastAnswer(lasts, commit, model.JoinGroup, generationOf)
	if !ok {
		return Violation{}, false
	}
	for _, given := range laterAssignments(h, commit, last.Result.Resp.GenerationID) {
		for _, p := range given.Result.Resp.Assignment {
			if _, mine := model.CommittedOffsets(commit.Req.Offsets, commit.Result)[p]; mine && given.Process() != client {
				return Violation{Op: commit.ID, Related: []int{last.ID, given.ID},
					Reason: fmt.Sprintf("%s of group %s for %s with no generation (%s) accepted from %s, whose last join (op %d) answered generation %d, after op %d gave %s to %s at generation %d",
						commit.Kind, commit.Req.Group, p, noGenerationName(commit.Kind), client, last.ID, last.Result.Resp.GenerationID, given.ID, p, given.Process(), assignedGeneration(given))}, true
			}
		}
	}
	return Violation{}, false
}

// noGenerationName says who sends a commit with no generation.
func noGenerationName(k model.Kind) string {
	if k == model.OffsetCommit {
		return "a simple consumer's"
	}
	return "groupId string"
}

// laterAssignments are the answers that handed out partitions of commit's
// group at a generation newer than gen, returned before commit was
// called: a whole round's join_group, or a sync_group (whose generation
// is its request's).
func laterAssignments(h histories.History, commit histories.Op, gen int32) []histories.Op {
	var out []histories.Op
	for _, op := range h.Ops {
		handsOut := (op.Kind == model.JoinGroup && !op.Req.JoinOnly) || op.Kind == model.SyncGroup
		if handsOut && op.Result.Succeeded() && op.Req.Group == commit.Req.Group &&
			op.Return < commit.Call && assignedGeneration(op) > gen {
			out = append(out, op)
		}
	}
	return out
}

// assignedGeneration is the generation an assignment answer is of.
func assignedGeneration(op histories.Op) int32 {
	if op.Kind == model.SyncGroup {
		return op.Req.GenerationID
	}
	return op.Result.Resp.GenerationID
}

// lastAnswer is the request of kind, a join_group or a
// consumer_group_heartbeat, that tells the generation or the member epoch
// of commit's client (see zombieOverload); false when none does. newest
// is what an answer tells: of requests called at one instant, the one
// that tells the newest counts.
func lastAnswer(h histories.History, commit histories.Op, kind model.Kind, newest func(histories.Op) int32) (histories.Op, bool) {
	var last []histories.Op // the client's requests called last, by the commit's call
	for _, op := range h.Ops {
		if op.Kind != kind || op.Process() != commit.Process() || op.Req.Group != commit.Req.Group || op.Call > commit.Call {
			continue
		}
		switch {
		case len(last) == 0 || op.Call > last[0].Call:
			last = []histories.Op{op}
		case op.Call == last[0].Call:
			last = append(last, op)
		}
	}
	if len(last) == 0 {
		return histories.Op{}, false
	}
	told := last[0]
	for _, op := range last {
		if !op.Result.Succeeded() || op.Return >= commit.Call {
			return histories.Op{}, false
		}
		if newest(op) > newest(told) {
			told = op
		}
	}
	return told, true
}

// laterJoins are the join_group answers of commit's group, returned before
// commit was called, at a generation newer than gen.
func laterJoins(h histories.History, commit histories.Op, gen int32) []histories.Op {
	var joins []histories.Op
	for _, join := range h.Ops {
		if join.Kind == model.JoinGroup && join.Result.Succeeded() && join.Req.Group == commit.Req.Group &&
			join.Return < commit.Call && join.Result.Resp.GenerationID > gen && !remadeAfter(h, commit, join) {
			joins = append(joins, join)
		}
	}
	return joins
}

// remadeAfter reports whether commit's group was deleted and made again
// after join returned: a later join, returned before commit was called,
// answered a lower generation. Generations only grow in one group, and
// the coordinator deletes an Empty group with no offsets
// (model/offsetexpiry.go), so that the next JoinGroup starts at
// generation 1.
func remadeAfter(h histories.History, commit, join histories.Op) bool {
	for _, again := range h.Ops {
		if again.Kind == model.JoinGroup && again.Result.Succeeded() && again.Req.Group == commit.Req.Group &&
			again.Call > join.Return && again.Return < commit.Call && again.Result.Resp.GenerationID < join.Result.Resp.GenerationID {
			return true
		}
	}
	return false
}
