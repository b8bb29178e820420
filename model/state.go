package model

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Options choose between the behaviours Kafka allows.
type Options struct {
	// TxnVersion is the transaction protocol: 1 (KIP-98) or 2 (KIP-890).
	TxnVersion int
	// WallClock: the ops' Call and Return are on the clock the broker's
	// timers run on (a recording of a real cluster), and Tick moves
	// nothing. A transaction or session timeout then fires at any moment
	// after it is due, never at a set one: Kafka's coordinator aborts
	// expired transactions on a periodic scan
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s
	// by default; TransactionCoordinator.abortTimedOutTransactions), and
	// expires a session when its heartbeat deadline passes
	// (GroupCoordinator's heartbeat purgatory in 3.9; the timer of
	// GroupMetadataManager.scheduleClassicGroupMemberSessionTimeout in
	// 4.x). The model fires a due timer when an answer needs it (see
	// fireDue).
	WallClock bool
	// Allow are the deviations from Kafka (deviations.go) a judged broker
	// is allowed: a known finding's, so that its consequences are told
	// from a new finding. Kafka is allowed none.
	Allow Deviation
	// MarkerWindow: judging a broker, an ended transaction's markers may
	// land after EndTxn's answer, each on its own (markers.go). A wall
	// clock allows the window too. Without either, markers land at once.
	MarkerWindow bool
	// AsyncMarkers: the model's own answers leave an ended transaction's
	// markers in flight until LandMarkers, a tick or a restart, or until a
	// request of its transactional id needs them (markers.go). Judging a
	// broker, the model always allows the window.
	AsyncMarkers bool
	// Expiry is how long the broker keeps an idle transactional id and
	// an idle producer's state (expiry.go); zero fields are Kafka's
	// defaults.
	Expiry Expiry
	// TxnMaxTimeoutMs is transaction.max.timeout.ms when the broker's
	// config is known; 0 when it is not, because a cluster may be set to
	// any maximum (the rule txn-timeout, WrongTimeoutRefusal).
	TxnMaxTimeoutMs int64
	// NoPartitionVerification is transaction.partition.verification.enable
	// set to false: a partition leader writes a transactional batch
	// without asking the coordinator (verification.go). Kafka's default,
	// and the zero value, is true.
	NoPartitionVerification bool
	// GroupMaxSize is group.max.size, the most members a classic group
	// takes, when the broker's config is known; 0 when it is not, so that
	// GROUP_MAX_SIZE_REACHED is taken or refused (the rule
	// group-max-size, groupmaxsize.go).
	GroupMaxSize int
	// ConsumerGroupMaxSize is group.consumer.max.size, the most members a
	// KIP-848 consumer group takes, when the broker's config is known; 0
	// when it is not, so that GROUP_MAX_SIZE_REACHED is taken anywhere
	// (the rule consumer-group-max-size, groupmaxsize.go).
	ConsumerGroupMaxSize int
	// MigrationPolicy is group.consumer.migration.policy when the broker's
	// config is known; MigrationPolicyUnknown when not, so that a group
	// may or may not be converted (consumermigration.go).
	MigrationPolicy MigrationPolicy
	// GroupMinSessionTimeoutMs and GroupMaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms, the
	// bounds of a classic member's session timeout, when the broker's
	// config is known; 0 when not, so that INVALID_SESSION_TIMEOUT is
	// taken or refused (the rule session-timeout-bounds,
	// sessionbounds.go).
	GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs int64
	// TwoPhaseCommit is transaction.two.phase.commit.enable (KIP-939)
	// when the broker's config is known; TwoPhaseCommitUnknown when not.
	TwoPhaseCommit TwoPhaseCommit
	// ConsumerSessionTimeoutMs is group.consumer.session.timeout.ms, the
	// session of every KIP-848 consumer group member; 0: Kafka's 45000.
	ConsumerSessionTimeoutMs int64
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes when
	// OffsetMetadataMaxKnown; when not known, a commit's metadata may be
	// taken or refused (offsetmetadata.go).
	OffsetMetadataMaxBytes int
	OffsetMetadataMaxKnown bool
	// TopicsChangeOutside: the topics may change by requests the history
	// does not hold, for example an admin's outside the recorded clients.
	// A consumer group's heartbeat may then show a refresh of its
	// subscription metadata at any time (topics.go).
	TopicsChangeOutside bool
	// Reads, when set, are the offsets the judged history's fetches read
	// from, so that a log keeps no record no fetch reads (reads.go); nil
	// keeps every record.
	Reads *Reads
}

