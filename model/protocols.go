package model

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf16"
)

// A classic group's protocol selection. When a round completes, Kafka
// picks the group's protocol for the new generation: the candidates are
// the protocols every member supports, each member votes for the first
// candidate in its own order, and the one with the most votes wins
// (ClassicGroup.selectProtocol, candidateProtocols and
// ClassicGroupMember.vote, 4.x; GroupMetadata.selectProtocol and
// MemberMetadata.vote, 3.9). Every JoinGroup answer of the generation
// carries it (JoinGroupResponse.ProtocolName, set from
// group.protocolName()), and a SyncGroup v5+ sends it back.

// selection is the protocols Kafka may select for g's generation gen:
// those with the most votes. A tie is broken by the order of a hash map
// (4.x: Java's HashMap of votes, whose first maximum
// Stream.max keeps; 3.9: Scala's groupBy and maxBy), so every tied
// protocol is taken. ok is false where the model does not know every
// voter: a member whose protocols it does not know, one that may be gone
// or replaced unseen, or one not yet in gen, whose rejoin may still
// change what it supports.
func (g group) selection(gen int32) (tied []string, ok bool) {
	if len(g.members) == 0 {
		return nil, false // selectProtocol: "Cannot select protocol for empty group"
	}
	ids := sortedMembers(g)
	for _, id := range ids {
		m := g.members[id]
		if unnamed(id) || m.gen != gen || m.protocolType == "" || len(m.protocols) == 0 ||
			m.mayBeGone || m.mayBeReplaced || m.subscriptionForgotten {
			return nil, false
		}
	}
	_, tied = SelectProtocol(g.supportedProtocols(ids))
	return tied, len(tied) > 0 // none: supportsProtocols kept this from happening
}

// SelectProtocol is Kafka's vote among members that support the
// protocols given, each in its member's order: tied are the protocols
// every member supports with the most first-choice votes, in name
// order, and chosen the reference broker's pick among them
// (selectedProtocol). Both are empty when no protocol is supported by
// every member.
func SelectProtocol(supported [][]string) (chosen string, tied []string) {
	if len(supported) == 0 {
		return "", nil
	}
	votes := map[string]int{}
	for _, protocols := range supported {
		for _, name := range protocols {
			if supportedByEvery(supported, name) {
				votes[name]++ // ClassicGroupMember.vote: its first candidate
				break
			}
		}
	}
	if len(votes) == 0 {
		return "", nil
	}
	most := slices.Max(slices.Collect(maps.Values(votes)))
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] == most {
			tied = append(tied, name)
		}
	}
	return selectedProtocol(tied), tied
}

// supportedProtocols is the protocols each member of ids joined with.
func (g group) supportedProtocols(ids []string) [][]string {
	var supported [][]string
	for _, id := range ids {
		supported = append(supported, g.members[id].protocols)
	}
	return supported
}

// supportedByEvery reports whether name is among each member's
// protocols: a candidate (ClassicGroup.candidateProtocols).
func supportedByEvery(supported [][]string, name string) bool {
	for _, protocols := range supported {
		if !slices.Contains(protocols, name) {
			return false
		}
	}
	return true
}

// selectedProtocol is the reference broker's own choice among tied:
// the first in the iteration order of a Java HashMap of them, as the
// newest release picks it. Names that share a bucket are taken in name
// order, where Kafka takes them in the order the members voted.
func selectedProtocol(tied []string) string {
	capacity := 16 // HashMap's default, doubled past a load of 0.75
	for len(tied) > capacity*3/4 {
		capacity *= 2
	}
	best, bestBucket := "", capacity
	for _, name := range tied {
		if b := javaBucket(name, capacity); b < bestBucket {
			best, bestBucket = name, b
		}
	}
	return best
}

// javaBucket is the bucket of a Java HashMap of capacity that holds
// the string key s: String.hashCode over UTF-16, spread by HashMap.hash.
func javaBucket(s string, capacity int) int {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	spread := uint32(h) ^ (uint32(h) >> 16)
	return int(spread & uint32(capacity-1))
}

// groupProtocolType is the protocol type of g's members, "" when no
// member's is known. Every member shares it (supportsProtocols).
func (g group) groupProtocolType() string {
	for _, id := range sortedMembers(g) {
		if m := g.members[id]; m.protocolType != "" && !m.mayBeGone {
			return m.protocolType
		}
	}
	return ""
}

// withProtocols is g with member id's protocols the ones r names.
func (g group) withProtocols(id string, r Request) group {
	m, ok := g.members[id]
	if !ok || r.ProtocolType == "" {
		return g
	}
	m.protocolType, m.protocols, m.subscription = r.ProtocolType, protocolNames(r), ProtocolKeys(r.Protocols)
	return g.withMember(id, m)
}

// ProtocolKeys is each protocol of a join, with the topics of its
// subscription, as name:topic+topic: two joins whose keys differ sent
// other metadata (ClassicGroupMember.matches).
func ProtocolKeys(protocols []Protocol) []string {
	var keys []string
	for _, p := range protocols {
		keys = append(keys, p.Name+":"+strings.Join(p.Topics, "+"))
	}
	return keys
}

