package proxy

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topics is what the proxy learned of the cluster's topics from the
// Metadata answers it forwarded, for the recorder: a client asks for
// metadata before it uses a topic, so a topic's partitions and id are
// usually known before any request names them. A topic id no answer
// named yet (a KIP-848 assignment can come back before the client's own
// Metadata answer) is asked of the cluster. The history uses the
// cluster's names as they are, and its clock is the wall clock, in
// milliseconds.
type topics struct {
	mu         sync.Mutex
	partitions map[string]int32
	byID       map[[16]byte]string
	// ask asks the cluster for all of its topics; nil asks nothing.
	ask func(ctx context.Context) (*kmsg.MetadataResponse, error)
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

// TopicByID is the topic of id, asked of the cluster when no answer the
// proxy forwarded named it.
func (t *topics) TopicByID(ctx context.Context, id [16]byte) (string, bool) {
	if name, ok := t.named(id); ok || t.ask == nil {
		return name, ok
	}
	resp, err := t.ask(ctx)
	if err != nil {
		return "", false
	}
	t.learn(resp)
	return t.named(id)
}

func (t *topics) named(id [16]byte) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.byID[id]
	return name, ok
}

// askTopics asks the cluster for all of its topics, on a client of the
// proxy's own: no process's, so nothing of it is recorded or faulted.
// The client is opened the first time it is needed.
func (p *Proxy) askTopics(ctx context.Context) (*kmsg.MetadataResponse, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("proxy: closed")
	}
	if p.lookup == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.cfg.Upstream...), kgo.Dialer(p.cfg.Dial), kgo.ClientID("fencecheck-proxy"))
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.lookup = cl
	}
	cl := p.lookup
	p.mu.Unlock()
	return kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
}
