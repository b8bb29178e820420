package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The group coordinator: generations, members, and offsets (KIP-447).

// joinGroup is a whole rebalance round for one member (JoinGroup and
// SyncGroup in one): it answers the member id, the generation and the
// member's assignment. Assignment is the clients' choice in Kafka, so any
// answer is accepted where no partition goes to two members of one
// generation.
func (st *step) joinGroup(r Request) outcome {
	if out := st.sessionTimeoutBounds(r); out != nil {
		return *out
	}
	if out, consumer := st.classicToConsumerGroup(r); consumer {
		return out
	}
	g := st.s.groups[r.Group]
	if out, fenced := st.parkedJoinFenced(r); fenced {
		return out
	}
	if out := st.groupMaxSize(r, g); out != nil {
		return *out
	}
	out, pendingJoin := st.pendingJoin(r, g)
	if out != nil {
		return *out
	}
	if old, held := g.staticMember(r.InstanceID); r.MemberID == "" && r.InstanceID != "" && held {
		taken, out := st.takeOverInstance(r, old)
		if out != nil {
			return *out
		}
		r, g, st.staticTakeover, st.replaced = taken, st.s.groups[r.Group], true, old
	} else if r.MemberID != "" && !pendingJoin {
		// A known member's join meets validateMember first
		// (classicGroupJoinExistingMember, 4.x; doCurrentMemberJoinGroup, 3.9).
		if out := st.checkStaticMember(r); out != nil {
			return *out
		}
	}
	if r.MemberID != "" && !pendingJoin {
		if _, ok := g.members[r.MemberID]; !ok {
			return refuse("unknown-member", UnknownMemberID, "%s is not a member of %s (KIP-345)", r.MemberID, r.Group)
		}
		if out, gone := st.droppedMember(r); gone {
			return out
		}
	}
	if out, late := st.lateSync(r, g); late {
		return out
	}
	if out := protocolRefusal(r, g); out != nil {
		return *out
	}
	if out := st.memberIDRequired(r, g); out != nil {
		return *out
	}
	before := g
	id, gen, assignment := st.chooseJoin(r, g)
	if st.undecided() {
		// Nobody saw the answer: the member it created, if new, is one
		// nobody can name, and what it was assigned is unknown, so it
		// holds nothing the model could hold against a later answer.
		if r.MemberID == "" {
			id = lostMember
		}
		assignment = nil
	}
	if got := st.observed(); got != nil {
		id, gen, assignment = got.MemberID, got.GenerationID, got.Assignment
		if r.JoinOnly {
			// A JoinGroup's answer assigns nothing: its SyncGroup does.
			assignment = nil
		}
		if out := st.checkJoin(r, g, id, gen, assignment, got.Leader); out != nil {
			return *out
		}
	}
	if gen > g.generation {
		// A new generation: every member holds nothing until it rejoins.
		g = g.nextGeneration(gen)
	}
	if gen > g.answered && gen < g.generation {
		// The round the leaves prepared, answered as one (see checkJoin).
		g.generation = gen
	}
	if gen > g.answered {
		g = g.roundCompleted(gen, st.roundMayDropStatic()).sessionsRestarted(st.s.now)
	}
	newRound := gen > g.answered
	m := member{gen: gen, assignment: assignment, lastSeen: st.s.now, sessionMs: sessionTimeout(r), assignmentUnknown: st.undecided(),
		protocolType: r.ProtocolType, protocols: protocolNames(r), subscription: ProtocolKeys(r.Protocols), instance: r.InstanceID}
	if r.JoinOnly {
		m = g.joinedAlone(id, m, newRound)
	}
	prior, wasMember := g.members[id]
	g = g.withMember(id, m).withoutPending(id)
	// A leader taken to have joined the round unseen (leaderJoined) has
	// no protocols until its own rejoin: that rejoin is the one it made.
	rejoined := wasMember && (prior.gen < gen || prior.protocolType == "")
	if out := st.checkProtocol(r, before, g, gen, rejoined); out != nil {
		return *out
	}
	g.answered, g.unseenRound = g.generation, 0
	if got := st.observed(); got != nil {
		g = g.takenOverUnseen(got.Leader)
	}
	g.leader = st.leaderAfterJoin(g, id, gen)
	g = g.leaderJoined(gen, id)
	if r.JoinOnly {
		g = g.awaitingSync(gen, newRound)
	}
	g = st.chosenProtocol(g, gen)
	st.s.setGroup(r.Group, g)
	resp := NewResponse()
	resp.MemberID, resp.GenerationID, resp.Leader = id, gen, g.leader
	if g.protocolGen == gen && g.protocol != "" {
		resp.Protocol, resp.ProtocolType = g.protocol, g.groupProtocolType()
	}
	if !r.JoinOnly {
		resp.Assignment = assignment
	}
	return ok(resp)
}

// leaderAfterJoin is g's leader once id joined generation gen: the one
// the answer names (JoinGroupResponse.LeaderId), else the leader the model
// knew if it is in that generation, else id. Kafka's leader is a member
// that joined the round: a group without a leader takes its first member
// (ClassicGroup.add, 4.x; GroupMetadata.add, 3.9), and a round the leader
// missed elects one of those that joined it (maybeElectNewJoinedLeader).
func (st *step) leaderAfterJoin(g group, id string, gen int32) string {
	if got := st.observed(); got != nil && got.Leader != "" && !st.namesReplacedLeader(got.Leader) {
		return got.Leader
	}
	if m, ok := g.members[g.leader]; ok && m.gen == gen {
		return g.leader
	}
	return id
}