// protocolsChanged reports whether r's protocols are, for certain, not
// the ones m last joined with: other names, another order, or other
// topics. Kafka compares each protocol's name and metadata bytes
// (ClassicGroupMember.matches, 4.x; MemberMetadata.matches, 3.9). The
// same names and topics may still differ in bytes the history does not
// carry (user data, owned partitions), so that is not a match for
// certain, and a rebalance is taken then too.
func (m member) protocolsChanged(r Request) bool {
	if m.protocolType == "" || r.ProtocolType == "" || m.subscriptionForgotten {
		return false
	}
	return !slices.Equal(m.subscription, ProtocolKeys(r.Protocols))
}

// checkProtocol holds a join answer's protocol to the group's choice.
// before is the group the join met, after the group once it joined gen
// (rejoined is whether its member was in the group before, at an older
// generation). The answer of every member of one generation names one
// protocol (protocol-of-generation), one its member supports, of the
// type it sent. Where the model knows every voter, it is one of the
// protocols with the most votes (protocol-selected). That is judged
// when the last member of the generation the group had before rejoins:
// a new member's join that the history orders later may have been in
// the round too, so a vote counted earlier may miss it.
func (st *step) checkProtocol(r Request, before, after group, gen int32, rejoined bool) *outcome {
	got := st.observed()
	if got == nil {
		return nil
	}
	fail := func(rule, format string, args ...any) *outcome {
		out := bad(rule, format, args...)
		return &out
	}
	if got.ProtocolType != "" && r.ProtocolType != "" && got.ProtocolType != r.ProtocolType {
		return fail("protocol-selected", "the answer names protocol type %q, but the join sent %q, which every member of %s shares (ClassicGroup.supportsProtocols)", got.ProtocolType, r.ProtocolType, r.Group)
	}
	if got.Protocol == "" {
		return nil
	}
	if before.protocol != "" && before.protocolGen == gen && got.Protocol != before.protocol {
		return fail("protocol-of-generation", "generation %d of %s chose protocol %s, and this answer names %s (initNextGeneration selects it once)", gen, r.Group, before.protocol, got.Protocol)
	}
	if names := protocolNames(r); r.ProtocolType != "" && len(names) > 0 && !slices.Contains(names, got.Protocol) {
		return fail("protocol-selected", "the answer names protocol %s, which the join's protocols %v do not include, and the group's protocol is one every member supports (ClassicGroup.candidateProtocols)", got.Protocol, names)
	}
	if tied, known := after.selection(gen); rejoined && known && !slices.Contains(tied, got.Protocol) {
		return fail("protocol-selected", "the answer names protocol %s, but the members' votes choose %v (ClassicGroup.selectProtocol)", got.Protocol, tied)
	}
	return nil
}

// chosenProtocol is g once a join answered generation gen: the group's
// protocol is the one the answer named, or else the one the model
// selects where it knows every voter. The model's own answer carries it.
func (st *step) chosenProtocol(g group, gen int32) group {
	if got := st.observed(); got != nil {
		if got.Protocol != "" {
			g.protocol, g.protocolGen = got.Protocol, gen
		}
		return g
	}
	if st.got != nil {
		// A lost answer: the broker's pick among tied protocols is
		// unknown until an answer names it.
		return g
	}
	if g.protocolGen == gen && g.protocol != "" {
		return g
	}
	if tied, known := g.selection(gen); known {
		g.protocol, g.protocolGen = selectedProtocol(tied), gen // SelectProtocol's pick
	}
	return g
}

// takeoverChangesProtocol reports whether a static member's takeover of
// stable g, joining with r's protocols, changes the protocol the group
// would select: Kafka then rebalances, and otherwise answers the current
// generation (updateStaticMemberThenRebalanceOrCompleteJoin, STABLE,
// "Check if group's selected protocol of next generation will change",
// 4.x; updateStaticMemberAndRebalance, 3.9). Only where the model knows
// the group's protocol and every vote.
func (g group) takeoverChangesProtocol(id string, r Request) bool {
	if g.protocol == "" || g.protocolGen != g.generation {
		return false
	}
	tied, known := g.withProtocols(id, r).selection(g.generation)
	return known && !slices.Contains(tied, g.protocol)
}

// syncProtocolRefusal is INCONSISTENT_GROUP_PROTOCOL for a SyncGroup v5+
// whose protocol type or name is not the group's, checked after the
// generation (validateSyncGroup, isProtocolInconsistent, 4.x;
// GroupCoordinator.doSyncGroup, 3.9; tests:
// GroupMetadataManagerTest#testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent,
// #testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent). Where the
// model does not know the group's, an answer of that code is taken as
// the refusal it would be.
func (st *step) syncProtocolRefusal(r Request, g group) *outcome {
	refused := func(format string, args ...any) *outcome {
		out := refuse("sync-protocol", InconsistentGroupProtocol, format, args...)
		return &out
	}
	known := true
	if t := g.groupProtocolType(); r.ProtocolType != "" {
		if t != "" && t != r.ProtocolType {
			return refused("%s's protocol type is %q, and the SyncGroup names %q (validateSyncGroup)", r.Group, t, r.ProtocolType)
		}
		known = known && t != ""
	}
	if r.Protocol != "" {
		named := g.protocol != "" && g.protocolGen == r.GenerationID
		if named && g.protocol != r.Protocol {
			return refused("generation %d of %s chose protocol %s, and the SyncGroup names %s (validateSyncGroup)", r.GenerationID, r.Group, g.protocol, r.Protocol)
		}
		known = known && named
	}
	if !known && st.got != nil && st.got.Answered && st.got.Err == InconsistentGroupProtocol {
		return refused("the SyncGroup's protocol may not be %s's, which the model does not know (validateSyncGroup)", r.Group)
	}
	return nil
}
