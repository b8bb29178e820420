package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The consumer group protocol of KIP-848 (group.protocol=consumer): one
// request, ConsumerGroupHeartbeat, with no JoinGroup, SyncGroup or
// generation. The coordinator versions the group by its group epoch and
// each member by its member epoch. Its server-side assignor picks a target
// assignment, and each member reconciles towards it: a partition moves to
// a new owner only once its old owner has revoked it.
//
// Sources: Kafka's group-coordinator module, GroupMetadataManager
// (consumerGroupHeartbeat, consumerGroupLeave, consumerGroupFenceMember,
// the session and rebalance timers), modern/consumer/
// CurrentAssignmentBuilder and ConsumerGroupMember, at trunk of October
// 2024 (4.0-SNAPSHOT) and the 4.x releases. The tests are
// GroupMetadataManagerTest's consumer-group methods
// (testdata/kafka/GroupMetadataManagerTest.group-coordinator.txt).
//
// The assignor is the coordinator's choice, so the model does not pick
// the target assignment when it judges. It takes the assignment the
// broker answered, and holds it to the rules that any assignor keeps: a
// partition goes to a new owner only after its previous owner revoked it
// or left; a member's epoch only grows; and no answer's epoch is above
// the group epoch. Its own answers (Apply) use a range assignor over the
// partitions its logs hold (ownTarget), so that the model as a target
// gives consumers work.

// Consumer group defaults: Kafka's group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms.
const (
	DefaultConsumerSessionTimeoutMs    = 45_000
	DefaultConsumerHeartbeatIntervalMs = 5_000
)

// consumerGroupAssignors are the server assignors Kafka has by default
// (group.consumer.assignors: uniform, range).
var consumerGroupAssignors = []string{"uniform", "range"}

// consumerGroup is a KIP-848 group at the coordinator.
type consumerGroup struct {
	// epoch is the group epoch: a member joining, leaving or changing its
	// subscription bumps it (GroupMetadataManager.consumerGroupHeartbeat,
	// consumerGroupFenceMember).
	epoch   int32
	members map[string]consumerMember
	// loose: the group epoch is only a lower bound, because an answer
	// that may have bumped it was lost, or a regex subscription is
	// resolved by the coordinator on its own (4.x).
	loose bool
	// unseenJoins counts joins with member id "" whose answers were
	// lost: the coordinator may hold members whose ids no answer gave.
	unseenJoins int
	// mayBeClassic: the group may have been converted to a classic
	// group, as group.consumer.migration.policy decides, which a history
	// does not name (consumermigration.go). Every answer on its id is
	// then taken.
	mayBeClassic bool
	// phasedClassic: a classic member's JoinGroup was answered alone
	// (Request.JoinOnly), so the history records the classic members'
	// rounds in two parts (group.phased).
	phasedClassic bool
	// refreshes counts the changes of topics the group subscribes to
	// that no answer has shown a refresh of its subscription metadata
	// for: each may bump the group epoch once, at a heartbeat whose
	// answer shows it or not (topics.go).
	refreshes int32
}

// consumerMember is one member of a consumer group
// (ConsumerGroupMember).
type consumerMember struct {
	epoch, prevEpoch int32
	// prevUnsure: the last answer left the member at its epoch with
	// nothing changed that it shows, so Kafka may or may not have moved
	// prevEpoch up to epoch (see setEpoch).
	prevUnsure bool
	instanceID string
	topics     []string
	regex      string
	// assigned is what the member was told it owns; revoking are the
	// partitions pending revocation: taken from its assignment, but not
	// yet released by the member (CurrentAssignmentBuilder,
	// UNREVOKED_PARTITIONS).
	assigned []Partition
	revoking []Partition
	// assignedAt is the member epoch at which each partition it holds,
	// assigned or pending revocation, was given to it: KIP-1251's
	// assignment epoch, which lets a commit at an older epoch through.
	// Written copy-on-write, as State's maps are.
	assignedAt map[Partition]int32
	// rebalanceMs is the member's rebalance timeout, and revokingSince
	// when its pending revocation began (the rebalance timer).
	rebalanceMs   int64
	revokingSince int64
	lastSeen      int64
	// unsure: the answer to the member's last heartbeat was lost, so its
	// epoch and assignment are what the next answer says.
	unsure bool
	// classic: the member speaks the classic protocol (JoinGroup,
	// SyncGroup, Heartbeat) in the consumer group, with the session
	// timeout and the protocol names of its JoinGroup
	// (ConsumerGroupMember.classicMemberMetadata). syncPending: its
	// JoinGroup was answered and its SyncGroup, which shows its
	// assignment, not yet. classicDue is when its sync or join timeout
	// fences it, 0 for none (consumermigration.go).
	classic          bool
	classicSessionMs int64
	classicProtocols []string
	syncPending      bool
	classicDue       int64
	// loadedSession: since a restart the member's session is the
	// consumer group's, until its next classic request schedules its own
	// again (onLoaded, scheduleConsumerGroupSessionTimeout).
	loadedSession bool
}

