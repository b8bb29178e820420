package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// oneOwnerFold checks one-owner: in a KIP-848 consumer group no two
// members hold one partition at once, as the answers show it
// (kafka-tlaplus, consumer_group_protocol_kip_848: NoDoubleClientAssignment).
// A member holds a partition from an answer whose assignment lists it
// until the history shows that it may have given it up. A partition an
// answer takes away is still held while it is pending revocation, because
// the coordinator gives it to no one else before the member acknowledges
// the revocation (CurrentAssignmentBuilder.computeNextAssignment leaves out
// every partition whose currentPartitionEpoch is not -1, in 3.9 and 4.x).
// So the check breaks when an answer lists a partition for one member
// while another member certainly holds it. It judges answers only, never
// the model, and gives the benefit of the doubt wherever the history
// cannot tell: a lost answer, a tick that may have ended a session.
//
// An answer is judged once every operation called by its return has come,
// because a heartbeat or a tick called before then may have ended the
// other member's hold. A member's rebalance timeout is the least it ever
// sent, which a later heartbeat may lower; so an answer whose verdict
// depends on it waits for the end (ownerCandidate).
//
// It holds each member's heartbeats, as a beat of about 90 bytes with its
// indexes, and each tick (24 bytes), because a later answer may be
// judged against any of them: a member's hold goes back to the answer
// that last gave it the partition, however old.
// Bounded, while no tick has come, it drops the heartbeats no answer
// still to be judged is judged against (bound).
type oneOwnerFold struct {
	heartbeats bool // a consumer_group_heartbeat came
	groups     map[string]*groupMembers
	timers     timers
	// waiting are the answers that give partitions, until every
	// operation called by their return has come.
	waiting   givenHeap
	seq       int
	undecided []judgedGiven
	found     []foldedViolation
	told      int // found that early has returned
	// bounded: the history has had no tick and has no wall clock, so no
	// timer can end a hold, and each member keeps only the heartbeats
	// a later answer can still be judged against (bound).
	bounded bool
	// compacted: some member dropped heartbeats and its timer indexes.
	compacted bool
	// beatsSinceSweep counts the heartbeats since every member was last
	// compacted.
	beatsSinceSweep int
	// forgot names the first operation that needed what the bounded fold
	// dropped.
	forgot string
}

// compactBeatsAt is the fewest heartbeats of one member a bounded
// oneOwnerFold holds before it drops those no later answer is judged
// against (consumerMember.compact); after each, twice as many as it kept.
var compactBeatsAt = 256

// bound makes the fold keep, for each member, only the heartbeats a later
// answer can still be judged against (boundedFold). On a clock of ticks
// with no tick yet, no timer can end a hold (fencing), so an answer is
// judged by the holdings and the heartbeats that may have given them up
// alone. A member with many heartbeats then drops those and its timer
// indexes (consumerMember.compact). The first tick needs what was
// dropped, if any member dropped anything: the fold records it. After a
// tick the fold keeps everything. On a wall clock it is not bounded.
func (f *oneOwnerFold) bound() {
	f.bounded = !f.timers.wall
}

func (f *oneOwnerFold) forgotten() string { return f.forgot }

// horizon is the earliest call of an answer still to be judged: those
// that wait, and those still to come, called at or after now.
func (f *oneOwnerFold) horizon(now int64) int64 {
	for _, g := range f.waiting {
		now = min(now, g.call)
	}
	return now
}

// given is an answer that gives partitions to a member.
type given struct {
	beat
	member memberKey
	seq    int
}

type givenHeap []given

func (h givenHeap) Len() int { return len(h) }
func (h givenHeap) Less(i, j int) bool {
	if h[i].ret != h[j].ret {
		return h[i].ret < h[j].ret
	}
	return h[i].seq < h[j].seq
}
func (h givenHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *givenHeap) Push(x any)   { *h = append(*h, x.(given)) }
func (h *givenHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}

// judgedGiven is an answer and, for each partition it gives that another
// member may hold, in the order of its assignment, the members that may
// hold it.
type judgedGiven struct {
	given
	parts []heldPartition
}

type heldPartition struct {
	p       model.Partition
	holders []ownerCandidate
}

