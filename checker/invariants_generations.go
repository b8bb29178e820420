package checker

import (
	"container/heap"

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
