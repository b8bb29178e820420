package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

func TestBatchRoundTrip(t *testing.T) {
	raw := producerBatch{producerID: 4001, epoch: 2, firstSequence: 7, transactional: true,
		records: []model.Record{{Key: "trip-1", Value: "a"}, {Key: "trip-2"}}, timestampMs: 1}.encode()
	// Place the batch at offset 40, as a broker does.
	binary.BigEndian.PutUint64(raw[:8], 40)
	batches, err := decodeBatches(raw)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	b := batches[0]
	require.Equal(t, int64(40), b.firstOffset)
	require.Equal(t, int64(41), b.lastOffset)
	require.Equal(t, int64(4001), b.producerID)
	require.True(t, b.transactional)
	require.False(t, b.control)
	got := committedView(batches, nil, true, 41)
	require.Equal(t, []model.FetchedRecord{{Offset: 41, Key: "trip-2", ProducerID: 4001}}, got)
}

func TestTruncatedLastBatchIsDropped(t *testing.T) {
	one := producerBatch{producerID: 1, records: []model.Record{{Key: "k"}}}.encode()
	raw := append(append([]byte(nil), one...), one[:len(one)-3]...)
	batches, err := decodeBatches(raw)
	require.NoError(t, err)
	require.Len(t, batches, 1)
}

func TestCorruptBatchIsAnError(t *testing.T) {
	raw := producerBatch{producerID: 1, records: []model.Record{{Key: "k"}}}.encode()
	raw[len(raw)-1] ^= 0xff
	_, err := decodeBatches(raw)
	require.ErrorContains(t, err, "CRC")
}

// The broker's aborted-transaction list decides what read_committed drops:
// a producer's records from its listed first offset up to its ABORT marker.
func TestCommittedViewHonoursAbortedList(t *testing.T) {
	batches := []fetchedBatch{
		record(0, 7, "aborted"),
		marker(1, 7, true),
		record(2, 7, "committed"),
		marker(3, 7, false),
		record(4, 9, "plain"),
	}
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 0}}
	require.Equal(t, []string{"committed", "plain"}, keysOf(committedView(batches, aborted, true, 0)))
	require.Equal(t, []string{"aborted", "committed", "plain"}, keysOf(committedView(batches, aborted, false, 0)))
}

func record(offset, pid int64, key string) fetchedBatch {
	return fetchedBatch{firstOffset: offset, lastOffset: offset, producerID: pid, transactional: pid == 7,
		records: []kmsg.Record{{Key: []byte(key)}}}
}

func marker(offset, pid int64, abort bool) fetchedBatch {
	return fetchedBatch{firstOffset: offset, lastOffset: offset, producerID: pid, transactional: true, control: true, abort: abort}
}

// Whatever a broker sends, reading it never panics.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(producerBatch{producerID: 1, epoch: 0, records: []model.Record{{Key: "k", Value: "v"}}}.encode())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		batches, err := decodeBatches(raw)
		if err == nil {
			committedView(batches, nil, true, 0)
		}
	})
}
