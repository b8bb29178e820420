package model

import (
	"maps"
	"slices"
)

// Members pending their second JoinGroup (KIP-394). A dynamic member's
// first JoinGroup (v4 on) is answered MEMBER_ID_REQUIRED with a member id,
// and the member is pending until it joins again with that id. A history
// writes the two JoinGroups as one join_group, whose answer has no member
// id for the refusal, so only an answer that names the id (a transcript's)
// makes a member pending here. A pending member is not a member: it is
// not counted against group.max.size, and its heartbeat and commits are
// UNKNOWN_MEMBER_ID.

// pendingMember is a member id a MEMBER_ID_REQUIRED answer handed out,
// with the session that expires it.
type pendingMember struct {
	since     int64
	sessionMs int64
}

// memberIDRequired is a new dynamic member's join answered
// MEMBER_ID_REQUIRED with the id it is to join with: the id is pending
// (GroupCoordinator.doDynamicNewMemberJoinGroup, addPendingMember, 3.9;
// GroupMetadataManager.classicGroupJoinNewDynamicMember, 4.x; tests:
// GroupCoordinatorTest#testJoinGroupSecondJoinInconsistentProtocol,
// GroupMetadataManagerTest#testHeartbeatExpirationShouldRemovePendingMember).
// Kafka answers it only to a member with no member id and no instance id,
// after the group's size and protocol checks; nil for any other join, or
// an answer that does not name the id.
func (st *step) memberIDRequired(r Request, g group) *outcome {
	asked := st.got != nil && st.got.Answered && st.got.Err == MemberIDRequired
	if !asked || r.MemberID != "" || r.InstanceID != "" || st.got.Resp.MemberID == "" {
		return nil
	}
	id := st.got.Resp.MemberID
	if _, taken := g.members[id]; taken || g.removed[id] {
		out := bad("member-id-required", "MEMBER_ID_REQUIRED handed out %s, an id %s has held", id, r.Group)
		return &out
	}
	g.pending = maps.Clone(g.pending)
	if g.pending == nil {
		g.pending = map[string]pendingMember{}
	}
	g.pending[id] = pendingMember{since: st.s.now, sessionMs: sessionTimeout(r)}
	st.s.setGroup(r.Group, g)
	out := refuse("member-id-required", MemberIDRequired, "a new dynamic member joins with the id %s next (KIP-394)", id)
	out.effects = true
	return &out
}

// pendingJoin is a pending member's join with its id: Kafka adds it as a
// new member under that id (addMemberAndRebalance, 3.9 and 4.x). A
// pending member never has an instance id; Kafka throws
// IllegalStateException for one, which the client sees as
// UNKNOWN_SERVER_ERROR (test:
// GroupMetadataManagerTest#testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException).
// It reports whether r is such a join.
func (st *step) pendingJoin(r Request, g group) (*outcome, bool) {
	if _, pending := g.pending[r.MemberID]; !pending || r.MemberID == "" {
		return nil, false
	}
	if r.InstanceID != "" {
		out := refuse("pending-member-static", UnknownServerError, "%s is pending its KIP-394 rejoin, and a pending member is dynamic, but this join names instance %s", r.MemberID, r.InstanceID)
		return &out, true
	}
	return nil, true
}

// withoutPending is g with id no longer pending.
func (g group) withoutPending(id string) group {
	if _, pending := g.pending[id]; !pending {
		return g
	}
	g.pending = maps.Clone(g.pending)
	delete(g.pending, id)
	return g
}

// pendingLeave is a pending member's LeaveGroup: Kafka removes it from the
// pending members and answers success, before it looks for a member of
// that id (GroupCoordinator.handleLeaveGroup, removePendingMemberAndUpdateGroup,
// 3.9; GroupMetadataManager.classicGroupLeaveToClassicGroup, 4.x; tests:
// GroupCoordinatorTest#testPendingMembersLeavesGroup,
// #testPendingMemberBatchLeaveGroup).
func (st *step) pendingLeave(r Request, g group) (outcome, bool) {
	if _, pending := g.pending[r.MemberID]; !pending || r.MemberID == "" {
		return outcome{}, false
	}
	st.s.setGroup(r.Group, g.withoutPending(r.MemberID))
	return ok(NewResponse()), true
}

// expirePending removes the pending members of g whose session timed out
// by now (only the member only, when not nil): Kafka's pending member has
// a session timer of its own (addPendingMemberExpiration and
// onExpireHeartbeat, 3.9; the heartbeat timer of a pending member, 4.x;
// test: GroupMetadataManagerTest#testHeartbeatExpirationShouldRemovePendingMember).
func (g group) expirePending(now int64, only *string) (group, bool) {
	expired := false
	for _, id := range slices.Sorted(maps.Keys(g.pending)) {
		p := g.pending[id]
		if (only == nil || id == *only) && now-p.since >= p.sessionMs {
			g, expired = g.withoutPending(id), true
		}
	}
	return g, expired
}
