package model

import (
	"errors"
	"testing"
)

// produceAll writes one record of each key to p, idempotent and outside a
// transaction.
func produceAll(t *testing.T, s State, p Partition, keys ...string) State {
	t.Helper()
	for _, k := range keys {
		r := NewRequest()
		r.Partition, r.Records = p, []Record{{Key: k, Value: "v"}}
		var res Result
		if s, res = Apply(s, Op{Kind: Produce, Req: r}); !res.Succeeded() {
			t.Fatalf("produce of %s to %s refused: %s", k, p, res.Err)
		}
	}
	return s
}

func fetchOp(p Partition, offset int64) Op {
	r := NewRequest()
	r.Partition, r.Offset, r.Isolation = p, offset, ReadUncommitted
	return Op{Kind: Fetch, Req: r}
}

// TestReadsKeepOnlyWhatAFetchReads: under Reads, a partition no fetch
// reads keeps no record but still counts its offsets, a fetched one keeps
// the records from its lowest offset on, and a fetch below it is refused
// by name, not answered wrongly. Two states whose logs differ only below
// that offset are equal under Reads, and not without.
func TestReadsKeepOnlyWhatAFetchReads(t *testing.T) {
	reads := NewReads()
	reads.Fetch("read-0", 5)
	reads.Fetch("read-0", 2)
	reads.Fetch("read-0", 7)
	keys := []string{"a", "b", "c", "d"}
	other := []string{"A", "B", "c", "d"}
	all, some := Init(Options{}), Init(Options{Reads: reads})
	all, some = produceAll(t, all, "read-0", keys...), produceAll(t, some, "read-0", keys...)
	all, some = produceAll(t, all, "unread-0", keys...), produceAll(t, some, "unread-0", keys...)

	if got := some.parts["unread-0"].log; got.Len() != 4 || got.kept.Len() != 0 {
		t.Fatalf("the unread log keeps %d of %d entries, want 0 of 4", got.kept.Len(), got.Len())
	}
	if got := some.parts["read-0"].log; got.Len() != 4 || got.kept.Len() != 2 {
		t.Fatalf("the read log keeps %d of %d entries, want 2 of 4", got.kept.Len(), got.Len())
	}
	if all.String() != some.String() {
		t.Fatalf("the states read differently:\n%s\n%s", all, some)
	}
	_, want := Apply(all, fetchOp("read-0", 2))
	_, got := Apply(some, fetchOp("read-0", 2))
	if len(got.Resp.Records) != 2 || got.Resp.Records[0] != want.Resp.Records[0] || got.Resp.Records[1] != want.Resp.Records[1] {
		t.Fatalf("fetch from 2 under Reads: %v, want %v", got.Resp.Records, want.Resp.Records)
	}
	_, err := Check(some, fetchOp("read-0", 1), want)
	var d *Disallowed
	if !errors.As(err, &d) || d.Rule != "fetch-below-reads" {
		t.Fatalf("a fetch below the reads: %v, want the rule fetch-below-reads", err)
	}
	if _, err := Check(some, fetchOp("unread-0", 4), OK(Response{HighWatermark: 4, LastStableOffset: 4})); err != nil {
		t.Fatalf("a fetch at the end of an unread log: %v", err)
	}

	differs := produceAll(t, Init(Options{Reads: reads}), "read-0", "x", "y", "c", "d")
	differs = produceAll(t, differs, "unread-0", other...)
	if !Equal(some, differs) || !EqualByReflection(some, differs) {
		t.Fatal("logs that differ only where no fetch reads must be equal under Reads")
	}
	plain := produceAll(t, produceAll(t, Init(Options{}), "read-0", "x", "y", "c", "d"), "unread-0", other...)
	if Equal(all, plain) {
		t.Fatal("without Reads, logs that differ must not be equal")
	}
}

// TestReadsFromDropsWhatEveryFetchPassed: once no fetch to come reads
// below an offset, the log counts the entries below it instead of keeping
// them, as soon as they are half of those kept, and keeps later entries
// from it on only; a fetch below what it keeps is refused by name, and one
// from it reads as before.
func TestReadsFromDropsWhatEveryFetchPassed(t *testing.T) {
	all := produceAll(t, Init(Options{}), "p-0", "a", "b", "c", "d", "e", "f")
	some := ReadsFrom(all, "p-0", 2)
	if got := some.parts["p-0"].log; got.counted != 0 || got.kept.Len() != 6 {
		t.Fatalf("2 of 6 below the offset: counted %d, kept %d, want 0 and 6", got.counted, got.kept.Len())
	}
	some = ReadsFrom(some, "p-0", 1) // never lowers
	some = ReadsFrom(some, "p-0", 4)
	if got := some.parts["p-0"].log; got.counted != 4 || got.kept.Len() != 2 || got.floor != 4 {
		t.Fatalf("4 of 6 below the offset: counted %d, kept %d, floor %d, want 4, 2, 4", got.counted, got.kept.Len(), got.floor)
	}
	some = ReadsFrom(some, "p-0", 9)
	some = produceAll(t, some, "p-0", "g", "h", "i", "j")
	if got := some.parts["p-0"].log; got.Len() != 10 || got.counted != 9 || got.kept.Len() != 1 {
		t.Fatalf("appended past a floor of 9: length %d, counted %d, kept %d, want 10, 9, 1", got.Len(), got.counted, got.kept.Len())
	}
	all = produceAll(t, all, "p-0", "g", "h", "i", "j")
	if all.String() != some.String() {
		t.Fatalf("the states read differently:\n%s\n%s", all, some)
	}
	_, want := Apply(all, fetchOp("p-0", 9))
	if next, err := Check(some, fetchOp("p-0", 9), want); err != nil || !Equal(next, some) {
		t.Fatalf("a fetch from the floor: %v", err)
	}
	_, err := Check(some, fetchOp("p-0", 8), want)
	var d *Disallowed
	if !errors.As(err, &d) || d.Rule != "fetch-below-reads" {
		t.Fatalf("a fetch below the floor: %v, want the rule fetch-below-reads", err)
	}
	if Equal(some, ReadsFrom(some, "p-0", 10)) {
		t.Fatal("logs with other floors must not be equal")
	}
	if got := ReadsFrom(all, "unwritten-0", 3); !Equal(got, all) {
		t.Fatal("a partition with no log is left alone")
	}
}

// TestReadsFromDropsEndedAbortedRanges: an aborted range that ends at or
// below the offset goes with the entries, and one past it stays.
func TestReadsFromDropsEndedAbortedRanges(t *testing.T) {
	ps := partState{}
	for i := range int64(8) {
		ps.log = ps.log.Append(entry{pid: 1, control: i == 3 || i == 7}, 0)
	}
	ps.aborted = ps.aborted.Append(abortedTxn{pid: 1, first: 0, marker: 3})
	ps.aborted = ps.aborted.Append(abortedTxn{pid: 1, first: 4, marker: 7})
	s := Init(Options{})
	s.setPart("p-0", ps)
	got := ReadsFrom(s, "p-0", 4).parts["p-0"]
	if got.aborted.Len() != 1 || got.aborted.At(0).marker != 7 || !got.isAborted(1, 5) || !got.isAborted(1, 4) {
		t.Fatalf("aborted ranges past offset 4: %d, want the one ending at 7", got.aborted.Len())
	}
}
