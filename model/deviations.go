package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Deviations: ways one broker is known to differ from Kafka. They are not
// Kafka's rules, and the model's own answers (Apply) never take them. A
// known divergence has consequences further on in the same history (a
// transaction the broker forgot writes no marker, so the next record lands
// an offset early), and those show under other signatures than the
// divergence itself. A list of known findings names the deviation each
// finding is (fencecheck/known/v1, "allows"); the checker judges a history
// that breaks a check no finding lists again with those deviations
// allowed (Options.Allow), and a history they explain is a known
// finding's consequence, not a new one.

// Deviation is a set of deviations, one bit each.
type Deviation uint32

const (
	// StaleBumpAccepted: a KIP-360 bump naming the transactional id's
	// producer id at an epoch below the current one is accepted as the
	// owner's own (the open transaction aborted, the epoch bumped), a
	// retry of the last bump too. kfake, FINDINGS 5: pids.doInitProducerID
	// ("Accept current or stale epoch").
	StaleBumpAccepted Deviation = 1 << iota
	// FencedProduceJoinsTxn: under transactions v2, a transactional produce
	// adds its partition to the transaction of the transactional id whose
	// producer id it names, beginning it, before any check, so a refused
	// produce leaves it there. kfake, FINDINGS 4: pids.get adds the
	// partition before the epoch is checked.
	FencedProduceJoinsTxn
	// RestartForgetsOpenTxn: a broker restart forgets the partitions an
	// open transaction has written no record to; the transaction stays
	// open with its groups and the partitions it wrote to, and its end or
	// its timeout writes no marker in the others. kfake, FINDINGS 13: a
	// transaction is saved with txPartFirstOffsets, set by its first
	// batch in a partition, and txGroups, and its partitions are rebuilt
	// from the first alone.
	RestartForgetsOpenTxn
	// EmptyEndTxnAccepted: an EndTxn with no transaction open, of the
	// outcome the producer's last transaction ended with (an abort when
	// none did; either after an init, since the model keeps no outcome
	// across one), succeeds and changes nothing. kfake, FINDINGS 2:
	// pids.doEnd's retry detection compares only the outcome
	// (lastWasCommit), never whether a transaction just ended.
	EmptyEndTxnAccepted
	// FencedProduceInvalidTxnState: under transactions v1, a fenced
	// producer's produce is answered INVALID_TXN_STATE. kfake, FINDINGS 1:
	// a partition outside the current transaction is refused before the
	// epoch is checked.
	FencedProduceInvalidTxnState
	// FencedProduceOutOfOrder: under transactions v2, a fenced producer's
	// first produce to a partition never written, at a sequence above 0,
	// is answered OUT_OF_ORDER_SEQUENCE_NUMBER. kfake, FINDINGS 17: the
	// KAFKA-15591 check runs before the epoch's.
	FencedProduceOutOfOrder
	// EpochPerProducerID: a produce at an epoch below the newest its
	// producer id sent a batch at, to any partition, taken or refused
	// (State.triedEpochs), or was handed by its coordinator, may be
	// answered INVALID_PRODUCER_EPOCH, where Kafka's leaders keep a
	// producer's epoch per partition (ProducerStateManager), learned
	// from batches and markers only: an idempotent producer's batch of
	// the epoch before its own bump, still in flight to another
	// partition, is accepted there, and so is a batch outside a
	// transaction from a transactional producer id whose bumps wrote no
	// marker there. kfake, FINDINGS 18: one pidinfo per producer id, its
	// epoch shared by every partition and by the coordinator.
	EpochPerProducerID
	// EndTxnAtEpochBefore: under transactions v2, an EndTxn at the epoch
	// just before the current one, with no transaction open, is answered
	// as the retry of an EndTxn that ended the last transaction, whatever
	// bumped the epoch (success, or INVALID_TXN_STATE for the other
	// outcome). kfake, FINDINGS 12: pids.doEnd's KIP-890 retry detection
	// does not ask whether the bump was an EndTxn's.
	EndTxnAtEpochBefore
	// MarkerLeavesNoSequence: a producer a partition knows only from a
	// transaction marker may start its next batch there at any sequence,
	// as if the partition had no state for it. Kafka's marker sets the
	// producer's epoch in the partition's state
	// (ProducerStateEntry.maybeUpdateProducerEpoch), and the next batch at
	// that epoch must then continue from no sequence, that is start at 0
	// (ProducerAppendInfo.checkSequence). kfake, FINDINGS 19: a marker
	// makes no sequence window for the producer.
	MarkerLeavesNoSequence
	// FirstTimeoutKept: a transactional id keeps the transaction timeout
	// of its first InitProducerId; a re-init (plain or a KIP-360 bump)
	// with another timeout does not change it. kfake, FINDINGS 20:
	// pids.create and the KIP-360 path keep pidinfo.txTimeout.
	FirstTimeoutKept
	// UnstableOffsetsGroupWide: a require_stable OffsetFetch may be
	// answered UNSTABLE_OFFSET_COMMIT for any partition of a group while
	// an open transaction holds a pending offset of any partition of it;
	// a fetch of all partitions may then list every committed partition
	// as unstable. kfake, FINDINGS 16: handleOffsetFetch's
	// hasUnstableOffsets(group).
	UnstableOffsetsGroupWide
	// RestartForgetsMemberMetadata: a broker restart forgets what each
	// group member subscribed with, so the next join of each member, a
	// follower's too, starts a new generation, as a leader's does. kfake,
	// FINDINGS 21: a classic member is saved with its protocols' names
	// only, and sameJoin compares the metadata bytes.
	RestartForgetsMemberMetadata
	// LateFirstSequenceAccepted: under transactions v2, a transactional
	// first batch at a sequence above 0 from a producer the partition has
	// no state for, whose answer was lost, may have landed if the
	// partition's log has held a record. Kafka 4.1.0+ refuses every such
	// batch (KAFKA-18202; the model takes a lost answer as that refusal,
	// see freshSequence), and 4.0.x takes every one. kfake, FINDINGS 22:
	// KAFKA-15591's check (a partition never written) without
	// KAFKA-18202's, a pair no release has.
	LateFirstSequenceAccepted
	// JoinersEachLead: answers of one generation may name different
	// leaders. A round that completes without the last leader tells each
	// member that rejoined it that it leads the new generation, and the
	// answers the generation gives afterwards name the last of them.
	// Kafka elects one of the members that rejoined
	// (GroupMetadata.maybeElectNewJoinedLeader, 3.9;
	// ClassicGroup.maybeElectNewJoinedLeader, 4.x) and every answer of
	// the generation names it. kfake, FINDINGS 23: completeRebalance sets
	// g.leader to each member in turn as it answers it.
	JoinersEachLead
	// LeaveResolvesInstance: a LeaveGroup member that names a member id
	// and an instance id removes whichever member holds the instance, so
	// a replaced process's leave removes the member that replaced it.
	// Kafka checks the member id against the instance first
	// (ClassicGroup.validateMember, 4.x; GroupCoordinator
	// .handleLeaveGroup, 3.9) and answers FENCED_INSTANCE_ID. kfake,
	// FINDINGS 27: its leave resolves the member id from the instance id.
	LeaveResolvesInstance
	// StaticLeaveWithoutInstance: a KIP-848 leave at member epoch -2 with
	// no instance id is the leave of the member its member id names: a
	// static member stays at epoch -2 with its assignment, and a dynamic
	// one leaves for good. Kafka refuses it with INVALID_REQUEST
	// (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid,
	// 3.9 and 4.x). kfake, FINDINGS 32: consumerStaticLeave finds the
	// member by its member id. franz-go v1.22.3 sends such leaves.
	StaticLeaveWithoutInstance
	// RoundDropsStatic: a classic group's join round that completes may
	// remove a static member that has not rejoined it, as it removes a
	// dynamic one, so the member's next request naming its member id may
	// be answered UNKNOWN_MEMBER_ID. Kafka keeps a static member that
	// missed the round, because it removes only the dynamic ones
	// (notYetRejoinedDynamicMembers in GroupCoordinator.onCompleteJoin,
	// 3.9, and GroupMetadataManager.completeClassicGroupJoin, 4.x; tests
	// GroupCoordinatorTest#testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout,
	// 3.9, and GroupMetadataManagerTest's test of that name, trunk).
	// kfake, FINDINGS 34: completeRebalance removes every member that
	// has not rejoined.
	RoundDropsStatic
)