// ownerCandidate is another member that holds the partition unless its
// rebalance timer may have fenced it: that is, unless its rebalance
// timeout, the least it ever sent, is moved or less. certain: no
// rebalance timeout can end its hold.
type ownerCandidate struct {
	m       *consumerMember
	holding beat
	moved   int64
	certain bool
}

func newOneOwnerFold(header histories.History) invariantFold {
	return &oneOwnerFold{groups: map[string]*groupMembers{}, timers: timers{wall: header.WallClock}}
}

func (f *oneOwnerFold) add(op *histories.Op) {
	f.judgeBefore(op.Call)
	if op.Kind == model.Tick {
		f.timers.add(op.Call, op.Req.Ms)
		if f.compacted && f.forgot == "" {
			f.forgot = fmt.Sprintf("op %d is a tick, and the bounded fold dropped heartbeats and timer indexes before it", op.ID)
		}
		f.bounded = false
	}
	if op.Kind != model.ConsumerGroupHeartbeat {
		return
	}
	f.heartbeats = true
	key, ok := memberOf(*op)
	if !ok {
		return
	}
	g := f.groups[key.group]
	if g == nil {
		g = &groupMembers{byID: map[string]*consumerMember{}}
		f.groups[key.group] = g
	}
	m := g.byID[key.id]
	if m == nil {
		m = &consumerMember{id: key.id, holdings: map[model.Partition][]int{}, gaveUp: map[model.Partition]*gaveUpIndex{},
			leastRebalanceMs: math.MaxInt64, droppedLatest: map[model.Partition]int64{}}
		g.byID[key.id] = m
		at, _ := slices.BinarySearch(g.ids, key.id)
		g.ids = slices.Insert(g.ids, at, key.id)
	}
	b := beatOf(op)
	m.add(b)
	g.noteHolder(m, b)
	if f.bounded && len(m.beats) >= max(m.compactAt, compactBeatsAt) {
		m.compact(f.horizon(op.Call))
		f.compacted = true
	}
	if f.bounded {
		// Now and then every member, so that one that left or went
		// quiet drops what it holds too.
		f.beatsSinceSweep++
		if f.beatsSinceSweep >= 8*compactBeatsAt {
			f.beatsSinceSweep = 0
			horizon := f.horizon(op.Call)
			for _, g := range f.groups {
				for _, other := range g.byID {
					if len(other.beats) > 1 {
						other.compact(horizon)
						f.compacted = true
					}
				}
			}
		}
	}
	if ms := op.Req.RebalanceTimeoutMs; ms > 0 {
		m.leastRebalanceMs = min(m.leastRebalanceMs, ms)
	}
	if op.Result.Succeeded() && b.assigned != nil {
		heap.Push(&f.waiting, given{beat: b, member: key, seq: f.seq})
		f.seq++
	}
}

func (f *oneOwnerFold) calledBefore(instant int64) { f.judgeBefore(instant) }

// judgeBefore judges the answers that returned before the instant at:
// every operation called by their return has come.
func (f *oneOwnerFold) judgeBefore(at int64) {
	for f.waiting.Len() > 0 && f.waiting[0].ret < at {
		f.judge(heap.Pop(&f.waiting).(given))
	}
}

// judge lists the members that may hold each partition the answer gives,
// up to the first that certainly does, and names the violation if that
// is known already.
func (f *oneOwnerFold) judge(gv given) {
	g := f.groups[gv.member.group]
	j := judgedGiven{given: gv}
	for _, p := range *gv.assigned {
		holders := g.holders(gv.member.id, p, gv.beat, f.timers)
		if len(holders) == 0 {
			continue
		}
		j.parts = append(j.parts, heldPartition{p, holders})
		if holders[len(holders)-1].certain {
			break
		}
	}
	if len(j.parts) == 0 {
		return
	}
	if v, decided := j.violation(false); decided {
		f.found = append(f.found, v...)
		return
	}
	f.undecided = append(f.undecided, j)
}

