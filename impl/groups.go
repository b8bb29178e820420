package impl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// The group coordinator, one shard of groups per lock: generations,
// members, and offsets (KIP-447).

// groupShard is one shard: its groups, and the log they are rebuilt from
// (its partition of __consumer_offsets).
type groupShard struct {
	mu     sync.Mutex
	groups map[string]*group
	log    segmented[groupRecord]
	// clock is the broker's, for each record's timestamp (expiry.go).
	clock *atomic.Int64
	// queued are, per group, the markers of ended transactions not
	// written yet, in the order the transactions ended
	// (Config.AsyncMarkers).
	queued map[string][]queuedMarker
	// consumer are the KIP-848 consumer groups (consumergroups.go). A
	// consumer group and a classic group of one name are two groups, as
	// in the model; the classic one holds the offsets of both.
	consumer map[string]*consumerGroup
}

type group struct {
	generation int32
	// answered is the generation the last join round answered, which a
	// leave or an expiry leaves behind while the group prepares a
	// rebalance (model: group.answered).
	answered int32
	// leader is the member that leads the group, "" until the next join
	// round elects one (model: group.leader).
	leader  string
	members map[string]member
	// protocol is the protocol the group chose for generation
	// protocolGen, "" until every member of it said what it supports
	// (model: group.protocol).
	protocol    string
	protocolGen int32
	committed   map[model.Partition]int64
	// committedAt is the place in the log of each committed offset's
	// record, and writes counts the pending offset records applied: the
	// record written later wins when markers land (model: pendingOffset).
	committedAt map[model.Partition]int64
	writes      int64
	// pending holds transactional offsets by producer id until the
	// transaction's marker reaches the group (KIP-447).
	pending map[int64]map[model.Partition]pendingOffset
	// committedTime is each committed offset's commit timestamp, and
	// emptySince when the group last lost its last member (model:
	// offsetexpiry.go; expiry.go here).
	committedTime map[model.Partition]int64
	emptySince    int64
	// metadata is each committed offset's metadata, where not "".
	metadata map[model.Partition]string
}

// pendingOffset is a pending offset, the place of its record, its
// commit timestamp and its metadata.
type pendingOffset struct {
	offset, at, time int64
	metadata         string
}

type member struct {
	gen        int32
	assignment []model.Partition
	lastSeen   int64
	sessionMs  int64
	// instance is the member's group.instance.id (KIP-345), "" for a
	// dynamic member (model: member.instance).
	instance string
	// protocolType and protocols are what the member joined with, ""
	// and nil when its join did not say.
	protocolType string
	protocols    []string
	// subscription is its protocols with their topics
	// (model.ProtocolKeys), which a rejoin that changes rebalances.
	subscription []string
}

// noGroup is what a group that was never written looks like.
var noGroup = &group{}

func (s *groupShard) reset(segmentSize int) {
	s.groups = map[string]*group{}
	s.log = newSegmented[groupRecord](segmentSize)
	s.queued = map[string][]queuedMarker{}
	s.consumer = map[string]*consumerGroup{}
}

// lookup is the named group, or noGroup; it must not be written.
func (s *groupShard) lookup(name string) *group {
	if g := s.groups[name]; g != nil {
		return g
	}
	return noGroup
}

// write logs a record, stamped with the broker's clock, and applies it.
func (s *groupShard) write(rec groupRecord) {
	rec = stamped(rec, s.clock.Load())
	s.log.Append(rec)
	s.apply(rec)
}

func (s *groupShard) apply(rec groupRecord) {
	if c, ok := rec.(consumerRecord); ok {
		// The table gets maps of its own: the record keeps its.
		state := c.state.clone()
		s.consumer[c.group] = &state
		return
	}
	if e, ok := rec.(offsetsExpired); ok && e.deleteGroup {
		delete(s.groups, e.group) // its tombstone (expiry.go)
		return
	}
	g := s.groups[rec.groupName()]
	if g == nil {
		g = &group{members: map[string]member{}, committed: map[model.Partition]int64{},
			committedAt: map[model.Partition]int64{}, pending: map[int64]map[model.Partition]pendingOffset{},
			committedTime: map[model.Partition]int64{}}
		s.groups[rec.groupName()] = g
	}
	rec.(classicRecord).applyTo(g)
}

