package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopics creates the configured topics, under the target's prefix,
// that the cluster does not have. It never touches any other topic.
func (t *Target) createTopics() error {
	if len(t.cfg.Topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(t.cfg.RequestTimeout.Milliseconds())
	for _, topic := range slices.Sorted(maps.Keys(t.cfg.Topics)) {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.names.topic(topic), t.cfg.Topics[topic], -1
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, t.routes.client())
	if err != nil {
		return fmt.Errorf("kafka: creating topics: %w", err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("kafka: creating topic %s: %w", rt.Topic, err)
		}
	}
	return nil
}