// leaderJoined is g after a join answer of generation gen named its
// leader: the leader joined that round too. Kafka's join round removes the
// dynamic members that did not rejoin, and a leader that did not is
// replaced by one that did (GroupMetadataManager.completeClassicGroupJoin
// and ClassicGroup.maybeElectNewJoinedLeader, 4.x; GroupCoordinator
// .onCompleteJoin and GroupMetadata.maybeElectNewJoinedLeader, 3.9). A
// client rejoins in the background, unrecorded, so the leader's own
// answer may never be seen, and what it holds is unknown; its next rejoin
// is the leader's, which starts a new generation (chooseJoin).
func (g group) leaderJoined(gen int32, joiner string) group {
	m, known := g.members[g.leader]
	if !known || g.leader == joiner || m.gen >= gen {
		return g
	}
	m.gen, m.assignment, m.assignmentUnknown = gen, nil, true
	m.mayBeGone, m.subscriptionForgotten = false, false
	// What it rejoined with is unseen, so the protocols it votes with
	// are unknown until its rejoin is in the history (selection).
	m.protocolType, m.protocols, m.subscription = "", nil, nil
	return g.withMember(g.leader, m)
}

// lostMember names the member a join whose answer was lost created.
const lostMember = "(a member whose join was not answered)"

// unseenTakeover names the member that took over instance when the
// model learned of the takeover but not of the new member id (see
// replacedMember).
func unseenTakeover(instance string) string {
	return "(the member that took over instance " + instance + ")"
}

// unnamed reports whether id is a name the model gave a member nobody
// has named: lostMember or an unseenTakeover. Member ids that brokers
// give never start with a parenthesis here.
func unnamed(id string) bool { return strings.HasPrefix(id, "(") }

func sessionTimeout(r Request) int64 {
	if r.SessionTimeoutMs > 0 {
		return r.SessionTimeoutMs
	}
	return DefaultSessionTimeoutMs
}

// chooseJoin is the reference broker's own answer: a new member starts a
// new generation; a member that missed the last one joins it; a member
// already in the current one keeps its assignment, as Kafka answers a
// follower's rejoin without a rebalance, but for the group's leader:
// Kafka answers the leader's rejoin with a new generation (3.9
// GroupCoordinator.doCurrentMemberJoinGroup, Stable: "force a rebalance
// if the leader sends JoinGroup"; 4.x GroupMetadataManager.
// classicGroupJoinExistingMember, `isLeader`). While the model does not
// know the leader (group.leader ""), a rejoin is taken as a follower's;
// an answered one may still give a newer generation (checkJoin). Each
// takes its round-robin share. A broker that forgot a member's
// subscription at a restart (RestartForgetsMemberMetadata) rebalances on
// any member's rejoin.
func (st *step) chooseJoin(r Request, g group) (string, int32, []Partition) {
	id := r.MemberID
	if id == "" && !st.undecided() {
		id = fmt.Sprintf("member-%d", st.s.nextMember)
		st.s.nextMember++
	}
	m, known := g.members[id]
	current := known && m.gen == g.generation
	// A member whose subscription the broker forgot may be in the
	// current generation unrecorded (a client's background rejoin).
	// A leader that rejoins while its round awaits its SyncGroup is
	// answered that round (classicGroupJoinExistingMember,
	// COMPLETING_REBALANCE: "return current group information for the
	// current generation"); only a stable group's leader forces a new one.
	leaderRejoins := (current && id == g.leader && g.syncDue == 0) || (known && m.subscriptionForgotten) || (current && m.protocolsChanged(r))
	if st.staticTakeover {
		// A static member's takeover of a stable group keeps the
		// generation, the leader's too, and one of a group completing
		// its round starts the next (updateStaticMemberThenRebalanceOrCompleteJoin,
		// STABLE and COMPLETING_REBALANCE, 4.x; updateStaticMemberAndRebalance, 3.9).
		// A stable group rebalances when the new protocols change the
		// protocol it would select (takeoverChangesProtocol).
		leaderRejoins = current && (g.syncDue != 0 || g.takeoverChangesProtocol(id, r))
	}
	if current && !leaderRejoins {
		return id, m.gen, m.assignment
	}
	gen := g.generation + 1
	if known && !leaderRejoins {
		gen = g.generation
	}
	members := slices.Sorted(maps.Keys(g.members))
	if gen > g.generation || !slices.Contains(members, id) {
		members = addSorted(members, id)
	}
	return id, gen, RoundRobin(r.Partitions, members, id)
}

// RoundRobin is member's share of partitions spread round-robin over the
// sorted members: the reference broker's assignment, which any broker that
// answers as the model does hands out too.
func RoundRobin(partitions []Partition, members []string, member string) []Partition {
	me := slices.Index(members, member)
	var share []Partition
	for i, p := range partitions {
		if i%len(members) == me {
			share = append(share, p)
		}
	}
	return share
}