// violation is the answer's violation, if any: the first partition, and
// the first member, that holds it, in order. decided is false while that
// depends on a rebalance timeout a later heartbeat may lower, unless
// final: the history has ended.
func (j judgedGiven) violation(final bool) (found []foldedViolation, decided bool) {
	for _, part := range j.parts {
		for _, c := range part.holders {
			switch {
			case c.certain || final && c.m.rebalanceMs() > c.moved:
				return []foldedViolation{{call: j.call, Violation: Violation{Op: j.id, Related: []int{c.holding.id},
					Reason: fmt.Sprintf("the answer gives %s to member %s at epoch %d, but member %s, given it by op %d at epoch %d, "+
						"still holds it: it has not left it out of its owned partitions, left, nor been fenced, and no session "+
						"or rebalance timeout can have ended since (CurrentAssignmentBuilder assigns no partition that another "+
						"member holds, assigned or pending revocation)",
						part.p, j.member.id, j.respEpoch, c.m.id, c.holding.id, c.holding.respEpoch)}}}, true
			case !final:
				return nil, false
			}
		}
	}
	return nil, true
}

// early returns the violations found since its last call.
func (f *oneOwnerFold) early() []foldedViolation {
	found := f.found[f.told:]
	f.told = len(f.found)
	return found
}

func (f *oneOwnerFold) verdict() Verdict {
	if !f.heartbeats {
		return Verdict{Check: OneOwner, Status: Skipped, Reason: "the history has no consumer_group_heartbeat"}
	}
	for f.waiting.Len() > 0 { // every one, those answered at the clock's last instant too
		f.judge(heap.Pop(&f.waiting).(given))
	}
	for _, j := range f.undecided {
		v, _ := j.violation(true)
		f.found = append(f.found, v...)
	}
	f.undecided = nil
	return foldedVerdict(OneOwner, slices.Clone(f.found))
}

// memberKey names a member: its group and its member id.
type memberKey struct{ group, id string }

// memberOf is the member a consumer_group_heartbeat is of: the id its
// answer names, or the one it sent. Before Kafka 4.0 a join sent "" and
// the coordinator chose the id (KIP-1082), so a join whose answer is lost
// is of no member the history can name.
func memberOf(op histories.Op) (memberKey, bool) {
	if op.Kind != model.ConsumerGroupHeartbeat {
		return memberKey{}, false
	}
	id := op.Req.MemberID
	if op.Result.Succeeded() && op.Result.Resp.MemberID != "" {
		id = op.Result.Resp.MemberID
	}
	return memberKey{op.Req.Group, id}, id != ""
}

// groupMembers are the members of one group by id, and their ids in
// order, so that a reason does not depend on a map's order.
type groupMembers struct {
	byID map[string]*consumerMember
	ids  []string
	// heldBy are, for each partition, the ids of the members that hold
	// an answer listing it, in order. A member that holds none is skipped
	// by holders anyway; so a pipeline that restarts its workers for
	// hours does not walk every worker it ever had, once a bounded member
	// drops its holdings (compact).
	heldBy map[model.Partition][]string
}

// noteHolder adds m to heldBy for each partition b's answer lists.
func (g *groupMembers) noteHolder(m *consumerMember, b beat) {
	if !b.returned || !b.succeeded || b.assigned == nil {
		return
	}
	if g.heldBy == nil {
		g.heldBy = map[model.Partition][]string{}
	}
	for _, p := range *b.assigned {
		if at, found := slices.BinarySearch(g.heldBy[p], m.id); !found {
			g.heldBy[p] = slices.Insert(g.heldBy[p], at, m.id)
		}
	}
}

// holders lists the other members of the group that may hold p when the
// answer gv lists it for member id, in the order of their ids, up to the
// first that certainly does. A member holds p when an answer of its own
// listed p before gv was sent, and nothing it did since, up to gv's
// answer, may have given p up (mayHaveGivenUp), nor may its session have
// ended; it holds p certainly when no rebalance timer may have fenced it
// either (fencing).
func (g *groupMembers) holders(id string, p model.Partition, gv beat, t timers) []ownerCandidate {
	var out []ownerCandidate
	// The members that hold p, in order; those that no longer hold an
	// answer listing it are dropped from heldBy on the way.
	kept := g.heldBy[p][:0]
	defer func() { g.heldBy[p] = kept }()
	for i, other := range g.heldBy[p] {
		m := g.byID[other]
		if len(m.holdings[p]) == 0 {
			continue
		}
		kept = append(kept, other)
		if other == id {
			continue
		}
		holding, ok := m.lastHolding(p, gv.call)
		if !ok || m.mayHaveGivenUp(p, holding, gv.ret) {
			continue
		}
		session, moved, rebalance := m.fencing(holding, gv.ret, t)
		if session {
			continue
		}
		c := ownerCandidate{m: m, holding: holding, moved: moved, certain: !rebalance || moved < 1}
		out = append(out, c)
		if c.certain {
			kept = append(kept, g.heldBy[p][i+1:]...)
			break
		}
	}
	return out
}