var deviationNames = []struct {
	d    Deviation
	name string
}{
	{StaleBumpAccepted, "stale-bump-accepted"},
	{FencedProduceJoinsTxn, "fenced-produce-joins-txn"},
	{RestartForgetsOpenTxn, "restart-forgets-open-txn"},
	{EmptyEndTxnAccepted, "empty-end-txn-accepted"},
	{FencedProduceInvalidTxnState, "fenced-produce-invalid-txn-state"},
	{FencedProduceOutOfOrder, "fenced-produce-out-of-order"},
	{EpochPerProducerID, "epoch-per-producer-id"},
	{EndTxnAtEpochBefore, "end-txn-at-epoch-before"},
	{MarkerLeavesNoSequence, "marker-leaves-no-sequence"},
	{FirstTimeoutKept, "first-timeout-kept"},
	{UnstableOffsetsGroupWide, "unstable-offsets-group-wide"},
	{RestartForgetsMemberMetadata, "restart-forgets-member-metadata"},
	{LateFirstSequenceAccepted, "late-first-sequence-accepted"},
	{JoinersEachLead, "joiners-each-lead"},
	{LeaveResolvesInstance, "leave-resolves-instance"},
	{StaticLeaveWithoutInstance, "static-leave-without-instance"},
	{RoundDropsStatic, "round-drops-static"},
}

