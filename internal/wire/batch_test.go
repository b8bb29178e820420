package wire

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
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
			var got []model.Record
			for _, r := range batches[0].Records {
				got = append(got, model.Record{Key: string(r.Key), Value: string(r.Value)})
			}
			require.Equal(t, want, got)
		})
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
		record(0, 7, "aborted"),
		marker(1, 7, true),
		record(2, 7, "committed"),
		marker(3, 7, false),
		record(4, 9, "plain"),
	}
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 0}}
	require.Equal(t, []string{"committed", "plain"}, keysOf(CommittedView(batches, aborted, true, 0)))
	require.Equal(t, []string{"aborted", "committed", "plain"}, keysOf(CommittedView(batches, aborted, false, 0)))
}

func record(offset, pid int64, key string) Batch {
	return Batch{FirstOffset: offset, LastOffset: offset, ProducerID: pid, Transactional: pid == 7,
		Records: []kmsg.Record{{Key: []byte(key)}}}
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
