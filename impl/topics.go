package impl

import (
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// An admin's CreateTopics, CreatePartitions and DeleteTopics of one topic
// (model/topics.go). Every topic exists with Config.TopicPartitions
// partitions until an admin's request changes its count. The counts stand
// for the controller's metadata, so a restart keeps them. The group
// coordinator sees a change at once: each consumer group subscribed to the
// topic refreshes its subscription metadata at its next heartbeat, and a
// deletion tombstones every group's offsets of the topic, committed and
// pending (OffsetMetadataManager.onPartitionsDeleted). The model takes
// the change at any later moment; this broker's is the earliest.

// TopicAdmin answers a create_topics, create_partitions or delete_topics.
// It is not a method of model.Broker, so it is called directly.
func (b *Broker) TopicAdmin(kind model.Kind, r model.Request) model.Result {
	unlock := b.lockAllGroupShards()
	defer unlock()
	b.topicsMu.Lock()
	count, named := b.topics[r.Topic]
	if !named {
		count = b.topicPartitions
	}
	switch kind {
	case model.CreateTopics:
		// Every topic no admin's request named exists already.
		if count > 0 {
			b.topicsMu.Unlock()
			return model.Fail(model.TopicAlreadyExists)
		}
	case model.CreatePartitions:
		switch {
		case count == 0:
			b.topicsMu.Unlock()
			return model.Fail(model.UnknownTopicOrPartition)
		case int(r.PartitionCount) <= count:
			// ReplicationControlManager.createPartitions.
			b.topicsMu.Unlock()
			return model.Fail(model.InvalidPartitions)
		}
	case model.DeleteTopics:
		if count == 0 {
			b.topicsMu.Unlock()
			return model.Fail(model.UnknownTopicOrPartition)
		}
	default:
		b.topicsMu.Unlock()
		return model.Fail(model.InvalidRequest)
	}
	if b.topics == nil {
		b.topics = map[string]int{}
	}
	b.topics[r.Topic] = int(r.PartitionCount) // 0 for a deletion
	b.topicsMu.Unlock()
	for i := range b.groups {
		sh := &b.groups[i]
		if kind == model.DeleteTopics {
			sh.dropTopicOffsets(r.Topic)
		}
		sh.requestMetadataRefresh(r.Topic)
	}
	return model.OK(model.NewResponse())
}

// topicCount is topic's partition count: an admin's, or
// Config.TopicPartitions.
func (b *Broker) topicCount(topic string) int {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if count, named := b.topics[topic]; named {
		return count
	}
	return b.topicPartitions
}

// requestMetadataRefresh marks each consumer group of the shard with a
// member subscribed to topic (GroupMetadataManager.onNewMetadataImage).
func (s *groupShard) requestMetadataRefresh(topic string) {
	for _, name := range slices.Sorted(maps.Keys(s.consumer)) {
		g := s.consumer[name]
		for _, m := range g.members {
			if slices.Contains(m.topics, topic) {
				next := g.clone()
				next.refreshDue = true
				s.writeConsumer(name, next)
				break
			}
		}
	}
}

// dropTopicOffsets writes a tombstone of topic's offsets to each group of
// the shard that holds one, committed or pending.
func (s *groupShard) dropTopicOffsets(topic string) {
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[name]
		holds := slices.ContainsFunc(slices.Collect(maps.Keys(g.committed)), ofTopic(topic))
		for _, pending := range g.pending {
			holds = holds || slices.ContainsFunc(slices.Collect(maps.Keys(pending)), ofTopic(topic))
		}
		if holds {
			s.write(offsetTombstones{group: name, topic: topic})
		}
	}
}

// offsetTombstones are the tombstones of one group's offsets of a deleted
// topic: replaying them removes the committed offsets and the open
// transactions' pending ones (OffsetMetadataManager.replay).
type offsetTombstones struct {
	group, topic string
}

func (r offsetTombstones) groupName() string { return r.group }

func (r offsetTombstones) applyTo(g *group) {
	of := ofTopic(r.topic)
	maps.DeleteFunc(g.committed, func(p model.Partition, _ int64) bool { return of(p) })
	maps.DeleteFunc(g.committedAt, func(p model.Partition, _ int64) bool { return of(p) })
	for _, pending := range g.pending {
		maps.DeleteFunc(pending, func(p model.Partition, _ pendingOffset) bool { return of(p) })
	}
}

func ofTopic(topic string) func(model.Partition) bool {
	return func(p model.Partition) bool {
		t, _ := p.Topic()
		return t == topic
	}
}
