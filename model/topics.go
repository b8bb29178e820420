package model

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Topic metadata: an admin's CreateTopics, CreatePartitions and
// DeleteTopics, and what the group coordinator does when the metadata
// image that carries the change reaches it.
//
// KIP-848 ("Group Epoch - Trigger a rebalance") bumps the group epoch
// when the metadata of a subscribed topic changes, for example when
// partitions are added. Sources (trunk 1eb7644, 4.0-SNAPSHOT, and the
// 4.x releases):
//   - GroupMetadataManager.onNewMetadataImage asks every group subscribed
//     to a created, changed or deleted topic to refresh its subscription
//     metadata (ModernGroup.requestMetadataRefresh). Its next heartbeat
//     computes the metadata again (ConsumerGroup.computeSubscriptionMetadata)
//     and bumps the group epoch when it changed, once, together with any
//     other bump of that heartbeat (consumerGroupHeartbeat). The target
//     assignment then follows the new partitions. Tests:
//     GroupMetadataManagerTest#testOnNewMetadataImage,
//     #testSubscriptionMetadataRefreshedAfterGroupIsLoaded,
//     #testSubscriptionMetadataRefreshedAgainAfterWriteFailure.
//   - The broker's group.consumer metadata refresh interval is
//     Integer.MAX_VALUE in every release (no config sets it), so only a
//     metadata change or a failed write asks for a refresh.
//   - GroupCoordinatorService.onPartitionsDeleted, at the same image,
//     has OffsetMetadataManager.onPartitionsDeleted write a tombstone for
//     each offset of a deleted partition, in every group, committed or
//     pending in an open transaction; replaying the tombstone removes
//     both (OffsetMetadataManager.replay). Test:
//     OffsetMetadataManagerTest#testOnPartitionsDeleted.
//
// The image reaches the coordinator after the controller wrote the
// change, at a moment no client sees: before or after the admin's answer.
// So, judging, a change is seen at any later heartbeat or fetch, and
// the first answer that shows it decides (refreshDue, dropping). The
// model's own answers see it at once.

// topicMeta is what the history's admin requests say of one topic.
type topicMeta struct {
	// partitions is the topic's partition count, 0 once deleted.
	partitions int32
	// most is the highest count the topic had: no partition at or above
	// it ever existed, so no assignment may hold one.
	most int32
	// dropping: the topic was deleted, and the group coordinator may not
	// have removed its offsets yet (judging only).
	dropping bool
}

// WithTopics is s with the partition counts of topics a history names
// when it begins (its "topics"): each is known, as if an admin had just
// created it.
func WithTopics(s State, counts map[string]int32) State {
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		s.setTopic(name, topicMeta{partitions: counts[name], most: counts[name]})
	}
	return s
}

func (s *State) setTopic(name string, t topicMeta) {
	s.topics = maps.Clone(s.topics)
	if s.topics == nil {
		s.topics = map[string]topicMeta{}
	}
	s.topics[name] = t
}

// topicAdmin answers CreateTopics, CreatePartitions and DeleteTopics of
// one topic.
func (st *step) topicAdmin(r Request) outcome {
	t, known := st.s.topics[r.Topic]
	switch st.op.Kind {
	case CreateTopics:
		t.partitions, t.dropping = r.PartitionCount, false
	case CreatePartitions:
		if known && t.partitions > 0 && r.PartitionCount <= t.partitions && !st.s.opts.TopicsChangeOutside {
			// ReplicationControlManager.createPartitions: INVALID_PARTITIONS
			// for a count that does not grow the topic.
			return refuse("topic-partition-count", InvalidPartitions, "topic %s has %d partitions, so a count of %d "+
				"does not add any (ReplicationControlManager.createPartitions)", r.Topic, t.partitions, r.PartitionCount)
		}
		t.partitions = r.PartitionCount
	case DeleteTopics:
		if !known {
			// The topic had partitions no request of the history
			// said: any number may have existed.
			t.most = math.MaxInt32
		}
		t.partitions = 0
		t.dropping = st.got != nil
		if !t.dropping {
			st.s.dropTopicOffsets(r.Topic)
		}
	}
	t.most = max(t.most, t.partitions)
	st.s.setTopic(r.Topic, t)
	st.s.requestMetadataRefresh(r.Topic)
	return ok(NewResponse())
}

// requestMetadataRefresh marks each consumer group subscribed to topic,
// by name or by a regex, for a refresh of its subscription metadata
// (GroupMetadataManager.onNewMetadataImage, groupsSubscribedToTopic).
func (s *State) requestMetadataRefresh(topic string) {
	for _, name := range slices.Sorted(maps.Keys(s.consumer)) {
		g := s.consumer[name]
		for _, m := range g.members {
			if m.regex != "" || slices.Contains(m.topics, topic) {
				g.refreshes++
				s.setConsumerGroup(name, g)
				break
			}
		}
	}
}

