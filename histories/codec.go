package histories

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unique"

	"github.com/fencecheck/fencecheck/model"
)

// The document is read as raw JSON values and each field is decoded by a
// codec bound to the Go field it fills. Reading raw values (not a struct
// through encoding/json) keeps field names case-sensitive, lets every error
// name the field, and makes 1.5 or "7" for an integer an error instead of a
// silent conversion. The same codecs write the fields back, so Save and Load
// cannot drift apart.
type codec interface {
	// decode fills the field from raw, a non-null JSON value; path names
	// the field in errors.
	decode(path string, raw json.RawMessage) error
	// absent reports whether the field holds the value that stands for
	// "not in the document" (a sentinel, "", false, an empty list).
	absent() bool
	// encode is the field's JSON value: an object, a []any or a scalar.
	encode() any
}

// bad is an error about the field at path ("" for the value itself).
func bad(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %s", path, msg)
}

// join is the path of a member of the value at path.
func join(path, name string) string {
	switch path {
	case "":
		return name
	case quietPath:
		return quietPath
	}
	return path + "." + name
}

// describe names a raw JSON value for an error message.
func describe(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	switch raw[0] {
	case '"':
		return "the string " + s
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return s
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// asObject is raw as a JSON object's members.
func asObject(path string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, bad(path, "must be an object, got %s", describe(raw))
	}
	if m, ok := splitObject(raw); ok {
		return m, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, bad(path, "must be an object, got %s", describe(raw))
	}
	return m, nil
}

// asMembers is raw as a JSON object's members, appended to into (so that
// a caller may lend room on its stack). They are slices of raw.
func asMembers(path string, raw json.RawMessage, into rawObject) (rawObject, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, bad(path, "must be an object, got %s", describe(raw))
	}
	if o, ok := splitMembers(raw, into[:0]); ok {
		return o, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, bad(path, "must be an object, got %s", describe(raw))
	}
	o := into[:0]
	for _, name := range sortedKeys(m) {
		o = append(o, rawMember{name, m[name]})
	}
	return o, nil
}

// asArray is raw as a JSON array's elements.
func asArray(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, bad(path, "must be an array, got %s", describe(raw))
	}
	if a, ok := splitArray(raw); ok {
		return a, nil
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil, bad(path, "must be an array, got %s", describe(raw))
	}
	return a, nil
}

// has reports whether m has the member name; null counts as absent, as the
// format says of "return".
func has(m rawObject, name string) bool {
	raw, ok := m.get(name)
	return ok && !isNull(raw)
}

// presence says whether a field must be in the document.
type presence int

const (
	optional presence = iota // may be left out; then it holds its absent value
	required                 // must be there, with a value other than the absent one
	always                   // must be there; any value, the zero one too
)

// take decodes the member name of m into c. It is generic so that a
// codec given as a value is not boxed (an allocation) for each field.
func take[C codec](m rawObject, path, name string, need presence, c C) error {
	raw, ok := m.get(name)
	if !ok || isNull(raw) {
		if need == optional {
			return nil
		}
		return bad("", "%s is required", join(path, name))
	}
	path = join(path, name)
	if err := c.decode(path, raw); err != nil {
		return err
	}
	if need == required && c.absent() {
		return bad("", "%s is required, got %s, which means absent", path, raw)
	}
	return nil
}

// span is the values a number field may hold. When hasNone, none is the
// model's sentinel for "absent": writing it means the same as leaving the
// field out, and it is accepted even outside lo..hi.
type span struct {
	lo, hi  int64
	none    int64
	hasNone bool
}

var (
	anyInt      = span{lo: math.MinInt64, hi: math.MaxInt64}
	opIDs       = span{lo: math.MinInt, hi: math.MaxInt}
	nonNegative = span{lo: 0, hi: math.MaxInt64}
	sequences   = span{lo: math.MinInt32, hi: math.MaxInt32}
	versions    = span{lo: 1, hi: 2}
	// partitionCounts are a topic's partition counts: Kafka's
	// CreateTopics and CreatePartitions take 1 to 2^31-1.
	partitionCounts = span{lo: 1, hi: math.MaxInt32}
	epochs          = span{lo: 0, hi: math.MaxInt16, none: int64(model.NoEpoch), hasNone: true}
	producerIDs     = span{lo: 0, hi: math.MaxInt64, none: model.NoProducerID, hasNone: true}
	offsets         = span{lo: 0, hi: math.MaxInt64, none: model.NoOffset, hasNone: true}
	generations     = span{lo: 0, hi: math.MaxInt32, none: int64(model.NoGeneration), hasNone: true}
	durations       = span{lo: 0, hi: math.MaxInt64, none: 0, hasNone: true}
	// deleteOffsets are delete_records' offsets: -1 is the high watermark
	// (Kafka's DeleteRecordsRequest.HIGH_WATERMARK), not absent.
	deleteOffsets = span{lo: model.HighWatermarkOffset, hi: math.MaxInt64}
)

