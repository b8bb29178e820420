package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// checkOffsetsMonotonic: a group's committed offsets never move backward,
// neither as commits nor as offset_fetch answers, and no offset commit of a
// stale generation (KIP-447), or of a stale member epoch in a KIP-848
// consumer group, succeeds. A refused commit commits nothing, so it is
// never counted.
//
// A topic's deletion removes every group's offsets of its partitions
// (OffsetMetadataManager.onPartitionsDeleted) when the metadata image
// reaches the group coordinator, at a moment no answer bounds. So a
// commit or fetch of a partition called after a delete_topics of its
// topic was called is held to nothing before it (deletedSince).
func checkOffsetsMonotonic(a *analysis) Verdict {
	committed := a.committedOffsets()
	deleted := deletedSince(a.h)
	var violations []Violation
	violations = append(violations, backwardCommits(committed, deleted)...)
	violations = append(violations, a.backwardFetches(committed, deleted)...)
	violations = append(violations, staleGenerations(a.h, a.progress)...)
	return a.verdict(OffsetsMonotonic, firstPerOp(violations))
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
	// offset may wait for its marker (see settlesBefore); a plain one
	// never does.
	settled bool
}

// committedOffsets lists the committed offsets of each group partition, in
// the call order of the operations that set them.
func (a *analysis) committedOffsets() map[groupPartition][]committedOffset {
	committed := map[groupPartition][]committedOffset{}
	for _, op := range counted(a.progress, inCallOrder(a.h.Ops)) {
		c, ok := a.commitOf(op)
		if !ok {
			continue
		}
		// A partition refused alone (offset metadata too large)
		// committed nothing.
		taken := model.CommittedOffsets(op.Req.Offsets, op.Result)
		for _, p := range sortedPartitions(taken) {
			gp := groupPartition{op.Req.Group, p}
			c.offset = taken[p]
			committed[gp] = append(committed[gp], c)
		}
	}
	return committed
}

// commitOf is op as a commit of offsets, but for the offset itself; false
// when op committed none: it is no commit, it failed, or its transaction
// did not commit.
func (a *analysis) commitOf(op histories.Op) (committedOffset, bool) {
	if !op.Result.Succeeded() {
		return committedOffset{}, false
	}
	switch op.Kind {
	case model.OffsetCommit:
		return committedOffset{op: op.ID, call: op.Call, ret: op.Return, by: []int{op.ID}, settled: true}, true
	case model.TxnOffsetCommit:
		t := a.txnOf[op.ID]
		if t == nil || t.fate != fateCommitted {
			return committedOffset{}, false
		}
		return committedOffset{op: op.ID, call: t.commitCall, ret: t.commitReturn, by: []int{op.ID, t.endedBy}}, true
	}
	return committedOffset{}, false
}