// checkJoin holds a join's answer to what any broker must answer; nil when
// it does.
func (st *step) checkJoin(r Request, g group, id string, gen int32, assignment []Partition, leader string) *outcome {
	fail := func(rule, format string, args ...any) *outcome {
		out := bad(rule, format, args...)
		return &out
	}
	if r.MemberID != "" && id != r.MemberID {
		return fail("join-keeps-member-id", "member %s came back as %s", r.MemberID, id)
	}
	if _, taken := g.members[id]; r.MemberID == "" && (id == "" || taken) {
		return fail("join-new-member-id", "a new member must get a new member id, not %q", id)
	}
	// Every rebalance increments the generation; several members may
	// join one (Kafka's join round), so the current one is allowed too.
	// Leaves and expiries while a rebalance is prepared are one round
	// in Kafka (initNextGeneration moves the generation once), so the
	// round after the last answered one is allowed too.
	if gen <= 0 {
		// A group starts at generation 0 and its first completed round
		// moves it to 1 (ClassicGroup.initNextGeneration, 4.x;
		// GroupMetadata.initNextGeneration, 3.9): no join is answered 0.
		return fail("generations-grow", "generation %d, but a completed join round's generation is at least 1", gen)
	}
	if gen < g.generation && gen <= g.answered {
		return fail("generations-grow", "generation %d, but %s is at generation %d and generations only grow", gen, r.Group, g.generation)
	}
	if m, ok := g.members[id]; ok && !r.JoinOnly && r.MemberID != "" && m.gen == gen && gen == g.generation && !m.assignmentUnknown && !sameSet(m.assignment, assignment) {
		// A generation's assignment is its leader's, handed out once: a
		// follower rejoining a stable group is answered the current
		// generation, and its SyncGroup the assignment it holds
		// (GroupMetadataManager.classicGroupJoinExistingMember and
		// classicGroupSyncGroup, 3.9 to 4.x; GroupCoordinator's
		// doCurrentMemberJoinGroup and doSyncGroup before). A changed
		// assignment comes with a new generation.
		return fail("assignment-kept", "%s rejoined generation %d, which it is in, and was assigned %v, not the %v it holds there", id, gen, assignment, m.assignment)
	}
	if m, ok := g.members[id]; ok && !st.staticTakeover && leader == id && id == g.leader && m.gen == gen && gen == g.generation && g.answered == g.generation && g.syncDue == 0 && !m.assignmentUnknown && !m.subscriptionForgotten {
		// The leader's rejoin of a stable group is a rebalance (3.9
		// GroupCoordinator.doCurrentMemberJoinGroup, Stable: "force a
		// rebalance if the leader sends JoinGroup"; 4.x
		// GroupMetadataManager.classicGroupJoinExistingMember, STABLE,
		// `isLeader`). The group is stable here: the leader saw its own
		// answer of this generation, so its SyncGroup ended the round,
		// and no leave or expiry has prepared another. Only a group
		// completing a round answers a rejoin with the current
		// generation, and a round nobody saw (a late copy of a rejoin, a
		// background one) is a newer generation. Only an answer that
		// names its member the leader (JoinGroupResponse.LeaderId) says
		// so: where answers name none, the model's leader is a guess.
		return fail("leader-rejoin-rebalances", "%s leads generation %d of a stable group, and its rejoin was answered that generation, not a new one", id, gen)
	}
	if m, ok := g.members[id]; ok && g.phased && r.JoinOnly && !st.staticTakeover && r.MemberID != "" && m.gen == gen && gen == g.generation && g.answered == g.generation && m.protocolsChanged(r) {
		// A member of the current generation that rejoins with other
		// protocols rebalances the group, stable or completing its
		// round (classicGroupJoinExistingMember: "!member.matches(...)",
		// 4.x; GroupCoordinator.doCurrentMemberJoinGroup, 3.9). Judged
		// where every join of the group is in the history (phased): a
		// whole round's client rejoins unrecorded.
		return fail("member-protocols-change-rebalances", "%s rejoined generation %d with protocols %v, not the %v it joined with, and was answered that generation, not a new one", id, gen, ProtocolKeys(r.Protocols), m.subscription)
	}
	if m, ok := g.members[id]; ok && st.staticTakeover && m.gen == gen && gen == g.generation && g.answered == g.generation && g.syncDue == 0 && g.takeoverChangesProtocol(id, r) {
		// A static member's takeover of a stable group whose new
		// protocols change the protocol the group selects rebalances
		// (updateStaticMemberThenRebalanceOrCompleteJoin, STABLE, 4.x;
		// updateStaticMemberAndRebalance, 3.9).
		return fail("static-protocol-change-rebalances", "%s took over its instance with protocols %v, which change %s's selected protocol %s, and was answered the current generation %d, not a new one", id, protocolNames(r), r.Group, g.protocol, gen)
	}
	if _, member := g.members[leader]; g.removed[leader] && !member && !st.namesReplacedLeader(leader) {
		// A removed member is gone for good. Its client rejoins as a new
		// member, under a new id that the coordinator makes of the client
		// id and a random UUID (ClassicGroup.generateMemberId, 4.x;
		// GroupMetadata.generateMemberId, 3.9). The old id is
		// UNKNOWN_MEMBER_ID from then on. A round elects its leader among
		// the members that joined it (ClassicGroup.maybeElectNewJoinedLeader,
		// 4.x; GroupMetadata.maybeElectNewJoinedLeader, 3.9), so a removed
		// member never leads again (tests:
		// GroupCoordinatorTest#testSessionTimeoutDuringRebalance, 3.8 and
		// 3.9; GroupMetadataManagerTest#testClassicGroupMemberSessionTimeoutDuringRebalance,
		// 3.8 to 4.x). Only a removal the model is sure of counts: an
		// answer showed it, or a leave or an expiry took effect in this
		// order of the history. A lost answer to a new member's join
		// names nobody, and a restart may load a removed member again
		// (restartReloadsGroups).
		return fail("leader-removed", "%s was removed from %s, and a removed member never leads a later round", leader, r.Group)
	}
	if l, ok := g.members[g.leader]; ok && !unnamed(g.leader) && leader != "" && leader != g.leader && !st.namesReplacedLeader(leader) && !g.replacedUnseen(l, leader) && l.gen == gen && gen == g.generation && !st.allows(JoinersEachLead) {
		// A generation has one leader: the round that completed it
		// elected it, and every answer of that generation names it
		// (JoinGroupResponse.LeaderId, ClassicGroup.leaderOrNull, set at
		// completeClassicGroupJoin; a follower's rejoin of a stable
		// group is answered the same). The lead moves only when its
		// holder leaves or is removed, which prepares the next round. A
		// leader whose join was not answered has a name nobody saw, which
		// may be the one named, and so has one whose instance a rejoin
		// may have taken over unseen (replacedUnseen).
		return fail("leader-of-generation", "generation %d is led by %s, and this answer names %s", gen, g.leader, leader)
	}
	for _, p := range assignment {
		if !slices.Contains(r.Partitions, p) {
			return fail("assignment-outside", "assigned %s, which is not among the partitions to spread", p)
		}
		if holder, held := g.holder(p, gen, id); held {
			return fail("assignment-taken", "assigned %s, which %s already holds in generation %d", p, holder, gen)
		}
	}
	return nil
}

