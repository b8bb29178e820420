package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Static membership (KIP-345). A consumer with group.instance.id keeps
// that name across restarts. The coordinator maps each instance id to
// one member id at a time. A rejoin of the instance with no member id
// takes the instance over under a new member id, and the old member id
// is fenced from then on: FENCED_INSTANCE_ID on every request that names
// the instance (ClassicGroup.replaceStaticMember and validateMember, 4.x;
// GroupMetadata.replaceStaticMember and GroupCoordinator
// .validateCurrentMember, 3.9).

// staticMember is the member id g maps instance to, if any. A member
// removed by a leave or an expiry takes its mapping with it
// (ClassicGroup.remove, 4.x; GroupMetadata.remove, 3.9).
func (g group) staticMember(instance string) (string, bool) {
	if instance == "" {
		return "", false // a dynamic member holds no instance
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if g.members[id].instance == instance {
			return id, true
		}
	}
	return "", false
}

// checkInstance is ClassicGroup.validateMember's first half (4.x), which
// every JoinGroup of a known member, SyncGroup, Heartbeat, LeaveGroup and
// offset commit with an instance id meets first. An instance id mapped
// to another member id is FENCED_INSTANCE_ID, and one not mapped at all
// is UNKNOWN_MEMBER_ID. 3.9 checks the same (GroupCoordinator
// .validateCurrentMember, GroupMetadata.isStaticMemberFenced), and both
// check it before the generation (tests:
// GroupCoordinatorTest#staticMemberCommitOffsetWithInvalidMemberId,
// #staticMemberHeartbeatLeaderWithInvalidMemberId,
// GroupMetadataManagerTest#testStaticMemberRejoinWithKnownMemberId).
// nil when the request names no instance or names it rightly. A request
// without the instance id is checked by member id alone: the replaced
// member id is no member, so it is UNKNOWN_MEMBER_ID.
func (st *step) checkInstance(r Request) *outcome {
	if r.InstanceID == "" {
		return nil
	}
	g := st.s.groups[r.Group]
	owner, known := g.staticMember(r.InstanceID)
	switch {
	case !known:
		out := refuse("unknown-instance", UnknownMemberID, "%s names instance %s, which no member of %s holds (ClassicGroup.validateMember)", r.MemberID, r.InstanceID, r.Group)
		return &out
	case owner != r.MemberID && owner != lostMember:
		out := refuse("fenced-instance", FencedInstanceID, "instance %s is held by %s now, so %s is fenced (KIP-345, ClassicGroup.validateMember)", r.InstanceID, owner, r.MemberID)
		return &out
	}
	return nil
}

// replacedMember is a request from a member id whose instance a rejoin
// may have taken over unseen (the rejoin's answer was lost, see
// takeOverInstance), answered FENCED_INSTANCE_ID: the answer shows the
// takeover, and the model removes the old member id too.
func (st *step) replacedMember(r Request) (outcome, bool) {
	g, m, ok := st.member(r)
	fenced := st.got != nil && st.got.Answered && st.got.Err == FencedInstanceID
	if !ok || !fenced || !m.mayBeReplaced || r.InstanceID == "" || r.InstanceID != m.instance {
		return outcome{}, false
	}
	// The instance's place, its lead included, is the new member id's,
	// which nobody saw yet: a later answer may name it
	// (takenOverUnseen), and a later rejoin of the instance takes it over.
	led := g.leader == r.MemberID
	m.mayBeReplaced = false
	unseen := unseenTakeover(r.InstanceID)
	g = g.withoutMember(r.MemberID).withMember(unseen, m)
	if led {
		g.leader = unseen
	}
	st.s.setGroup(r.Group, g)
	out := refuse("fenced-instance", FencedInstanceID, "a rejoin of instance %s whose answer was lost took it over from %s (KIP-345)", r.InstanceID, r.MemberID)
	out.effects = true
	return out, true
}

// replacedUnseen reports whether name may be the new member id of l, a
// member whose instance a rejoin may have taken over unseen (its answer
// was lost, takeOverInstance): a name the group has never known.
func (g group) replacedUnseen(l member, name string) bool {
	_, known := g.members[name]
	return l.mayBeReplaced && !known && !g.removed[name]
}

// takenOverUnseen is g once an answer named leader, a name the group has
// never known, while its leader's instance may have been taken over
// unseen (replacedUnseen), or while its leader is a member nobody named
// (unnamed: a join whose answer was lost, a takeover a fence showed).
// The answer names that member: leader is its id, with its place.
func (g group) takenOverUnseen(leader string) group {
	l, ok := g.members[g.leader]
	_, known := g.members[leader]
	named := ok && unnamed(g.leader) && !known && !g.removed[leader]
	if leader == "" || !ok || (!g.replacedUnseen(l, leader) && !named) {
		return g
	}
	l.mayBeReplaced = false
	g = g.withoutMember(g.leader).withMember(leader, l)
	g.leader = leader
	return g
}