// Defaults of Kafka's clients and brokers, used when a request does not say.
const (
	DefaultTxnTimeoutMs     = 60_000 // transaction.timeout.ms
	DefaultSessionTimeoutMs = 45_000 // session.timeout.ms
	// epochExhausted is the last epoch a producer id may be bumped to:
	// Kafka rotates the producer id once the epoch reaches Short.MAX_VALUE-1
	// (KIP-360).
	epochExhausted int16 = 32766
	// unknownPID stands for a producer id a broker handed out in an
	// answer that was lost.
	unknownPID int64 = -2
	// dedupWindow is how many batches per producer a leader remembers for
	// duplicate detection (KIP-98, max.in.flight.requests.per.connection=5).
	dedupWindow = 5
)

// State is the whole broker: a value, cheap to copy. Maps are never written
// in place: a step copies a map before its first write (copy-on-write), and
// partition logs share their history (vec).
type State struct {
	opts Options
	now  int64 // ms on the broker's clock, moved by Tick
	// restartedAt is when the broker last restarted, 0 before: its
	// expiry sweeps start again one interval after it (expiry.go).
	restartedAt int64
	txns        map[string]txnMeta
	pids        map[int64]bool // every producer id ever handed out
	nextPID     int64
	nextMember  int
	parts       map[Partition]partState
	groups      map[string]group
	// consumer are the KIP-848 consumer groups (consumergroups.go).
	consumer map[string]consumerGroup
	// triedEpochs, kept only under the deviation EpochPerProducerID, is
	// the newest epoch each producer id sent a batch at, taken or
	// refused (deviations.go).
	triedEpochs map[int64]int16
	// topics is what the history's admin requests say of each topic
	// (topics.go).
	topics map[string]topicMeta
}

// Phase is a transaction's state at the coordinator (KIP-98). The model
// writes markers at once, so PrepareCommit and PrepareAbort are never
// observed: CompleteCommit and CompleteAbort stand for both (a real broker
// may still be writing markers, and answers CONCURRENT_TRANSACTIONS then).
type Phase int

const (
	Empty Phase = iota
	Ongoing
	CompleteCommit
	CompleteAbort
)

func (p Phase) String() string {
	return [...]string{"Empty", "Ongoing", "CompleteCommit", "CompleteAbort"}[p]
}

// pendingOffset is a transactional offset waiting for its transaction's
// marker: the offset, and where its record stands in the group's
// __consumer_offsets partition. When two transactions commit an offset of
// one partition, the record written later wins, whichever marker lands
// first (4.x OffsetMetadataManager.replayEndTransactionMarker compares
// recordOffset; 3.9 GroupMetadata.completePendingTxnOffsetCommit,
// olderThan).
type pendingOffset struct {
	offset int64
	at     int64
	// time is the commit's timestamp on the broker's clock, which the
	// offset keeps once its transaction commits (offsetexpiry.go).
	time     int64
	metadata string
}

// txnMeta is the coordinator's record of one transactional.id.
type txnMeta struct {
	pid   int64
	epoch int16
	// prevPID and prevEpoch are what the producer held before it bumped its
	// own epoch (KIP-360), so that a retry of that bump is recognised. They
	// are NoEpoch when the last bump was not the producer's own.
	prevPID    int64
	prevEpoch  int16
	phase      Phase
	partitions []Partition // sorted
	groups     []string    // sorted
	pending    map[string]map[Partition]pendingOffset
	startedAt  int64
	timeoutMs  int64
	// abortedOnItsOwn: the coordinator itself aborted the last transaction
	// (a timeout, a fence) under transactions v2, and prevEpoch and
	// endedEpoch are the epoch it moved on from (see abortOnItsOwn).
	abortedOnItsOwn bool
	// endedEpoch is the epoch whose EndTxn completed the last transaction,
	// so that a retried EndTxn is answered again (KIP-98; KIP-890 bumps).
	endedEpoch int16
	// updatedAt is when the coordinator last wrote this metadata
	// (txnLastUpdateTimestamp), for the id's expiry (expiry.go).
	updatedAt int64
	// unwritten are the partitions whose marker of the ended transaction
	// has not landed yet, and unsettled the groups whose offsets (still in
	// pending) it has not settled yet; markerPID and markerEpoch are what
	// the markers carry (markers.go).
	unwritten   []Partition
	unsettled   []string
	markerPID   int64
	markerEpoch int16
	// completedAt orders the transactions with markers in flight by when
	// they ended, from 1; 0 once none is (markers.go).
	completedAt int64
	// pendingShownAt is the last moment a read showed a marker of the
	// ended transaction not yet written; 0 when none did. The markers
	// land after it, so the id's expiry counts from it at the earliest
	// (expiry.go, shownPending).
	pendingShownAt int64
	// kept is the client identity of an open transaction a KIP-939
	// InitProducerId kept (twophase.go); nil when none did.
	kept *keptTxn
}