type integer interface {
	~int | ~int16 | ~int32 | ~int64
}

// number is an integer field limited to a span.
type number[T integer] struct {
	p *T
	s span
}

func (n number[T]) decode(path string, raw json.RawMessage) error {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return bad(path, "must be an integer, got %s", describe(raw))
	}
	v, err := parseInt(raw)
	if errors.Is(err, strconv.ErrRange) {
		return bad(path, "%s is out of range", describe(raw))
	}
	if err != nil {
		return bad(path, "must be an integer, got %s", describe(raw))
	}
	if !(n.s.hasNone && v == n.s.none) && (v < n.s.lo || v > n.s.hi) {
		return bad(path, "%d is out of range %s", v, n.s)
	}
	*n.p = T(v)
	return nil
}

// parseInt is strconv.ParseInt(raw, 10, 64), without making a string of
// raw when it is at most 18 digits (which cannot overflow).
func parseInt(raw []byte) (int64, error) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return strconv.ParseInt(string(raw), 10, 64)
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return strconv.ParseInt(string(raw), 10, 64)
		}
		v = v*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		v = -v
	}
	return v, nil
}

func (s span) String() string {
	r := fmt.Sprintf("%d..%d", s.lo, s.hi)
	if s.hasNone && (s.none < s.lo || s.none > s.hi) {
		r += fmt.Sprintf(" (or %d: absent)", s.none)
	}
	return r
}

func (n number[T]) absent() bool { return n.s.hasNone && int64(*n.p) == n.s.none }
func (n number[T]) encode() any  { return int64(*n.p) }

// text is a string field; valid, when set, says which strings it may hold.
type text[T ~string] struct {
	p     *T
	valid func(T) error
}

func (t text[T]) decode(path string, raw json.RawMessage) error {
	if raw[0] != '"' {
		return bad(path, "must be a string, got %s", describe(raw))
	}
	s, plain := plainString(raw)
	if !plain {
		var escaped string // apart from s, so that s stays off the heap
		if json.Unmarshal(raw, &escaped) != nil {
			return bad(path, "must be a string, got %s", describe(raw))
		}
		s = escaped
	}
	if t.valid != nil {
		if err := t.valid(T(s)); err != nil {
			return bad(path, "%v", err)
		}
	}
	// One copy of each string: a long history repeats its processes,
	// ids, partitions and types on every operation, and its fetches
	// repeat the keys its produces wrote.
	*t.p = T(unique.Make(s).Value())
	return nil
}

func (t text[T]) absent() bool { return *t.p == "" }
func (t text[T]) encode() any  { return string(*t.p) }

// textOrEmpty is a string where the empty string is not absent but an
// empty id, which Kafka refuses: the transactional_id of
// init_producer_id, add_partitions and end_txn, a group request's group,
// and a join_group's protocol_type. So a history can hold the refusal.
type textOrEmpty struct {
	p     *string
	empty *bool
}

func (t textOrEmpty) decode(path string, raw json.RawMessage) error {
	if err := (text[string]{p: t.p}).decode(path, raw); err != nil {
		return err
	}
	*t.empty = *t.p == ""
	return nil
}

func (t textOrEmpty) absent() bool { return *t.p == "" && !*t.empty }
func (t textOrEmpty) encode() any  { return *t.p }

// flag is a boolean field; false is its absent value.
type flag struct{ p *bool }

func (f flag) decode(path string, raw json.RawMessage) error {
	if b := string(raw); b == "true" || b == "false" {
		*f.p = b == "true"
		return nil
	}
	if err := json.Unmarshal(raw, f.p); err != nil || (raw[0] != 't' && raw[0] != 'f') {
		return bad(path, "must be true or false, got %s", describe(raw))
	}
	return nil
}

func (f flag) absent() bool { return !*f.p }
func (f flag) encode() any  { return *f.p }

// texts is a list of strings. An empty list loads as nil so that a loaded
// history compares equal to the one it was saved from.
type texts[T ~string] struct {
	p     *[]T
	valid func(T) error
}

