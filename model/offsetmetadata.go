package model

import (
	"maps"
	"slices"
)

// Offset metadata. A commit, plain or transactional, sends a metadata
// string with each partition's offset. The group coordinator keeps it
// with the offset, and an OffsetFetch answers it back. A metadata string
// longer than offset.metadata.max.bytes is refused for its partition
// alone, with OFFSET_METADATA_TOO_LARGE: the commit's other partitions
// are written. A commit whose every partition is refused writes nothing.
//
// Kafka: 3.9 GroupMetadataManager.storeOffsets filters the offsets by
// validateOffsetMetadataLength, answers the refused ones
// OFFSET_METADATA_TOO_LARGE, and appends nothing when none is left
// (OffsetMetadataManager.commitOffset and commitTransactionalOffset,
// isMetadataInvalid, 4.x). Both validate the whole request first
// (validateOffsetCommit), so the member's checks come before the
// metadata's. The length is Java's String.length(): UTF-16 code units.
// Tests: core GroupMetadataManagerTest#testCommitOffsetPartialFailure,
// #testOffsetMetadataTooLargePartialFailure,
// #testTransactionalCommitOffsetWithOffsetMetadataTooLargePartialFailure,
// GroupCoordinatorTest#testTxnOffsetMetadataTooLarge (3.9.0).

// OffsetMetadataMaxConfig is the broker config that bounds a commit's
// metadata.
const OffsetMetadataMaxConfig = "offset.metadata.max.bytes"

// DefaultOffsetMetadataMaxBytes is Kafka's default for
// offset.metadata.max.bytes (GroupCoordinatorConfig
// OFFSET_METADATA_MAX_SIZE_DEFAULT), which the model's own answers take
// when the history does not name it.
const DefaultOffsetMetadataMaxBytes = 4096

// MetadataLength is the length Kafka holds a metadata string to: Java's
// String.length(), which counts UTF-16 code units.
func MetadataLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++ // a surrogate pair
		}
	}
	return n
}

// metadataTooLarge reports whether p's metadata in r is above limit.
func metadataTooLarge(r Request, p Partition, limit int) bool {
	return MetadataLength(r.OffsetMetadata[p]) > limit
}

// CommittedOffsets are the offsets a commit's answer took: none for a
// refusal, every partition for a success, and for a success with
// per-partition errors the partitions not refused.
func CommittedOffsets(offsets map[Partition]int64, res Result) map[Partition]int64 {
	if !res.Succeeded() {
		return nil
	}
	if len(res.Resp.PartitionErrors) == 0 {
		return offsets
	}
	taken := maps.Clone(offsets)
	for p := range res.Resp.PartitionErrors {
		delete(taken, p)
	}
	return taken
}

// MetadataRefusalJudged reports whether got, a whole commit refused
// OFFSET_METADATA_TOO_LARGE, is judged by the state: where the history
// names offset.metadata.max.bytes, it is right only when every
// partition's metadata is above it. Where it does not, the cluster may
// be set to any limit (Kafka takes any INT, a negative one too), so the
// refusal is taken anywhere, as a refusal with no effect.
func MetadataRefusalJudged(limitKnown bool, op Op, got Result) bool {
	return limitKnown && got.Answered && got.Err == OffsetMetadataTooLarge &&
		(op.Kind == OffsetCommit || op.Kind == TxnOffsetCommit)
}

// perPartition answers a commit whose partitions may be refused one by
// one for their metadata. commit is the request's own handler: it
// validates the whole request, then writes the partitions it is given.
func (st *step) perPartition(r Request, commit func(Request) outcome) outcome {
	refused := st.refusedForMetadata(r)
	if len(refused) == 0 {
		out := commit(r)
		if out.refuse == "" && out.bad == nil {
			if wrong := st.judgePartitionErrors(r); wrong != nil {
				return *wrong
			}
		}
		return out
	}
	taken := r
	taken.Offsets = maps.Clone(r.Offsets)
	for p := range refused {
		delete(taken.Offsets, p)
	}
	out := commit(taken)
	if out.refuse != "" || out.bad != nil {
		return out
	}
	if wrong := st.judgePartitionErrors(r); wrong != nil {
		return *wrong
	}
	if len(taken.Offsets) == 0 {
		// Every partition refused: nothing is written, but the checks
		// before the write had their effects (a member's session
		// renewed, 3.9 doCommitOffsets; a transactions v2 implicit add).
		out := refuse("offset-metadata-too-large", OffsetMetadataTooLarge,
			"every partition's metadata is above %s %d (GroupMetadataManager.storeOffsets, OffsetMetadataManager.commitOffset)",
			OffsetMetadataMaxConfig, st.metadataLimit())
		out.effects = true
		return out
	}
	out.resp.PartitionErrors = refused
	return out
}

