package kafka

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// The group coordinator's requests (classic consumer groups).

const (
	protocolType = "consumer"
	// protocolName is the assignor this target speaks: round-robin over
	// the members the JoinGroup answer lists, sorted by member id.
	protocolName = "fencecheck-roundrobin"
	// joinAttempts bounds the JoinGroup rounds of one join: the one that
	// learns the member id (MEMBER_ID_REQUIRED, KIP-394) and the real one.
	joinAttempts = 2
)

// JoinGroup is one member's whole rebalance round, JoinGroup then SyncGroup.
// A new member ("" member id) first learns its id (KIP-394). The member that
// leads the round assigns the request's partitions round-robin over the
// members the JoinGroup answer lists.
func (t *Target) JoinGroup(ctx context.Context, r model.Request) model.Result {
	stop := t.keepOthersAlive(r.Group, r.MemberID)
	res := t.joinRound(ctx, r, nil)
	stop()
	if res.Succeeded() {
		t.noteMember(res.Resp.MemberID, &r, res.Resp.GenerationID)
	}
	return res
}

// joinRound is one member's JoinGroup then SyncGroup, sent through the
// target's client, or via the member's own (heartbeat.go).
func (t *Target) joinRound(ctx context.Context, r model.Request, via *kgo.Client) model.Result {
	group := t.names.group(r.Group)
	join, undecided := t.join(ctx, group, r, via)
	if undecided != nil {
		return *undecided
	}
	if join.ErrorCode != 0 {
		return t.result(model.JoinGroup, join.ErrorCode, model.NewResponse())
	}
	sync, undecided := t.sync(ctx, group, join, r, via)
	if undecided != nil {
		return *undecided
	}
	out := model.NewResponse()
	out.MemberID, out.GenerationID, out.Leader = join.MemberID, join.Generation, join.LeaderID
	out.Protocol, out.ProtocolType = wire.Nullable(join.Protocol), wire.Nullable(join.ProtocolType)
	if sync.ErrorCode == 0 {
		assignment, err := wire.Assignment(sync.MemberAssignment, r.Partitions, t.names.partition)
		if err != nil {
			return t.undecided(model.JoinGroup, "unreadable assignment: %v", err)
		}
		out.Assignment = assignment
	}
	return t.result(model.JoinGroup, sync.ErrorCode, out)
}

func (t *Target) join(ctx context.Context, group string, r model.Request, via *kgo.Client) (*kmsg.JoinGroupResponse, *model.Result) {
	member := r.MemberID
	for range joinAttempts {
		req := t.joinRequest(group, member, r)
		resp, undecided := groupExchange(ctx, t, via, group, func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }, req)
		if undecided != nil {
			return nil, undecided
		}
		t.sawMemberID(resp.MemberID)
		if resp.ErrorCode != kerr.MemberIDRequired.Code || member != "" {
			return resp, nil
		}
		member = resp.MemberID
	}
	res := t.undecided(model.JoinGroup, "the coordinator asked for a member id twice")
	return nil, &res
}

func (t *Target) joinRequest(group, member string, r model.Request) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, protocolType
	req.InstanceID = instanceOf(r) // v5 on
	session := r.SessionTimeoutMs
	if session <= 0 {
		session = model.DefaultSessionTimeoutMs
	}
	req.SessionTimeoutMillis = t.scaledMs(session)
	t.clock.sessionTimeout(group, session)
	req.RebalanceTimeoutMillis = int32(t.cfg.RebalanceTimeout.Milliseconds())
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = t.topicsOf(r.Partitions)
	protocol := kmsg.NewJoinGroupRequestProtocol()
	protocol.Name, protocol.Metadata = protocolName, meta.AppendTo(nil)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol}
	return req
}

// instanceOf is a request's group.instance.id as Kafka's requests carry
// it: null for a dynamic member (KIP-345).
func instanceOf(r model.Request) *string {
	if r.InstanceID == "" {
		return nil
	}
	id := r.InstanceID
	return &id
}

// topicsOf is the cluster topics of partitions, sorted, each once.
func (t *Target) topicsOf(partitions []model.Partition) []string {
	var topics []string
	for _, p := range partitions {
		if tp, err := t.names.split(p); err == nil && !slices.Contains(topics, tp.topic) {
			topics = append(topics, tp.topic)
		}
	}
	slices.Sort(topics)
	return topics
}

