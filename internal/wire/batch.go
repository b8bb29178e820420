package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"

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
	Abort   bool
	Records []kmsg.Record
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
		Records:       records,
	}
	if b.Control {
		if b.Abort, err = controlIsAbort(records); err != nil {
			return Batch{}, fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
		}
	}
	return b, nil
}

func decodeRecords(raw []byte, n int32) ([]kmsg.Record, error) {
	if n < 0 {
		return nil, fmt.Errorf("%d records", n)
	}
	// A record takes 7 bytes at least, so raw bounds what a false count
	// can make us allocate.
	out := make([]kmsg.Record, 0, min(int(n), len(raw)/7))
	for i := int32(0); i < n; i++ {
		length, width := binary.Varint(raw)
		if width <= 0 || length < 0 || int64(len(raw)-width) < length {
			return nil, fmt.Errorf("record %d of %d is cut short", i, n)
		}
		end := width + int(length)
		out = append(out, kmsg.Record{}) // read in place: a record is too large to copy cheaply
		if err := out[len(out)-1].ReadFrom(raw[:end]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		raw = raw[end:]
	}
	return out, nil
}

// controlIsAbort reads a control record's key: version int16, type int16
// (0 ABORT, 1 COMMIT; other types end no transaction).
func controlIsAbort(records []kmsg.Record) (bool, error) {
	if len(records) != 1 || len(records[0].Key) < 4 {
		return false, errors.New("a control batch without a control record")
	}
	return binary.BigEndian.Uint16(records[0].Key[2:4]) == 0, nil
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
	texts := b.texts()
	for _, rec := range b.Records {
		key, value := texts.next(rec)
		offset := b.FirstOffset + int64(rec.OffsetDelta)
		if offset < from {
			continue // a batch starts where it starts, not at the fetch offset
		}
		out = append(out, model.FetchedRecord{Offset: offset, Key: key, Value: value, ProducerID: b.ProducerID})
	}
	return out
}

// ProducedRecords is the batch's records as a produce's.
func (b Batch) ProducedRecords() []model.Record {
	if len(b.Records) == 0 {
		return nil
	}
	texts := b.texts()
	out := make([]model.Record, len(b.Records))
	for i, rec := range b.Records {
		out[i].Key, out[i].Value = texts.next(rec)
	}
	return out
}

// batchTexts hands out a batch's keys and values, in record order, from
// one string. A batch then costs one allocation for its text rather than
// two a record. A record's strings keep its batch's text alive, which the
// history holds for as long anyway.
type batchTexts struct {
	all string
	at  int
}

func (b Batch) texts() *batchTexts {
	n := 0
	for _, rec := range b.Records {
		n += len(rec.Key) + len(rec.Value)
	}
	var all strings.Builder
	all.Grow(n)
	for _, rec := range b.Records {
		all.Write(rec.Key)
		all.Write(rec.Value)
	}
	return &batchTexts{all: all.String()}
}

// next is the key and value of rec, the record after the last one asked.
func (t *batchTexts) next(rec kmsg.Record) (key, value string) {
	key = t.all[t.at : t.at+len(rec.Key)]
	t.at += len(rec.Key)
	value = t.all[t.at : t.at+len(rec.Value)]
	t.at += len(rec.Value)
	return key, value
}
