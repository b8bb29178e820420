package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

func TestBatchRoundTrip(t *testing.T) {
	raw := ProducerBatch{ProducerID: 4001, Epoch: 2, FirstSequence: 7, Transactional: true,
		Records: []model.Record{{Key: "trip-1", Value: "a"}, {Key: "trip-2"}}, TimestampMs: 1}.Encode()
	// Place the batch at offset 40, as a broker does.
	binary.BigEndian.PutUint64(raw[:8], 40)
	batches, err := DecodeBatches(raw)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	b := batches[0]
	require.Equal(t, int64(40), b.FirstOffset)
	require.Equal(t, int64(41), b.LastOffset)
	require.Equal(t, int64(4001), b.ProducerID)
	require.Equal(t, int16(2), b.Epoch)
	require.Equal(t, int32(7), b.FirstSequence)
	require.True(t, b.Transactional)
	require.False(t, b.Control)
	got := CommittedView(batches, nil, true, 41)
	require.Equal(t, []model.FetchedRecord{{Offset: 41, Key: "trip-2", ProducerID: 4001}}, got)
}

// A client library compresses its batches with the codec it likes; each
// of Kafka's reads back as the records it carries.
func TestCompressedBatchesAreRead(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	want := []model.Record{{Key: "trip-1", Value: "fare 12"}, {Key: "trip-2", Value: "fare 30"}}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			raw := compressed(t, ProducerBatch{ProducerID: 9, Records: want}.Encode(), codec)
			batches, err := DecodeBatches(raw)
			require.NoError(t, err)
			require.Len(t, batches, 1)
			require.Equal(t, want, batches[0].ProducedRecords())
		})
	}
}

// A produce's batch read in two steps (its header as the request goes
// on, its records after) reads as DecodeBatches reads it, compressed or
// not; the request's bytes can be reused in between.
func TestProducedReadsAsDecodeBatches(t *testing.T) {
	var want []model.Record
	for i := range 100 {
		want = append(want, model.Record{Key: fmt.Sprintf("trip-%d", i), Value: strings.Repeat("x", i%3)})
	}
	plain := ProducerBatch{ProducerID: 9, Epoch: 3, FirstSequence: 5, Transactional: true, Records: want}.Encode()
	for name, raw := range map[string][]byte{"plain": plain, "snappy": compressed(t, plain, kgo.SnappyCompression())} {
		t.Run(name, func(t *testing.T) {
			batches, err := DecodeBatches(raw)
			require.NoError(t, err)
			raw = append([]byte(nil), raw...)
			p, err := ReadProduced(raw)
			require.NoError(t, err)
			clear(raw)
			require.Equal(t, Produced{ProducerID: 9, Epoch: 3, FirstSequence: 5, Transactional: true, NumRecords: 100},
				Produced{ProducerID: p.ProducerID, Epoch: p.Epoch, FirstSequence: p.FirstSequence,
					Transactional: p.Transactional, NumRecords: p.NumRecords})
			got := make([]model.Record, p.NumRecords)
			require.NoError(t, p.ReadRecords(got))
			require.Equal(t, batches[0].ProducedRecords(), got)
			require.Equal(t, want, got)
		})
	}
}

// A produce's partition that is not one whole batch, or whose records do
// not read as the header counts them, is an error, not a panic.
func TestProducedRefusesWhatIsNotOneBatch(t *testing.T) {
	one := ProducerBatch{ProducerID: 9, Records: []model.Record{{Key: "trip-1"}, {Key: "trip-2"}}}.Encode()
	for name, raw := range map[string][]byte{
		"two batches":              append(append([]byte(nil), one...), one...),
		"none":                     nil,
		"cut short":                one[:len(one)-1],
		"bad crc":                  append(append([]byte(nil), one[:len(one)-1]...), one[len(one)-1]+1),
		"a million":                withCount(one, 1<<20+1),
		"more than its bytes hold": withCount(one, int32(len(one))),
	} {
		_, err := ReadProduced(raw)
		require.Error(t, err, name)
	}
	// A partial batch after the whole one is dropped, as DecodeBatches
	// drops it.
	p, err := ReadProduced(append(append([]byte(nil), one...), one[:20]...))
	require.NoError(t, err)
	require.NoError(t, p.ReadRecords(make([]model.Record, 2)))
	require.Error(t, p.ReadRecords(make([]model.Record, 1)), "room for fewer records than the batch has")

	p, err = ReadProduced(withCount(one, 3))
	require.NoError(t, err, "three records could fit in its bytes")
	require.Error(t, p.ReadRecords(make([]model.Record, 3)), "the body holds two")
}

// withCount is raw, a batch, claiming n records, its CRC made right.
func withCount(raw []byte, n int32) []byte {
	out := append([]byte(nil), raw...)
	binary.BigEndian.PutUint32(out[batchNumRecords:], uint32(n))
	binary.BigEndian.PutUint32(out[batchCRCStart:batchCRCEnd], crc32.Checksum(out[batchCRCEnd:], castagnoli))
	return out
}

// varint reads as binary.Varint reads, in one byte or more, and fails
// where it fails.
func TestVarintAsBinaryReadsIt(t *testing.T) {
	inputs := [][]byte{nil, {0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}}
	for b := range 256 {
		inputs = append(inputs, []byte{byte(b)}, []byte{byte(b), 0x01})
	}
	for _, v := range []int64{0, -1, 1, 63, -64, 64, -65, 1 << 40, -(1 << 40), math.MaxInt64, math.MinInt64} {
		inputs = append(inputs, binary.AppendVarint(nil, v))
	}
	for _, in := range inputs {
		v, n := varint(in)
		wantV, wantN := binary.Varint(in)
		require.Equal(t, wantV, v, "% x", in)
		require.Equal(t, wantN, n, "% x", in)
	}
}