// sameSet reports whether a and b hold the same partitions, in any order.
func sameSet(a, b []Partition) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// holder is the member other than id that holds p in generation gen.
func (g group) holder(p Partition, gen int32, id string) (string, bool) {
	for _, other := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[other]
		if other != id && m.gen == gen && gen == g.generation && slices.Contains(m.assignment, p) {
			return other, true
		}
	}
	return "", false
}

// nextGeneration moves g to generation gen: a member that has not rejoined
// since holds nothing (KIP-447).
func (g group) nextGeneration(gen int32) group {
	g.generation = gen
	// A round that awaited its leader's SyncGroup is over: Kafka answers
	// the SyncGroups it parked REBALANCE_IN_PROGRESS
	// (GroupMetadataManager.prepareRebalance,
	// resetAndPropagateAssignmentWithError).
	g.syncDue = 0
	members := map[string]member{}
	for id, m := range g.members {
		m.assignment, m.syncPending, m.syncParked = nil, false, false
		members[id] = m
	}
	g.members = members
	return g
}

// roundCompleted is the join round of generation gen answering: a dynamic
// member that has not joined it may have been removed (Kafka's
// GroupMetadataManager.completeClassicGroupJoin, and GroupCoordinator.
// onCompleteJoin before it, remove the members that did not rejoin within
// the rebalance timeout). Whether it was is the broker's to say, as a
// client's background heartbeats may have rejoined it: a later request
// naming it may answer UNKNOWN_MEMBER_ID (see droppedMember), and one that
// succeeds shows it was kept. dropsStatic is the deviation
// RoundDropsStatic, under which a static member may be gone too.
func (g group) roundCompleted(gen int32, dropsStatic bool) group {
	members := map[string]member{}
	for id, m := range g.members {
		// A static member stays (notYetRejoinedDynamicMembers, 4.x;
		// GroupCoordinator.onCompleteJoin, 3.9).
		m.mayBeGone = m.mayBeGone || (m.gen < gen && (m.instance == "" || dropsStatic))
		members[id] = m
	}
	g.members = members
	return g
}

// sessionsRestarted is g once a join round completed at now: Kafka
// starts every member's session afresh then, a static member's that did
// not rejoin too (GroupCoordinator.onCompleteJoin,
// completeAndScheduleNextHeartbeatExpiration, 3.9;
// GroupMetadataManager.completeClassicGroupJoin,
// rescheduleClassicGroupMemberHeartbeat, 4.x; tests:
// GroupCoordinatorTest#testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout,
// GroupMetadataManagerTest#testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember,
// where the static leader outlives the session it had before the round).
func (g group) sessionsRestarted(now int64) group {
	members := make(map[string]member, len(g.members))
	for id, m := range g.members {
		m.lastSeen = now
		members[id] = m
	}
	g.members = members
	return g
}

// droppedMember is a request naming a member that may have been removed
// by a join round it missed, answered UNKNOWN_MEMBER_ID: the answer shows
// the member gone, and the model removes it too, so that no later answer
// can bring it back. The generation does not move: the round that
// removed it has already answered, or is the one a leave or an expiry
// prepared (see preparedRoundMayDrop).
func (st *step) droppedMember(r Request) (outcome, bool) {
	g, m, ok := st.member(r)
	// The code itself, not its class: ILLEGAL_GENERATION, of the same
	// class, says the member is still there.
	removed := st.got != nil && st.got.Answered && st.got.Err == UnknownMemberID
	if !ok || !(m.mayBeGone || st.preparedRoundMayDrop(g, m)) || !removed {
		return outcome{}, false
	}
	st.s.setGroup(r.Group, g.withoutMember(r.MemberID))
	out := refuse("unknown-member", UnknownMemberID, "%s missed the join round of generation %d and was removed (completeClassicGroupJoin)", r.MemberID, g.answered)
	out.effects = true
	return out, true
}

