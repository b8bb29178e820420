package histories

import (
	"bytes"
	"testing"
)

// BenchmarkLoad reads a document of 20,000 operations, every type among
// them: testdata/every-type.json's operations, again and again, later
// each time.
//
//	go test -run '^$' -bench BenchmarkLoad -benchmem -count 6 ./histories/
func BenchmarkLoad(b *testing.B) {
	one, err := LoadFile("testdata/every-type.json")
	if err != nil {
		b.Fatal(err)
	}
	h := one
	h.Ops = nil
	var shift int64
	for len(h.Ops) < 20_000 {
		last := int64(0)
		for _, op := range one.Ops {
			op.ID = len(h.Ops)
			op.Call += shift
			op.Return += shift
			last = max(last, op.Call, op.Return)
			h.Ops = append(h.Ops, op)
		}
		shift = last + 1
	}
	var doc bytes.Buffer
	if err := Save(&doc, h); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(doc.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := Load(bytes.NewReader(doc.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// soakOps are operations of the soak's shape (scripts/longhistory), as
// fencecheck writes them.
var soakOps = []string{
	`{"id": 1, "proc": "soak", "call": 1, "return": 2, "type": "produce", "req": {"transactional_id": "soak-0", "producer_id": 1, "epoch": 0, "partition": "trips-0", "sequence": 0, "records": [{"key": "trip-1", "value": "fare"}]}, "resp": {"base_offset": 0}}`,
	`{"id": 2, "proc": "soak", "call": 2, "return": 3, "type": "end_txn", "req": {"transactional_id": "soak-0", "producer_id": 1, "epoch": 0, "commit": true}, "resp": {"producer_id": 1, "epoch": 1}}`,
}

// BenchmarkDecodeSoakOp decodes the two operations the soak repeats, a
// produce and an end_txn, as the second pass of a Stream does.
//
//	go test -run '^$' -bench BenchmarkDecodeSoakOp -benchmem -count 6 ./histories/
func BenchmarkDecodeSoakOp(b *testing.B) {
	raws := [][]byte{[]byte(soakOps[0]), []byte(soakOps[1])}
	for i := range b.N {
		if _, err := decodeOp(i, raws[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}
