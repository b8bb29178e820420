package kafka

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// KIP-848's consumer groups (group.protocol=consumer): one request,
// ConsumerGroupHeartbeat, joins, heartbeats, reconciles and leaves. Its
// session and heartbeat interval are the broker's settings, not the
// request's: kfake is started with them scaled (kfakeOpts), and a cluster
// by address must be set up so (neededSettings).

// ConsumerGroupHeartbeat sends one KIP-848 heartbeat and reads its
// answer. Every field of the history's consumer_group_heartbeat goes
// both ways: names get the target's prefix, partitions go by topic id,
// and the rebalance timeout and the heartbeat interval are scaled.
func (t *Target) ConsumerGroupHeartbeat(ctx context.Context, r model.Request) model.Result {
	group := t.names.group(r.Group)
	req, err := t.consumerHeartbeatRequest(ctx, group, r)
	if err != nil {
		return t.undecided(model.ConsumerGroupHeartbeat, "not sent: %v", err)
	}
	// The session is group.consumer.session.timeout.ms, the model's
	// (Options.ConsumerSessionTimeoutMs, Kafka's default): the clock
	// waits for it as for a classic member's.
	t.clock.sessionTimeout(group, model.DefaultConsumerSessionTimeoutMs)
	t.clock.consumerGroup(group)
	resp, undecided := exchange[*kmsg.ConsumerGroupHeartbeatResponse](ctx, t, model.ConsumerGroupHeartbeat,
		t.toCoordinator(groupCoordinator, group, topCode(func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode })), req)
	if undecided != nil {
		return *undecided
	}
	if resp.ErrorCode != 0 {
		return t.result(model.ConsumerGroupHeartbeat, resp.ErrorCode, model.NewResponse())
	}
	out := model.NewResponse()
	out.MemberID = wire.Nullable(resp.MemberID)
	out.MemberEpoch = resp.MemberEpoch
	out.HeartbeatIntervalMs = t.modelMs(resp.HeartbeatIntervalMillis)
	if resp.Assignment != nil { // null is unchanged
		assigned, err := t.assignedPartitions(ctx, resp.Assignment.Topics)
		if err != nil {
			return t.undecided(model.ConsumerGroupHeartbeat, "assignment: %v", err)
		}
		out.MemberAssignment = &assigned
	}
	return model.OK(out)
}

var _ model.ConsumerGroupHeartbeater = (*Target)(nil)

// consumerHeartbeatRequest is r as the cluster reads it. Kafka's -1 and
// null say "unchanged", as the history's 0 and absent lists do.
func (t *Target) consumerHeartbeatRequest(ctx context.Context, group string, r model.Request) (*kmsg.ConsumerGroupHeartbeatRequest, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, r.MemberID, r.MemberEpoch
	req.InstanceID = instanceOf(r)
	req.RebalanceTimeoutMillis = -1
	if r.RebalanceTimeoutMs > 0 {
		req.RebalanceTimeoutMillis = t.scaledMs(r.RebalanceTimeoutMs)
	}
	if r.SubscribedTopics != nil {
		topics := make([]string, 0, len(*r.SubscribedTopics))
		for _, topic := range *r.SubscribedTopics {
			topics = append(topics, t.names.topic(topic))
		}
		req.SubscribedTopicNames = topics
	}
	if r.SubscribedRegex != "" {
		// Kafka matches the whole name (Pattern.matcher().matches()), so
		// the prefix goes in front, quoted, and the model's regex
		// matches the rest.
		regex := regexp.QuoteMeta(t.names.prefix) + "(?:" + r.SubscribedRegex + ")"
		req.SubscribedTopicRegex = &regex
	}
	if r.ServerAssignor != "" {
		assignor := r.ServerAssignor
		req.ServerAssignor = &assignor
	}
	if r.OwnedPartitions != nil {
		topics, err := t.ownedTopics(ctx, *r.OwnedPartitions)
		if err != nil {
			return nil, err
		}
		req.Topics = topics
	}
	return req, nil
}

// ownedTopics is a member's partitions by topic id, never nil: an empty
// list says it owns none.
func (t *Target) ownedTopics(ctx context.Context, partitions []model.Partition) ([]kmsg.ConsumerGroupHeartbeatRequestTopic, error) {
	topics := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	index := map[string]int{}
	for _, p := range partitions {
		tp, err := t.names.split(p)
		if err != nil {
			return nil, err
		}
		i, ok := index[tp.topic]
		if !ok {
			id := t.routes.topicID(ctx, tp)
			if id == ([16]byte{}) {
				return nil, fmt.Errorf("the cluster gives no topic id for %s", tp.topic)
			}
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID = id
			i = len(topics)
			index[tp.topic] = i
			topics = append(topics, rt)
		}
		topics[i].Partitions = append(topics[i].Partitions, tp.partition)
	}
	return topics, nil
}

// assignedPartitions is an answer's assignment in the model's names,
// never nil. A topic that is not the target's is left out, as a
// SyncGroup's assignment leaves it out (wire.Assignment).
func (t *Target) assignedPartitions(ctx context.Context, topics []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) ([]model.Partition, error) {
	out := []model.Partition{}
	for _, at := range topics {
		topic, ok := t.routes.topicByID(ctx, at.TopicID)
		if !ok {
			// Kafka writes a topic id so (Uuid.toString).
			return nil, fmt.Errorf("topic id %s names no topic the cluster lists", base64.RawURLEncoding.EncodeToString(at.TopicID[:]))
		}
		for _, p := range at.Partitions {
			if mp, ok := t.names.partition(topic, p); ok {
				out = append(out, mp)
			}
		}
	}
	return out, nil
}
