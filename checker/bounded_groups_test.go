package checker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// offsetsFoldOf is the stream's offsets-monotonic fold.
func offsetsFoldOf(t *testing.T, s *invariantStream) *offsetsFold {
	for i, name := range Checks[1 : len(Checks)-1] {
		if name == OffsetsMonotonic {
			return s.folds[i].(*offsetsFold)
		}
	}
	t.Fatal("no offsets-monotonic fold")
	return nil
}

// dropped reports whether the bounded fold dropped any commit, answer or
// group operation.
func (f *offsetsFold) dropped() bool {
	for _, fl := range f.floors {
		if fl.dropped != noFloor || fl.droppedFetch != noFloor {
			return true
		}
	}
	for _, x := range f.generations.groups {
		if x.generations.cut || x.epochs.cut {
			return true
		}
	}
	return false
}

// held counts the entries the fold holds: commits, answers, group
// operations and their indexes.
func (f *offsetsFold) held() int {
	n := len(f.pending) + len(f.waiting) + len(f.generations.waiting)
	for _, l := range f.committed {
		n += len(l)
	}
	for _, l := range f.fetches {
		n += len(l)
	}
	for _, x := range f.generations.groups {
		n += len(x.classic.Ops) + len(x.consumer.Ops) + len(x.returns)
		for _, b := range x.beats {
			n += len(b)
		}
	}
	return n
}

// TestBoundedGroupFoldsAtTheSmallestWindow: with one generation and one
// member epoch kept per group, the reads no-aborted-read keeps looked at
// again at every commit and its records dropped at every produce below
// what is still read, and one-owner's heartbeats dropped at every one,
// every saved history's bounded folds give the
// verdicts the unbounded ones give, or name what they needed. Some of
// them drop something and still agree.
func TestBoundedGroupFoldsAtTheSmallestWindow(t *testing.T) {
	defer func(k, r, c, b int) {
		keptGroupEpochs, fineReadsRescanAt, compactRecordsAt, compactBeatsAt = k, r, c, b
	}(keptGroupEpochs, fineReadsRescanAt, compactRecordsAt, compactBeatsAt)
	keptGroupEpochs, fineReadsRescanAt, compactRecordsAt, compactBeatsAt = 1, 1, 1, 1
	agreed, droppedAndAgreed, forgot := 0, 0, 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue // a file kept to show an error
		}
		s := boundedStream(h, true)
		got := s.verdicts()
		if why := s.forgotten(); why != "" {
			forgot++
			t.Logf("%s: %s", file, why)
			continue
		}
		dropped := offsetsFoldOf(t, s).dropped() || len(noAbortedReadFoldOf(t, s).droppedBelow) > 0 || oneOwnerFoldOf(t, s).compacted
		require.Equal(t, judgeInvariants(h, nil), got, file)
		agreed++
		if dropped {
			droppedAndAgreed++
		}
	}
	t.Logf("%d histories agreed, %d of them after dropping; %d needed what was dropped", agreed, droppedAndAgreed, forgot)
	require.Greater(t, droppedAndAgreed, 10, "histories that drop and still agree")
}