// lateSync is a join answered UNKNOWN_MEMBER_ID while it took part in a
// round: the coordinator removed the member before its SyncGroup was in.
// The round it waited for is the one after the last answered (the answer
// names no generation). Either that round completed and the member's
// SyncGroup came after the rebalance timeout, so every member that had not
// synced was removed and the next round prepared (4.x
// GroupMetadataManager.expirePendingSync; 3.9 GroupCoordinator
// .onExpirePendingSync; tests:
// GroupMetadataManagerTest#testRebalanceTimesOutWhenSyncRequestIsNotReceived,
// GroupCoordinatorTest#testRebalanceTimesOutWhenSyncRequestIsNotReceived).
// Or, for a new member only, the round had not completed: its JoinGroup
// waited longer than the new-member join timeout (5 minutes), and the
// round goes on without it (4.x GroupMetadataManager
// .classicGroupJoinNewMember, newMemberJoinTimeoutMs; 3.9
// GroupCoordinator.addMemberAndRebalance, NewMemberJoinTimeoutMs; tests:
// GroupMetadataManagerTest#testNewMemberJoinExpiration,
// GroupCoordinatorTest#testNewMemberJoinExpiration). A known member
// awaiting the round is kept alive (hasSatisfiedHeartbeat, 3.9
// MemberMetadata and 4.x ClassicGroupMember: only a new member can expire
// while it awaits the join), so only the first can remove it. The timers run on the broker's clock, which
// the model does not keep: nothing a client sees says when. Only a join
// that takes part in a round can meet it: a follower's rejoin of a
// stable group is answered at once, by no round, and its SyncGroup by
// the assignment it holds. Met on kfake, whose timer is the target's
// rebalance timeout, 50 ms of real time.
func (st *step) lateSync(r Request, g group) (outcome, bool) {
	late := st.got != nil && st.got.Answered && st.got.Err == UnknownMemberID
	if !late {
		return outcome{}, false
	}
	if _, gen, _ := st.chooseJoin(r, g); gen <= g.answered {
		return outcome{}, false
	}
	round := g.answered + 1
	if r.MemberID == "" {
		// The round may not have completed: a later join may be answered
		// it or the next (see checkJoin), a member that has not joined it
		// may be gone, and a member whose join of it went unrecorded may
		// commit at its generation (see preparing).
		g = g.roundCompleted(round, st.roundMayDropStatic()).nextGeneration(max(g.generation, round+1))
		g.unseenRound = round
		st.s.setGroup(r.Group, g)
		out := refuse("late-sync", UnknownMemberID, "a new member was removed before its SyncGroup: the round of generation %d completed and its SyncGroup came late (expirePendingSync), or its JoinGroup outwaited the new-member join timeout", round)
		out.effects = true
		return out, true
	}
	g = g.nextGeneration(round).roundCompleted(round, st.roundMayDropStatic())
	g.answered = round
	g = g.withoutMember(r.MemberID).nextGeneration(round + 1)
	st.s.setGroup(r.Group, g)
	out := refuse("late-sync", UnknownMemberID, "the round of generation %d completed and its member's SyncGroup came after the rebalance timeout (expirePendingSync)", round)
	out.effects = true
	return out, true
}

// preparedRoundMayDrop reports whether the round a leave or an expiry
// prepared may have completed without m and removed it. That round
// completes when every remaining member has rejoined or when the
// rebalance timeout runs out, a timer on the broker's clock that the
// model does not keep, and removes the dynamic members that have not
// rejoined (4.x GroupMetadataManager.completeClassicGroupJoin, "Remove all
// dynamic members that have not rejoined"; 3.9 GroupCoordinator
// .onCompleteJoin): nothing a client sees says when, and nobody need
// answer. Met on kfake, where the target's background heartbeats rejoined
// one member in time and not the other.
func (g group) preparedRoundMayDrop(m member) bool {
	return g.generation > g.answered && m.gen < g.generation && m.instance == ""
}

func (st *step) leaveGroup(r Request) outcome {
	if out, consumer := st.classicToConsumerGroup(r); consumer {
		return out
	}
	g := st.s.groups[r.Group]
	if owner, held := g.staticMember(r.InstanceID); held && r.MemberID != "" && st.allows(LeaveResolvesInstance) {
		r.MemberID = owner // a known broker's way (deviations.go)
	}
	if out, left := st.pendingLeave(r, g); left {
		return out
	}
	if r.MemberID == "" && r.InstanceID != "" {
		// An admin's removal names the instance alone (LeaveGroup v3+).
		// Kafka removes whichever member id holds it
		// (classicGroupLeaveToClassicGroup, 4.x; GroupCoordinator
		// .handleLeaveGroup, 3.9; tests:
		// GroupCoordinatorTest#testStaticMembersValidBatchLeaveGroup,
		// #testLeaveGroupStaticMemberWithUnknownMemberId).
		owner, held := g.staticMember(r.InstanceID)
		if !held {
			return refuse("unknown-instance", UnknownMemberID, "no member of %s holds instance %s", r.Group, r.InstanceID)
		}
		r.MemberID = owner
	} else if out := st.checkStaticMember(r); out != nil {
		return *out
	}
	if _, ok := g.members[r.MemberID]; !ok {
		return refuse("unknown-member", UnknownMemberID, "%s is not a member of %s", r.MemberID, r.Group)
	}
	if out, gone := st.droppedMember(r); gone {
		return out
	}
	// A leave is a rebalance: the generation moves on.
	g = g.withoutMember(r.MemberID).nextGeneration(g.generation + 1)
	st.s.setGroup(r.Group, g)
	return ok(NewResponse())
}

// restartReloadsGroups is a coordinator that loads each group again from
// its last record in __consumer_offsets. Kafka writes a classic group's
// members when a round completes (GroupMetadataManager
// .completeClassicGroupJoin and classicGroupSyncGroup, 4.x;
// GroupCoordinator.onCompleteJoin and doSyncGroup, 3.9), not when a
// member leaves or expires while others remain. So a member removed since
// may be loaded again, and the model no longer holds its removal against
// a later leader.
func (st *step) restartReloadsGroups() {
	for _, name := range slices.Sorted(maps.Keys(st.s.groups)) {
		g := st.s.groups[name]
		// Pending members are held in memory alone (KIP-394), so a
		// reload forgets them too. Until the load ends, a heartbeat may
		// be answered blindly (loading.go).
		g.removed, g.pending, g.loading = nil, nil, true
		st.s.setGroup(name, g)
	}
}

// expireMembers removes the members of group name whose session timed
// out by now (only member, when not ""); a group that lost one
// rebalances. It reports whether one did.
func (st *step) expireMembers(name string, now int64, only *string) bool {
	g := st.s.groups[name]
	expired := false
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if only != nil && id != *only {
			continue
		}
		if g.members[id].expiredBy(now) {
			g, expired = g.withoutMember(id), true
		}
	}
	if expired {
		g = g.nextGeneration(g.generation + 1)
	}
	g, pendingGone := g.expirePending(now, only)
	if expired || pendingGone {
		st.s.setGroup(name, g)
	}
	return expired
}