// beat is a consumer_group_heartbeat as the check reads it.
type beat struct {
	id        int
	call, ret int64
	returned  bool
	succeeded bool
	fenced    bool // answered FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID
	reqEpoch  int32
	respEpoch int32
	owned     *[]model.Partition // the partitions the request owns
	assigned  *[]model.Partition // the assignment a successful answer lists
}

func beatOf(op *histories.Op) beat {
	b := beat{id: op.ID, call: op.Call, ret: op.Return, returned: op.Returned, succeeded: op.Result.Succeeded(),
		fenced:   op.Result.Answered && model.ClassOf(op.Kind, op.Result.Err) == model.FencedConsumer,
		reqEpoch: op.Req.MemberEpoch, owned: op.Req.OwnedPartitions}
	if b.succeeded {
		b.respEpoch, b.assigned = op.Result.Resp.MemberEpoch, op.Result.Resp.MemberAssignment
	}
	return b
}

// consumerMember is what the history shows of one member, indexed as its
// heartbeats come, so that a long recording is judged in time in
// proportion to its length.
type consumerMember struct {
	id string
	// beats are its heartbeats in call order.
	beats []beat
	// holdings are, for each partition, the indexes in beats of the
	// answers whose assignment lists it, in the order of their return.
	holdings map[model.Partition][]int
	// gaveUp are, for each partition it held, the heartbeats that may
	// have given it up (gaveUp), in call order, and the latest instant
	// at which each of them and those before it may take effect.
	gaveUp map[model.Partition]*gaveUpIndex
	// epochs are its answers that name an epoch, in the order of their
	// return, each with the one before it that names a lower epoch
	// (-1 when none does): a monotonic stack's "previous smaller".
	epochs []epochAnswer
	// successes are its answered heartbeats, in the order of their
	// return, each with the latest call of those up to it.
	successes []success
	// revoking are the heartbeats that may have begun a revocation
	// (mayBeginRevoking), in call order, and the latest instant at
	// which each of them and those before it may take effect.
	revoking gaveUpIndex
	// leastRebalanceMs is the least rebalance timeout it sent;
	// math.MaxInt64 while it sent none.
	leastRebalanceMs int64
	// bounded: it has dropped heartbeats (compact), and keeps no timer
	// indexes (successes, epochs, revoking).
	bounded bool
	// droppedLatest is, for each partition, the latest instant at which
	// a heartbeat dropped from its gaveUp index may take effect.
	droppedLatest map[model.Partition]int64
	// compactAt is how many heartbeats it may hold before the next
	// compact.
	compactAt int
}

// compact drops the heartbeats that no answer called at or after horizon
// is judged against. Such an answer finds, for each partition, the last
// holding returned before its call: one returned at or after horizon, or
// the last returned before it, unless a heartbeat since may have given
// the partition up already. The holdings before are dropped. So are the
// heartbeats called before the earliest holding kept and before the
// earliest heartbeat that may take effect at or after horizon: a dropped
// one that may have given a partition up counts only through the latest
// instant it may take effect (droppedLatest), which is before any later
// holding's call.
func (m *consumerMember) compact(horizon int64) {
	m.bounded = true
	m.successes, m.epochs, m.revoking = nil, nil, gaveUpIndex{}
	cut := len(m.beats)
	for i, b := range m.beats {
		if !b.returned || b.ret >= horizon {
			cut = i
			break
		}
	}
	kept := map[model.Partition][]int{}
	for p, held := range m.holdings {
		k := sort.Search(len(held), func(k int) bool { return m.beats[held[k]].ret >= horizon })
		if k > 0 && !m.mayHaveGivenUp(p, m.beats[held[k-1]], horizon-1) {
			k-- // the last holding before the horizon may still be found
		}
		if k < len(held) {
			kept[p] = held[k:]
			for _, i := range held[k:] {
				cut = min(cut, i)
			}
		}
	}
	for cut > 0 && cut < len(m.beats) && m.beats[cut-1].call == m.beats[cut].call {
		cut-- // mayHaveGivenUp finds a holding's call among the calls
	}
	for p := range m.holdings {
		held, ok := kept[p]
		if !ok {
			delete(m.holdings, p)
			delete(m.gaveUp, p)
			delete(m.droppedLatest, p)
			continue
		}
		shifted := make([]int, len(held))
		for k, i := range held {
			shifted[k] = i - cut
		}
		m.holdings[p] = shifted
		x := m.gaveUp[p]
		k := sort.SearchInts(x.ops, cut)
		if k > 0 {
			m.droppedLatest[p] = max(m.droppedLatest[p], x.latest[k-1])
		}
		ops := make([]int, len(x.ops)-k)
		for j, i := range x.ops[k:] {
			ops[j] = i - cut
		}
		x.ops, x.latest = ops, slices.Clone(x.latest[k:])
	}
	m.beats = slices.Clone(m.beats[cut:])
	m.compactAt = 2 * len(m.beats)
}