func (t texts[T]) decode(path string, raw json.RawMessage) error {
	out, err := decodeList(path, raw, func(path string, raw json.RawMessage, v *T) error {
		return text[T]{v, t.valid}.decode(path, raw)
	})
	*t.p = out
	return err
}

func (t texts[T]) absent() bool { return len(*t.p) == 0 }

func (t texts[T]) encode() any {
	return encodeList(*t.p, func(v *T) any { return string(*v) })
}

// packedTexts is a list of strings kept in one block of bytes, not
// interned one by one. A history lists its trips in one field, and a long
// one lists millions. Each interned string is an object of its own, so
// the collector would mark millions of objects at each of its cycles
// through a long check.
type packedTexts struct{ p *[]string }

func (t packedTexts) decode(path string, raw json.RawMessage) error {
	elems, err := asArray(path, raw)
	if err != nil {
		return err
	}
	var block []byte
	ends := make([]int, 0, len(elems))
	for i, e := range elems {
		at := quietPath
		if path != quietPath {
			at = fmt.Sprintf("%s[%d]", path, i)
		}
		if len(e) == 0 || e[0] != '"' {
			return bad(at, "must be a string, got %s", describe(e))
		}
		s, plain := plainString(e)
		if !plain {
			var escaped string
			if json.Unmarshal(e, &escaped) != nil {
				return bad(at, "must be a string, got %s", describe(e))
			}
			s = escaped
		}
		block = append(block, s...)
		ends = append(ends, len(block))
	}
	if len(ends) == 0 {
		*t.p = nil
		return nil
	}
	all, start := string(block), 0
	out := make([]string, len(ends))
	for i, end := range ends {
		out[i], start = all[start:end], end
	}
	*t.p = out
	return nil
}

func (t packedTexts) absent() bool { return len(*t.p) == 0 }

func (t packedTexts) encode() any { return texts[string]{p: t.p}.encode() }

// list is a list of objects, each read with its own slots.
type list[E any] struct {
	p     *[]E
	fresh func() E // an element with every field at its absent value
	slots []slot[E]
}

func (l list[E]) decode(path string, raw json.RawMessage) error {
	out, err := decodeList(path, raw, func(path string, raw json.RawMessage, v *E) error {
		*v = l.fresh()
		return decodeStruct(path, raw, v, l.slots)
	})
	*l.p = out
	return err
}

func (l list[E]) absent() bool { return len(*l.p) == 0 }

// encode writes the list straight into the document. A produce's or a
// fetch's records are most of a recorded history, so building each as an
// object first was most of the cost of writing one.
func (l list[E]) encode() any {
	switch records := any(*l.p).(type) {
	case []model.Record:
		return writes(func(b *bytes.Buffer) { writeRecords(b, records) })
	case []model.FetchedRecord:
		return writes(func(b *bytes.Buffer) { writeFetched(b, records) })
	}
	return l.encodeBySlots()
}

// encodeBySlots writes the list as its slots say.
func (l list[E]) encodeBySlots() writes {
	return writes(func(b *bytes.Buffer) {
		b.WriteByte('[')
		for i := range *l.p {
			if i > 0 {
				b.WriteString(", ")
			}
			writeStruct(b, &(*l.p)[i], l.slots)
		}
		b.WriteByte(']')
	})
}

