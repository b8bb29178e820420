package model

import (
	"maps"
	"slices"
	"strings"
)

// Offset expiry. The group coordinator deletes a committed offset once it
// has been kept for offsets.retention.minutes, and deletes a group that
// is empty and has no offsets left. A periodic cleanup does both, every
// offsets.retention.check.interval.ms (4.x
// GroupCoordinatorShard.cleanupGroupMetadata, which calls
// OffsetMetadataManager.cleanupExpiredOffsets and then
// GroupMetadataManager.maybeDeleteGroup; 3.9 core
// GroupMetadataManager.cleanupGroupMetadata).
//
// An offset is expired once currentTimestamp - base >= retention
// (OffsetExpirationConditionImpl.isOffsetExpired, 4.x;
// GroupMetadata.removeExpiredOffsets, 3.9). Its base depends on the
// group (ClassicGroup.offsetExpirationCondition, ConsumerGroup's, 4.x;
// GroupMetadata.removeExpiredOffsets, 3.9):
//   - A classic group with a protocol type that is Empty counts from
//     currentStateTimestamp, when it last changed state, so that all its
//     offsets expire together. A commit made while it is Empty does not
//     move that base.
//   - A group with no protocol type is a simple consumer's, which only
//     commits. Each offset counts from its own commit timestamp.
//   - A classic "consumer" group that is Stable, and knows its members'
//     subscribed topics, expires from the commit timestamp the offsets
//     of topics no member subscribes to. Otherwise a group with members
//     expires nothing.
//   - A KIP-848 consumer group expires from the commit timestamp the
//     offsets of topics no member subscribes to.
//
// A transactional offset's commit timestamp is its TxnOffsetCommit's.
// 4.x keeps an offset while a transaction holds a pending offset of its
// partition (cleanupExpiredOffsets, hasPendingTransactionalOffsets); 3.9
// does not look at those (removeExpiredOffsets checks
// pendingOffsetCommits, the plain commits being written). A group with
// a pending transactional offset is never deleted, in either version.
//
// Once the cleanup found every offset of a group expired, or the group
// had none, a group that is empty is deleted (maybeDeleteGroup in 4.x,
// group.is(Empty) && !group.hasOffsets in 3.9). An OffsetFetch then
// answers -1 for each partition, with no error, and a JoinGroup starts
// the group again at generation 1. Tests:
// OffsetMetadataManagerTest#testCleanupExpiredOffsets and
// #testCleanupExpiredOffsetsWithPendingTransactionalOffsets,
// ClassicGroupTest#testOffsetExpirationCondition, core
// GroupMetadataManagerTest#testOffsetExpirationSemantics and
// #testOffsetExpirationOfActiveGroupSemantics.
//
// No request shows when the cleanup runs. In 4.x its tombstones are one
// write, and when that write fails nothing is deleted. So judging, an
// offset past its retention may be there or gone, and it is never gone
// for sure. Before its retention has passed, it must be there. The
// model's own answers delete it on the first tick past its retention and
// one whole check interval more, as expireIdle does the transactional
// ids. They delete an empty group only in the cleanup that deletes its
// last offsets: an empty group that never had an offset stays, as when
// the cleanup's write fails.

// OffsetsRetentionMs is offsets.retention.minutes in milliseconds.
func (e Expiry) OffsetsRetentionMs() int64 {
	return e.Resolved().OffsetsRetentionMinutes * 60_000
}

// OffsetDue reports whether an offset whose retention counts from base
// is expired at now (at it counts: currentTimestampMs - baseTimestamp >=
// offsetsRetentionMs, OffsetExpirationConditionImpl.isOffsetExpired).
// With sure, it is also past one whole check interval more, so that the
// cleanup has run since.
func (e Expiry) OffsetDue(base, now int64, sure bool) bool {
	e = e.Resolved()
	if sure {
		return now-base > e.OffsetsRetentionMs()+e.OffsetsRetentionCheckMs
	}
	return now-base >= e.OffsetsRetentionMs()
}

// OffsetExpiryFacts is what offset expiry reads of one committed offset
// and its group, so that a broker keeping its groups its own way
// (impl/) decides by the same rule.
type OffsetExpiryFacts struct {
	// Commit is the offset's commit timestamp, and EmptySince when the
	// group last lost its last member (currentStateTimestamp).
	Commit, EmptySince int64
	// Members is how many members the group has. Joined: a JoinGroup
	// made it, so it has a protocol type, ProtocolType ("" unknown).
	Members      int
	Joined       bool
	ProtocolType string
	// Stable: no rebalance is under way.
	Stable bool
	// ConsumerGroup: a KIP-848 consumer group.
	ConsumerGroup bool
	// SubscriptionKnown: the members' subscribed topics are known, and
	// Subscribed: one of them is the offset's topic.
	SubscriptionKnown, Subscribed bool
}