type success struct{ at, call, latestCall int64 }

type gaveUpIndex struct {
	ops    []int   // indexes in beats, in call order
	latest []int64 // the latest effect of ops[0..i]: math.MaxInt64 for one unanswered
}

type epochAnswer struct {
	at, epoch int64
	lower     int
}

// add takes the member's next heartbeat in call order into its indexes.
func (m *consumerMember) add(b beat) {
	i := len(m.beats)
	m.beats = append(m.beats, b)
	for p, x := range m.gaveUp {
		if gaveUp(b, p) {
			x.add(i, b)
		}
	}
	if b.returned && b.succeeded && b.assigned != nil {
		for _, p := range *b.assigned {
			held := m.holdings[p]
			// After those that returned by its return: a stable sort's place.
			at := sort.Search(len(held), func(k int) bool { return m.beats[held[k]].ret > b.ret })
			m.holdings[p] = slices.Insert(held, at, i)
			if m.gaveUp[p] == nil {
				x := &gaveUpIndex{}
				for k, old := range m.beats {
					if gaveUp(old, p) {
						x.add(k, old)
					}
				}
				m.gaveUp[p] = x
			}
		}
	}
	if m.bounded {
		return // no timer can end a hold
	}
	if b.returned && b.succeeded {
		m.addSuccess(success{at: b.ret, call: b.call})
		if b.respEpoch > 0 {
			m.addEpoch(epochAnswer{at: b.ret, epoch: int64(b.respEpoch)})
		}
	}
	if mayBeginRevoking(b) {
		m.revoking.add(i, b)
	}
}

// addSuccess puts s among the successes in the order of their return,
// after those that returned at its instant, and the latest calls from
// there on again.
func (m *consumerMember) addSuccess(s success) {
	at := sort.Search(len(m.successes), func(k int) bool { return m.successes[k].at > s.at })
	m.successes = slices.Insert(m.successes, at, s)
	for k := at; k < len(m.successes); k++ {
		m.successes[k].latestCall = m.successes[k].call
		if k > 0 {
			m.successes[k].latestCall = max(m.successes[k].latestCall, m.successes[k-1].latestCall)
		}
	}
}

// addEpoch puts a among the epoch answers in the order of their return,
// and links it and those after it to the last answer before each at a
// lower epoch: following the links from an answer walks the monotonic
// stack as it stood after it.
func (m *consumerMember) addEpoch(a epochAnswer) {
	at := sort.Search(len(m.epochs), func(k int) bool { return m.epochs[k].at > a.at })
	m.epochs = slices.Insert(m.epochs, at, a)
	for k := at; k < len(m.epochs); k++ {
		top := k - 1
		for top >= 0 && m.epochs[top].epoch >= m.epochs[k].epoch {
			top = m.epochs[top].lower
		}
		m.epochs[k].lower = top
	}
}

// rebalanceMs is the least rebalance timeout the member sent; 1 when it
// sent none, because it may have any.
func (m *consumerMember) rebalanceMs() int64 {
	if m.leastRebalanceMs == math.MaxInt64 {
		return 1
	}
	return m.leastRebalanceMs
}

// add appends beats[i], op, which comes after those it holds in call
// order.
func (x *gaveUpIndex) add(i int, b beat) {
	end := int64(math.MaxInt64)
	if b.returned {
		end = b.ret
	}
	if n := len(x.latest); n > 0 {
		end = max(end, x.latest[n-1])
	}
	x.ops, x.latest = append(x.ops, i), append(x.latest, end)
}

