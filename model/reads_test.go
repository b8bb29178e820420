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
