package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// Record batch v2 (magic 2) layout: the CRC covers everything from the
// attributes on; Length counts everything after itself.
const (
	batchMagic        = 2
	batchHeaderLen    = 12 // FirstOffset and Length
	batchCRCStart     = 17
	batchCRCEnd       = 21
	attrCompression   = 0x07
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decompressor reads every codec Kafka has (gzip, snappy, lz4, zstd): a
// client library picks its own, and what it wrote is read whatever it is.
var decompressor = kgo.DefaultDecompressor()

// ProducerBatch is what a produce request writes.
type ProducerBatch struct {
	ProducerID    int64
	Epoch         int16
	FirstSequence int32
	Transactional bool
	Records       []model.Record
	TimestampMs   int64
}

// Encode builds the batch the way a producer does: offsets relative to 0,
// uncompressed, the CRC over the bytes after it.
func (b ProducerBatch) Encode() []byte {
	var records []byte
	for i, r := range b.Records {
		records = appendRecord(records, int32(i), r)
	}
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                batchMagic,
		LastOffsetDelta:      int32(len(b.Records) - 1),
		FirstTimestamp:       b.TimestampMs,
		MaxTimestamp:         b.TimestampMs,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.Epoch,
		FirstSequence:        b.FirstSequence,
		NumRecords:           int32(len(b.Records)),
		Records:              records,
	}
	if b.Transactional {
		batch.Attributes |= attrTransactional
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:batchHeaderLen], uint32(len(raw)-batchHeaderLen))
	binary.BigEndian.PutUint32(raw[batchCRCStart:batchCRCEnd], crc32.Checksum(raw[batchCRCEnd:], castagnoli))
	return raw
}

// appendRecord appends one record; its length prefix counts what follows
// it, so the record is encoded once to learn it.
func appendRecord(dst []byte, offsetDelta int32, r model.Record) []byte {
	rec := kmsg.Record{OffsetDelta: offsetDelta, Key: []byte(r.Key), Value: []byte(r.Value)}
	if r.Value == "" {
		rec.Value = nil
	}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1) // a zero length is one varint byte
	return rec.AppendTo(dst)
}

// Batch is one batch of a fetch response, or of a produce request read
// off the wire, its records decoded.
type Batch struct {
	FirstOffset, LastOffset int64
	ProducerID              int64
	Epoch                   int16
	FirstSequence           int32
	Transactional, Control  bool
	// Abort: for a control batch, whether it is an ABORT marker.
	Abort bool
	// body is the records as they came (decompressed), and records
	// where each one's key and value lie in it.
	body    []byte
	records []record
}

// record is one record of a batch: its offset delta, and where its key
// and value lie in the batch's body. It holds no pointers, so that a
// batch of thousands costs the garbage collector nothing to scan.
type record struct {
	offsetDelta       int32
	keyAt, keyEnd     int
	valueAt, valueEnd int
}

// DecodeBatches reads the batches of a fetch response or a produce
// request. A broker may cut the last batch short (fetch size limits): a
// partial batch at the end is dropped, as clients do. Anything else that
// does not parse is an error.
func DecodeBatches(raw []byte) ([]Batch, error) {
	var out []Batch
	for len(raw) >= batchHeaderLen {
		length := int64(int32(binary.BigEndian.Uint32(raw[8:batchHeaderLen])))
		if length < 0 {
			return nil, fmt.Errorf("batch length %d", length)
		}
		if int64(len(raw)) < batchHeaderLen+length {
			break // a partial batch at the end
		}
		b, err := decodeBatch(raw[:batchHeaderLen+length])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		raw = raw[batchHeaderLen+length:]
	}
	return out, nil
}

func decodeBatch(raw []byte) (Batch, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return Batch{}, fmt.Errorf("batch: %w", err)
	}
	if rb.Magic != batchMagic {
		return Batch{}, fmt.Errorf("batch at %d has magic %d, not %d", rb.FirstOffset, rb.Magic, batchMagic)
	}
	if len(raw) < batchCRCEnd || uint32(rb.CRC) != crc32.Checksum(raw[batchCRCEnd:], castagnoli) {
		return Batch{}, fmt.Errorf("batch at %d fails its CRC", rb.FirstOffset)
	}
	body := rb.Records
	if codec := byte(rb.Attributes & attrCompression); codec != 0 {
		var err error
		if body, err = decompressor.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
			return Batch{}, fmt.Errorf("batch at %d (compression codec %d): %w", rb.FirstOffset, codec, err)
		}
	}
	records, err := decodeRecords(body, rb.NumRecords)
	if err != nil {
		return Batch{}, fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
	}
	b := Batch{
		FirstOffset:   rb.FirstOffset,
		LastOffset:    rb.FirstOffset + int64(rb.LastOffsetDelta),
		ProducerID:    rb.ProducerID,
		Epoch:         rb.ProducerEpoch,
		FirstSequence: rb.FirstSequence,
		Transactional: rb.Attributes&attrTransactional != 0,
		Control:       rb.Attributes&attrControl != 0,
		body:          body,
		records:       records,
	}
	if b.Control {
		if b.Abort, err = b.controlIsAbort(); err != nil {
			return Batch{}, fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
		}
	}
	return b, nil
}