// lastHolding is the member's last answer, returned before the instant
// before, whose assignment lists p: the coordinator had assigned p to the
// member by then. An answer that leaves the assignment out says nothing
// new, so it is not counted (the benefit of the doubt).
func (m *consumerMember) lastHolding(p model.Partition, before int64) (beat, bool) {
	held := m.holdings[p]
	n, _ := slices.BinarySearchFunc(held, before, func(i int, t int64) int { return cmp.Compare(m.beats[i].ret, t) })
	if n == 0 {
		return beat{}, false
	}
	return m.beats[held[n-1]], true
}

// mayHaveGivenUp reports whether a heartbeat of the member may have
// taken p from it after the answer holding and before the instant until.
// A heartbeat takes effect at some moment between its call and its
// answer, or at any moment after its call when it has no answer: one
// called before holding counts when it may take effect after holding's
// call.
func (m *consumerMember) mayHaveGivenUp(p model.Partition, holding beat, until int64) bool {
	x := m.gaveUp[p]
	if x == nil {
		return false
	}
	call := func(i int, t int64) int { return cmp.Compare(m.beats[i].call, t) }
	from, _ := slices.BinarySearchFunc(x.ops, holding.call, call)
	to, found := slices.BinarySearchFunc(x.ops, until, call)
	for found && to < len(x.ops) && m.beats[x.ops[to]].call == until {
		to++
	}
	if from > 0 && x.latest[from-1] > holding.call {
		return true
	}
	if latest, dropped := m.droppedLatest[p]; from == 0 && dropped && latest > holding.call {
		return true
	}
	for _, i := range x.ops[from:to] {
		if m.beats[i].id != holding.id {
			return true
		}
	}
	return false
}

// gaveUp reports whether the heartbeat b may have ended its member's
// hold of p at the coordinator, whatever its answer (a lost answer may
// have taken effect):
//   - its owned partitions leave p out: the member acknowledges the
//     revocation (CurrentAssignmentBuilder.ownsRevokedPartitions; a
//     request that sends no owned partitions still owns them all);
//   - it leaves, with epoch -1 or -2 (GroupMetadataManager.consumerGroupLeave,
//     consumerGroupStaticMemberGroupLeave: a static member's partitions
//     wait for its instance id, which is not another member's hold);
//   - it joins again with epoch 0, as a member does after it was fenced;
//   - it is answered FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or
//     FENCED_INSTANCE_ID: the member gives up all its partitions
//     (throwIfConsumerGroupMemberEpochIsInvalid), and the coordinator
//     may have removed it before.
//
// An answer that takes p away is no release: p is then pending
// revocation, and held still.
func gaveUp(b beat, p model.Partition) bool {
	switch {
	case b.owned != nil && !slices.Contains(*b.owned, p):
		return true
	case b.reqEpoch == model.LeaveMemberEpoch || b.reqEpoch == model.StaticLeaveMemberEpoch || b.reqEpoch == model.JoinMemberEpoch:
		return true
	}
	return b.fenced
}

// mayBeginRevoking reports whether the heartbeat b may have begun a
// revocation, and so the member's rebalance timer
// (GroupMetadataManager.maybeReconcile schedules it when the member
// enters UNREVOKED_PARTITIONS). Such a change takes partitions out of the
// member's assignment, so Kafka sends the assignment with its answer
// (hasAssignedPartitionsChanged): an answer without one began none, and
// neither did one that leaves out nothing the member may still own. A
// heartbeat with no answer, or an error, may have.
func mayBeginRevoking(b beat) bool {
	if !b.succeeded {
		return true
	}
	assigned := b.assigned
	if assigned == nil {
		return false
	}
	owned := b.owned
	if owned == nil {
		return true
	}
	for _, p := range *owned {
		if !slices.Contains(*assigned, p) {
			return true
		}
	}
	return false
}

