package histories

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// Offset metadata and per-partition commit answers
// (docs/history-format.md, "Offset metadata").

var (
	// qOffsetMetadata is a commit's {partition: metadata}.
	qOffsetMetadata = field[request]{"offset_metadata", func(r *request) codec {
		return partitionTexts[string]{p: &r.OffsetMetadata}
	}}
	// pPartitionErrors is a commit's {partition: CODE}: the partitions
	// refused while the others were taken.
	pPartitionErrors = field[response]{"partition_errors", func(r *response) codec {
		return partitionTexts[model.Code]{p: &r.PartitionErrors, valid: validCode}
	}}
	// pMetadata is offset_fetch's metadata of the committed offset; ""
	// is said, absent is not.
	pMetadata = field[response]{"metadata", func(r *response) codec {
		return saidText{&r.Metadata, &r.MetadataSaid}
	}}
)

// partitionTexts is a {partition: string} object. An empty object loads
// as nil, so that a loaded history compares equal to the one it was
// saved from.
type partitionTexts[T ~string] struct {
	p     *map[model.Partition]T
	valid func(T) error
}

func (o partitionTexts[T]) decode(path string, raw json.RawMessage) error {
	m, err := asObject(path, raw)
	if err != nil {
		return err
	}
	var out map[model.Partition]T
	for _, k := range sortedKeys(m) {
		if err := validPartition(model.Partition(k)); err != nil {
			return bad(path, "key %v", err)
		}
		var v T
		if err := (text[T]{&v, o.valid}).decode(path+"."+k, m[k]); err != nil {
			return err
		}
		if out == nil {
			out = map[model.Partition]T{}
		}
		out[model.Partition(k)] = v
	}
	*o.p = out
	return nil
}

func (o partitionTexts[T]) absent() bool { return len(*o.p) == 0 }

func (o partitionTexts[T]) encode() any {
	out := object{}
	for _, k := range sortedKeys(*o.p) {
		out = append(out, member{string(k), string((*o.p)[k])})
	}
	return out
}

// saidText is a string whose presence is kept apart from its value: ""
// is said, absent is not.
type saidText struct {
	p    *string
	said *bool
}

func (t saidText) decode(path string, raw json.RawMessage) error {
	if err := (text[string]{p: t.p}).decode(path, raw); err != nil {
		return err
	}
	*t.said = true
	return nil
}

func (t saidText) absent() bool { return !*t.said }
func (t saidText) encode() any  { return *t.p }

// checkOffsetMetadata holds a commit's offset_metadata to its offsets:
// metadata goes with an offset.
func checkOffsetMetadata(op *Op) error {
	if len(op.Req.OffsetMetadata) == 0 {
		return nil // most operations: no list of keys to make
	}
	for _, p := range slices.Sorted(maps.Keys(op.Req.OffsetMetadata)) {
		if _, ok := op.Req.Offsets[p]; !ok {
			return fmt.Errorf("req.offset_metadata names %s, which req.offsets does not commit", p)
		}
	}
	return nil
}

// checkPartitionErrors holds a commit's partition_errors to its request:
// each names a partition the commit sent, with a code Kafka answers the
// request with. Codes that are one for every partition are the
// operation's "error", not partition_errors.
func checkPartitionErrors(op *Op, resp model.Response) error {
	errs := resp.PartitionErrors
	if len(errs) == 0 {
		return nil
	}
	same := true
	for _, p := range slices.Sorted(maps.Keys(errs)) {
		if _, ok := op.Req.Offsets[p]; !ok {
			return fmt.Errorf("resp.partition_errors names %s, which req.offsets does not commit", p)
		}
		if code := errs[p]; !model.Answers(op.Kind, code) {
			return fmt.Errorf("resp.partition_errors.%s: Kafka does not answer %s with %s", p, withArticle(op.Kind.APIName()), code)
		}
		same = same && errs[p] == errs[slices.Min(slices.Collect(maps.Keys(errs)))]
	}
	if same && len(errs) == len(op.Req.Offsets) {
		return fmt.Errorf(`resp.partition_errors gives every partition %s: write it as the operation's "error"`, errs[slices.Min(slices.Collect(maps.Keys(errs)))])
	}
	return nil
}