// expiredBy reports whether m's session timed out at now: its heartbeat
// deadline, the last time it was seen plus its session timeout, passed
// (GroupCoordinator.onExpireHeartbeat in 3.9; the session timer of
// GroupMetadataManager in 4.x). A member whose SyncGroup waits for the
// leader's does not expire (ClassicGroupMember.hasSatisfiedHeartbeat,
// isAwaitingSync, 4.x; MemberMetadata.hasSatisfiedHeartbeat, 3.9).
func (m member) expiredBy(now int64) bool {
	return !m.syncParked && now-m.lastSeen >= m.sessionMs
}

// heartbeat keeps a member's session alive (KIP-62): a member the group
// does not know is UNKNOWN_MEMBER_ID, one of another generation
// ILLEGAL_GENERATION, as for its offset commits (checkGeneration); else
// its session starts again (GroupCoordinator.handleHeartbeat,
// completeAndScheduleNextHeartbeatExpiration, in 3.9;
// GroupMetadataManager.classicGroupHeartbeat in 4.x). While the group
// prepares a rebalance Kafka answers REBALANCE_IN_PROGRESS and renews the
// session all the same (heartbeatWhilePreparing). While a round awaits
// its leader's SyncGroup, a heartbeat succeeds.
func (st *step) heartbeat(r Request) outcome {
	if out, consumer := st.classicToConsumerGroup(r); consumer {
		return out
	}
	if out := st.checkGeneration(r); out != nil {
		return st.blindHeartbeat(r, *out)
	}
	g, m, known := st.member(r)
	if !known {
		return st.blindHeartbeat(r, refuse("unknown-member", UnknownMemberID, "%s is not a member of %s", r.MemberID, r.Group))
	}
	m.lastSeen = st.s.now
	st.s.setGroup(r.Group, g.withMember(r.MemberID, m))
	if g.preparingRebalance() {
		return st.heartbeatWhilePreparing(g)
	}
	return ok(NewResponse())
}

// txnOffsetCommit stores a consumer's offsets in the producer's transaction,
// pending until the COMMIT marker (KIP-98, KIP-447).
func (st *step) txnOffsetCommit(r Request) outcome {
	t, fencedProducer := st.owner(r)
	if fencedProducer == nil {
		var busy *outcome
		if t, busy = st.waitForMarkers(r.TransactionalID, t); busy != nil {
			return *busy
		}
	}
	fencedConsumer := st.checkGeneration(r)
	switch {
	case fencedProducer != nil && fencedConsumer != nil:
		// Both fences hold; brokers differ in which they check first.
		out := *fencedProducer
		out.also = ClassOf(st.op.Kind, fencedConsumer.refuse)
		return out
	case fencedProducer != nil:
		return *fencedProducer
	case st.s.opts.TxnVersion < 2 && !slices.Contains(t.groups, r.Group):
		// Kafka verifies the transaction (its __consumer_offsets
		// partition, KIP-890 part 1, 3.6+) before it validates the group
		// (handleTxnCommitOffsets, then validateOffsetCommit); a broker
		// without verification answers the consumer's fence.
		out := refuse("offsets-need-add", InvalidTxnState, "%s is not in %s's transaction: AddOffsetsToTxn comes first (KIP-98)", r.Group, r.TransactionalID)
		if fencedConsumer != nil {
			out.also = ClassOf(st.op.Kind, fencedConsumer.refuse)
		}
		return out
	case fencedConsumer != nil:
		if !slices.Contains(t.groups, r.Group) {
			// KIP-890: the group's offsets partition is added before the
			// group coordinator refuses the consumer (keepBegun).
			t = st.begin(t)
			t.groups = addSorted(t.groups, r.Group)
			st.s.setTxn(r.TransactionalID, t)
			st.markBegun()
		}
		return *fencedConsumer
	}
	if !slices.Contains(t.groups, r.Group) {
		if st.s.opts.TxnVersion < 2 {
			return refuse("offsets-need-add", InvalidTxnState, "%s is not in %s's transaction: AddOffsetsToTxn comes first (KIP-98)", r.Group, r.TransactionalID)
		}
		// KIP-890: the commit adds its group implicitly.
		t = st.begin(t)
		t.groups = addSorted(t.groups, r.Group)
		added := st.s
		added.setTxn(r.TransactionalID, t)
		st.added = &added
	}
	pending := maps.Clone(t.pending)
	if pending == nil {
		pending = map[string]map[Partition]pendingOffset{}
	}
	offsets := maps.Clone(pending[r.Group])
	if offsets == nil {
		offsets = map[Partition]pendingOffset{}
	}
	// The commit's record takes the next place in the group's
	// __consumer_offsets partition (see pendingOffset).
	g := st.s.groups[r.Group]
	g.writes++
	for p, off := range r.Offsets {
		offsets[p] = pendingOffset{offset: off, at: g.writes, time: st.s.now, metadata: r.OffsetMetadata[p]}
	}
	pending[r.Group] = offsets
	t.pending = pending
	st.s.setTxn(r.TransactionalID, t)
	// A transactional commit does not renew the member's session: only a
	// plain OffsetCommit does (4.x OffsetMetadataManager.commitOffset calls
	// rescheduleClassicGroupMemberHeartbeat, commitTransactionalOffset does
	// not; 3.9 GroupCoordinator.doCommitOffsets calls
	// completeAndScheduleNextHeartbeatExpiration, doTxnCommitOffsets does
	// not).
	st.s.setGroup(r.Group, g)
	return ok(NewResponse())
}

func (st *step) member(r Request) (group, member, bool) {
	g := st.s.groups[r.Group]
	m, ok := g.members[r.MemberID]
	return g, m, ok
}

