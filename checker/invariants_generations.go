package checker

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// groupIndex holds one group's operations as the generations of its
// commits are judged (generationsFold). Its classic history holds the
// join_groups and sync_groups, which staleGeneration and zombieOverload
// read. Its consumer history holds the consumer_group_heartbeats, which
// staleMemberEpoch and zombieMemberOverload read. Each is in call order.
//
// A commit at a member epoch is stale only when the committer's own
// heartbeat had answered a newer epoch before the commit was called
// (staleMemberEpoch). So the index keeps, for each member, the newest
// epoch its answers gave among those that returned before the latest
// commit's call (newest). A commit whose member has no newer epoch there
// is not stale, and is judged without a scan. The others, which a
// history of the pipeline's shape has few of, are judged by the scan.
//
// The commits are judged in call order, so that the answers returned
// before a commit's call only grow. An answer that has not returned by
// then waits in returns, ordered by its return.
type groupIndex struct {
	classic, consumer histories.History
	newest            map[string]int32 // by member
	returns           answersByReturn
	// asOf is the call the newest epochs hold for; a commit called
	// before it (not in call order) is judged by the scan.
	asOf int64
	// bounded: keep only what a regular history still needs (bound).
	bounded bool
	// generations and epochs are the newest generations of the classic
	// answers kept, and the newest member epochs of the heartbeats'.
	generations, epochs epochWindow
	// lastJoins and lastBeats are, by client, its join_groups and its
	// consumer_group_heartbeats called last (lastAnswer).
	lastJoins, lastBeats map[string][]histories.Op
	// beats are the heartbeat answers kept, by member, client and epoch.
	beats map[beatKey][]keptBeat
}

// keptGroupEpochs is how many of a group's newest generations, and of its
// newest member epochs, a bounded groupIndex keeps the answers of. A
// commit of a regular history is at its member's newest generation or
// epoch, or close to it.
var keptGroupEpochs = 16

// epochWindow is the newest generations (or member epochs) a bounded
// groupIndex keeps the answers of. Every answer at or below floor is
// dropped once cut.
type epochWindow struct {
	kept  map[int32]bool
	floor int32
	cut   bool
}

// keep reports whether an answer at epoch e is to be kept, and notes it.
// moved: the window moved up, so that the answers at or below the floor
// are to be dropped.
func (w *epochWindow) keep(e int32) (kept, moved bool) {
	if w.cut && e <= w.floor {
		return false, false
	}
	if w.kept == nil {
		w.kept = map[int32]bool{}
	}
	w.kept[e] = true
	for len(w.kept) > keptGroupEpochs {
		lowest := e
		for k := range w.kept {
			lowest = min(lowest, k)
		}
		delete(w.kept, lowest)
		w.floor, w.cut, moved = lowest, true, true
	}
	return true, moved
}

// below reports whether answers above e may have been dropped: e is
// below the floor.
func (w *epochWindow) below(e int32) bool { return w.cut && e < w.floor }

// beatKey groups the heartbeat answers one of which stands for the rest.
type beatKey struct {
	member, client string
	epoch          int32
}

// keptBeat is a kept heartbeat answer as the next ones are compared to it.
type keptBeat struct {
	ret        int64
	assignment *[]model.Partition
}

// bound makes the index keep only what a commit of a regular history
// still reads: the joins and syncs of the group's newest generations and
// the heartbeat answers of its newest member epochs (keptGroupEpochs),
// one for each member, client, epoch and assignment, and each client's
// requests called last. A commit below the window, which a regular
// history does not send, needs what was dropped (needsDropped).
func (x *groupIndex) bound() {
	x.bounded = true
	x.lastJoins = map[string][]histories.Op{}
	x.lastBeats = map[string][]histories.Op{}
	x.beats = map[beatKey][]keptBeat{}
}

// called notes op as one of its client's requests called last.
func called(last map[string][]histories.Op, op *histories.Op) {
	client := op.Process()
	ops := last[client]
	if len(ops) > 0 && op.Call > ops[0].Call {
		clear(ops)
		ops = ops[:0]
	}
	last[client] = append(ops, *op)
}