// Base is the timestamp the offset's retention counts from, and false
// when Kafka's condition keeps it whatever the time. Loose (judging),
// what is not known is taken either way: the base is given wherever
// Kafka may expire the offset.
func (f OffsetExpiryFacts) Base(loose bool) (int64, bool) {
	switch {
	case f.ConsumerGroup:
		// ConsumerGroup.offsetExpirationCondition: the commit timestamp,
		// for a topic no member subscribes to (isSubscribedToTopic).
		return f.Commit, !f.Subscribed
	case f.Members == 0 && f.Joined:
		// A joined group has a protocol type; Empty, it counts from
		// currentStateTimestamp.
		return f.EmptySince, true
	case f.Members == 0:
		// No protocol type: a simple consumer's offsets.
		return f.Commit, true
	case loose:
		other := f.ProtocolType != "" && f.ProtocolType != "consumer"
		return f.Commit, !(f.SubscriptionKnown && f.Subscribed) && !other
	}
	return f.Commit, f.SubscriptionKnown && !f.Subscribed && f.Stable && f.ProtocolType == "consumer"
}

// offsetExpiryBase is OffsetExpiryFacts.Base for group name's offset of
// p, as the model holds the group.
func (s State) offsetExpiryBase(name string, g group, p Partition, loose bool) (int64, bool) {
	topic, _ := p.Topic()
	f := OffsetExpiryFacts{Commit: g.committedTime[p], EmptySince: g.emptySince, Members: len(g.members),
		Joined: g.generation > 0, ProtocolType: g.groupProtocolType(), Stable: !g.rebalancing()}
	if cg, ok := s.consumer[name]; ok {
		f.ConsumerGroup, f.Subscribed = true, cg.subscribes(topic, loose)
		return f.Base(loose)
	}
	topics, known := g.subscribedTopics()
	f.SubscriptionKnown, f.Subscribed = known, topics[topic]
	return f.Base(loose)
}

// subscribedTopics is the union of the topics g's members subscribe to
// in the protocol the group chose, and false when the model does not
// know them (SubscribedTopics).
func (g group) subscribedTopics() (map[string]bool, bool) {
	var subscriptions [][]string
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if m.subscriptionForgotten || m.mayBeGone || m.mayBeReplaced {
			return nil, false
		}
		subscriptions = append(subscriptions, m.subscription)
	}
	return SubscribedTopics(g.protocol, subscriptions)
}

// SubscribedTopics is the union of the topics each member subscribes to
// in protocol, from each member's ProtocolKeys, and false when they are
// not known: ClassicGroup.computeSubscribedTopics (4.x) and
// GroupMetadata.computeSubscribedTopics (3.9) read each member's
// ConsumerProtocol subscription.
//
// Where the chosen protocol is not known (""), a member that offers one
// protocol subscribes to its topics, because the group can choose no
// other. A protocol whose topics the history does not give is not known
// either.
func SubscribedTopics(protocol string, subscriptions [][]string) (map[string]bool, bool) {
	topics := map[string]bool{}
	for _, keys := range subscriptions {
		found := false
		for _, key := range keys {
			name, list, _ := strings.Cut(key, ":")
			if name != protocol && (protocol != "" || len(keys) > 1) {
				continue
			}
			if list == "" {
				return nil, false
			}
			found = true
			for _, t := range strings.Split(list, "+") {
				topics[t] = true
			}
		}
		if !found {
			return nil, false
		}
	}
	return topics, true
}

// subscribes reports whether a member of cg subscribes to topic. A regex
// subscription, or a group the model knows only in part, may subscribe
// to any topic: loose, it is taken not to, and otherwise to.
func (cg consumerGroup) subscribes(topic string, loose bool) bool {
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		if slices.Contains(m.topics, topic) {
			return true
		}
		if m.regex != "" && !loose {
			return true
		}
	}
	return cg.loose && !loose
}

// offsetPending reports whether a transaction holds a pending offset of
// group name's partition p.
func (s State) offsetPending(name string, p Partition) bool {
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		if _, ok := s.txns[id].pending[name][p]; ok {
			return true
		}
	}
	return false
}