func (t *Target) sync(ctx context.Context, group string, join *kmsg.JoinGroupResponse, r model.Request, via *kgo.Client) (*kmsg.SyncGroupResponse, *model.Result) {
	partitions := r.Partitions
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = group, join.Generation, join.MemberID
	req.InstanceID = instanceOf(r) // v3 on
	pt, pn := protocolType, protocolName
	req.ProtocolType, req.Protocol = &pt, &pn
	if join.LeaderID == join.MemberID {
		req.GroupAssignment = t.assign(join.Members, partitions)
	}
	return groupExchange(ctx, t, via, group, func(r *kmsg.SyncGroupResponse) int16 { return r.ErrorCode }, req)
}

// groupExchange sends a request of a group member's round: through the
// target's routes, or through the member's own client, which finds the
// coordinator itself. Each member needs its own: a client sends one
// group request at a time per broker, and a join waits for the others'.
func groupExchange[R kmsg.Response](ctx context.Context, t *Target, via *kgo.Client, group string, code func(R) int16, req kmsg.Request) (R, *model.Result) {
	if via == nil {
		return exchange[R](ctx, t, model.JoinGroup, t.toCoordinator(groupCoordinator, group, topCode(code)), req)
	}
	ctx, cancel := t.requestCtx(ctx)
	defer cancel()
	sent := time.Now()
	resp, err := via.Request(ctx, req)
	t.clock.exchanged(req, resp, sent, time.Now())
	if err != nil {
		var zero R
		res := model.NoAnswer()
		return zero, &res
	}
	return typedAnswer[R](t, model.JoinGroup, resp)
}

// sawMemberID numbers the member ids the coordinator hands out, in the
// order this target first sees them.
func (t *Target) sawMemberID(id string) {
	if id == "" {
		return
	}
	t.membersMu.Lock()
	defer t.membersMu.Unlock()
	if _, ok := t.memberOrder[id]; !ok {
		t.memberOrder[id] = len(t.memberOrder)
	}
}

// assign spreads partitions round-robin over the members, in the order
// the target first saw their ids (then by id, for any it never saw). The
// ids are the broker's, random on kfake: in their own order the same
// joins would spread the partitions differently from one run to the next,
// and a seed would not replay its interleaving.
func (t *Target) assign(members []kmsg.JoinGroupResponseMember, partitions []model.Partition) []kmsg.SyncGroupRequestGroupAssignment {
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.MemberID)
	}
	t.membersMu.Lock()
	slices.SortFunc(ids, func(a, b string) int {
		ia, oka := t.memberOrder[a]
		ib, okb := t.memberOrder[b]
		switch {
		case oka && okb:
			return cmp.Compare(ia, ib)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	t.membersMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	shares := make([]map[string][]int32, len(ids))
	for i, p := range partitions {
		tp, err := t.names.split(p)
		if err != nil {
			continue
		}
		share := &shares[i%len(ids)]
		if *share == nil {
			*share = map[string][]int32{}
		}
		(*share)[tp.topic] = append((*share)[tp.topic], tp.partition)
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, len(ids))
	for i, id := range ids {
		out[i] = kmsg.NewSyncGroupRequestGroupAssignment()
		out[i].MemberID, out[i].MemberAssignment = id, encodeAssignment(shares[i])
	}
	return out
}

func encodeAssignment(share map[string][]int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, topic := range slices.Sorted(maps.Keys(share)) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, share[topic]
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// LeaveGroup takes a member out of its group.
func (t *Target) LeaveGroup(ctx context.Context, r model.Request) model.Result {
	group := t.names.group(r.Group)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = group, r.MemberID // up to v2
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = r.MemberID, instanceOf(r)
	req.Members = []kmsg.LeaveGroupRequestMember{m} // v3 on
	resp, undecided := exchange[*kmsg.LeaveGroupResponse](ctx, t, model.LeaveGroup,
		t.toCoordinator(groupCoordinator, group, wire.LeaveCodes), req)
	if undecided != nil {
		return *undecided
	}
	t.forgetMember(r.MemberID)
	return t.result(model.LeaveGroup, wire.FirstError(wire.LeaveCodes(resp)), model.NewResponse())
}

// OffsetFetch reads a group's committed offset of one partition; with
// require_stable, the broker refuses while a transaction holds a pending
// offset for it (KIP-447).
func (t *Target) OffsetFetch(ctx context.Context, r model.Request) model.Result {
	tp, err := t.names.split(r.Partition)
	if err != nil {
		return t.undecided(model.OffsetFetch, "not sent: %v", err)
	}
	group := t.names.group(r.Group)
	req := t.offsetFetchRequest(ctx, group, tp, r.RequireStable)
	resp, undecided := exchange[*kmsg.OffsetFetchResponse](ctx, t, model.OffsetFetch,
		t.toCoordinator(groupCoordinator, group, offsetFetchCodes), req)
	if undecided != nil {
		return *undecided
	}
	offset, code, ok := offsetFetchAnswer(resp)
	if !ok {
		return t.undecided(model.OffsetFetch, "the answer names no partition")
	}
	out := model.NewResponse()
	out.Offset = max(offset, model.NoOffset)
	return t.result(model.OffsetFetch, code, out)
}

// offsetFetchRequest asks in both shapes: one group (up to v7) and a list
// of groups (v8 on, topic ids from v10); the version sent decides.
func (t *Target) offsetFetchRequest(ctx context.Context, group string, tp topicPartition, requireStable bool) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, requireStable
	old := kmsg.NewOffsetFetchRequestTopic()
	old.Topic, old.Partitions = tp.topic, []int32{tp.partition}
	req.Topics = []kmsg.OffsetFetchRequestTopic{old}
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = tp.topic, []int32{tp.partition}
	gt.TopicID = t.routes.topicID(ctx, tp)
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return req
}

// offsetFetchAnswer is the offset and error of the one partition asked
// about; a group-level error speaks for the partition.
func offsetFetchAnswer(resp *kmsg.OffsetFetchResponse) (offset int64, code int16, ok bool) {
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return model.NoOffset, g.ErrorCode, true
		}
		if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			return 0, 0, false
		}
		p := g.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode, true
	}
	if resp.ErrorCode != 0 {
		return model.NoOffset, resp.ErrorCode, true
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, false
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode, true
}

func offsetFetchCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.OffsetFetchResponse)
	if !ok {
		return nil
	}
	_, code, _ := offsetFetchAnswer(r)
	return []int16{code}
}

// OffsetCommit is a consumer's plain commit, outside any transaction, as
// an at-least-once consumer sends it: to the group's coordinator, with the
// member id and generation of the member's join (generation -1 and no
// member for a consumer outside the group). The offsets are committed
// when the broker answers; no marker is involved.
func (t *Target) OffsetCommit(ctx context.Context, r model.Request) model.Result {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = t.names.group(r.Group)
	req.Generation, req.MemberID = r.GenerationID, r.MemberID
	req.InstanceID = instanceOf(r) // v7 on
	topics, err := t.plainCommitTopics(ctx, r.Offsets)
	if err != nil {
		return t.undecided(model.OffsetCommit, "not sent: %v", err)
	}
	req.Topics = topics
	resp, undecided := exchange[*kmsg.OffsetCommitResponse](ctx, t, model.OffsetCommit,
		t.toCoordinator(groupCoordinator, req.Group, wire.OffsetCommitCodes), req)
	if undecided != nil {
		return *undecided
	}
	res := t.result(model.OffsetCommit, wire.FirstError(wire.OffsetCommitCodes(resp)), model.NewResponse())
	if res.Succeeded() {
		// A member's commit renews its session as a heartbeat does
		// (model/offsets.go), and shows its client alive.
		t.noteMember(r.MemberID, nil, 0)
	}
	return res
}

var _ model.OffsetCommitter = (*Target)(nil)

// plainCommitTopics is commitTopics in OffsetCommit's shape: each topic by
// name (up to v9) and by id (v10 on).
func (t *Target) plainCommitTopics(ctx context.Context, offsets map[model.Partition]int64) ([]kmsg.OffsetCommitRequestTopic, error) {
	txnTopics, err := t.commitTopics(ctx, offsets)
	if err != nil {
		return nil, err
	}
	topics := make([]kmsg.OffsetCommitRequestTopic, 0, len(txnTopics))
	for _, tt := range txnTopics {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = tt.Topic, tt.TopicID
		for _, tp := range tt.Partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = tp.Partition, tp.Offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		topics = append(topics, rt)
	}
	return topics, nil
}