// longGroupHistory is a consumer group in the pipeline's shape: three
// workers each heartbeat, commit the next offset of the partition they
// hold (in a transaction, or now and then a plain commit) at their member
// epoch, round after round, the requests of a round overlapping. Every
// tenth round the group moves to a new epoch and each partition to the
// next worker, which fetches its committed offset first (require_stable).
// Every fiftieth round a worker is replaced by a member of its own: the
// old one leaves.
func longGroupHistory(rounds int) histories.History {
	b := &historyBuilder{}
	const workers = 3
	members := make([]string, workers)
	for i := range members {
		members[i] = fmt.Sprintf("w%d-0", i)
	}
	offsets := make([]int64, workers) // by partition
	epoch, shift := int32(1), 0
	for r := range rounds {
		base := int64(r) * 100
		rebalance := r%10 == 0
		if rebalance && r > 0 {
			epoch++
			shift++
		}
		if r%50 == 0 && r > 0 {
			w := (r / 50) % workers
			old := members[w]
			leave := b.consumerHeartbeat(old, base, base+1, "g", old, -1)
			b.op(leave).Req.MemberEpoch = -1
			members[w] = fmt.Sprintf("w%d-%d", w, r)
		}
		for i := range workers {
			p := (i + shift) % workers
			part := model.Partition(fmt.Sprintf("trips-%d", p))
			proc := members[i]
			b.consumerHeartbeat(proc, base+2+int64(i), base+9+int64(i), "g", members[i], epoch, part)
			if rebalance {
				f := b.offsetFetch(proc, base+10+int64(i), base+12+int64(i), "g", part, offsets[p])
				b.op(f).Req.RequireStable = true
			}
			offsets[p]++
			if r%7 == 3 {
				b.plainCommit(proc, base+20+int64(i), base+30+int64(i), "g", members[i], epoch, part, offsets[p])
				continue
			}
			s := session{fmt.Sprintf("t%d", i), int64(100 + i), 0}
			c := b.txnOffsetCommit(proc, base+20+int64(i), base+30+int64(i), s, "g", epoch, part, offsets[p])
			b.op(c).Req.MemberID = members[i]
			b.endTxn(proc, base+40+int64(i), base+50+int64(i), s, true)
		}
	}
	return b.h
}

// TestBoundedOffsetsFoldKeepsLittleOfALongGroup: on a long history of a
// consumer group in the pipeline's shape, the bounded offsets-monotonic
// holds a bounded number of entries from start to end, needs nothing it
// dropped, and gives the unbounded verdict. The unbounded fold holds an
// entry for every request.
func TestBoundedOffsetsFoldKeepsLittleOfALongGroup(t *testing.T) {
	h := longGroupHistory(4000)
	require.Greater(t, len(h.Ops), 30_000)
	bounded := newInvariantStream(h, nil)
	bounded.bound()
	whole := newInvariantStream(h, nil)
	most := 0
	for n, i := range callOrder(h.Ops) {
		bounded.add(&h.Ops[i])
		whole.add(&h.Ops[i])
		if n%1000 == 999 {
			most = max(most, offsetsFoldOf(t, bounded).held())
		}
	}
	t.Logf("the bounded fold held %d entries at most, the unbounded %d at the end", most, offsetsFoldOf(t, whole).held())
	require.LessOrEqual(t, most, 20*keptGroupEpochs, "entries the bounded fold held at most")
	require.Greater(t, offsetsFoldOf(t, whole).held(), len(h.Ops)/2, "entries the unbounded fold holds")
	got := bounded.verdicts()
	require.Empty(t, bounded.forgotten())
	require.Equal(t, whole.verdicts(), got)
	for _, v := range got {
		require.NotEqual(t, Violated, v.Status, "%v", v)
		if v.Check == OffsetsMonotonic {
			require.Equal(t, OK, v.Status)
		}
	}
}

// TestBoundedOffsetsFoldSaysWhatItDropped: a commit far below the offsets
// of a long group, and a commit at a member epoch far below the group's,
// need what the bounded fold dropped. It names each, and CheckFile, which
// then judges the file whole, names the violation Check names: the
// earliest commit above it, which the bounded fold dropped long before.
func TestBoundedOffsetsFoldSaysWhatItDropped(t *testing.T) {
	for _, tc := range []struct {
		name, forgot, reason string
		change               func(op *histories.Op)
	}{
		{"backward", "committed offset 1 of group g trips-0, below offset",
			"group g trips-0 committed offset 1 after op 13 had committed 2",
			func(op *histories.Op) { op.Req.Offsets = map[model.Partition]int64{"trips-0": 1} }},
		{"stale epoch", "committed at member epoch 1 of group g, below epoch",
			"of consumer group g for trips-0 at member epoch 1 accepted from w0-0",
			func(op *histories.Op) { op.Req.GenerationID, op.Req.MemberID = 1, "w0-0" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := longGroupHistory(300)
			b := &historyBuilder{h: h}
			end := h.Ops[len(h.Ops)-1].Return + 10
			late := b.plainCommit("w0-0", end, end+1, "g", "w0-0", 30, "trips-0", 1_000_000)
			tc.change(b.op(late))
			h = b.h

			s := boundedStream(h, true)
			s.verdicts()
			require.Contains(t, s.forgotten(), fmt.Sprintf("offsets-monotonic: op %d %s", late, tc.forgot))
			want := Check(h, Options{}).Verdict(OffsetsMonotonic)
			require.Equal(t, Violated, want.Status)
			require.Equal(t, late, want.Violations[0].Op)
			require.Contains(t, want.Violations[0].Reason, tc.reason)

			file := filepath.Join(t.TempDir(), "group.json")
			require.NoError(t, histories.SaveFile(file, h))
			got, err := CheckFile(file, Options{})
			require.NoError(t, err)
			require.Equal(t, want, got.Verdict(OffsetsMonotonic))
		})
	}
}

