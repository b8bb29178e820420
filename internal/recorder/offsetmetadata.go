package recorder

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// A commit's answer carries a code per partition. Kafka refuses a
// partition alone for its metadata (OFFSET_METADATA_TOO_LARGE) and takes
// the others, so the recorder writes each partition's code when they
// differ (resp.partition_errors), and the one code otherwise.

// partitionCode is one partition of a commit's answer.
type partitionCode struct {
	topic     string
	topicID   [16]byte
	partition int32
	code      int16
}

// commitMetadata is the metadata a commit sent for p, kept when it is
// not empty: Kafka keeps a null one as "".
func commitMetadata(into *map[model.Partition]string, p model.Partition, metadata *string) {
	if metadata == nil || *metadata == "" {
		return
	}
	if *into == nil {
		*into = map[model.Partition]string{}
	}
	(*into)[p] = *metadata
}

// commitAnswer reads a commit's answer of type R, whose partitions parts
// lists: misrouted when any code says so; else the one code when every
// partition of the history got it; else a success with each refused
// partition's code. byID says whether the answer names topics by id.
func commitAnswer[R kmsg.Response](c *Client, kind model.Kind, byID func(R) bool, parts func(R) []partitionCode) func(kmsg.Response) (model.Result, fate) {
	return func(resp kmsg.Response) (model.Result, fate) {
		r, ok := resp.(R)
		if !ok {
			return c.undecided(kind, "the answer is a %T", resp), ended
		}
		ps := parts(r)
		codes := make([]int16, 0, len(ps))
		for _, p := range ps {
			if wire.Misrouted(p.code) {
				return model.Result{}, notTaken
			}
			codes = append(codes, p.code)
		}
		if errs, differ := c.partitionErrors(kind, ps, byID(r)); differ {
			res := model.OK(model.NewResponse())
			res.Resp.PartitionErrors = errs
			return res, ended
		}
		return c.result(kind, wire.FirstError(codes), model.NewResponse()), ended
	}
}

// partitionErrors are the refused partitions of the history among ps,
// with their codes; differ is false when every such partition got one
// code, or when a code is one the format cannot hold alone (undecided,
// or unnamed), which the one code then speaks for.
func (c *Client) partitionErrors(kind model.Kind, ps []partitionCode, byID bool) (map[model.Partition]model.Code, bool) {
	var errs map[model.Partition]model.Code
	first, seen, differ := int16(0), false, false
	for _, p := range ps {
		name, ok := c.topic(p.topic, p.topicID, byID)
		mp, ok2 := c.partition(name, p.partition)
		if !ok || !ok2 {
			continue
		}
		if seen && p.code != first {
			differ = true
		}
		first, seen = p.code, true
		if p.code == 0 {
			continue
		}
		res, err := wire.Result(kind, p.code, model.NewResponse())
		if err != nil || res.Undecided() {
			return nil, false
		}
		if errs == nil {
			errs = map[model.Partition]model.Code{}
		}
		errs[mp] = res.Err
	}
	return errs, differ
}

func txnOffsetCommitParts(r *kmsg.TxnOffsetCommitResponse) []partitionCode {
	var out []partitionCode
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, partitionCode{t.Topic, t.TopicID, p.Partition, p.ErrorCode})
		}
	}
	return out
}

func offsetCommitParts(r *kmsg.OffsetCommitResponse) []partitionCode {
	var out []partitionCode
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, partitionCode{t.Topic, t.TopicID, p.Partition, p.ErrorCode})
		}
	}
	return out
}