// addBounded is add for a bounded index. It returns why the fold cannot
// go on exactly, or "": a join_group whose generation was dropped may
// show the group made again (remadeAfter).
func (x *groupIndex) addBounded(op *histories.Op) string {
	switch op.Kind {
	case model.JoinGroup:
		called(x.lastJoins, op)
	case model.ConsumerGroupHeartbeat:
		called(x.lastBeats, op)
		x.advance(op.Call)
	}
	if !op.Result.Succeeded() {
		return "" // read by lastAnswer alone
	}
	if op.Kind != model.ConsumerGroupHeartbeat {
		gen := assignedGeneration(*op)
		if op.Kind == model.JoinGroup {
			// A lower generation after a higher one returned shows the
			// group made again (remadeAfter), whose joins below the
			// window may have been dropped.
			for _, j := range x.classic.Ops {
				if j.Kind == model.JoinGroup && j.Return < op.Call && j.Result.Resp.GenerationID > gen {
					return fmt.Sprintf("op %d answered generation %d of group %s after op %d had answered generation %d: the bounded fold does not follow a group made again",
						op.ID, gen, op.Req.Group, j.ID, j.Result.Resp.GenerationID)
				}
			}
		}
		kept, moved := x.generations.keep(gen)
		if !kept {
			return "" // at or below the floor
		}
		x.classic.Ops = append(x.classic.Ops, *op)
		if moved {
			x.classic.Ops = slices.DeleteFunc(x.classic.Ops, func(o histories.Op) bool { return assignedGeneration(o) <= x.generations.floor })
		}
		return ""
	}
	member := op.Result.Resp.MemberID
	if member == "" {
		member = op.Req.MemberID
	}
	heap.Push(&x.returns, memberAnswer{ret: op.Return, member: member, epoch: op.Result.Resp.MemberEpoch})
	epoch := op.Result.Resp.MemberEpoch
	if x.epochs.cut && epoch <= x.epochs.floor {
		return "" // at or below the floor
	}
	key := beatKey{member: member, client: op.Process(), epoch: epoch}
	assignment := op.Result.Resp.MemberAssignment
	for _, b := range x.beats[key] {
		// An earlier answer of the member, client and epoch, returned
		// by op's return, that gave every partition op gave, is found
		// first wherever op would be.
		if b.ret <= op.Return && (assignment == nil || b.assignment != nil && subsetOf(*assignment, *b.assignment)) {
			return ""
		}
	}
	_, moved := x.epochs.keep(epoch)
	x.beats[key] = append(x.beats[key], keptBeat{ret: op.Return, assignment: assignment})
	x.consumer.Ops = append(x.consumer.Ops, *op)
	if moved {
		x.consumer.Ops = slices.DeleteFunc(x.consumer.Ops, func(o histories.Op) bool { return o.Result.Resp.MemberEpoch <= x.epochs.floor })
		maps.DeleteFunc(x.beats, func(k beatKey, _ []keptBeat) bool { return k.epoch <= x.epochs.floor })
	}
	return ""
}

// subsetOf reports whether every partition of a is in b.
func subsetOf(a, b []model.Partition) bool {
	for _, p := range a {
		if !slices.Contains(b, p) {
			return false
		}
	}
	return true
}

// lastOf is the history lastAnswer reads the commit's client's last
// request of kind from.
func (x *groupIndex) lastOf(commit histories.Op, kind model.Kind) histories.History {
	switch {
	case !x.bounded && kind == model.JoinGroup:
		return x.classic
	case !x.bounded:
		return x.consumer
	case kind == model.JoinGroup:
		return histories.History{Ops: x.lastJoins[commit.Process()]}
	}
	return histories.History{Ops: x.lastBeats[commit.Process()]}
}