// noAbortedReadFoldOf is the stream's no-aborted-read fold.
func noAbortedReadFoldOf(t *testing.T, s *invariantStream) *noAbortedReadFold {
	for i, name := range Checks[1 : len(Checks)-1] {
		if name == NoAbortedRead {
			return s.folds[i].(*noAbortedReadFold)
		}
	}
	t.Fatal("no no-aborted-read fold")
	return nil
}

// TestBoundedNoAbortedReadKeepsFewReads: a reader that reads each
// committed transaction's record, some of them before their end_txn has
// returned, keeps few reads and few records in a bounded no-aborted-read,
// and the verdict is the unbounded one: held, and violated when one
// transaction is aborted instead.
func TestBoundedNoAbortedReadKeepsFewReads(t *testing.T) {
	build := func(abort int) (histories.History, int) {
		b := &historyBuilder{}
		s := session{"fare-writer", 4001, 0}
		bad := -1
		for i := range 5000 {
			call := int64(i) * 10
			key := fmt.Sprintf("trip-%d", i)
			p := b.produce("W", call, call+1, s, "fares-0", int64(i), key)
			b.op(p).Req.Sequence = int32(i) // a batch of its own
			b.endTxn("W", call+2, call+8, s, i != abort)
			// Every third read is called before the end_txn returns,
			// after its commit was called.
			at := call + 9
			if i%3 == 0 {
				at = call + 3
			}
			read := b.fetch("R", at, at+1, "fares-0", int64(i), model.ReadCommitted, rec(int64(i), key, 4001))
			if i == abort {
				bad = read
			}
		}
		return b.h, bad
	}
	h, _ := build(-1)
	bounded, whole := boundedStream(h, true), boundedStream(h, false)
	require.LessOrEqual(t, len(noAbortedReadFoldOf(t, bounded).reads), 2*fineReadsRescanAt)
	require.Len(t, noAbortedReadFoldOf(t, whole).reads, 5000)
	require.LessOrEqual(t, len(noAbortedReadFoldOf(t, bounded).acked["fares-0"].records), 2*compactRecordsAt)
	require.Len(t, noAbortedReadFoldOf(t, whole).acked["fares-0"].records, 5000)
	got := bounded.verdicts()
	require.Empty(t, bounded.forgotten())
	require.Equal(t, whole.verdicts(), got)

	h, bad := build(4321)
	bounded, whole = boundedStream(h, true), boundedStream(h, false)
	got = bounded.verdicts()
	require.Equal(t, whole.verdicts(), got)
	v := Check(h, Options{}).Verdict(NoAbortedRead)
	requireViolation(t, v, bad, "read_committed fetch returned trip-4321 at fares-0 offset 4321, written by op 12963 "+
		"in a transaction of fare-writer (producer id 4001, epoch 0) aborted by op 12964")
}