// ParseDeviation is the deviation of that name, or of several names
// joined by "+" as String writes them.
func ParseDeviation(name string) (Deviation, error) {
	if several := strings.Split(name, "+"); len(several) > 1 {
		var all Deviation
		for _, one := range several {
			d, err := ParseDeviation(one)
			if err != nil {
				return 0, err
			}
			all |= d
		}
		return all, nil
	}
	for _, n := range deviationNames {
		if n.name == name {
			return n.d, nil
		}
	}
	names := make([]string, len(deviationNames))
	for i, n := range deviationNames {
		names[i] = n.name
	}
	return 0, fmt.Errorf("%q is not a deviation the model knows (%s)", name, strings.Join(names, ", "))
}

func (d Deviation) String() string {
	var names []string
	for _, n := range deviationNames {
		if d&n.d != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, "+")
}

// allows reports whether the broker judged is allowed deviation d (only
// the checker sets Options.Allow).
func (st *step) allows(d Deviation) bool { return st.s.opts.Allow&d != 0 }

// staleBump reports whether r is a bump StaleBumpAccepted takes as the
// owner's: the owner's producer id at an older epoch, answered with a
// newer epoch than the current one, or not answered (taken to have
// bumped; placed last, it did nothing).
func (st *step) staleBump(t txnMeta, r Request) bool {
	got := st.observed()
	answered := got != nil && got.Epoch > t.epoch
	return st.allows(StaleBumpAccepted) && r.ProducerID == t.pid && r.Epoch < t.epoch && (answered || st.undecided())
}

// produceDeviations is out, a produce's outcome, with the deviations
// allowed: a fenced producer's other answers, and FencedProduceJoinsTxn's
// effect (the partition added to the transaction of the id that holds
// r's producer id).
func (st *step) produceDeviations(r Request, out outcome) outcome {
	if st.allows(EpochPerProducerID) {
		newest := st.newestEpochOf(r.ProducerID)
		if r.Epoch > st.s.triedEpochs[r.ProducerID] || st.s.triedEpochs == nil {
			tried := maps.Clone(st.s.triedEpochs)
			if tried == nil {
				tried = map[int64]int16{}
			}
			tried[r.ProducerID] = max(r.Epoch, tried[r.ProducerID])
			st.s.triedEpochs = tried
			out.effects = out.effects || out.refuse != ""
		}
		switch stale := r.Epoch < newest && out.bad == nil && st.answered(InvalidProducerEpoch); {
		case stale && out.refuse == "":
			return refuse("epoch-per-producer-id", InvalidProducerEpoch, "producer %d sent a batch at epoch %d (deviation %s)", r.ProducerID, newest, EpochPerProducerID)
		case stale:
			out.also = FencedProducer // refused either way: kfake's epoch check comes first
		}
	}
	if out.refuse == "" || out.bad != nil || r.TransactionalID == "" {
		return out
	}
	fenced := out.rule == "leader-epoch-fence" || out.rule == "epoch-fence"
	v2 := st.s.opts.TxnVersion >= 2
	switch {
	case fenced && !v2 && st.allows(FencedProduceInvalidTxnState):
		out.also = BadTxnState
	case fenced && v2 && r.Sequence != 0 && st.allows(FencedProduceOutOfOrder):
		out.also = OutOfOrder
	}
	if !v2 || !st.allows(FencedProduceJoinsTxn) {
		return out
	}
	for id, t := range st.s.txns {
		if t.pid != r.ProducerID {
			continue
		}
		if t.phase != Ongoing || !slices.Contains(t.partitions, r.Partition) {
			t = st.begin(t)
			t.partitions = addSorted(t.partitions, r.Partition)
			st.s.setTxn(id, t)
			out.effects = true
		}
		return out
	}
	return out
}

// restartForgets applies the deviations of a broker restart.
func (st *step) restartForgets() {
	st.restartForgetsOpenTxns()
	st.restartForgetsMemberMetadata()
}

