package model

// DeleteRecords (KIP-107): an admin deletes a partition's records below
// an offset, so the partition's log start offset moves up to it.
//
// Partition.deleteRecordsOnLeader (3.9.0 and trunk) takes offset -1 as
// the high watermark (DeleteRecordsRequest.HIGH_WATERMARK), and
// UnifiedLog.maybeIncrementLogStartOffset refuses an offset above the
// high watermark with OFFSET_OUT_OF_RANGE. A lower offset than the log
// start offset changes nothing. The answer's low watermark is the lowest
// log start offset of the partition's live replicas, and
// DelayedDeleteRecords answers once it reached the offset asked for. So
// it lies between that offset and the leader's new log start offset.
//
// Moving the log start offset keeps the producer state
// (ProducerStateManager.onLogStartOffsetIncremented drops only
// unreplicated transactions), so a producer whose batches were all
// deleted still continues its sequence, and its retry is still a
// duplicate (UnifiedLogTest#testProducerIdExpirationOnSegmentDeletion:
// "Producer state should not be removed when deleting log segment").
// The last stable offset never lies below the log start offset
// (UnifiedLog.maybeIncrementFirstUnstableOffset; UnifiedLogTest#
// testLastStableOffsetDoesNotExceedLogStartOffsetMidSegment), so a
// transaction still open gives way to it (partState.lastStable). A fetch
// below the log start offset is OFFSET_OUT_OF_RANGE (UnifiedLog.read,
// checkLogStartOffset). The log start offset is checkpointed on a clean
// shutdown (LogManager.shutdown), and the model's restarts are clean, so
// a restart keeps it.

// HighWatermarkOffset is the offset of a DeleteRecords that deletes up to
// the high watermark (Kafka's DeleteRecordsRequest.HIGH_WATERMARK).
const HighWatermarkOffset int64 = -1

func (st *step) deleteRecords(r Request) outcome {
	ps := st.s.parts[r.Partition]
	to := r.Offset
	if to == HighWatermarkOffset {
		to = ps.end()
	}
	switch {
	case to < 0:
		return refuse("delete-records-offset", OffsetOutOfRange, "DeleteRecords of %s before offset %d, which is not an offset (Partition.deleteRecordsOnLeader)", r.Partition, r.Offset)
	case to > ps.end():
		return refuse("delete-records-offset", OffsetOutOfRange, "DeleteRecords of %s before offset %d, above its high watermark %d (UnifiedLog.maybeIncrementLogStartOffset)", r.Partition, to, ps.end())
	}
	ps.start = max(ps.start, to)
	st.s.setPart(r.Partition, ps)
	resp := NewResponse()
	resp.LowWatermark = ps.start
	got := st.observed()
	if got == nil {
		return ok(resp)
	}
	if got.LowWatermark != NoOffset && (got.LowWatermark < to || got.LowWatermark > ps.start) {
		return bad("low-watermark", "DeleteRecords of %s before offset %d answered low watermark %d, but it is at least %d and at most the log start offset %d (DelayedDeleteRecords)", r.Partition, to, got.LowWatermark, to, ps.start)
	}
	return ok(*got)
}