// TestBoundedNoAbortedReadSaysWhatItDropped: a fetch that returns a record
// below its own offset, long after the records there were dropped, needs
// what the bounded no-aborted-read dropped. It names the read, and
// CheckFile, which then judges the file whole, names the violation Check
// names.
func TestBoundedNoAbortedReadSaysWhatItDropped(t *testing.T) {
	b := &historyBuilder{}
	s := session{"fare-writer", 4001, 0}
	for i := range 3000 {
		call := int64(i) * 10
		p := b.produce("W", call, call+1, s, "fares-0", int64(i), fmt.Sprintf("trip-%d", i))
		b.op(p).Req.Sequence = int32(i)
		b.endTxn("W", call+2, call+8, s, i != 7)
		b.fetch("R", call+9, call+10, "fares-0", int64(i), model.ReadCommitted)
	}
	bad := b.fetch("R", 40_000, 40_001, "fares-0", 2999, model.ReadCommitted, rec(7, "trip-7", 4001))
	h := b.h

	bounded := boundedStream(h, true)
	bounded.verdicts()
	prefix := fmt.Sprintf("no-aborted-read: op %d read fares-0 offset 7, below offset", bad)
	require.True(t, strings.HasPrefix(bounded.forgotten(), prefix), bounded.forgotten())
	want := Check(h, Options{}).Verdict(NoAbortedRead)
	requireViolation(t, want, bad, "read_committed fetch returned trip-7 at fares-0 offset 7, written by op 21 "+
		"in a transaction of fare-writer (producer id 4001, epoch 0) aborted by op 22")

	file := filepath.Join(t.TempDir(), "reads.json")
	require.NoError(t, histories.SaveFile(file, h))
	got, err := CheckFile(file, Options{})
	require.NoError(t, err)
	require.Equal(t, want, got.Verdict(NoAbortedRead))
}

// TestBoundedProgressForgetsCommittedTrips: a bounded progress fold holds
// only the trips not yet committed, and gives the unbounded verdict,
// reason included, when one trip is never committed.
func TestBoundedProgressForgetsCommittedTrips(t *testing.T) {
	b := &historyBuilder{}
	idempotent := session{"", 5, 0}
	for i := range 2000 {
		b.h.Trips = append(b.h.Trips, fmt.Sprintf("trip-%d", i))
		if i != 1234 {
			b.produce("S", int64(i)*2, int64(i)*2+1, idempotent, "fares-0", int64(i), fmt.Sprintf("trip-%d", i))
		}
	}
	bounded, whole := boundedStream(b.h, true), boundedStream(b.h, false)
	var f *progressFold
	for i, name := range Checks[1 : len(Checks)-1] {
		if name == Progress {
			f = bounded.folds[i].(*progressFold)
		}
	}
	require.Equal(t, 1, f.trips.len(), "the fold holds the one trip never committed")
	require.True(t, f.trips.has("trip-1234"))
	got := bounded.verdicts()
	require.Empty(t, bounded.forgotten())
	require.Equal(t, whole.verdicts(), got)
	v := Check(b.h, Options{}).Verdict(Progress)
	require.Equal(t, Violated, v.Status)
	require.Contains(t, v.Violations[0].Reason, "no progress: 1 of 2000 trips never committed (trip-1234)")
}

// oneOwnerFoldOf is the stream's one-owner fold.
func oneOwnerFoldOf(t *testing.T, s *invariantStream) *oneOwnerFold {
	for i, name := range Checks[1 : len(Checks)-1] {
		if name == OneOwner {
			return s.folds[i].(*oneOwnerFold)
		}
	}
	t.Fatal("no one-owner fold")
	return nil
}

