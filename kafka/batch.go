package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

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

// producerBatch is what a produce request writes.
type producerBatch struct {
	producerID    int64
	epoch         int16
	firstSequence int32
	transactional bool
	records       []model.Record
	timestampMs   int64
}

// encode builds the batch the way a producer does: offsets relative to 0,
// uncompressed, the CRC over the bytes after it.
func (b producerBatch) encode() []byte {
	var records []byte
	for i, r := range b.records {
		records = appendRecord(records, int32(i), r)
	}
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                batchMagic,
		LastOffsetDelta:      int32(len(b.records) - 1),
		FirstTimestamp:       b.timestampMs,
		MaxTimestamp:         b.timestampMs,
		ProducerID:           b.producerID,
		ProducerEpoch:        b.epoch,
		FirstSequence:        b.firstSequence,
		NumRecords:           int32(len(b.records)),
		Records:              records,
	}
	if b.transactional {
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

// fetchedBatch is one batch of a fetch response, or of a produce request
// read off the wire (wiretap.go), its records decoded.
type fetchedBatch struct {
	firstOffset, lastOffset int64
	producerID              int64
	epoch                   int16
	firstSequence           int32
	transactional, control  bool
	// abort: for a control batch, whether it is an ABORT marker.
	abort   bool
	records []kmsg.Record
}

// decodeBatches reads the batches of a fetch response. A broker may cut
// the last batch short (fetch size limits): a partial batch at the end is
// dropped, as clients do. Anything else that does not parse is an error.
func decodeBatches(raw []byte) ([]fetchedBatch, error) {
	var out []fetchedBatch
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

func decodeBatch(raw []byte) (fetchedBatch, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return fetchedBatch{}, fmt.Errorf("batch: %w", err)
	}
	if rb.Magic != batchMagic {
		return fetchedBatch{}, fmt.Errorf("batch at %d has magic %d, not %d", rb.FirstOffset, rb.Magic, batchMagic)
	}
	if len(raw) < batchCRCEnd || uint32(rb.CRC) != crc32.Checksum(raw[batchCRCEnd:], castagnoli) {
		return fetchedBatch{}, fmt.Errorf("batch at %d fails its CRC", rb.FirstOffset)
	}
	if rb.Attributes&attrCompression != 0 {
		return fetchedBatch{}, fmt.Errorf("batch at %d is compressed (codec %d); fencecheck writes uncompressed batches and reads only those", rb.FirstOffset, rb.Attributes&attrCompression)
	}
	records, err := decodeRecords(rb.Records, rb.NumRecords)
	if err != nil {
		return fetchedBatch{}, fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
	}
	b := fetchedBatch{
		firstOffset:   rb.FirstOffset,
		lastOffset:    rb.FirstOffset + int64(rb.LastOffsetDelta),
		producerID:    rb.ProducerID,
		epoch:         rb.ProducerEpoch,
		firstSequence: rb.FirstSequence,
		transactional: rb.Attributes&attrTransactional != 0,
		control:       rb.Attributes&attrControl != 0,
		records:       records,
	}
	if b.control {
		if b.abort, err = controlIsAbort(records); err != nil {
			return fetchedBatch{}, fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
		}
	}
	return b, nil
}

func decodeRecords(raw []byte, n int32) ([]kmsg.Record, error) {
	if n < 0 {
		return nil, fmt.Errorf("%d records", n)
	}
	var out []kmsg.Record
	for i := int32(0); i < n; i++ {
		length, width := binary.Varint(raw)
		if width <= 0 || length < 0 || int64(len(raw)-width) < length {
			return nil, fmt.Errorf("record %d of %d is cut short", i, n)
		}
		end := width + int(length)
		var r kmsg.Record
		if err := r.ReadFrom(raw[:end]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		out = append(out, r)
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