// recover rebuilds the shard's groups from its log, as a coordinator loads
// __consumer_offsets, and returns the highest member number it saw (-1 for
// none), from which new member ids go on. Consumer group members' timers
// start again at now.
func (s *groupShard) recover(now int64) (highestMember int64) {
	s.groups = map[string]*group{}
	s.consumer = map[string]*consumerGroup{}
	highestMember = -1
	seen := func(id, format string) {
		if n, ok := memberNumber(id, format); ok {
			highestMember = max(highestMember, n)
		}
	}
	for _, rec := range s.log.All {
		s.apply(rec)
		switch r := rec.(type) {
		case membership:
			for id := range r.members {
				seen(id, "member-%d")
			}
		case consumerRecord:
			for id := range r.state.members {
				seen(id, "consumer-%d")
			}
		}
	}
	s.restartConsumerTimers(now)
	return highestMember
}

// memberNumber is the number an id impl gave ends in: member-7 (format
// "member-%d"), consumer-7, or a static takeover's member-3.7
// (model.TakeoverMemberID).
func memberNumber(id, format string) (int64, bool) {
	if _, after, found := strings.Cut(id, "."); found {
		n, err := strconv.ParseInt(after, 10, 64)
		return n, err == nil
	}
	var n int64
	_, err := fmt.Sscanf(id, format, &n)
	return n, err == nil
}

// A groupRecord is one entry of a shard's log: a classicRecord, or a
// consumer group's consumerRecord.
type groupRecord interface {
	groupName() string
}

// A classicRecord is a record of a classic group, or of the offsets that
// every group keeps in its classic part.
type classicRecord interface {
	groupRecord
	applyTo(g *group)
}

// membership is a group's generation and members after a rebalance or a
// heartbeat, as Kafka writes GroupMetadata. The record owns its map.
type membership struct {
	group      string
	time       int64 // stamped by write
	generation int32
	answered   int32
	leader     string
	members    map[string]member
	// protocol is the group's protocol for generation protocolGen.
	protocol    string
	protocolGen int32
}

// pendingOffsets is a TxnOffsetCommit waiting for its transaction's marker.
type pendingOffsets struct {
	group      string
	time       int64 // stamped by write
	producerID int64
	offsets    map[model.Partition]int64
	metadata   map[model.Partition]string
}

// committedOffsets is a plain OffsetCommit: its offsets are committed as
// soon as the record is written, and the record written later wins over
// a pending one (model: group.withCommitted).
type committedOffsets struct {
	group    string
	time     int64 // stamped by write
	offsets  map[model.Partition]int64
	metadata map[model.Partition]string
}

// txnMarker is a COMMIT or ABORT reaching the group: pending offsets of the
// producer become committed, or are dropped.
type txnMarker struct {
	group      string
	producerID int64
	commit     bool
}

func (r membership) groupName() string       { return r.group }
func (r pendingOffsets) groupName() string   { return r.group }
func (r txnMarker) groupName() string        { return r.group }
func (r committedOffsets) groupName() string { return r.group }

func (r committedOffsets) applyTo(g *group) {
	g.writes++
	for p, off := range r.offsets {
		g.committed[p], g.committedAt[p], g.committedTime[p] = off, g.writes, r.time
	}
	g.withMetadata(r.offsets, r.metadata)
}

func (r membership) applyTo(g *group) {
	if len(g.members) > 0 && len(r.members) == 0 {
		g.emptySince = r.time
	}
	g.generation, g.answered, g.leader = r.generation, r.answered, r.leader
	g.protocol, g.protocolGen = r.protocol, r.protocolGen
	g.members = maps.Clone(r.members)
}

func (r pendingOffsets) applyTo(g *group) {
	pending := g.pending[r.producerID]
	if pending == nil {
		pending = map[model.Partition]pendingOffset{}
		g.pending[r.producerID] = pending
	}
	g.writes++
	for p, off := range r.offsets {
		pending[p] = pendingOffset{offset: off, at: g.writes, time: r.time, metadata: r.metadata[p]}
	}
}