// restartForgetsMemberMetadata marks every member's next join as one that
// starts a new generation (RestartForgetsMemberMetadata; see chooseJoin).
func (st *step) restartForgetsMemberMetadata() {
	if !st.allows(RestartForgetsMemberMetadata) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(st.s.groups)) {
		g := st.s.groups[name]
		for id, m := range g.members {
			m.subscriptionForgotten = true
			g = g.withMember(id, m)
		}
		st.s.setGroup(name, g)
	}
}

// restartForgetsOpenTxns applies RestartForgetsOpenTxn to a broker restart.
func (st *step) restartForgetsOpenTxns() {
	if !st.allows(RestartForgetsOpenTxn) {
		return
	}
	for id, t := range st.s.txns {
		if t.phase != Ongoing {
			continue
		}
		var kept []Partition
		for _, p := range t.partitions {
			if pe, known := st.s.parts[p].producer(t.pid); known && pe.txnFirst != NoOffset {
				kept = append(kept, p)
			}
		}
		if len(kept) == len(t.partitions) {
			continue
		}
		t.partitions = kept
		st.s.setTxn(id, t)
	}
}

// emptyEndAccepted reports whether EmptyEndTxnAccepted takes r, an EndTxn
// with nothing open to end, as accepted. kfake keeps the last outcome
// across inits, which the model does not, so either outcome is taken
// once an init has come since.
func (st *step) emptyEndAccepted(t txnMeta, r Request) bool {
	sameOutcome := r.Commit == (t.phase == CompleteCommit) || t.phase == Empty
	return st.allows(EmptyEndTxnAccepted) && st.observed() != nil && sameOutcome
}

// newestEpochOf is the newest epoch producer pid sent a batch at, to any
// partition, taken or refused, or was handed by the coordinator of the
// transactional id it belongs to (kfake's pidinfo.epoch, which
// InitProducerId, a timeout and a KIP-890 EndTxn bump).
func (st *step) newestEpochOf(pid int64) int16 {
	newest := NoEpoch
	if tried, ok := st.s.triedEpochs[pid]; ok {
		newest = tried
	}
	for _, ps := range st.s.parts {
		if pe, known := ps.producer(pid); known {
			newest = max(newest, pe.epoch)
		}
	}
	for _, t := range st.s.txns {
		if t.pid == pid {
			newest = max(newest, t.epoch)
		}
	}
	return newest
}

// endTxnAtEpochBefore is EndTxnAtEpochBefore's answer to r, when it
// applies: only to an answer the deviation gives (or none). A deviation
// adds to what Kafka answers and takes nothing away: kfake, too, answers
// PRODUCER_FENCED where Kafka does, when its retry detection does not
// fire (met: a commit at the epoch before an InitProducerId's bump).
func (st *step) endTxnAtEpochBefore(t txnMeta, r Request) (outcome, bool) {
	if !st.allows(EndTxnAtEpochBefore) || st.s.opts.TxnVersion < 2 || t.phase == Ongoing ||
		r.ProducerID != t.pid || r.Epoch != t.epoch-1 {
		return outcome{}, false
	}
	if !st.undecided() && st.observed() == nil && !st.answered(InvalidTxnState) {
		return outcome{}, false
	}
	out := refuse("end-txn-at-epoch-before", InvalidTxnState, "epoch %d is the one before %s's (deviation %s)", r.Epoch, r.TransactionalID, EndTxnAtEpochBefore)
	out.also = Success
	return out, true
}

// markerOnly reports whether MarkerLeavesNoSequence takes the producer
// state pe, known at r's partition, as none: it holds no batch (a
// marker's), and the broker took r.
func (st *step) markerOnly(pe producerEntry, known bool, r Request) bool {
	return known && len(pe.batches) == 0 && r.Epoch >= pe.epoch && st.allows(MarkerLeavesNoSequence) && st.observed() != nil
}

// unstableGroupWide reports whether UnstableOffsetsGroupWide lets a
// require_stable fetch of group be answered UNSTABLE_OFFSET_COMMIT.
func (st *step) unstableGroupWide(group string) bool {
	if !st.allows(UnstableOffsetsGroupWide) {
		return false
	}
	for _, t := range st.s.txns {
		if t.phase == Ongoing && len(t.pending[group]) > 0 {
			return true
		}
	}
	return false
}

// roundMayDropStatic reports whether a join round that completes may
// remove a static member that did not rejoin it (RoundDropsStatic).
func (st *step) roundMayDropStatic() bool { return st.allows(RoundDropsStatic) }

// preparedRoundMayDrop is group.preparedRoundMayDrop with the deviations
// allowed: under RoundDropsStatic a static member too may be gone.
func (st *step) preparedRoundMayDrop(g group, m member) bool {
	missed := g.generation > g.answered && m.gen < g.generation
	return g.preparedRoundMayDrop(m) || (missed && st.roundMayDropStatic())
}