// groupPending reports whether a transaction holds a pending offset of
// group name: its group is not deleted (4.x openTransactionsByGroup; 3.9
// hasOffsets counts pendingTransactionalOffsetCommits).
func (s State) groupPending(name string) bool {
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		if len(s.txns[id].pending[name]) > 0 {
			return true
		}
	}
	return false
}

// withoutOffsets is g with its committed offsets of ps deleted.
func (g group) withoutOffsets(ps []Partition) group {
	g = g.clonedCommitted()
	gone := map[Partition]int64{}
	for _, p := range ps {
		delete(g.committed, p)
		delete(g.committedAt, p)
		delete(g.committedTime, p)
		gone[p] = NoOffset
	}
	return g.withMetadata(gone, nil) // an expired offset's metadata goes with it
}

// deletable reports whether the cleanup deletes group name once its
// offsets are gone: it is empty, has no offset left and no pending one.
// A KIP-848 consumer group's deletion is not modelled: the model keeps
// it (see model/README.md).
func (s State) deletable(name string, g group) bool {
	_, consumer := s.consumer[name]
	return !consumer && len(g.members) == 0 && len(g.committed) == 0 && !s.groupPending(name)
}

// deleteGroup removes group name: the coordinator knows it no more.
func (s *State) deleteGroup(name string) {
	s.groups = maps.Clone(s.groups)
	delete(s.groups, name)
	if len(s.groups) == 0 {
		s.groups = nil
	}
}

// expireOffsets deletes, on a tick, the offsets that have certainly
// expired, group by group in sorted order, and each empty group whose
// last offsets they were. Judging, nothing is deleted for sure
// (dueOffsetExpiries).
func (st *step) expireOffsets() {
	if st.judging {
		return
	}
	e, now := st.s.opts.Expiry, st.s.now
	for _, name := range slices.Sorted(maps.Keys(st.s.groups)) {
		g := st.s.groups[name]
		var expired []Partition
		for _, p := range slices.Sorted(maps.Keys(g.committed)) {
			// 4.x keeps an offset with a pending transactional one.
			if base, can := st.s.offsetExpiryBase(name, g, p, false); can && !st.s.offsetPending(name, p) && e.OffsetDue(base, now, true) {
				expired = append(expired, p)
			}
		}
		if len(expired) == 0 {
			continue
		}
		g = g.withoutOffsets(expired)
		if st.s.deletable(name, g) {
			st.s.deleteGroup(name)
			continue
		}
		st.s.setGroup(name, g)
	}
}

// dueOffsetExpiries is s with the offset expiries that may have happened
// by the time op took effect and that its answer depends on, when op
// names a group: its partition's offset expired; and every offset of
// the group that may have expired expired, with the group deleted if
// that leaves it empty with none. An empty group with no offset may
// have been deleted at any moment, by the next cleanup.
func (s State) dueOffsetExpiries(op Op) []State {
	name := op.Req.Group
	g, ok := s.groups[name]
	if name == "" || !ok {
		return nil
	}
	e, at := s.opts.Expiry, s.now
	if s.opts.WallClock {
		at = max(at, op.Span.To)
	}
	if at < e.Resolved().OffsetsRetentionCheckMs {
		// No cleanup has run on a cluster started at 0: 4.x schedules the
		// first one interval after the coordinator loads
		// (GroupCoordinatorShard.scheduleGroupMetadataExpiration); 3.9
		// runs one at its startup, before any group of this history
		// exists (GroupMetadataManager.startup).
		return nil
	}
	var due []Partition
	for _, p := range slices.Sorted(maps.Keys(g.committed)) {
		// 3.9 expires an offset with a pending transactional one.
		if base, can := s.offsetExpiryBase(name, g, p, true); can && e.OffsetDue(base, at, false) {
			due = append(due, p)
		}
	}
	var out []State
	if p := op.Req.Partition; slices.Contains(due, p) && len(due) > 1 {
		one := s
		one.setGroup(name, g.withoutOffsets([]Partition{p}))
		out = append(out, one)
	}
	all := s
	if len(due) > 0 {
		all.setGroup(name, g.withoutOffsets(due))
	}
	if rest := all.groups[name]; all.deletable(name, rest) && g.exists() {
		all.deleteGroup(name)
	} else if len(due) == 0 {
		return out
	}
	return append(out, all)
}
