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
	batchNumRecords   = 57
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
	rb, err := readBatchHeader(raw)
	if err != nil {
		return Batch{}, err
	}
	body, records, err := readBody(rb.Records, byte(rb.Attributes&attrCompression), rb.NumRecords, rb.FirstOffset)
	if err != nil {
		return Batch{}, err
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

// readBatchHeader reads a batch's header, and checks its magic and CRC.
// Its Records are the body as it came, compressed or not.
func readBatchHeader(raw []byte) (kmsg.RecordBatch, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return rb, fmt.Errorf("batch: %w", err)
	}
	if rb.Magic != batchMagic {
		return rb, fmt.Errorf("batch at %d has magic %d, not %d", rb.FirstOffset, rb.Magic, batchMagic)
	}
	if len(raw) < batchCRCEnd || uint32(rb.CRC) != crc32.Checksum(raw[batchCRCEnd:], castagnoli) {
		return rb, fmt.Errorf("batch at %d fails its CRC", rb.FirstOffset)
	}
	return rb, nil
}

// readBody decompresses a batch's body, compressed with codec, and finds
// its n records. firstOffset names the batch in an error.
func readBody(body []byte, codec byte, n int32, firstOffset int64) ([]byte, []record, error) {
	if codec != 0 {
		var err error
		if body, err = decompressor.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
			return nil, nil, fmt.Errorf("batch at %d (compression codec %d): %w", firstOffset, codec, err)
		}
	}
	records, err := decodeRecords(body, n)
	if err != nil {
		return nil, nil, fmt.Errorf("batch at %d: %w", firstOffset, err)
	}
	return body, records, nil
}

// Produced is the one batch of a produce request's partition: its header
// is read and its CRC checked, but its records are not read yet. So a
// produce can go on to the broker first, and its records be read beside
// it (ReadRecords).
type Produced struct {
	ProducerID    int64
	Epoch         int16
	FirstSequence int32
	Transactional bool
	// NumRecords is how many records the header says the batch holds.
	NumRecords int32

	codec       byte
	firstOffset int64
	body        []byte // as it came (compressed or not), a copy of the request's
}

// maxProducedRecords bounds the records a produce's batch may claim,
// because that many are made room for before they are read. A batch of
// a million records is beyond the request size of any client's defaults.
const maxProducedRecords = 1 << 20

// ReadProduced reads the batches of a produce request's partition, which
// must be one whole batch (a partial batch after it is dropped, as
// DecodeBatches drops one). It copies the batch's body, so that raw can
// be reused once it returns.
func ReadProduced(raw []byte) (Produced, error) {
	whole := 0
	for rest := raw; len(rest) >= batchHeaderLen; whole++ {
		length := int64(int32(binary.BigEndian.Uint32(rest[8:batchHeaderLen])))
		if length < 0 {
			return Produced{}, fmt.Errorf("batch length %d", length)
		}
		if int64(len(rest)) < batchHeaderLen+length {
			break // a partial batch at the end
		}
		if whole == 0 {
			raw = rest[:batchHeaderLen+length]
		}
		rest = rest[batchHeaderLen+length:]
	}
	if whole != 1 {
		return Produced{}, fmt.Errorf("a produce of %d batches to one partition, not one", whole)
	}
	rb, err := readBatchHeader(raw)
	if err != nil {
		return Produced{}, err
	}
	codec := byte(rb.Attributes & attrCompression)
	// An uncompressed record takes 7 bytes at least.
	if rb.NumRecords < 0 || rb.NumRecords > maxProducedRecords || codec == 0 && int(rb.NumRecords) > len(rb.Records)/7 {
		return Produced{}, fmt.Errorf("batch at %d claims %d records in %d bytes", rb.FirstOffset, rb.NumRecords, len(rb.Records))
	}
	return Produced{
		ProducerID:    rb.ProducerID,
		Epoch:         rb.ProducerEpoch,
		FirstSequence: rb.FirstSequence,
		Transactional: rb.Attributes&attrTransactional != 0,
		NumRecords:    rb.NumRecords,
		codec:         codec,
		firstOffset:   rb.FirstOffset,
		body:          append([]byte(nil), rb.Records...),
	}, nil
}

// ReadRecords reads the batch's records into into, which holds
// NumRecords of them. A batch whose body does not read as that many
// records is an error.
func (p Produced) ReadRecords(into []model.Record) error {
	if len(into) != int(p.NumRecords) {
		return fmt.Errorf("room for %d records, not the %d of the batch", len(into), p.NumRecords)
	}
	body, records, err := readBody(p.body, p.codec, p.NumRecords, p.firstOffset)
	if err != nil {
		return err
	}
	Batch{body: body, records: records}.producedRecords(into)
	return nil
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
		length, width := varint(raw[at:])
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
	v, width := varint(r.raw[r.at:])
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

// varint is binary.Varint, with a path of its own for a value of one
// byte. Most of a small record's fields are that (its attributes,
// deltas, lengths, and header count), and a record is read six varints
// at a time.
func varint(b []byte) (int64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return int64(b[0]>>1) ^ -int64(b[0]&1), 1
	}
	return binary.Varint(b)
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
	out := make([]model.Record, len(b.records))
	b.producedRecords(out)
	return out
}

// producedRecords writes the batch's records into out, which holds them
// all.
func (b Batch) producedRecords(out []model.Record) {
	text := b.text()
	for i, rec := range b.records {
		out[i] = model.Record{Key: text[rec.keyAt:rec.keyEnd], Value: text[rec.valueAt:rec.valueEnd]}
	}
}

// text is the batch's body as one string, which its records' keys and
// values share. A batch then costs one allocation for its text rather
// than two a record. The strings keep the body alive, which the history
// holds for as long anyway.
func (b Batch) text() string { return string(b.body) }
