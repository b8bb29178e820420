package model

import (
	"fmt"
	"reflect"
	"testing"
)

// Equal names every field of the state's types; a field added to one of
// them must be compared there too, and its count here raised.
func TestEqualNamesEveryField(t *testing.T) {
	for typ, fields := range map[reflect.Type]int{
		reflect.TypeFor[State]():          12,
		reflect.TypeFor[txnMeta]():        20,
		reflect.TypeFor[partState]():      5,
		reflect.TypeFor[producerEntry]():  4,
		reflect.TypeFor[group]():          19,
		reflect.TypeFor[member]():         14,
		reflect.TypeFor[Options]():        19, // compared whole (==)
		reflect.TypeFor[consumerGroup]():  7,
		reflect.TypeFor[consumerMember](): 19,
	} {
		if typ.NumField() != fields {
			t.Errorf("%s has %d fields, Equal compares %d (equal.go)", typ, typ.NumField(), fields)
		}
	}
}

// Two logs that branch from one (two orders of a window's appends) share
// what came before and keep what each appended, across chunk ends.
func TestVecBranches(t *testing.T) {
	var trunk vec[int]
	for i := range chunkSize - 3 {
		trunk = trunk.Append(i)
	}
	left, right := trunk, trunk
	for i := range chunkSize + 5 {
		left, right = left.Append(1000+i), right.Append(2000+i)
	}
	again := trunk.Append(1000) // written in place by left before: a copy now
	for name, c := range map[string]struct {
		v     vec[int]
		first int
	}{"left": {left, 1000}, "right": {right, 2000}, "again": {again, 1000}} {
		for i := range c.v.Len() {
			want := i
			if i >= trunk.Len() {
				want = c.first + i - trunk.Len()
			}
			if got := c.v.At(i); got != want {
				t.Fatalf("%s[%d] = %d, want %d", name, i, got, want)
			}
		}
	}
	if trunk.Len() != chunkSize-3 || left.equal(right, same) || !left.equal(rebuiltVec(left), same) {
		t.Fatal("branches must keep apart and equal their copies")
	}
	if fmt.Sprint(trunk.Append(7).At(chunkSize-3)) != "7" {
		t.Fatal("a third branch must get its own item")
	}
}

// Two inits that fence producers with transactions open in one partition,
// in either order, leave logs that no request tells apart; with a record
// between the two markers, the ranges they abort are not the same.
func TestEqualMarkersInEitherOrder(t *testing.T) {
	s := Init(Options{TxnVersion: 1})
	do := func(s State, kind Kind, set func(*Request)) State {
		r := NewRequest()
		set(&r)
		s, res := Apply(s, Op{Kind: kind, Req: r})
		if !res.Succeeded() {
			t.Fatalf("%s: %s", kind, res.Err)
		}
		return s
	}
	pids := map[string]int64{}
	for _, id := range []string{"a", "b", "c"} {
		s = do(s, InitProducerID, func(r *Request) { r.TransactionalID = id })
		pids[id] = s.txns[id].pid
		s = do(s, AddPartitions, func(r *Request) {
			r.TransactionalID, r.ProducerID, r.Epoch, r.Partitions = id, pids[id], 0, []Partition{"p-0"}
		})
		s = do(s, Produce, func(r *Request) {
			r.TransactionalID, r.ProducerID, r.Epoch, r.Partition, r.Records = id, pids[id], 0, "p-0", []Record{{Key: id}}
		})
	}
	fence := func(s State, id string) State {
		return do(s, InitProducerID, func(r *Request) { r.TransactionalID = id })
	}
	ab, ba := fence(fence(s, "a"), "b"), fence(fence(s, "b"), "a")
	if !Equal(ab, ba) || reflect.DeepEqual(ab, ba) {
		t.Fatal("markers in either order: the same broker, in two logs")
	}
	commitC := func(s State) State {
		s = do(s, EndTxn, func(r *Request) { r.TransactionalID, r.ProducerID, r.Epoch, r.Commit = "c", pids["c"], 0, true })
		return do(s, Produce, func(r *Request) { r.ProducerID, r.Epoch, r.Partition, r.Records = 99, 0, "p-0", []Record{{Key: "x"}} })
	}
	if Equal(fence(commitC(fence(s, "a")), "b"), fence(commitC(fence(s, "b")), "a")) {
		t.Fatal("with records between the markers, each range aborts other offsets")
	}
}