// fencing tells whether a timer may have fenced the member, from the
// answer holding on, by the instant until: session, whether its session
// timer may have; and, when rebalance, by how much the clock moved while
// its rebalance timer ran, so that the timer may have fenced it when its
// rebalance timeout is moved or less.
//
// Its session timer (group.consumer.session.timeout.ms: Kafka's default,
// which the model takes too, because a history does not say) starts again
// at each heartbeat, and a fenced member's heartbeats are UNKNOWN_MEMBER_ID
// (GroupMetadataManager.consumerGroupFenceMember removes it). So the
// session can only have ended after the last heartbeat answered with
// success by then.
//
// Its rebalance timer fences it when it has not revoked what it was told
// to within its rebalance timeout. The timer is scheduled with the
// member's epoch when it begins revoking, and fences only a member still
// at that epoch (scheduleConsumerGroupRebalanceTimeout); a member that
// revokes moves to a later epoch. So the timer can only run from a
// heartbeat that may have begun a revocation (mayBeginRevoking), at
// holding's epoch or later.
func (m *consumerMember) fencing(holding beat, until int64, t timers) (session bool, moved int64, rebalance bool) {
	n, _ := slices.BinarySearchFunc(m.successes, until+1, func(s success, v int64) int { return cmp.Compare(s.at, v) })
	lastBeat := holding.call
	if n > 0 {
		lastBeat = max(lastBeat, m.successes[n-1].latestCall)
	}
	if t.mayHaveFired(model.DefaultConsumerSessionTimeoutMs, lastBeat, until) {
		return true, 0, false
	}
	from := m.epochFrom(holding)
	x := m.revoking
	first, _ := slices.BinarySearchFunc(x.ops, from, func(i int, v int64) int { return cmp.Compare(m.beats[i].call, v) })
	switch {
	case first > 0 && x.latest[first-1] > from:
		// A heartbeat sent before may take effect at this epoch.
	case first < len(x.ops) && m.beats[x.ops[first]].call <= until:
		from = m.beats[x.ops[first]].call
	default:
		return false, 0, false
	}
	moved, rebalance = t.moved(from, until)
	return false, moved, rebalance
}

// epochFrom is the earliest instant at which the member may have been at
// the epoch of holding, or at a later one: not before an answer that
// showed it at an older epoch, nor before its first heartbeat.
func (m *consumerMember) epochFrom(holding beat) int64 {
	from := m.beats[0].call
	epoch := int64(holding.respEpoch)
	if epoch <= 0 {
		return from
	}
	// The answers returned before holding's call, and the last of them
	// at a lower epoch than holding's.
	n, _ := slices.BinarySearchFunc(m.epochs, holding.call, func(a epochAnswer, t int64) int { return cmp.Compare(a.at, t) })
	for i := n - 1; i >= 0; {
		if m.epochs[i].epoch < epoch {
			return min(max(from, m.epochs[i].at), holding.call)
		}
		i = m.epochs[i].lower
	}
	return min(from, holding.call)
}

// timers is how the history's clock moves the coordinator's timers: at
// its ticks (each the instant and the milliseconds it moves, and the
// milliseconds of the ticks up to it), or, on a wall clock, with the
// clock itself.
type timers struct {
	wall  bool
	ticks []tick
}

type tick struct{ at, ms, upTo int64 }

// add takes a tick called at at, which comes after every tick before in
// call order.
func (t *timers) add(at, ms int64) {
	var sum int64
	if n := len(t.ticks); n > 0 {
		sum = t.ticks[n-1].upTo
	}
	t.ticks = append(t.ticks, tick{at: at, ms: ms, upTo: min(sum+ms, math.MaxInt64/2)})
}

// mayHaveFired reports whether a timer of timeoutMs, started no earlier
// than from, may have fired by until: the clock moved by timeoutMs at
// least.
func (t timers) mayHaveFired(timeoutMs, from, until int64) bool {
	moved, ok := t.moved(from, until)
	return ok && moved >= timeoutMs
}

// moved is how far the clock moved from from to until: on a wall clock,
// the difference; under ticks, the ticks from from to until, ends
// included. ok is false when no tick came in between.
func (t timers) moved(from, until int64) (moved int64, ok bool) {
	if t.wall {
		return until - from, true
	}
	at := func(k tick, v int64) int { return cmp.Compare(k.at, v) }
	first, _ := slices.BinarySearchFunc(t.ticks, from, at)
	last, found := slices.BinarySearchFunc(t.ticks, until, at)
	for found && last < len(t.ticks) && t.ticks[last].at == until {
		last++
	}
	if last <= first {
		return 0, false
	}
	moved = t.ticks[last-1].upTo
	if first > 0 {
		moved -= t.ticks[first-1].upTo
	}
	return moved, true
}
