package recorder

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// An admin's CreateTopics, CreatePartitions and DeleteTopics, one
// operation per topic, each answered by its topic's code
// (model/topics.go). A validate-only request changes nothing and is left
// out. So is a topic the recorder cannot name: one outside the cluster's
// names, a DeleteTopics by topic id alone, and a CreateTopics that leaves
// the count to the broker's num.partitions (-1 with no replica
// assignment), whose count the request does not say. Each such case is
// logged. A recording that may miss a change says so in its history
// ("topic_changes": "unrecorded"), as the proxy's does.

func (c *Client) createTopics(r *kmsg.CreateTopicsRequest) []observed {
	if r.ValidateOnly {
		return nil
	}
	var ops []observed
	for _, t := range r.Topics {
		count := t.NumPartitions
		if count < 0 {
			count = int32(len(t.ReplicaAssignment))
		}
		if count < 1 {
			c.cfg.Logf("recorder: %s's CreateTopics of %s is not recorded: it leaves the partition count to the broker", c.proc, t.Topic)
			continue
		}
		topic := t.Topic
		ops = append(ops, c.topicOp(model.CreateTopics, r.Version, topic, count, func(resp kmsg.Response) ([]int16, bool) {
			cr, ok := resp.(*kmsg.CreateTopicsResponse)
			if !ok {
				return nil, false
			}
			return codeOfTopic(cr.Topics, topic, func(rt kmsg.CreateTopicsResponseTopic) (*string, int16) { return &rt.Topic, rt.ErrorCode })
		})...)
	}
	return ops
}

func (c *Client) createPartitions(r *kmsg.CreatePartitionsRequest) []observed {
	if r.ValidateOnly {
		return nil
	}
	var ops []observed
	for _, t := range r.Topics {
		topic := t.Topic
		ops = append(ops, c.topicOp(model.CreatePartitions, r.Version, topic, t.Count, func(resp kmsg.Response) ([]int16, bool) {
			cr, ok := resp.(*kmsg.CreatePartitionsResponse)
			if !ok {
				return nil, false
			}
			return codeOfTopic(cr.Topics, topic, func(rt kmsg.CreatePartitionsResponseTopic) (*string, int16) { return &rt.Topic, rt.ErrorCode })
		})...)
	}
	return ops
}

func (c *Client) deleteTopics(r *kmsg.DeleteTopicsRequest) []observed {
	names := r.TopicNames
	for _, t := range r.Topics {
		if t.Topic == nil {
			c.cfg.Logf("recorder: %s's DeleteTopics of a topic named by its id alone is not recorded", c.proc)
			continue
		}
		names = append(names, *t.Topic)
	}
	var ops []observed
	for _, name := range names {
		topic := name
		ops = append(ops, c.topicOp(model.DeleteTopics, r.Version, topic, 0, func(resp kmsg.Response) ([]int16, bool) {
			dr, ok := resp.(*kmsg.DeleteTopicsResponse)
			if !ok {
				return nil, false
			}
			return codeOfTopic(dr.Topics, topic, func(rt kmsg.DeleteTopicsResponseTopic) (*string, int16) { return rt.Topic, rt.ErrorCode })
		})...)
	}
	return ops
}

// codeOfTopic is the code an admin's answer gives topic, among its
// per-topic answers, which nameAndCode reads; false when it leaves the
// topic out (or names it by id alone).
func codeOfTopic[T any](answers []T, topic string, nameAndCode func(T) (*string, int16)) ([]int16, bool) {
	for _, a := range answers {
		if name, code := nameAndCode(a); name != nil && *name == topic {
			return []int16{code}, true
		}
	}
	return nil, false
}

// topicOp is the operation of one topic of an admin's request, whose
// answer codeOf finds in the response; false when the response leaves
// the topic out, which is undecided.
func (c *Client) topicOp(kind model.Kind, version int16, topic string, count int32,
	codeOf func(kmsg.Response) ([]int16, bool)) []observed {
	name, ok := c.cfg.Cluster.Name(topic)
	if !ok {
		c.cfg.Logf("recorder: %s's %s of %s is not recorded: the topic is not one of the run's", c.proc, kind.APIName(), topic)
		return nil
	}
	req := model.NewRequest()
	req.Topic, req.PartitionCount = name, count
	answer := func(resp kmsg.Response) (model.Result, fate) {
		codes, found := codeOf(resp)
		if !found {
			return c.undecided(kind, "the answer leaves out %s", topic), ended
		}
		if codes[0] == kerr.NotController.Code {
			return model.Result{}, notTaken
		}
		return c.result(kind, codes[0], model.NewResponse()), ended
	}
	return []observed{{op: c.begin(kind, version, req), answer: answer}}
}