func sortedPartitions(offsets map[model.Partition]int64) []model.Partition {
	ps := make([]model.Partition, 0, len(offsets))
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// deletedSince is the call of each topic's first delete_topics that may
// have taken effect (answered success or left undecided).
func deletedSince(h histories.History) map[string]int64 {
	since := map[string]int64{}
	for _, op := range h.Ops {
		if op.Kind != model.DeleteTopics || (op.Result.Answered && !op.Result.Succeeded() && !op.Result.Undecided()) {
			continue
		}
		if at, seen := since[op.Req.Topic]; !seen || op.Call < at {
			since[op.Req.Topic] = op.Call
		}
	}
	return since
}

// afterDeletion reports whether an operation of p called at call may
// follow its topic's deletion, so that no earlier offset binds it.
func afterDeletion(deleted map[string]int64, p model.Partition, call int64) bool {
	topic, _ := p.Topic()
	at, ok := deleted[topic]
	return ok && at < call
}

// backwardCommits finds commits of an offset lower than one whose commit had
// returned before theirs was called.
func backwardCommits(committed map[groupPartition][]committedOffset, deleted map[string]int64) []Violation {
	var violations []Violation
	for gp, offsets := range committed {
		for _, later := range offsets {
			if afterDeletion(deleted, gp.partition, later.call) {
				continue
			}
			for _, earlier := range offsets {
				if earlier.ret < later.call && later.offset < earlier.offset {
					violations = append(violations, Violation{Op: later.op, Related: earlier.by,
						Reason: fmt.Sprintf("%s committed offset %d after op %d had committed %d", gp, later.offset, earlier.op, earlier.offset)})
					break
				}
			}
		}
	}
	return violations
}

// backwardFetches finds offset_fetch answers lower than an earlier answer
// (returned before this fetch was called) or than an offset whose commit
// returned before it.
func (a *analysis) backwardFetches(committed map[groupPartition][]committedOffset, deleted map[string]int64) []Violation {
	var violations []Violation
	var earlier []histories.Op
	expired := offsetExpiry(a.h)
	for _, f := range counted(a.progress, inCallOrder(a.h.Ops)) {
		if f.Kind != model.OffsetFetch || !f.Result.Succeeded() || afterDeletion(deleted, f.Req.Partition, f.Call) {
			continue
		}
		for _, read := range fetchedPartitions(f, committed) {
			one := read.op
			if expired(one) {
				// The group's offsets may have expired: -1 is no regression.
				continue
			}
			gp := groupPartition{one.Req.Group, one.Req.Partition}
			// A fetch of all partitions with require_stable does not list
			// a partition whose only offset waits for its marker.
			settles := a.settlesBefore(f) && !(read.unlisted && a.markerWindow())
			if v, bad := fetchBelowFetch(gp, one, earlier); bad {
				violations = append(violations, v)
			} else if v, bad := fetchBelowCommit(gp, one, committed[gp], settles); bad {
				violations = append(violations, v)
			}
			earlier = append(earlier, one)
		}
	}
	return violations
}

// offsetExpiry reports whether a fetch's -1 may show an offset the
// group coordinator deleted for its age (offsets.retention.minutes,
// model/offsetexpiry.go): the history's clock may have moved by the
// retention between its first call and the fetch's return. An Empty
// group's offsets count from when it became Empty, which may be before
// the commit, so the history's start is the bound.
func offsetExpiry(h histories.History) func(f histories.Op) bool {
	if len(h.Ops) == 0 {
		return func(histories.Op) bool { return false }
	}
	t, retention := timersOf(h), h.Expiry.OffsetsRetentionMs()
	start := slices.MinFunc(h.Ops, func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) }).Call
	return func(f histories.Op) bool {
		return f.Result.Resp.Offset == model.NoOffset && t.mayHaveFired(retention, start, f.Return)
	}
}

// partitionRead is one partition's offset as a fetch answered it.
type partitionRead struct {
	op histories.Op
	// unlisted: a fetch of all partitions left the partition out, which
	// reads as no offset.
	unlisted bool
}

// fetchedPartitions is fetch f as one read per partition. A fetch of all
// partitions reads each partition it listed at its offset, and each
// partition of its group that a commit names and it did not list as no
// offset (-1). A partition it listed as UNSTABLE_OFFSET_COMMIT reads
// nothing.
func fetchedPartitions(f histories.Op, committed map[groupPartition][]committedOffset) []partitionRead {
	if !f.Req.AllPartitions {
		return []partitionRead{{op: f}}
	}
	resp := f.Result.Resp
	seen := map[model.Partition]bool{}
	for gp := range committed {
		if gp.group == f.Req.Group {
			seen[gp.partition] = true
		}
	}
	for p := range resp.FetchedOffsets {
		seen[p] = true
	}
	var reads []partitionRead
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		if slices.Contains(resp.Unstable, p) {
			continue
		}
		one := f
		one.Req.Partition, one.Req.AllPartitions = p, false
		one.Result.Resp = model.NewResponse()
		off, listed := resp.FetchedOffsets[p]
		if listed {
			one.Result.Resp.Offset = off
		}
		reads = append(reads, partitionRead{op: one, unlisted: !listed})
	}
	return reads
}