// compressed is an uncompressed batch with its records compressed by
// codec, as a producer writes it.
func compressed(t *testing.T, raw []byte, codec kgo.CompressionCodec) []byte {
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(raw))
	c, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	body, kind := c.Compress(new(bytes.Buffer), rb.Records)
	rb.Records = append([]byte(nil), body...)
	rb.Attributes |= int16(kind)
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:batchHeaderLen], uint32(len(out)-batchHeaderLen))
	binary.BigEndian.PutUint32(out[batchCRCStart:batchCRCEnd], crc32.Checksum(out[batchCRCEnd:], castagnoli))
	return out
}

func TestTruncatedLastBatchIsDropped(t *testing.T) {
	one := ProducerBatch{ProducerID: 1, Records: []model.Record{{Key: "k"}}}.Encode()
	raw := append(append([]byte(nil), one...), one[:len(one)-3]...)
	batches, err := DecodeBatches(raw)
	require.NoError(t, err)
	require.Len(t, batches, 1)
}

func TestCorruptBatchIsAnError(t *testing.T) {
	raw := ProducerBatch{ProducerID: 1, Records: []model.Record{{Key: "k"}}}.Encode()
	raw[len(raw)-1] ^= 0xff
	_, err := DecodeBatches(raw)
	require.ErrorContains(t, err, "CRC")
}

// The broker's aborted-transaction list decides what read_committed drops:
// a producer's records from its listed first offset up to its ABORT marker.
func TestCommittedViewHonoursAbortedList(t *testing.T) {
	batches := []Batch{
		oneRecord(0, 7, "aborted"),
		marker(1, 7, true),
		oneRecord(2, 7, "committed"),
		marker(3, 7, false),
		oneRecord(4, 9, "plain"),
	}
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 0}}
	require.Equal(t, []string{"committed", "plain"}, keysOf(CommittedView(batches, aborted, true, 0)))
	require.Equal(t, []string{"aborted", "committed", "plain"}, keysOf(CommittedView(batches, aborted, false, 0)))
}

func oneRecord(offset, pid int64, key string) Batch {
	return Batch{FirstOffset: offset, LastOffset: offset, ProducerID: pid, Transactional: pid == 7,
		body: []byte(key), records: []record{{keyEnd: len(key), valueAt: len(key), valueEnd: len(key)}}}
}

func marker(offset, pid int64, abort bool) Batch {
	return Batch{FirstOffset: offset, LastOffset: offset, ProducerID: pid, Transactional: true, Control: true, Abort: abort}
}

func keysOf(records []model.FetchedRecord) []string {
	var keys []string
	for _, r := range records {
		keys = append(keys, r.Key)
	}
	return keys
}

// Whatever a broker sends, reading it never panics.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(ProducerBatch{ProducerID: 1, Epoch: 0, Records: []model.Record{{Key: "k", Value: "v"}}}.Encode())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		batches, err := DecodeBatches(raw)
		if err == nil {
			CommittedView(batches, nil, true, 0)
		}
	})
}

// The records read as kmsg reads them: keys, values (null ones empty),
// offset deltas, past headers.
func TestRecordsReadAsKmsgReadsThem(t *testing.T) {
	var body []byte
	var want []kmsg.Record
	for i, r := range []kmsg.Record{
		{Key: []byte("trip-1"), Value: []byte("fare 12")},
		{Key: nil, Value: []byte("no key")},
		{Key: []byte("trip-3"), Value: nil, Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}, {Key: "k"}}},
		{Key: []byte(""), Value: []byte(""), TimestampDelta64: 1 << 40},
	} {
		r.OffsetDelta = int32(i * 3)
		one := r.AppendTo(nil)
		r.Length = int32(len(one) - 1)
		one = r.AppendTo(nil)
		body = append(body, one...)
		var back kmsg.Record
		require.NoError(t, back.ReadFrom(one))
		want = append(want, back)
	}
	records, err := decodeRecords(body, int32(len(want)))
	require.NoError(t, err)
	require.Len(t, records, len(want))
	for i, r := range records {
		require.Equal(t, want[i].OffsetDelta, r.offsetDelta)
		require.Equal(t, string(want[i].Key), string(body[r.keyAt:r.keyEnd]))
		require.Equal(t, string(want[i].Value), string(body[r.valueAt:r.valueEnd]))
	}
	for cut := 1; cut < len(body); cut++ {
		_, err := decodeRecords(body[:cut], int32(len(want)))
		require.Error(t, err, "cut at %d", cut)
	}
}

// BenchmarkDecodeProduced: reading a produce's batch of 500 records as
// the history's records, as the recorder does: its header before the
// produce goes on, its records beside it.
func BenchmarkDecodeProduced(b *testing.B) {
	var records []model.Record
	for range 500 {
		records = append(records, model.Record{Key: "trip"})
	}
	raw := ProducerBatch{ProducerID: 7, Records: records}.Encode()
	for b.Loop() {
		p, err := ReadProduced(raw)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.ReadRecords(make([]model.Record, p.NumRecords)); err != nil {
			b.Fatal(err)
		}
	}
}