// takeOverInstance is a static member's JoinGroup with no member id for
// an instance the group maps to old: the new member id takes old's place
// with its generation, assignment and lead (ClassicGroup
// .replaceStaticMember; 4.x GroupMetadataManager
// .classicGroupJoinNewStaticMember and
// updateStaticMemberThenRebalanceOrCompleteJoin; 3.9 GroupCoordinator
// .doStaticNewMemberJoinGroup and updateStaticMemberAndRebalance). The
// join then goes on as old's rejoin under the new id (staticRejoin). Its
// answer must name a new member id. When the answer was lost, nobody
// knows the new id: old stays, but may be fenced (replacedMember).
// Tests: GroupMetadataManagerTest#testStaticMemberRejoinWithUnknownMemberId*,
// GroupCoordinatorTest#staticMemberRejoinAsFollowerWithUnknownMemberId,
// ClassicGroupTest#testReplaceGroupInstance.
func (st *step) takeOverInstance(r Request, old string) (Request, *outcome) {
	g := st.s.groups[r.Group]
	if st.undecided() {
		m := g.members[old]
		// A takeover renews the session (the join goes on as a rejoin),
		// so a lost one is taken to have, as a lost rejoin is (joinGroup).
		m.mayBeReplaced, m.lastSeen = true, st.s.now
		st.s.setGroup(r.Group, g.withMember(old, m))
		out := ok(NewResponse())
		return r, &out
	}
	id := TakeoverMemberID(old, st.s.nextMember)
	st.s.nextMember++
	if got := st.observed(); got != nil {
		id = got.MemberID
		if _, taken := g.members[id]; id == "" || taken || g.removed[id] {
			out := bad("join-new-member-id", "a static member's rejoin with no member id must get a new member id, not %q (replaceStaticMember)", id)
			return r, &out
		}
	}
	m := g.members[old]
	m.mayBeReplaced = false
	led := g.leader == old
	g = g.withoutMember(old).withMember(id, m)
	if led {
		// The new member id leads where the old one did
		// (ClassicGroup.replaceStaticMember: "if (isLeader(oldMemberId))
		// leaderId = newMemberId").
		g.leader = id
	}
	st.s.setGroup(r.Group, g)
	r.MemberID = id
	return r, nil
}

// TakeoverMemberID is the member id the reference broker gives the
// member n that takes over old's instance: old's id before any dot, a
// dot, and n, for example member-0.2. Kafka's ids are any string. This
// one sorts where old did among the other members, because a dot sorts
// before every digit. So the round-robin shares of a generation spread
// over old's id stay apart when the new id joins it (chooseJoin).
func TakeoverMemberID(old string, n int) string {
	root, _, _ := strings.Cut(old, ".")
	return fmt.Sprintf("%s.%d", root, n)
}

// checkStaticMember is a request's instance check: a member id whose
// instance was taken over unseen and is answered FENCED_INSTANCE_ID
// (replacedMember), else checkInstance.
func (st *step) checkStaticMember(r Request) *outcome {
	if out, replaced := st.replacedMember(r); replaced {
		return &out
	}
	return st.checkInstance(r)
}

// namesReplacedLeader reports whether leader is the member id a static
// takeover just replaced, named as the leader by its own answer. Kafka
// answers a JoinGroup below v9 with the leader it had before the
// replacement (updateStaticMemberThenRebalanceOrCompleteJoin,
// currentLeader, 4.x; updateStaticMemberAndRebalance, 3.9; test:
// GroupCoordinatorTest#staticMemberRejoinWithLeaderIdAndUnknownMemberId).
func (st *step) namesReplacedLeader(leader string) bool {
	return st.staticTakeover && leader == st.replaced
}

// parkedJoinFenced is a static member's join with no member id answered
// FENCED_INSTANCE_ID. Kafka answers so a join parked in a round when a
// later join of the same instance replaced it (ClassicGroup
// .replaceStaticMember completes the old member's join future; test:
// GroupMetadataManagerTest#testJoinGroupReplaceStaticMember). The member
// it added is gone again, and the instance is the later join's, so the
// model takes it as a join that changed nothing. The round it may have
// prepared is one the later join is answered in.
func (st *step) parkedJoinFenced(r Request) (outcome, bool) {
	fenced := st.got != nil && st.got.Answered && st.got.Err == FencedInstanceID
	if !fenced || r.MemberID != "" || r.InstanceID == "" {
		return outcome{}, false
	}
	return refuse("fenced-instance", FencedInstanceID, "a later join of instance %s replaced this one while it was parked (replaceStaticMember)", r.InstanceID), true
}