func (r txnMarker) applyTo(g *group) {
	if r.commit {
		for p, o := range g.pending[r.producerID] {
			if at, ok := g.committedAt[p]; !ok || o.at > at {
				g.committed[p], g.committedAt[p], g.committedTime[p] = o.offset, o.at, o.time
				setMetadata(g, p, o.metadata)
			}
		}
	}
	delete(g.pending, r.producerID)
}

func sessionTimeout(r model.Request) int64 {
	if r.SessionTimeoutMs > 0 {
		return r.SessionTimeoutMs
	}
	return model.DefaultSessionTimeoutMs
}

// sessionOutOfBounds reports whether a JoinGroup's session timeout ms is
// outside the broker's bounds, which Kafka checks before it looks at the
// group (model: session-timeout-bounds). A bound of 0, or a timeout of
// 0, is not judged.
func (b *Broker) sessionOutOfBounds(ms int64) bool {
	return ms > 0 && (b.minSessionMs > 0 && ms < b.minSessionMs || b.maxSessionMs > 0 && ms > b.maxSessionMs)
}

// joinGroup is a whole rebalance round for one member (JoinGroup and
// SyncGroup in one): it answers the member id, the generation and the
// member's round-robin share of the partitions, as the model chooses.
func (b *Broker) joinGroup(r model.Request) model.Result {
	if b.sessionOutOfBounds(r.SessionTimeoutMs) {
		return model.Fail(model.InvalidSessionTimeout)
	}
	if r.EmptyProtocolType {
		// model: protocol-unsupported, which no other join of the
		// workload meets (its members share their protocols).
		return model.Fail(model.InconsistentGroupProtocol)
	}
	sh := b.lockGroupShard(r.Group)
	defer sh.mu.Unlock()
	g := sh.lookup(r.Group)
	members, leader := maps.Clone(g.members), g.leader
	if members == nil {
		members = map[string]member{}
	}
	if b.groupFull(r, g) {
		return model.Fail(model.GroupMaxSizeReached)
	}
	old, held := g.staticMember(r.InstanceID)
	takeover := r.MemberID == "" && r.InstanceID != "" && held
	if takeover {
		r.MemberID, leader = b.takeOverInstance(members, old, leader)
		g = &group{generation: g.generation, answered: g.answered, leader: leader, members: members,
			protocol: g.protocol, protocolGen: g.protocolGen}
	} else if r.MemberID != "" {
		if refused := g.instanceRefusal(r); refused != "" {
			return model.Fail(refused)
		}
	}
	if _, ok := g.members[r.MemberID]; r.MemberID != "" && !ok {
		return model.Fail(model.UnknownMemberID) // KIP-345
	}
	id, gen, share := b.chooseJoin(r, g, takeover)
	generation := g.generation
	if gen > generation {
		// A new generation: every member holds nothing until it rejoins.
		members, generation = nextGeneration(members), gen
	}
	if gen > g.answered {
		// A round completes: every member's session starts afresh
		// (model: sessionsRestarted).
		now := b.now.Load()
		for id, m := range members {
			m.lastSeen = now
			members[id] = m
		}
	}
	members[id] = member{gen: gen, assignment: share, lastSeen: b.now.Load(), sessionMs: sessionTimeout(r), instance: r.InstanceID,
		protocolType: r.ProtocolType, protocols: protocolNames(r), subscription: model.ProtocolKeys(r.Protocols)}
	leader = id // the round's leader is one that joined it (model: leaderAfterJoin)
	if m, ok := members[g.leader]; ok && m.gen == gen {
		leader = g.leader
	}
	protocol, protocolGen := g.protocol, g.protocolGen
	if protocolGen != gen || protocol == "" {
		protocol, protocolGen = "", 0
		if chosen, _, known := selectProtocol(members, gen); known {
			protocol, protocolGen = chosen, gen
		}
	}
	sh.write(membership{group: r.Group, generation: generation, answered: generation, leader: leader, members: members,
		protocol: protocol, protocolGen: protocolGen})
	resp := model.NewResponse()
	resp.MemberID, resp.GenerationID, resp.Assignment, resp.Leader = id, gen, share, leader
	if protocol != "" {
		resp.Protocol, resp.ProtocolType = protocol, groupProtocolType(members)
	}
	return model.OK(resp)
}

