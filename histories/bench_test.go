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
