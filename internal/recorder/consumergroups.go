package recorder

import (
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// consumerGroupHeartbeat is KIP-848's ConsumerGroupHeartbeat, as a
// consumer_group_heartbeat: the one request of a consumer group, which
// joins (member epoch 0), heartbeats and leaves (-1, -2). Every answer is
// recorded but a misrouted one, which the member asks again at the
// coordinator.
//
// Its partitions are named by topic id, in the request's owned
// partitions and in the answer's assignment. A topic id the recorder
// cannot name leaves the history unable to say what the member owned or
// was given, so the heartbeat is still recorded, with its answer
// undecided (REQUEST_TIMED_OUT) and the reason logged: the model takes
// it as a heartbeat whose effect no answer showed, and the next answer
// says where the member is. The owned partitions of such a request are
// written absent.
func (c *Client) consumerGroupHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok {
		return nil
	}
	req := model.NewRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, r.MemberID, r.MemberEpoch
	req.InstanceID = wire.Nullable(r.InstanceID)
	if r.RebalanceTimeoutMillis > 0 { // -1 is unchanged
		req.RebalanceTimeoutMs = c.cfg.Cluster.Millis(r.RebalanceTimeoutMillis)
	}
	if r.SubscribedTopicNames != nil { // null is unchanged, [] is none
		topics := []string{}
		for _, topic := range r.SubscribedTopicNames {
			if name, ok := c.cfg.Cluster.Name(topic); ok {
				topics = append(topics, name)
			}
		}
		req.SubscribedTopics = &topics
	}
	if r.SubscribedTopicRegex != nil {
		req.SubscribedRegex = *r.SubscribedTopicRegex
	}
	if r.ServerAssignor != nil {
		req.ServerAssignor = *r.ServerAssignor
	}
	var unnamed error
	if r.Topics != nil {
		owned, err := topicPartitions(c, r.Topics, func(t kmsg.ConsumerGroupHeartbeatRequestTopic) ([16]byte, []int32) {
			return t.TopicID, t.Partitions
		})
		if err != nil {
			unnamed = fmt.Errorf("owned partitions: %w", err)
		} else {
			req.OwnedPartitions = &owned
		}
	}
	op := c.begin(model.ConsumerGroupHeartbeat, r.Version, req)
	return []observed{{op: op, answer: func(resp kmsg.Response) (model.Result, fate) {
		hr, ok := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		switch {
		case !ok:
			return c.undecided(model.ConsumerGroupHeartbeat, "the answer is a %T", resp), ended
		case wire.Misrouted(hr.ErrorCode):
			return model.Result{}, notTaken
		case unnamed != nil:
			// A refusal too: its request is not as the broker read it.
			return c.undecided(model.ConsumerGroupHeartbeat, "%v", unnamed), ended
		case hr.ErrorCode != 0:
			return c.result(model.ConsumerGroupHeartbeat, hr.ErrorCode, model.NewResponse()), ended
		}
		out := model.NewResponse()
		if hr.MemberID != nil {
			out.MemberID = *hr.MemberID
		}
		out.MemberEpoch = hr.MemberEpoch
		out.HeartbeatIntervalMs = c.cfg.Cluster.Millis(hr.HeartbeatIntervalMillis)
		if hr.Assignment != nil { // null is unchanged
			assigned, err := topicPartitions(c, hr.Assignment.Topics, func(t kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) ([16]byte, []int32) {
				return t.TopicID, t.Partitions
			})
			if err != nil {
				return c.undecided(model.ConsumerGroupHeartbeat, "assignment: %v", err), ended
			}
			out.MemberAssignment = &assigned
		}
		return model.OK(out), ended
	}}}
}

// topicPartitions is the history's partitions of a list of topics named
// by id, never nil. A topic the history does not hold is left out, as a
// SyncGroup's assignment leaves it out (wire.Assignment); a topic id the
// cluster names no topic for is an error, because the list cannot be
// written truthfully without it.
func topicPartitions[T any](c *Client, topics []T, of func(T) ([16]byte, []int32)) ([]model.Partition, error) {
	out := []model.Partition{}
	for _, t := range topics {
		id, partitions := of(t)
		name, ok := c.topic("", id, true)
		if !ok {
			// Kafka writes a topic id so (Uuid.toString).
			return nil, fmt.Errorf("topic id %s names no topic the recorder knows", base64.RawURLEncoding.EncodeToString(id[:]))
		}
		for _, p := range partitions {
			if mp, ok := c.partition(name, p); ok {
				out = append(out, mp)
			}
		}
	}
	return out, nil
}