// groupFull reports whether r's join finds g full: a member g does not
// hold, while g holds group.max.size members and prepares no rebalance
// (model: groupMaxSize).
func (b *Broker) groupFull(r model.Request, g *group) bool {
	_, known := g.members[r.MemberID]
	return b.groupMaxSize > 0 && !known && g.generation == g.answered && len(g.members) >= b.groupMaxSize
}

// chooseJoin is the model's choice: a new member starts a new generation;
// a member that missed the last one joins it; a member already in the
// current one keeps its assignment, as Kafka answers a follower's rejoin
// without a rebalance, but for the group's leader, whose rejoin starts a
// new generation. Each takes its round-robin share.
func (b *Broker) chooseJoin(r model.Request, g *group, takeover bool) (string, int32, []model.Partition) {
	id := r.MemberID
	if id == "" {
		id = fmt.Sprintf("member-%d", b.nextMember.Add(1)-1)
	}
	m, known := g.members[id]
	current := known && m.gen == g.generation
	// A static member's takeover keeps a stable group's generation, the
	// leader's too (model: chooseJoin, staticTakeover): a whole round's
	// group is never completing one.
	// A takeover whose protocols change the group's selected protocol
	// rebalances (model: takeoverChangesProtocol).
	// A member that rejoins with other protocols rebalances too (model:
	// member.protocolsChanged).
	changed := current && !takeover && m.protocolType != "" && r.ProtocolType != "" &&
		!slices.Equal(m.subscription, model.ProtocolKeys(r.Protocols))
	leaderRejoins := (current && id == g.leader && !takeover) || (current && takeover && g.takeoverChangesProtocol(id, r)) || changed
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
	return id, gen, model.RoundRobin(r.Partitions, members, id)
}

// leaderAmong is who leads members once others were removed: the leader
// if it stays, else the one member left, else nobody until the next join
// round (model: group.withoutMember).
func leaderAmong(members map[string]member, leader string) string {
	if _, stays := members[leader]; stays {
		return leader
	}
	if len(members) == 1 {
		return slices.Collect(maps.Keys(members))[0]
	}
	return ""
}

// nextGeneration is members in a new generation: none holds anything until
// it rejoins (KIP-447). It writes members in place.
func nextGeneration(members map[string]member) map[string]member {
	for id, m := range members {
		m.assignment = nil
		members[id] = m
	}
	return members
}

func (b *Broker) leaveGroup(r model.Request) model.Result {
	sh := b.lockGroupShard(r.Group)
	defer sh.mu.Unlock()
	g := sh.lookup(r.Group)
	if r.MemberID == "" && r.InstanceID != "" {
		// An admin's removal names the instance alone (model: leaveGroup).
		owner, held := g.staticMember(r.InstanceID)
		if !held {
			return model.Fail(model.UnknownMemberID)
		}
		r.MemberID = owner
	} else if refused := g.instanceRefusal(r); refused != "" {
		return model.Fail(refused)
	}
	if _, ok := g.members[r.MemberID]; !ok {
		return model.Fail(model.UnknownMemberID)
	}
	// A leave is a rebalance: the generation moves on.
	members := maps.Clone(g.members)
	delete(members, r.MemberID)
	sh.write(membership{group: r.Group, generation: g.generation + 1, answered: g.answered, leader: leaderAmong(members, g.leader), members: nextGeneration(members),
		protocol: g.protocol, protocolGen: g.protocolGen})
	return done()
}

// expireMembers removes members whose session timed out; each group that
// lost one rebalances. Tick calls it holding every group shard.
func (b *Broker) expireMembers() {
	now := b.now.Load()
	for _, name := range b.groupNames() {
		sh := b.groupShard(name)
		g := sh.lookup(name)
		members := maps.Clone(g.members)
		maps.DeleteFunc(members, func(_ string, m member) bool { return now-m.lastSeen >= m.sessionMs })
		if len(members) < len(g.members) {
			sh.write(membership{group: name, generation: g.generation + 1, answered: g.answered, leader: leaderAmong(members, g.leader), members: nextGeneration(members),
				protocol: g.protocol, protocolGen: g.protocolGen})
		}
	}
}

// groupNames is every group, sorted; the caller holds every group shard.
func (b *Broker) groupNames() []string {
	var names []string
	for i := range b.groups {
		names = slices.AppendSeq(names, maps.Keys(b.groups[i].groups))
	}
	slices.Sort(names)
	return names
}