// decodeRecords finds the n records of raw, a batch's body. It reads the
// record format itself rather than through kmsg.Record, because that
// struct, one a record, was most of what reading a large produce cost.
func decodeRecords(raw []byte, n int32) ([]record, error) {
	if n < 0 {
		return nil, fmt.Errorf("%d records", n)
	}
	// A record takes 7 bytes at least, so raw bounds what a false count
	// can make us allocate.
	out := make([]record, 0, min(int(n), len(raw)/7))
	at := 0
	for i := int32(0); i < n; i++ {
		length, width := binary.Varint(raw[at:])
		if width <= 0 || length < 0 || int64(len(raw)-at-width) < length {
			return nil, fmt.Errorf("record %d of %d is cut short", i, n)
		}
		start, end := at+width, at+width+int(length)
		rec, ok := readRecord(raw[:end], start)
		if !ok {
			return nil, fmt.Errorf("record %d does not read as a record", i)
		}
		out = append(out, rec)
		at = end
	}
	return out, nil
}

// readRecord reads the record of raw that starts at at, after its
// length: attributes, timestamp delta, offset delta, key, value, headers
// (Kafka's DefaultRecord). A null key or value reads as empty.
func readRecord(raw []byte, at int) (record, bool) {
	r := recordReader{raw: raw, at: at + 1} // attributes: unused
	r.varint()                              // timestamp delta
	rec := record{offsetDelta: int32(r.varint())}
	rec.keyAt, rec.keyEnd = r.bytes()
	rec.valueAt, rec.valueEnd = r.bytes()
	for headers := r.varint(); headers > 0 && !r.bad; headers-- {
		r.bytes()
		r.bytes()
	}
	return rec, !r.bad && r.at <= len(raw)
}

// recordReader reads a record's varints and byte strings; past the end,
// it is bad.
type recordReader struct {
	raw []byte
	at  int
	bad bool
}

func (r *recordReader) varint() int64 {
	if r.bad || r.at > len(r.raw) {
		r.bad = true
		return 0
	}
	v, width := binary.Varint(r.raw[r.at:])
	if width <= 0 {
		r.bad = true
		return 0
	}
	r.at += width
	return v
}

// bytes is where a length-prefixed byte string lies; a negative length
// is null, which is empty.
func (r *recordReader) bytes() (from, to int) {
	n := r.varint()
	if r.bad || n < 0 {
		return r.at, r.at
	}
	if n > int64(len(r.raw)-r.at) {
		r.bad = true
		return r.at, r.at
	}
	from = r.at
	r.at += int(n)
	return from, r.at
}

// controlIsAbort reads a control record's key: version int16, type int16
// (0 ABORT, 1 COMMIT; other types end no transaction).
func (b Batch) controlIsAbort() (bool, error) {
	if len(b.records) != 1 || b.records[0].keyEnd-b.records[0].keyAt < 4 {
		return false, errors.New("a control batch without a control record")
	}
	key := b.body[b.records[0].keyAt:b.records[0].keyEnd]
	return binary.BigEndian.Uint16(key[2:4]) == 0, nil
}

// CommittedView is the records of batches from offset from on, as a Kafka
// consumer reads them: control batches skipped and, for read_committed,
// the batches of every transaction the broker lists as aborted dropped
// (Kafka's consumer algorithm: a producer's aborted transaction starts at
// its listed first offset and ends at its ABORT marker).
func CommittedView(batches []Batch, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction, readCommitted bool, from int64) []model.FetchedRecord {
	pending := append([]kmsg.FetchResponseTopicPartitionAbortedTransaction(nil), aborted...)
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].FirstOffset < pending[j].FirstOffset })
	aborting := map[int64]bool{}
	var out []model.FetchedRecord
	for _, b := range batches {
		for len(pending) > 0 && pending[0].FirstOffset <= b.LastOffset {
			aborting[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		if b.Control {
			if b.Abort {
				delete(aborting, b.ProducerID)
			}
			continue
		}
		if readCommitted && b.Transactional && aborting[b.ProducerID] {
			continue
		}
		out = appendRecords(out, b, from)
	}
	return out
}

func appendRecords(out []model.FetchedRecord, b Batch, from int64) []model.FetchedRecord {
	text := b.text()
	for _, rec := range b.records {
		offset := b.FirstOffset + int64(rec.offsetDelta)
		if offset < from {
			continue // a batch starts where it starts, not at the fetch offset
		}
		out = append(out, model.FetchedRecord{Offset: offset, Key: text[rec.keyAt:rec.keyEnd],
			Value: text[rec.valueAt:rec.valueEnd], ProducerID: b.ProducerID})
	}
	return out
}

// ProducedRecords is the batch's records as a produce's.
func (b Batch) ProducedRecords() []model.Record {
	if len(b.records) == 0 {
		return nil
	}
	text := b.text()
	out := make([]model.Record, len(b.records))
	for i, rec := range b.records {
		out[i] = model.Record{Key: text[rec.keyAt:rec.keyEnd], Value: text[rec.valueAt:rec.valueEnd]}
	}
	return out
}

// text is the batch's body as one string, which its records' keys and
// values share. A batch then costs one allocation for its text rather
// than two a record. The strings keep the body alive, which the history
// holds for as long anyway.
func (b Batch) text() string { return string(b.body) }