// checkGeneration fences a zombie consumer: its group metadata must name a
// current member of the current generation (KIP-447, seed 002). The
// groupId-string overload sends member "" and generation -1, which is not
// checked. Generation -1 with a member id is: Kafka takes it only while
// the group is Empty, and otherwise checks the member, then the
// generation, which -1 never is. A heartbeat has no such exception
// (ClassicGroup.validateOffsetCommit, 4.x;
// GroupCoordinator.validateOffsetCommit, 3.9; tests:
// GroupCoordinatorTest#testTxnCommitOffsetWithInvalidMemberId,
// OffsetMetadataManagerTest#testGenericGroupTransactionalOffsetCommitWithUnknownMemberId).
func (st *step) checkGeneration(r Request) *outcome {
	if st.consumerCommit(r) {
		return st.checkConsumerCommit(r) // KIP-848 (consumercommit.go)
	}
	if r.GenerationID == NoGeneration && ((r.MemberID == "" && r.InstanceID == "") || (st.op.Kind == TxnOffsetCommit && st.takenAsEmpty(r.Group))) {
		return nil
	}
	if out := st.checkStaticMember(r); out != nil {
		return out
	}
	g, _, ok := st.member(r)
	if !ok && r.MemberID == "" {
		// A generation without a member id: Kafka checks the member
		// all the same (ClassicGroup.validateMember), and "" is none.
		out := refuse("unknown-member", UnknownMemberID, "the request names generation %d but no member id, and no member of %s has the id \"\" (KIP-447)", r.GenerationID, r.Group)
		return &out
	}
	if !ok {
		out := refuse("unknown-member", UnknownMemberID, "%s is not a member of %s (KIP-447)", r.MemberID, r.Group)
		return &out
	}
	if out, gone := st.droppedMember(r); gone {
		return &out
	}
	if r.GenerationID != g.generation && !g.preparing(r.GenerationID) {
		out := refuse("stale-generation", IllegalGeneration, "generation %d is stale: %s is at generation %d (KIP-447, seed 002)", r.GenerationID, r.Group, g.generation)
		return &out
	}
	return nil
}

// takenAsEmpty reports whether a commit at generation -1 meets an Empty
// group: one with no members, or, when the broker took the commit, one
// whose every member may have been removed unseen (see droppedMember).
func (st *step) takenAsEmpty(name string) bool {
	g := st.s.groups[name]
	if len(g.members) == 0 {
		return true
	}
	if st.got == nil || !st.got.Answered || st.got.Err != "" {
		return false
	}
	for _, m := range g.members {
		if !m.mayBeGone && !st.preparedRoundMayDrop(g, m) {
			return false
		}
	}
	return true
}

// preparing reports whether gen is the generation the group's coordinator
// is still at while it prepares a rebalance: the last one a join round
// answered, when leaves or expiries have moved the group on since and no
// join round has answered the new one. Kafka keeps the generation until
// the round completes, so a remaining member's commit at it is accepted
// (ClassicGroup.validateOffsetCommit compares with the group's
// generationId, which only initNextGeneration moves). A round that may
// have completed unseen (unseenRound) is taken too.
func (g group) preparing(gen int32) bool {
	return g.answered < g.generation && (gen == g.answered || (g.unseenRound > 0 && gen == g.unseenRound))
}

// exists reports whether Kafka's coordinator holds g: a join created it,
// or a commit's record did (a plain one, or a TxnOffsetCommit, which
// creates an unknown group at generation -1). A transaction's marker
// alone creates none.
func (g group) exists() bool {
	return g.generation > 0 || len(g.members) > 0 || g.writes > 0
}

// settling marks the partitions whose pending offsets a transaction's end
// just made real or dropped: Kafka answers EndTxn before its marker reaches
// __consumer_offsets, and until it does, an OffsetFetch with require_stable
// is UNSTABLE_OFFSET_COMMIT (OffsetMetadataManager.fetchOffsets,
// hasPendingTransactionalOffsets). The window closes when the broker
// answers one with the offset, or at LandMarkers, the broker's own step
// that lands every marker (see settled). A landing the model chose (at a
// tick, or when an answer needed it) leaves it open.
func (g group) settling(offsets map[Partition]pendingOffset) group {
	g.unsettled = maps.Clone(g.unsettled)
	if g.unsettled == nil {
		g.unsettled = map[Partition]bool{}
	}
	for p := range offsets {
		g.unsettled[p] = true
	}
	return g
}

// offsetFetch answers a group's committed offset; with require_stable, not
// while a transaction holds a pending offset for it (KIP-447).
func (st *step) offsetFetch(r Request) outcome {
	if out := st.checkConsumerFetch(r); out != nil {
		return *out
	}
	st.offsetsDropped(r)
	if r.AllPartitions {
		return st.offsetFetchAll(r)
	}
	if r.RequireStable {
		for _, id := range slices.Sorted(maps.Keys(st.s.txns)) {
			if _, pending := st.s.txns[id].pending[r.Group][r.Partition]; pending {
				return refuse("unstable-offset", UnstableOffsetCommit, "%s of %s has an offset pending in %s's transaction (KIP-447)", r.Partition, r.Group, id)
			}
		}
	}
	resp := NewResponse()
	if off, ok := st.s.groups[r.Group].committed[r.Partition]; ok {
		resp.Offset = off
	}
	// The metadata committed with the offset (offsetmetadata.go).
	resp.Metadata = st.s.groups[r.Group].metadata[r.Partition]
	resp.MetadataSaid = resp.Metadata != ""
	if got := st.observed(); got != nil && got.Offset != resp.Offset {
		return bad("committed-offset", "offset %d, but %s's committed offset for %s is %d", got.Offset, r.Group, r.Partition, resp.Offset)
	}
	if wrong := checkFetchedMetadata(st.observed(), r, resp.Metadata); wrong != nil {
		return *wrong
	}
	out := ok(resp)
	if r.RequireStable && st.unstableGroupWide(r.Group) {
		out.also = Unstable
	}
	if g := st.s.groups[r.Group]; r.RequireStable && g.unsettled[r.Partition] {
		out.also = Unstable // the marker may still be on its way
		if st.observed() != nil {
			g.unsettled = maps.Clone(g.unsettled)
			delete(g.unsettled, r.Partition)
			st.s.setGroup(r.Group, g)
		}
	}
	return out
}