// generationRefusal fences a zombie consumer: its group metadata must name
// a current member of the current generation (KIP-447, seed 002). The
// groupId-string overload (member "", generation -1) is not checked, nor
// is generation -1 while the group has no members; else generation -1 is
// never the group's (model: checkGeneration).
func (g *group) generationRefusal(r model.Request, bugs mutantSet) model.Code {
	if r.GenerationID == model.NoGeneration && ((r.MemberID == "" && r.InstanceID == "") || len(g.members) == 0) {
		return ""
	}
	if refused := g.instanceRefusal(r); refused != "" {
		if refused != model.FencedInstanceID || !bugs.has(replacedInstanceCommits) {
			return refused
		}
		// The mutant: the old member id's commit is the new one's.
		r.MemberID, _ = g.staticMember(r.InstanceID)
	}
	if _, ok := g.members[r.MemberID]; !ok {
		return model.UnknownMemberID
	}
	preparing := g.answered < g.generation && r.GenerationID == g.answered // model: group.preparing
	if r.GenerationID != g.generation && !preparing {
		return model.IllegalGeneration
	}
	return ""
}

// offsetFetch answers a group's committed offset; with require_stable, not
// while a transaction holds a pending offset for it (KIP-447).
func (b *Broker) offsetFetch(r model.Request) model.Result {
	sh := b.lockGroupShard(r.Group)
	defer sh.mu.Unlock()
	g := sh.lookup(r.Group)
	if r.AllPartitions {
		return model.OK(g.fetchAll(r.RequireStable))
	}
	if r.RequireStable && g.pendingFor(r.Partition) {
		return model.Fail(model.UnstableOffsetCommit)
	}
	resp := model.NewResponse()
	if off, ok := g.committed[r.Partition]; ok {
		resp.Offset = off
	}
	resp.Metadata = g.metadata[r.Partition]
	resp.MetadataSaid = resp.Metadata != ""
	return model.OK(resp)
}

// pendingFor reports whether a transaction holds a pending offset for p.
func (g *group) pendingFor(p model.Partition) bool {
	for _, pending := range g.pending {
		if _, ok := pending[p]; ok {
			return true
		}
	}
	return false
}

// fetchAll answers an OffsetFetch of all partitions: each partition with a
// committed offset at it, or, with require_stable and a pending offset,
// as unstable (model: offsetFetchAll).
func (g *group) fetchAll(requireStable bool) model.Response {
	resp := model.NewResponse()
	for _, p := range slices.Sorted(maps.Keys(g.committed)) {
		if requireStable && g.pendingFor(p) {
			resp.Unstable = append(resp.Unstable, p)
			continue
		}
		if resp.FetchedOffsets == nil {
			resp.FetchedOffsets = map[model.Partition]int64{}
		}
		resp.FetchedOffsets[p] = g.committed[p]
	}
	return resp
}

// offsetCommit is a consumer's plain OffsetCommit: validated as Kafka's
// classic group does, then committed at once, and a member's commit
// renews its session (model: offsetCommit).
func (b *Broker) offsetCommit(r model.Request) model.Result {
	sh := b.lockGroupShard(r.Group)
	defer sh.mu.Unlock()
	g := sh.lookup(r.Group)
	if refused := g.plainCommitRefusal(r, b.bugs); refused != "" && !b.staleCommitTaken(g, r, refused) {
		return model.Fail(refused)
	}
	if m, ok := g.members[r.MemberID]; ok && r.GenerationID != model.NoGeneration {
		members := maps.Clone(g.members)
		m.lastSeen = b.now.Load()
		members[r.MemberID] = m
		sh.write(membership{group: r.Group, generation: g.generation, answered: g.answered, leader: g.leader, members: members,
			protocol: g.protocol, protocolGen: g.protocolGen})
	}
	sh.write(committedOffsets{group: r.Group, offsets: maps.Clone(r.Offsets), metadata: maps.Clone(r.OffsetMetadata)})
	return done()
}