// handOverHistory is a KIP-848 group of three members that heartbeat
// round after round, each owning what it was given. Every tenth round the
// group moves to a new epoch: each member first gives its partition up
// (owning none, answered with none), then is given the next member's.
// The requests of a round overlap.
func handOverHistory(rounds int) *historyBuilder {
	b := &historyBuilder{}
	const members = 3
	held := make([][]model.Partition, members)
	epoch := int32(1)
	beat := func(m int, call int64, owned []model.Partition, given ...model.Partition) int {
		id := b.consumerHeartbeat(fmt.Sprintf("W%d", m), call, call+5, "g", fmt.Sprintf("w%d", m), epoch, given...)
		b.op(id).Req.MemberEpoch = epoch
		b.op(id).Req.OwnedPartitions = &owned
		if given == nil {
			none := []model.Partition{}
			b.op(id).Result.Resp.MemberAssignment = &none
		}
		return id
	}
	for r := range rounds {
		base := int64(r) * 100
		if r%10 == 0 {
			for m := range members {
				beat(m, base+int64(m), held[m])
			}
			epoch++
			for m := range members {
				held[m] = []model.Partition{model.Partition(fmt.Sprintf("trips-%d", (m+r/10)%members))}
				beat(m, base+10+int64(m), nil, held[m]...)
			}
			continue
		}
		for m := range members {
			beat(m, base+int64(m), held[m], held[m]...)
		}
	}
	return b
}

// TestBoundedOneOwnerKeepsFewBeats: on a long group whose partitions move
// from member to member, the bounded one-owner holds a bounded number of
// heartbeats and gives the unbounded verdict: held, and violated, naming
// the same holding, when a member is given a partition another still
// holds.
func TestBoundedOneOwnerKeepsFewBeats(t *testing.T) {
	b := handOverHistory(3000)
	bounded, whole := boundedStream(b.h, true), boundedStream(b.h, false)
	most := 0
	for _, m := range oneOwnerFoldOf(t, bounded).groups["g"].byID {
		most = max(most, len(m.beats))
	}
	require.LessOrEqual(t, most, 2*compactBeatsAt)
	require.Greater(t, len(oneOwnerFoldOf(t, whole).groups["g"].byID["w0"].beats), 3000)
	got := bounded.verdicts()
	require.Empty(t, bounded.forgotten())
	require.Equal(t, whole.verdicts(), got)
	require.Equal(t, OK, Check(b.h, Options{}).Verdict(OneOwner).Status)

	// Late on, w0 is given w1's partition while w1 holds it.
	end := b.h.Ops[len(b.h.Ops)-1].Return + 10
	stolen := b.consumerHeartbeat("W0", end, end+1, "g", "w0", 301, "trips-0", "trips-1")
	b.op(stolen).Req.MemberEpoch = 301
	bounded, whole = boundedStream(b.h, true), boundedStream(b.h, false)
	got = bounded.verdicts()
	require.Empty(t, bounded.forgotten())
	require.Equal(t, whole.verdicts(), got)
	v := Check(b.h, Options{}).Verdict(OneOwner)
	require.Equal(t, Violated, v.Status)
	require.Equal(t, stolen, v.Violations[0].Op)
	require.Contains(t, v.Violations[0].Reason, "the answer gives trips-0 to member w0 at epoch 301, but member w1, given it by op 9898 at epoch 301, still holds it")
}

// TestBoundedOneOwnerSaysWhatItDropped: a tick after the bounded one-owner
// dropped heartbeats needs their timer indexes. The fold names it, and
// CheckFile, which then judges the file whole, gives Check's verdict.
func TestBoundedOneOwnerSaysWhatItDropped(t *testing.T) {
	b := handOverHistory(1000)
	end := b.h.Ops[len(b.h.Ops)-1].Return + 10
	req := model.NewRequest()
	req.Ms = 1
	tick := b.add("clock", end, 0, model.Tick, req, model.NewResponse())
	b.op(tick).Returned = false
	bounded := boundedStream(b.h, true)
	bounded.verdicts()
	require.Equal(t, fmt.Sprintf("one-owner: op %d is a tick, and the bounded fold dropped heartbeats and timer indexes before it", tick),
		bounded.forgotten())

	file := filepath.Join(t.TempDir(), "owners.json")
	require.NoError(t, histories.SaveFile(file, b.h))
	got, err := CheckFile(file, Options{})
	require.NoError(t, err)
	require.Equal(t, Check(b.h, Options{}).Verdict(OneOwner), got.Verdict(OneOwner))
}