// entry is one offset of a partition log: a record or a control marker.
type entry struct {
	key, value string
	pid        int64
	epoch      int16
	control    bool // a COMMIT or ABORT marker
	commit     bool // for a marker
}

// abortedTxn is a range of a partition log aborted by one producer, as in
// Kafka's aborted-transaction index.
type abortedTxn struct {
	pid           int64
	first, marker int64
}

type batch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	// snapshotted: a broker restart came after this batch, and it was not
	// its producer's last. A clean shutdown's producer snapshot keeps only
	// each producer's last batch (ProducerStateManager.writeSnapshot), so a
	// retry of this one may find no duplicate; log recovery after an
	// unclean one may rebuild it.
	snapshotted bool
}

// producerEntry is what a partition leader knows of one producer id.
type producerEntry struct {
	epoch int16
	// batches are the last dedupWindow batches of this (pid, epoch), oldest first.
	batches []batch
	// txnFirst is the first offset of the producer's open transaction in this
	// partition, or NoOffset.
	txnFirst int64
	// lastTimestamp is when its last batch or marker was written here, for
	// the expiry of its state (expiry.go).
	lastTimestamp int64
}

type partState struct {
	log       partLog
	aborted   vec[abortedTxn]
	producers map[int64]producerEntry
	// verifying are the leader's VerificationStateEntry by producer id
	// (verification.go).
	verifying map[int64]verification
	// start is the log start offset, which only a DeleteRecords moves
	// (deleterecords.go); 0 for a log nothing was deleted from.
	start int64
}

type member struct {
	gen        int32
	assignment []Partition
	lastSeen   int64
	sessionMs  int64
	// mayBeGone: a join round completed without this member, so the
	// coordinator may have removed it (see roundCompleted).
	mayBeGone bool
	// assignmentUnknown: the answer to the member's last join was lost, so
	// what it holds in its generation is unknown (see checkJoin).
	assignmentUnknown bool
	// subscriptionForgotten: a broker restart lost what the member joined
	// with (RestartForgetsMemberMetadata), until it joins again.
	subscriptionForgotten bool
	// syncPending: a JoinGroup alone (Request.JoinOnly) put the member in
	// its generation, and its SyncGroup has not been answered yet
	// (Kafka's ClassicGroup.pendingSyncMembers).
	syncPending bool
	// syncParked: the member's SyncGroup waits for the leader's (a
	// judged answer only), which keeps its session alive.
	syncParked bool
	// protocolType and protocols are what the member last joined with,
	// "" and nil when its join did not say (see protocolRefusal).
	protocolType string
	protocols    []string
	// subscription is each protocol the member last joined with, its
	// name and topics in order (ProtocolKeys), nil when its join did
	// not say: what Kafka compares to tell a changed member
	// (ClassicGroupMember.matches).
	subscription []string
	// instance is the member's group.instance.id (KIP-345), "" for a
	// dynamic member. A static member is not removed for missing a
	// round, only by its session timeout or a leave (see static.go).
	instance string
	// mayBeReplaced: a rejoin of this member's instance with no member
	// id was not answered, so a new member id may hold the instance now
	// (see replacedMember).
	mayBeReplaced bool
}