func (s *State) setConsumerGroup(name string, g consumerGroup) {
	s.consumer = maps.Clone(s.consumer)
	if s.consumer == nil {
		s.consumer = map[string]consumerGroup{}
	}
	s.consumer[name] = g
}

func (g consumerGroup) withMember(id string, m consumerMember) consumerGroup {
	g.members = maps.Clone(g.members)
	if g.members == nil {
		g.members = map[string]consumerMember{}
	}
	g.members[id] = m
	return g
}

// fenced is g without member id, its partitions released, at the next
// group epoch (GroupMetadataManager.consumerGroupFenceMember: removeMember,
// then a ConsumerGroupMetadata record with groupEpoch + 1). The broker's
// configs in s and the time at is when the fence took effect at the
// latest say whether the group may become a classic group (downgradable).
func (g consumerGroup) fenced(id string, s State, at int64) consumerGroup {
	if g.downgradable(id, s, at) {
		// validateOnlineDowngradeWithFencedMember, convertToClassicGroup.
		g.mayBeClassic = true
	}
	g.members = maps.Clone(g.members)
	delete(g.members, id)
	g.epoch++
	return g
}

// holder is the member that holds p, assigned or pending revocation,
// other than except; "" when none does. Kafka's ConsumerGroup keeps a
// partition epoch for both (currentPartitionEpoch), and the
// CurrentAssignmentBuilder gives no partition that has one.
func (g consumerGroup) holder(p Partition, except string) string {
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if id != except && (slices.Contains(m.assigned, p) || slices.Contains(m.revoking, p)) {
			return id
		}
	}
	return ""
}

// staticMember is the member holding instance, "" when none does.
func (g consumerGroup) staticMember(instance string) string {
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if g.members[id].instanceID == instance {
			return id
		}
	}
	return ""
}

func (m consumerMember) equal(o consumerMember) bool {
	return m.epoch == o.epoch && m.prevEpoch == o.prevEpoch && m.prevUnsure == o.prevUnsure && m.instanceID == o.instanceID &&
		slices.Equal(m.topics, o.topics) && m.regex == o.regex && slices.Equal(m.assigned, o.assigned) &&
		slices.Equal(m.revoking, o.revoking) && mapsEqual(m.assignedAt, o.assignedAt, same) && m.rebalanceMs == o.rebalanceMs &&
		m.revokingSince == o.revokingSince && m.lastSeen == o.lastSeen && m.unsure == o.unsure &&
		m.classic == o.classic && m.classicSessionMs == o.classicSessionMs &&
		slices.Equal(m.classicProtocols, o.classicProtocols) && m.syncPending == o.syncPending && m.classicDue == o.classicDue &&
		m.loadedSession == o.loadedSession
}

func (g consumerGroup) equal(o consumerGroup) bool {
	return g.epoch == o.epoch && g.loose == o.loose && g.unseenJoins == o.unseenJoins && g.mayBeClassic == o.mayBeClassic &&
		g.phasedClassic == o.phasedClassic &&
		g.refreshes == o.refreshes &&
		mapsEqual(g.members, o.members, consumerMember.equal)
}

func (g consumerGroup) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group epoch %d", g.epoch)
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		fmt.Fprintf(&b, ", %s epoch %d owns %v%s", id, m.epoch, m.assigned, m.classicString())
		if len(m.revoking) > 0 {
			fmt.Fprintf(&b, " revoking %v", m.revoking)
		}
	}
	return b.String()
}

// consumerSessionMs is the session timeout of every consumer group
// member, a broker setting (KIP-848 moved it from the client).
func (s State) consumerSessionMs() int64 {
	if s.opts.ConsumerSessionTimeoutMs > 0 {
		return s.opts.ConsumerSessionTimeoutMs
	}
	return DefaultConsumerSessionTimeoutMs
}