// metadataLimit is offset.metadata.max.bytes, Kafka's default when the
// history does not name it.
func (st *step) metadataLimit() int {
	if st.s.opts.OffsetMetadataMaxKnown {
		return st.s.opts.OffsetMetadataMaxBytes
	}
	return DefaultOffsetMetadataMaxBytes
}

// refusedForMetadata are the partitions of r refused for their metadata,
// each with its code: those the broker's answer refused, when it took
// the others; otherwise those above the limit, where it is known or the
// model answers itself. A judged broker on a limit not known may have
// any, so its plain success refuses none.
func (st *step) refusedForMetadata(r Request) map[Partition]Code {
	if st.got != nil && st.got.Succeeded() && st.got.Resp.PartitionErrors != nil {
		return st.got.Resp.PartitionErrors
	}
	if st.got != nil && !st.undecided() && !st.s.opts.OffsetMetadataMaxKnown {
		return nil
	}
	limit := st.metadataLimit()
	var refused map[Partition]Code
	for _, p := range slices.Sorted(maps.Keys(r.Offsets)) {
		if metadataTooLarge(r, p, limit) {
			if refused == nil {
				refused = map[Partition]Code{}
			}
			refused[p] = OffsetMetadataTooLarge
		}
	}
	return refused
}

// judgePartitionErrors holds a judged broker's per-partition answer to
// the rules; nil when it keeps them. A partition refused for its
// metadata must be above the limit, and one taken within it. With the
// limit not known, every refused metadata must be longer than every
// taken one. Another partition's code must be one Kafka gives a
// partition alone (an unknown topic, an unauthorized one): the member's
// checks answer the whole commit.
func (st *step) judgePartitionErrors(r Request) *outcome {
	if st.got == nil || !st.got.Succeeded() {
		return nil
	}
	errs := st.got.Resp.PartitionErrors
	known, limit := st.s.opts.OffsetMetadataMaxKnown, st.s.opts.OffsetMetadataMaxBytes
	longestTaken, shortestRefused := -1, -1
	var takenAt, refusedAt Partition
	for _, p := range slices.Sorted(maps.Keys(r.Offsets)) {
		n := MetadataLength(r.OffsetMetadata[p])
		switch code := errs[p]; {
		case code == "":
			if known && n > limit {
				out := bad("offset-metadata-too-large", "%s was committed with metadata of length %d, above %s %d, which Kafka refuses OFFSET_METADATA_TOO_LARGE (GroupMetadataManager.storeOffsets, OffsetMetadataManager.commitOffset)", p, n, OffsetMetadataMaxConfig, limit)
				return &out
			}
			if n > longestTaken {
				longestTaken, takenAt = n, p
			}
		case code == OffsetMetadataTooLarge:
			if known && n <= limit {
				out := bad("offset-metadata-too-large", "%s was refused OFFSET_METADATA_TOO_LARGE, but its metadata of length %d is within %s %d", p, n, OffsetMetadataMaxConfig, limit)
				return &out
			}
			if shortestRefused < 0 || n < shortestRefused {
				shortestRefused, refusedAt = n, p
			}
		case ClassOf(st.op.Kind, code) != NoEffect:
			out := bad("partition-errors", "%s was answered %s while the commit's other partitions were not: Kafka validates the member for the whole commit (validateOffsetCommit)", p, code)
			return &out
		}
	}
	if shortestRefused >= 0 && shortestRefused <= longestTaken {
		out := bad("offset-metadata-too-large", "%s was refused OFFSET_METADATA_TOO_LARGE with metadata of length %d, while %s was taken with metadata of length %d: no one limit does both", refusedAt, shortestRefused, takenAt, longestTaken)
		return &out
	}
	return nil
}

// withMetadata is g with the metadata of offsets committed at p, taken
// from the request's: "" is none, which is not kept.
func (g group) withMetadata(offsets map[Partition]int64, metadata map[Partition]string) group {
	changed := false
	for p := range offsets {
		if metadata[p] != g.metadata[p] {
			changed = true
		}
	}
	if !changed {
		return g
	}
	g.metadata = maps.Clone(g.metadata)
	if g.metadata == nil {
		g.metadata = map[Partition]string{}
	}
	for p := range offsets {
		if m := metadata[p]; m != "" {
			g.metadata[p] = m
		} else {
			delete(g.metadata, p)
		}
	}
	return g
}

// checkFetchedMetadata holds an OffsetFetch answer's metadata, where it
// says one, to the metadata committed with the offset (3.9
// GroupMetadataManager.getOffsets, 4.x OffsetMetadataManager.fetchOffsets
// answer the committed OffsetAndMetadata's metadata).
func checkFetchedMetadata(got *Response, r Request, committed string) *outcome {
	if got == nil || !got.MetadataSaid || got.Metadata == committed {
		return nil
	}
	out := bad("committed-metadata", "metadata %q, but the metadata committed with %s's offset for %s is %q", got.Metadata, r.Group, r.Partition, committed)
	return &out
}