// staleCommitTaken is the plain-commit-ignores-generation mutant: a
// member's commit refused for its generation alone is taken.
func (b *Broker) staleCommitTaken(g *group, r model.Request, refused model.Code) bool {
	_, member := g.members[r.MemberID]
	return b.bugs.has(plainCommitIgnoresGeneration) && member && refused == model.IllegalGeneration
}

// exists reports whether a join or a commit's record created g; a
// transaction's marker alone creates none (model: group.exists).
func (g *group) exists() bool {
	return g.generation > 0 || len(g.members) > 0 || g.writes > 0
}

// plainCommitRefusal is the classic group's check of a plain commit, ""
// when it is taken: generation -1 while the group has no members; else
// not a commit with a generation to a group that does not exist, nor one with
// no member to a group with members; else the member and generation
// checks of any commit (model: checkPlainCommit).
func (g *group) plainCommitRefusal(r model.Request, bugs mutantSet) model.Code {
	switch {
	case r.GenerationID == model.NoGeneration && len(g.members) == 0:
		return ""
	case !g.exists():
		return model.IllegalGeneration
	case r.GenerationID == model.NoGeneration && r.MemberID == "":
		return model.UnknownMemberID
	}
	return g.generationRefusal(r, bugs)
}

// staticMember is the member id instance maps to, if any (model:
// group.staticMember).
func (g *group) staticMember(instance string) (string, bool) {
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

// instanceRefusal is ClassicGroup.validateMember's instance check: an
// instance mapped to another member id is FENCED_INSTANCE_ID, one not
// mapped UNKNOWN_MEMBER_ID; "" for a dynamic member's request or a right
// one (model: checkInstance).
func (g *group) instanceRefusal(r model.Request) model.Code {
	if r.InstanceID == "" {
		return ""
	}
	switch owner, held := g.staticMember(r.InstanceID); {
	case !held:
		return model.UnknownMemberID
	case owner != r.MemberID:
		return model.FencedInstanceID
	}
	return ""
}

// takeOverInstance moves old's place in members to a new member id, and
// returns it and the group's leader after: a static member's rejoin
// with no member id (model: takeOverInstance). The new id leads where
// old did; else the leader is who leads once old is gone
// (leaderAmong). It writes members in place.
func (b *Broker) takeOverInstance(members map[string]member, old, leader string) (string, string) {
	id := model.TakeoverMemberID(old, int(b.nextMember.Add(1)-1))
	m := members[old]
	delete(members, old)
	next := leaderAmong(members, leader)
	if leader == old {
		next = id
	}
	members[id] = m
	return id, next
}

// protocolNames is the names of the protocols a join carries.
func protocolNames(r model.Request) []string {
	var names []string
	for _, p := range r.Protocols {
		names = append(names, p.Name)
	}
	return names
}

// selectProtocol is the protocol members choose for generation gen
// (model.SelectProtocol), and the protocols tied for it; known is false
// while a member is not in gen or did not say what it supports (model:
// group.selection).
func selectProtocol(members map[string]member, gen int32) (chosen string, tied []string, known bool) {
	var supported [][]string
	for _, id := range slices.Sorted(maps.Keys(members)) {
		m := members[id]
		if m.gen != gen || m.protocolType == "" || len(m.protocols) == 0 {
			return "", nil, false
		}
		supported = append(supported, m.protocols)
	}
	chosen, tied = model.SelectProtocol(supported)
	return chosen, tied, chosen != ""
}

// takeoverChangesProtocol reports whether id, a static member's new
// member id, joining with r's protocols changes the protocol g selects
// for its current generation (model: group.takeoverChangesProtocol).
func (g *group) takeoverChangesProtocol(id string, r model.Request) bool {
	if g.protocol == "" || g.protocolGen != g.generation || r.ProtocolType == "" {
		return false
	}
	members := maps.Clone(g.members)
	m := members[id]
	m.protocolType, m.protocols = r.ProtocolType, protocolNames(r)
	members[id] = m
	_, tied, known := selectProtocol(members, g.generation)
	return known && !slices.Contains(tied, g.protocol)
}

// groupProtocolType is the protocol type members joined with, which
// every member shares (model: group.groupProtocolType).
func groupProtocolType(members map[string]member) string {
	for _, id := range slices.Sorted(maps.Keys(members)) {
		if t := members[id].protocolType; t != "" {
			return t
		}
	}
	return ""
}