func fetchBelowFetch(gp groupPartition, f histories.Op, earlier []histories.Op) (Violation, bool) {
	got := f.Result.Resp.Offset
	for _, e := range earlier {
		same := groupPartition{e.Req.Group, e.Req.Partition} == gp
		if was := e.Result.Resp.Offset; same && e.Return < f.Call && got < was {
			return Violation{Op: f.ID, Related: []int{e.ID},
				Reason: fmt.Sprintf("offset_fetch of %s returned %d after op %d returned %d", gp, got, e.ID, was)}, true
		}
	}
	return Violation{}, false
}

// settlesBefore reports whether a commit that returned before fetch f
// was called must show in f's answer. It need not when the history's
// broker answers EndTxn before its markers land (the marker window) and
// f did not ask for stable offsets. Kafka then answers the offset the
// last landed marker settled, and the old one until the group's marker
// lands: a pending transactional offset shows only with require_stable,
// as UNSTABLE_OFFSET_COMMIT (4.x OffsetMetadataManager.fetchOffsets;
// 3.9 GroupMetadataManager.getOffsets; tests:
// GroupCoordinatorTest#testFetchPendingTxnOffsetsWithCommit,
// OffsetMetadataManagerTest#testFetchOffsetsWithPendingTransactionalOffsets).
func (a *analysis) settlesBefore(f histories.Op) bool {
	return !a.markerWindow() || f.Req.RequireStable
}

// markerWindow reports whether the history's broker may answer EndTxn
// before its markers land.
func (a *analysis) markerWindow() bool { return a.h.AsyncMarkers || a.h.WallClock }

// fetchBelowCommit finds a commit that returned before fetch f was
// called with an offset above f's answer. Where markers may be in
// flight (settles false), only plain commits are held to it.
func fetchBelowCommit(gp groupPartition, f histories.Op, committed []committedOffset, settles bool) (Violation, bool) {
	got := f.Result.Resp.Offset
	for _, c := range committed {
		if (settles || c.settled) && c.ret < f.Call && got < c.offset {
			return Violation{Op: f.ID, Related: c.by,
				Reason: fmt.Sprintf("offset_fetch of %s returned %d after op %d committed %d", gp, got, c.op, c.offset)}, true
		}
	}
	return Violation{}, false
}

// staleGenerations finds offset commits, transactional or plain, that
// succeeded with a generation older than one a join_group of the group
// had returned before the commit was called, zombie commits with no
// generation (the groupId-string overload, or a simple consumer's), and
// commits to a KIP-848 consumer group at a member epoch the member had
// left behind (staleMemberEpoch).
func staleGenerations(h histories.History, progress *passProgress) []Violation {
	consumerGroups := consumerGroupsOf(h)
	var violations []Violation
	for _, op := range counted(progress, slices.All(h.Ops)) {
		if (op.Kind != model.TxnOffsetCommit && op.Kind != model.OffsetCommit) || !op.Result.Succeeded() {
			continue
		}
		judge := staleGeneration
		switch {
		case op.Req.GenerationID < 0 && consumerGroups[op.Req.Group]:
			judge = zombieMemberOverload
		case op.Req.GenerationID < 0:
			judge = zombieOverload
		case consumerGroups[op.Req.Group]:
			judge = staleMemberEpoch
		}
		if v, stale := judge(h, op); stale {
			violations = append(violations, v)
		}
	}
	return violations
}

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
	client := commit.Process()
	last, ok := lastAnswer(h, commit, model.ConsumerGroupHeartbeat, memberEpochOf)
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
	client := commit.Process()
	last, ok := lastAnswer(h, commit, model.JoinGroup, generationOf)
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