type group struct {
	generation int32
	// answered is the generation the last join round answered. A leave
	// or an expiry moves generation past it at once, but Kafka's
	// coordinator only prepares a rebalance then: its generation moves
	// when the next join round completes, and until one does it is still
	// answered (ClassicGroup.initNextGeneration; see checkGeneration).
	answered int32
	// unseenRound is a round after answered that may have completed
	// unseen (a new member's join answered UNKNOWN_MEMBER_ID, see
	// lateSync), 0 when none: its generation stays valid for commits
	// until a join answers.
	unseenRound int32
	// syncDue is the generation whose JoinGroups were answered alone
	// (Request.JoinOnly) and whose leader has not synced yet: Kafka's
	// CompletingRebalance. 0 when none (see rounds.go).
	syncDue int32
	// phased: the group's rounds are recorded as JoinGroup and SyncGroup
	// apart, so every request that moves its state is in the history,
	// and a success while it prepares a rebalance is wrong.
	phased bool
	// leader is the member whose JoinGroup answer lists the others, ""
	// while the model does not know which one it is (see withoutMember).
	// Kafka forces a rebalance when the leader rejoins a stable group.
	leader  string
	members map[string]member
	// protocol is the protocol the group chose for generation
	// protocolGen (JoinGroupResponse.ProtocolName), as an answer named it
	// or the model selected it; "" while unknown (see protocols.go).
	protocol    string
	protocolGen int32
	// removed are the members the coordinator has removed since it last
	// loaded the group. Kafka never hands a removed member's id out
	// again, so none of them leads a later round (see checkJoin).
	removed map[string]bool
	// pending are the member ids MEMBER_ID_REQUIRED answers handed out
	// whose members have not joined with them yet (KIP-394, pending.go).
	pending   map[string]pendingMember
	committed map[Partition]int64
	// committedAt is where each committed offset's record stands in the
	// group's __consumer_offsets partition, and writes counts the
	// transactional offset records written there (see pendingOffset).
	committedAt map[Partition]int64
	writes      int64
	// committedTime is each committed offset's commit timestamp, and
	// emptySince when the group last lost its last member: what offset
	// expiry counts from (offsetexpiry.go).
	committedTime map[Partition]int64
	emptySince    int64
	// metadata is each committed offset's metadata string, where it is
	// not "" (offsetmetadata.go).
	metadata map[Partition]string
	// unsettled are the partitions whose offsets a transaction's end
	// settled and no answer has shown settled yet (see settling).
	unsettled map[Partition]bool
	// loading: the coordinator may still be loading the group since the
	// broker restarted, until an answer only a loaded coordinator gives
	// (loading.go).
	loading bool
}

// Init is the state of a fresh cluster.
func Init(opts Options) State {
	if opts.TxnVersion == 0 {
		opts.TxnVersion = 1
	}
	return State{opts: opts, nextPID: 1}
}

// TxnVersion is the transaction protocol the state follows.
func (s State) TxnVersion() int { return s.opts.TxnVersion }