// refreshMetadata is the subscription metadata refresh of a heartbeat
// (consumerGroupHeartbeat: hasMetadataExpired, computeSubscriptionMetadata).
// bumped says the heartbeat bumps the group epoch anyway, for its
// member's subscription: one bump then holds both. The model's own
// answer sees every change at once, in one refresh. Judging, each change
// no answer has shown may have bumped the group epoch at an earlier
// heartbeat whose answer did not show the group epoch (a member revoking
// stays at its own), or may bump it now, or later. Two changes between
// two heartbeats bump it once in Kafka; the model takes up to one bump
// per change. An answer above the group epoch by at most that many shows
// them. Where the history does not hold every change of the topics
// (Options.TopicsChangeOutside), each heartbeat may have refreshed the
// group, so its epoch is only a lower bound (consumerGroup.loose).
func (st *step) refreshMetadata(g *consumerGroup, bumped bool) {
	if st.got == nil {
		if g.refreshes > 0 && !bumped {
			g.epoch++
		}
		g.refreshes = 0
		return
	}
	if st.s.opts.TopicsChangeOutside {
		// Any number of changes may have come, each refreshing the group
		// at a heartbeat: its epoch is only a lower bound.
		g.loose = true
	}
	if obs := st.observed(); obs != nil && obs.MemberEpoch > g.epoch && obs.MemberEpoch <= g.epoch+g.refreshes {
		shown := obs.MemberEpoch - g.epoch
		g.epoch = obs.MemberEpoch
		g.refreshes = max(0, g.refreshes-shown)
	}
}

// topicPartitionExists reports whether partition p may exist, as far as
// the history's admin requests tell: a partition number at or above the
// most partitions its topic had never did.
func (s State) topicPartitionExists(p Partition) bool {
	topic, ok := p.Topic()
	if !ok {
		return true
	}
	t, known := s.topics[topic]
	if !known {
		return true
	}
	n, _ := strconv.ParseInt(string(p[strings.LastIndexByte(string(p), '-')+1:]), 10, 32)
	return int32(n) < t.most
}

// dropTopicOffsets is OffsetMetadataManager.onPartitionsDeleted: every
// group's offsets of the topic's partitions are removed, committed and
// pending in open transactions alike (the tombstone's replay removes
// both).
func (s *State) dropTopicOffsets(topic string) {
	of := func(p Partition) bool { t, _ := p.Topic(); return t == topic }
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[name]
		if !slices.ContainsFunc(slices.Collect(maps.Keys(g.committed)), of) {
			continue
		}
		g.committed, g.committedAt, g.unsettled = maps.Clone(g.committed), maps.Clone(g.committedAt), maps.Clone(g.unsettled)
		maps.DeleteFunc(g.committed, func(p Partition, _ int64) bool { return of(p) })
		maps.DeleteFunc(g.committedAt, func(p Partition, _ int64) bool { return of(p) })
		maps.DeleteFunc(g.unsettled, func(p Partition, _ bool) bool { return of(p) })
		s.setGroup(name, g)
	}
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		t := s.txns[id]
		changed := false
		pending := maps.Clone(t.pending)
		for group, offs := range pending {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(offs)), of) {
				continue
			}
			offs = maps.Clone(offs)
			maps.DeleteFunc(offs, func(p Partition, _ pendingOffset) bool { return of(p) })
			pending[group], changed = offs, true
		}
		if changed {
			t.pending = pending
			s.txns = maps.Clone(s.txns)
			s.txns[id] = t
		}
	}
	if t, known := s.topics[topic]; known && t.dropping {
		t.dropping = false
		s.setTopic(topic, t)
	}
}

// offsetsDropped is the deletion of p's topic reaching the group
// coordinator, if it may not have yet: a fetch answered no offset where
// the group has one shows it came (onPartitionsDeleted). The model's own
// answers took it at the deletion.
func (st *step) offsetsDropped(r Request) {
	topic, _ := r.Partition.Topic()
	if !st.s.topics[topic].dropping {
		return
	}
	if obs := st.observed(); obs != nil && obs.Offset == NoOffset {
		st.s.dropTopicOffsets(topic)
	}
}

// topicKnown reports whether the history's admin requests named topic.
func (s State) topicKnown(topic string) bool {
	_, known := s.topics[topic]
	return known
}

// topicPartitions are the partitions of topic the model's own assignor
// spreads (ownTarget), in order: those its admin requests made, none
// once deleted, or else those the model's logs hold.
func (s State) topicPartitions(topic string) []Partition {
	var parts []Partition
	if t, known := s.topics[topic]; known {
		for i := range t.partitions {
			parts = append(parts, Partition(topic+"-"+strconv.Itoa(int(i))))
		}
		return parts
	}
	for p := range s.parts {
		if t, ok := p.Topic(); ok && t == topic {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	return parts
}
