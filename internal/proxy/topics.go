package proxy

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topics is what the proxy learned of the cluster's topics from the
// Metadata answers it forwarded, for the recorder: a client asks for
// metadata before it uses a topic, so a topic's partitions and id are
// known before any request names them. The history uses the cluster's
// names as they are, and its clock is the wall clock, in milliseconds.
type topics struct {
	mu         sync.Mutex
	partitions map[string]int32
	byID       map[[16]byte]string
}

// learn notes the topics of a Metadata answer.
func (t *topics) learn(r *kmsg.MetadataResponse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.partitions == nil {
		t.partitions, t.byID = map[string]int32{}, map[[16]byte]string{}
	}
	for _, topic := range r.Topics {
		if topic.Topic == nil || topic.ErrorCode != 0 {
			continue
		}
		t.partitions[*topic.Topic] = int32(len(topic.Partitions))
		if topic.TopicID != ([16]byte{}) {
			t.byID[topic.TopicID] = *topic.Topic
		}
	}
}

func (t *topics) Name(cluster string) (string, bool) { return cluster, true }
func (t *topics) Millis(ms int32) int64              { return int64(ms) }

func (t *topics) Partitions(topic string) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.partitions[topic]
}

func (t *topics) TopicByID(_ context.Context, id [16]byte) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.byID[id]
	return name, ok
}
