package kafka

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/model"
)

// names maps the model's names to the cluster's and back. Every name the
// target uses on the cluster starts with prefix (see the package
// documentation).
type names struct{ prefix string }

func (n names) topic(t string) string  { return n.prefix + t }
func (n names) txnID(id string) string { return n.prefix + id }
func (n names) group(g string) string  { return n.prefix + g }

// modelName is the model's name of a cluster name (a topic, transactional
// id or group), false when the name is not the target's.
func (n names) modelName(t string) (string, bool) {
	return strings.CutPrefix(t, n.prefix)
}

// topicPartition is a partition as the cluster names it.
type topicPartition struct {
	model     string // the model's topic
	topic     string // the cluster's topic
	partition int32
}

func (n names) split(p model.Partition) (topicPartition, error) {
	topic, ok := p.Topic()
	if !ok {
		return topicPartition{}, fmt.Errorf("%q is not a topic-N partition", p)
	}
	num, err := strconv.ParseInt(string(p[len(topic)+1:]), 10, 32)
	if err != nil {
		return topicPartition{}, fmt.Errorf("%q: %w", p, err)
	}
	return topicPartition{model: topic, topic: n.topic(topic), partition: int32(num)}, nil
}

// partition is the model's name of a cluster partition, false when the topic
// is not the target's.
func (n names) partition(topic string, partition int32) (model.Partition, bool) {
	t, ok := n.modelName(topic)
	if !ok {
		return "", false
	}
	return model.Partition(fmt.Sprintf("%s-%d", t, partition)), true
}