// needsDropped says why a bounded index cannot judge commit exactly, or
// "": the generation or member epoch the commit is judged from is below
// the window, so that answers above it may have been dropped.
func (x *groupIndex) needsDropped(commit histories.Op) string {
	if commit.Call < x.asOf {
		return fmt.Sprintf("op %d came after an operation of group %s called later", commit.ID, commit.Req.Group)
	}
	gen := commit.Req.GenerationID
	if gen >= 0 {
		if x.generations.below(gen) {
			return fmt.Sprintf("op %d committed at generation %d of group %s, below generation %d, whose joins and syncs the bounded fold dropped",
				commit.ID, gen, commit.Req.Group, x.generations.floor)
		}
		x.advance(commit.Call)
		if e, ok := x.newest[commit.Req.MemberID]; ok && e > gen && x.epochs.below(gen) {
			return fmt.Sprintf("op %d committed at member epoch %d of group %s, below epoch %d, whose heartbeats the bounded fold dropped",
				commit.ID, gen, commit.Req.Group, x.epochs.floor)
		}
		return ""
	}
	if last, ok := lastAnswer(x.lastOf(commit, model.JoinGroup), commit, model.JoinGroup, generationOf); ok && x.generations.below(generationOf(last)) {
		return fmt.Sprintf("op %d committed with no generation after op %d answered generation %d of group %s, below generation %d, whose joins and syncs the bounded fold dropped",
			commit.ID, last.ID, generationOf(last), commit.Req.Group, x.generations.floor)
	}
	if last, ok := lastAnswer(x.lastOf(commit, model.ConsumerGroupHeartbeat), commit, model.ConsumerGroupHeartbeat, memberEpochOf); ok && memberEpochOf(last) != 0 && x.epochs.below(memberEpochOf(last)) {
		return fmt.Sprintf("op %d committed with no member epoch after op %d answered epoch %d of group %s, below epoch %d, whose heartbeats the bounded fold dropped",
			commit.ID, last.ID, memberEpochOf(last), commit.Req.Group, x.epochs.floor)
	}
	return ""
}

func newGroupIndex() *groupIndex {
	return &groupIndex{newest: map[string]int32{}}
}

// memberAnswer is a succeeded consumer_group_heartbeat's answer: the
// member it answered (consumerAnswer) and the epoch.
type memberAnswer struct {
	ret    int64
	member string
	epoch  int32
}

func (x *groupIndex) add(op *histories.Op) {
	if op.Kind != model.ConsumerGroupHeartbeat {
		x.classic.Ops = append(x.classic.Ops, *op)
		return
	}
	x.consumer.Ops = append(x.consumer.Ops, *op)
	if !op.Result.Succeeded() {
		return
	}
	member := op.Result.Resp.MemberID
	if member == "" {
		member = op.Req.MemberID
	}
	heap.Push(&x.returns, memberAnswer{ret: op.Return, member: member, epoch: op.Result.Resp.MemberEpoch})
}

// advance takes in the answers that returned before call.
func (x *groupIndex) advance(call int64) {
	for len(x.returns) > 0 && x.returns[0].ret < call {
		a := heap.Pop(&x.returns).(memberAnswer)
		if e, ok := x.newest[a.member]; !ok || a.epoch > e {
			x.newest[a.member] = a.epoch
		}
	}
	x.asOf = call
}

// staleMemberEpoch is staleMemberEpoch of the group's heartbeats, which
// scans them only when the committer had moved on to a newer epoch.
func (x *groupIndex) staleMemberEpoch(commit histories.Op) (Violation, bool) {
	if commit.Call < x.asOf {
		return staleMemberEpoch(x.consumer, commit)
	}
	x.advance(commit.Call)
	if e, ok := x.newest[commit.Req.MemberID]; !ok || e <= commit.Req.GenerationID {
		return Violation{}, false
	}
	return staleMemberEpoch(x.consumer, commit)
}

// answersByReturn is a min-heap of answers by their return.
type answersByReturn []memberAnswer

func (h answersByReturn) Len() int           { return len(h) }
func (h answersByReturn) Less(i, j int) bool { return h[i].ret < h[j].ret }
func (h answersByReturn) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *answersByReturn) Push(v any)        { *h = append(*h, v.(memberAnswer)) }
func (h *answersByReturn) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