// String describes the state for visualizations: transactions, logs, groups.
func (s State) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(s.txns)) {
		t := s.txns[id]
		fmt.Fprintf(&b, "%s: pid %d epoch %d %s %v", id, t.pid, t.epoch, t.phase, t.partitions)
		if t.markersInFlight() {
			fmt.Fprintf(&b, " markers in flight to %v %v", t.unwritten, t.unsettled)
		}
		b.WriteString("; ")
	}
	for _, p := range slices.Sorted(maps.Keys(s.parts)) {
		ps := s.parts[p]
		fmt.Fprintf(&b, "%s: end %d lso %d", p, ps.log.Len(), ps.lastStable())
		if ps.start > 0 {
			fmt.Fprintf(&b, " start %d", ps.start)
		}
		for _, pid := range slices.Sorted(maps.Keys(ps.verifying)) {
			v := ps.verifying[pid]
			fmt.Fprintf(&b, " verifying producer %d from sequence %d epoch %d", pid, v.lowest, v.epoch)
			if v.unsure {
				b.WriteString(" (maybe)")
			}
		}
		b.WriteString("; ")
	}
	for _, g := range slices.Sorted(maps.Keys(s.groups)) {
		gr := s.groups[g]
		fmt.Fprintf(&b, "%s: generation %d %d members ", g, gr.generation, len(gr.members))
		if gr.leader != "" {
			fmt.Fprintf(&b, "led by %s ", gr.leader)
		}
		if gr.syncDue != 0 {
			fmt.Fprintf(&b, "awaiting the leader's SyncGroup of generation %d ", gr.syncDue)
		}
		fmt.Fprintf(&b, "committed %v", gr.committed)
		if len(gr.metadata) > 0 {
			fmt.Fprintf(&b, " with metadata %v", gr.metadata)
		}
		b.WriteString("; ")
	}
	for _, g := range slices.Sorted(maps.Keys(s.consumer)) {
		fmt.Fprintf(&b, "consumer group %s: %s; ", g, s.consumer[g])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// end is the log end offset, which is also the high watermark: the model has
// one replica per partition.
func (ps partState) end() int64 { return int64(ps.log.Len()) }

// lastStable is the last stable offset: the first offset of the earliest open
// transaction, or the log end (KIP-98).
// A deleted transaction's first offset gives way to the log start offset
// (deleterecords.go).
func (ps partState) lastStable() int64 {
	lso := ps.end()
	for _, pe := range ps.producers {
		if pe.txnFirst != NoOffset && pe.txnFirst < lso {
			lso = pe.txnFirst
		}
	}
	return max(lso, ps.start)
}

// isAborted reports whether the record of pid at offset lies in one of
// pid's aborted ranges. The index is in the order of its markers, which
// are appended to the log, and one producer's ranges do not overlap, so
// the only range of pid that can hold offset is its first one whose
// marker lies past offset: the search starts there, not at the log's
// beginning.
func (ps partState) isAborted(pid, offset int64) bool {
	n := ps.aborted.Len()
	from := sort.Search(n, func(i int) bool { return ps.aborted.At(i).marker > offset })
	for i := from; i < n; i++ {
		if a := ps.aborted.At(i); a.pid == pid {
			return a.first <= offset
		}
	}
	return false
}

// Copy-on-write setters. Each copies the map it writes on every call: maps
// here are small (a few ids, partitions, groups), logs are shared.

func (s *State) setTxn(id string, t txnMeta) {
	// Every write of the metadata is a transition, and each one sets
	// txnLastUpdateTimestamp (TransactionMetadata.prepareTransitionTo).
	t.updatedAt = s.now
	s.txns = maps.Clone(s.txns)
	if s.txns == nil {
		s.txns = map[string]txnMeta{}
	}
	s.txns[id] = t
}

func (s *State) setPart(p Partition, ps partState) {
	s.parts = maps.Clone(s.parts)
	if s.parts == nil {
		s.parts = map[Partition]partState{}
	}
	s.parts[p] = ps
}

func (s *State) setGroup(name string, g group) {
	s.groups = maps.Clone(s.groups)
	if s.groups == nil {
		s.groups = map[string]group{}
	}
	if len(s.groups[name].members) > 0 && len(g.members) == 0 {
		g.emptySince = s.now // Kafka's currentStateTimestamp (offsetexpiry.go)
	}
	s.groups[name] = g
}

func (s *State) addPID(pid int64) {
	s.pids = maps.Clone(s.pids)
	if s.pids == nil {
		s.pids = map[int64]bool{}
	}
	s.pids[pid] = true
	s.nextPID = max(s.nextPID, pid+1)
}

func (ps partState) withProducer(pid int64, pe producerEntry) partState {
	ps.producers = maps.Clone(ps.producers)
	if ps.producers == nil {
		ps.producers = map[int64]producerEntry{}
	}
	ps.producers[pid] = pe
	return ps
}

func (ps partState) producer(pid int64) (producerEntry, bool) {
	pe, ok := ps.producers[pid]
	if !ok {
		pe = producerEntry{epoch: NoEpoch, txnFirst: NoOffset}
	}
	return pe, ok
}

func (g group) withMember(id string, m member) group {
	g.members = maps.Clone(g.members)
	if g.members == nil {
		g.members = map[string]member{}
	}
	g.members[id] = m
	return g
}

// withoutMember removes id. A removed leader is followed by some other
// member: Kafka takes whichever its map of members yields first
// (ClassicGroup.remove in 4.x, GroupMetadata.remove in 3.9), which the
// model knows only when one member remains; else the next join round's
// answers tell (joinGroup).
func (g group) withoutMember(id string) group {
	g.members = maps.Clone(g.members)
	delete(g.members, id)
	if !unnamed(id) {
		g.removed = maps.Clone(g.removed)
		if g.removed == nil {
			g.removed = map[string]bool{}
		}
		g.removed[id] = true
	}
	if _, ok := g.members[g.leader]; !ok {
		g.leader = ""
		if len(g.members) == 1 {
			g.leader = slices.Collect(maps.Keys(g.members))[0]
		}
	}
	return g
}

// addSorted returns set with x added, keeping it sorted and without
// duplicates; set itself is unchanged.
func addSorted[T ~string](set []T, x T) []T {
	i, found := slices.BinarySearch(set, x)
	if found {
		return set
	}
	return slices.Insert(slices.Clip(set), i, x)
}