// offsetFetchAll answers an OffsetFetch of all partitions (topics null):
// every partition the group has a committed offset for, at that offset,
// and no other. With require_stable, a partition that a transaction holds
// a pending offset for is listed with UNSTABLE_OFFSET_COMMIT instead. A
// partition with a pending offset and none committed is not listed until
// the transaction commits. A group Kafka does not know lists nothing (4.x
// OffsetMetadataManager.fetchAllOffsets, whose GroupIdNotFoundException
// answers an empty list; tests: OffsetMetadataManagerTest
// #testFetchAllOffsetsWithUnknownGroup,
// #testFetchAllOffsetsWithPendingTransactionalOffsets,
// #testFetchAllOffsetsAtDifferentCommittedOffset; KIP-447).
func (st *step) offsetFetchAll(r Request) outcome {
	g := st.s.groups[r.Group]
	resp := NewResponse()
	for _, p := range slices.Sorted(maps.Keys(g.committed)) {
		if r.RequireStable && st.pendingOffset(r.Group, p) != "" {
			resp.Unstable = append(resp.Unstable, p)
			continue
		}
		if resp.FetchedOffsets == nil {
			resp.FetchedOffsets = map[Partition]int64{}
		}
		resp.FetchedOffsets[p] = g.committed[p]
	}
	got := st.observed()
	if got != nil {
		if why := st.badFetchAll(r, g, resp, *got); why != "" {
			return bad("committed-offset", "%s", why)
		}
		resp = *got
	}
	out := ok(resp)
	if r.RequireStable && st.unstableGroupWide(r.Group) {
		out.also = Unstable
	}
	if got != nil && len(g.unsettled) > 0 {
		// A partition answered at its offset has its marker landed.
		g.unsettled = maps.Clone(g.unsettled)
		for p := range got.FetchedOffsets {
			delete(g.unsettled, p)
		}
		st.s.setGroup(r.Group, g)
	}
	return out
}

// pendingOffset is the transactional id of a transaction that holds a
// pending offset for group's partition p, "" when none does.
func (st *step) pendingOffset(group string, p Partition) string {
	for _, id := range slices.Sorted(maps.Keys(st.s.txns)) {
		if _, pending := st.s.txns[id].pending[group][p]; pending {
			return id
		}
	}
	return ""
}

// badFetchAll says why got is not an answer Kafka gives to an OffsetFetch
// of all of group's partitions, "" when it is one. want is the model's
// answer. A broker known to refuse a whole group's stable fetch while
// any of its offsets is pending (UnstableOffsetsGroupWide) may list
// every committed partition as unstable. With require_stable, a
// partition whose transaction's marker may still be on its way
// (unsettled) may be listed at its offset, listed as
// UNSTABLE_OFFSET_COMMIT, or, when the marker is what committed its
// first offset, not listed, as the single-partition fetch takes it.
func (st *step) badFetchAll(r Request, g group, want, got Response) string {
	for _, p := range got.Unstable {
		if _, listed := got.FetchedOffsets[p]; listed {
			return fmt.Sprintf("%s of %s listed both at offset %d and as UNSTABLE_OFFSET_COMMIT", p, r.Group, got.FetchedOffsets[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(got.FetchedOffsets)) {
		off, committed := g.committed[p]
		switch {
		case !committed:
			return fmt.Sprintf("%s of %s listed at offset %d, but %s has no committed offset for it", p, r.Group, got.FetchedOffsets[p], r.Group)
		case got.FetchedOffsets[p] != off:
			return fmt.Sprintf("%s of %s listed at offset %d, but its committed offset is %d", p, r.Group, got.FetchedOffsets[p], off)
		case slices.Contains(want.Unstable, p) && !g.unsettled[p]:
			return fmt.Sprintf("%s of %s listed at offset %d, but it has an offset pending in %s's transaction: require_stable answers UNSTABLE_OFFSET_COMMIT (KIP-447)", p, r.Group, off, st.pendingOffset(r.Group, p))
		}
	}
	for _, p := range got.Unstable {
		_, committed := g.committed[p]
		switch {
		case !r.RequireStable:
			return fmt.Sprintf("%s of %s listed as UNSTABLE_OFFSET_COMMIT, but the fetch did not ask for stable offsets", p, r.Group)
		case !committed:
			return fmt.Sprintf("%s of %s listed as UNSTABLE_OFFSET_COMMIT, but a partition with no committed offset is not listed", p, r.Group)
		case !slices.Contains(want.Unstable, p) && !g.unsettled[p] && !st.unstableGroupWide(r.Group):
			return fmt.Sprintf("%s of %s listed as UNSTABLE_OFFSET_COMMIT, but no transaction holds an offset pending for it", p, r.Group)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(g.committed)) {
		_, listed := got.FetchedOffsets[p]
		if !listed && !slices.Contains(got.Unstable, p) && !(r.RequireStable && g.unsettled[p]) {
			return fmt.Sprintf("%s of %s has committed offset %d, but the answer does not list it", p, r.Group, g.committed[p])
		}
	}
	return ""
}