// decodeList decodes each element of the array raw with dec.
func decodeList[E any](path string, raw json.RawMessage, dec func(string, json.RawMessage, *E) error) ([]E, error) {
	elems, err := asArray(path, raw)
	if err != nil {
		return nil, err
	}
	var out []E
	for i, e := range elems {
		var v E
		at := quietPath
		if path != quietPath {
			at = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := dec(at, e, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// encodeList is a list's JSON value; an empty list is [], not null.
func encodeList[E any](s []E, enc func(*E) any) []any {
	out := []any{}
	for i := range s {
		out = append(out, enc(&s[i]))
	}
	return out
}

// partitionOffsets is txn_offset_commit's {partition: next offset}.
type partitionOffsets struct{ p *map[model.Partition]int64 }

func (o partitionOffsets) decode(path string, raw json.RawMessage) error {
	m, err := asObject(path, raw)
	if err != nil {
		return err
	}
	var out map[model.Partition]int64
	for _, k := range sortedKeys(m) {
		if err := validPartition(model.Partition(k)); err != nil {
			return bad(path, "key %v", err)
		}
		var v int64
		if err := (number[int64]{&v, nonNegative}).decode(path+"."+k, m[k]); err != nil {
			return err
		}
		if out == nil {
			out = map[model.Partition]int64{}
		}
		out[model.Partition(k)] = v
	}
	*o.p = out
	return nil
}

func (o partitionOffsets) absent() bool { return len(*o.p) == 0 }

func (o partitionOffsets) encode() any {
	out := object{}
	for _, k := range sortedKeys(*o.p) {
		out = append(out, member{string(k), (*o.p)[k]})
	}
	return out
}

// topicCounts is the document's "topics": {topic: partition count}. An
// empty object says no more than an absent one.
type topicCounts struct{ p *map[string]int32 }

func (t topicCounts) decode(path string, raw json.RawMessage) error {
	m, err := asObject(path, raw)
	if err != nil {
		return err
	}
	var out map[string]int32
	for _, k := range sortedKeys(m) {
		if err := validTopic(k); err != nil {
			return bad(path, "key %v", err)
		}
		var v int32
		if err := (number[int32]{&v, partitionCounts}).decode(path+"."+k, m[k]); err != nil {
			return err
		}
		if out == nil {
			out = map[string]int32{}
		}
		out[k] = v
	}
	*t.p = out
	return nil
}

func (t topicCounts) absent() bool { return len(*t.p) == 0 }

func (t topicCounts) encode() any {
	out := object{}
	for _, k := range sortedKeys(*t.p) {
		out = append(out, member{k, (*t.p)[k]})
	}
	return out
}

// memberAssignments is sync_group's {member id: [partitions]}, the
// leader's assignment. Absent and {} are the same: no member is given
// anything.
type memberAssignments struct{ p *map[string][]model.Partition }

func (a memberAssignments) decode(path string, raw json.RawMessage) error {
	m, err := asObject(path, raw)
	if err != nil {
		return err
	}
	var out map[string][]model.Partition
	for _, id := range sortedKeys(m) {
		if id == "" {
			return bad(path, "a member id must not be empty")
		}
		var share []model.Partition
		if err := (texts[model.Partition]{&share, validPartition}).decode(path+"."+id, m[id]); err != nil {
			return err
		}
		if out == nil {
			out = map[string][]model.Partition{}
		}
		out[id] = share
	}
	*a.p = out
	return nil
}

func (a memberAssignments) absent() bool { return len(*a.p) == 0 }

func (a memberAssignments) encode() any {
	out := object{}
	for _, id := range sortedKeys(*a.p) {
		share := (*a.p)[id]
		out = append(out, member{id, texts[model.Partition]{p: &share}.encode()})
	}
	return out
}

// sortedKeys are m's keys in order, so that errors and files do not depend
// on map iteration.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// validTopic holds a topic name to Kafka's rules (Topic.validate): 1 to
// 249 characters of ASCII letters, digits, '.', '_' and '-', and not "."
// or "..".
func validTopic(t string) error {
	if len(t) > 249 || t == "." || t == ".." {
		return fmt.Errorf("%q is not a topic name (Kafka's are 1 to 249 characters, not \".\" or \"..\")", t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q is not a topic name: Kafka's hold only ASCII letters, digits, '.', '_' and '-'", t)
		}
	}
	return nil
}

func validPartition(p model.Partition) error {
	if _, ok := p.Topic(); !ok {
		return fmt.Errorf("%q is not a partition written \"topic-N\"", string(p))
	}
	return nil
}

// writeRecords writes produced records as recordSlots does, without
// binding a codec to each field, because a recording writes millions.
func writeRecords(b *bytes.Buffer, records []model.Record) {
	b.WriteByte('[')
	for i := range records {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"key": `)
		writeString(b, records[i].Key)
		if records[i].Value != "" {
			b.WriteString(`, "value": `)
			writeString(b, records[i].Value)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
}

// writeFetched writes fetched records as fetchedSlots does.
func writeFetched(b *bytes.Buffer, records []model.FetchedRecord) {
	var num [20]byte
	b.WriteByte('[')
	for i := range records {
		r := &records[i]
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"offset": `)
		b.Write(strconv.AppendInt(num[:0], r.Offset, 10))
		b.WriteString(`, "key": `)
		writeString(b, r.Key)
		if r.Value != "" {
			b.WriteString(`, "value": `)
			writeString(b, r.Value)
		}
		if r.ProducerID != model.NoProducerID {
			b.WriteString(`, "producer_id": `)
			b.Write(strconv.AppendInt(num[:0], r.ProducerID, 10))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
}
