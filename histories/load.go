package histories

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/model"
)

// LoadFile reads the history document at path.
func LoadFile(path string) (History, error) { return LoadFileWithProgress(path, nil) }

// LoadFileWithProgress is LoadFile that reports the operations read, as
// LoadWithProgress does.
func LoadFileWithProgress(path string, progress func(ops int)) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	ops, err := opsInFile(f)
	if err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	h, err := loadStream(f, progress, ops)
	if err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Load reads one history document and checks it against every rule of
// docs/history-format.md. The error names the operation and the field.
// Fields the format does not know are ignored; an unknown type or error
// code is not.
//
// Absent numbers hold the model's sentinels (model.NewRequest,
// model.NewResponse) and empty lists load as nil, so a loaded history
// equals the one it was saved from.
func Load(r io.Reader) (History, error) { return LoadWithProgress(r, nil) }

// progressEvery is how many operations are read between two calls of a
// load's progress function.
const progressEvery = 10_000

// LoadWithProgress is Load that calls progress with the number of
// operations read so far, every progressEvery of them and at the end.
//
// The document is read as a stream: the operations are decoded one at a
// time as they are read, so memory holds the history, not the file as
// well. The errors are the ones a whole-document read gives, in the same
// order: not JSON first, then the top-level fields, then the operations.
func LoadWithProgress(r io.Reader, progress func(ops int)) (History, error) {
	return loadStream(r, progress, 0)
}

// loadStream is LoadWithProgress with room made for ops operations at
// once: a long history's operations are most of what loading it holds, and
// a slice grown to hold them held the old array and the new at once.
func loadStream(r io.Reader, progress func(ops int), ops int) (History, error) {
	in := bufio.NewReader(r)
	if !startsObject(in) {
		return loadWhole(in) // not an object: the whole-document read says why
	}
	dec := json.NewDecoder(in)
	dec.UseNumber() // so that a number where ops should be is named as written
	doc, err := streamDocument(dec, progress, ops, nil)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the document began, so it was cut short
	}
	var broken *BrokenError
	if errors.As(err, &broken) {
		broken.Before = doc.before()
		return History{}, broken
	}
	if errors.Is(err, errOpsTwice) {
		return History{}, err
	}
	if err != nil {
		return History{}, fmt.Errorf("not a JSON document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return History{}, errors.New("more data after the JSON document")
	}
	return doc.history()
}

// opsInFile is countOps of a regular file, read again from its start
// after; 0 for a pipe or a device, which can be read once.
func opsInFile(f *os.File) (int, error) {
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return 0, nil
	}
	ops, err := countOps(f)
	if err != nil {
		return 0, err
	}
	_, err = f.Seek(0, io.SeekStart)
	return ops, err
}

// countOps is how many operations the document read from r seems to
// hold: the objects that open inside an array inside the top-level value,
// which only "ops" holds. It is a capacity to make room for, not a check:
// the document is read and checked as a stream after. It is at most one
// for every minOpBytes bytes (the shortest operation a document can hold),
// so that a malformed document asks for no more than a valid one of its
// size would.
func countOps(r io.Reader) (int, error) {
	const minOpBytes = 40
	buf := make([]byte, 64<<10)
	ops, depth, size := 0, 0, 0
	inString, escaped := false, false
	for {
		n, err := r.Read(buf)
		size += n
		for _, c := range buf[:n] {
			switch {
			case escaped:
				escaped = false
			case inString:
				escaped = c == '\\'
				inString = c != '"'
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				if c == '{' && depth == 2 {
					ops++
				}
				depth++
			case c == '}' || c == ']':
				depth--
			}
		}
		if err == io.EOF {
			return min(ops, size/minOpBytes), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// startsObject reports whether the first non-blank byte of in opens an object.
func startsObject(in *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := in.Peek(n)
		if err != nil {
			return false
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\n', '\r':
			continue
		default:
			return c == '{'
		}
	}
}

// loadWhole reads the document at once.
func loadWhole(r io.Reader) (History, error) {
	dec := json.NewDecoder(r)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return History{}, fmt.Errorf("not a JSON document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return History{}, errors.New("more data after the JSON document")
	}
	return decodeHistory(raw)
}

// streamedDocument is a document read as a stream: its top-level members
// but "ops", and the operations decoded from "ops".
type streamedDocument struct {
	members rawObject
	ops     []Op
	opsErr  error // the first operation that does not decode
	isArray bool  // "ops" was an array (else its value is in members)
	sawOps  bool  // a member "ops" was read
	// each, when set, is given every operation that decodes, in the
	// order of the file, in place of keeping it in ops: the operation
	// at index i, which begins after byte at, with its raw text. An
	// error it returns stops the reading.
	each func(i int, at int64, raw json.RawMessage, op *Op) error
}

// streamDocument reads the top-level object, decoding "ops" element by
// element. A syntax error is returned; a format error is kept for later.
// Given each, the operations go to it and are not kept (streamedDocument.each).
func streamDocument(dec *json.Decoder, progress func(int), ops int, each func(int, int64, json.RawMessage, *Op) error) (*streamedDocument, error) {
	doc := &streamedDocument{each: each}
	if _, err := dec.Token(); err != nil { // the opening brace
		return doc, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return doc, err
		}
		name, _ := t.(string)
		if name == "ops" && doc.sawOps {
			return doc, errOpsTwice
		}
		if name == "ops" {
			doc.sawOps = true
			err = doc.streamOps(dec, progress, ops)
		} else {
			var raw json.RawMessage
			err = dec.Decode(&raw)
			doc.members.set(name, raw)
		}
		if err != nil {
			return doc, err
		}
	}
	_, err := dec.Token() // the closing brace
	return doc, err
}

// streamOps reads the value of "ops": an array is decoded an operation at
// a time; anything else is kept, for the error to describe it.
func (doc *streamedDocument) streamOps(dec *json.Decoder, progress func(int), ops int) error {
	doc.ops, doc.opsErr, doc.isArray = nil, nil, false
	if ops > 0 {
		doc.ops = make([]Op, 0, ops)
	}
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('[') {
		raw, err := rawOfToken(dec, t)
		doc.members.set("ops", raw)
		return err
	}
	doc.members.remove("ops")
	doc.isArray = true
	var raw json.RawMessage
	n := 0       // operations read, the ones after one that does not decode too
	decoded := 0 // operations decoded: up to the first that does not
	for i := 0; dec.More(); i++ {
		at := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			return doc.broken(i, at, err)
		}
		n++
		if doc.opsErr != nil {
			continue // still read to the end: a syntax error there comes first
		}
		op, err := decodeOp(i, raw)
		decoded++
		switch {
		case doc.each == nil:
			doc.ops, doc.opsErr = append(doc.ops, op), err
		case err != nil:
			doc.opsErr = err
		default:
			if err := doc.each(i, at, raw, &op); err != nil {
				return err
			}
		}
		if progress != nil && (i+1)%progressEvery == 0 {
			progress(i + 1)
		}
	}
	if progress != nil && decoded%progressEvery != 0 {
		progress(decoded)
	}
	if _, err = dec.Token(); err != nil { // the closing bracket
		return doc.broken(n, dec.InputOffset(), err)
	}
	return nil
}

// BrokenError is a document that stops being JSON inside its "ops": cut
// short, as a recording whose recorder was killed is, or corrupted. It
// names the operation where the document breaks and the byte offset, and
// keeps the whole operations before it, so that they can still be judged.
type BrokenError struct {
	Index  int   // the place in "ops" of the operation that breaks
	Offset int64 // the byte of the document after which that operation begins
	Err    error // what is wrong there: io.ErrUnexpectedEOF, or a *json.SyntaxError
	// Before is the history of the operations before Index, with the
	// top-level members read before "ops"; nil when they do not load
	// (docs/history-format.md) or an operation among them does not decode.
	Before *History
}

func (e *BrokenError) Error() string {
	what := "is cut short"
	if !errors.Is(e.Err, io.ErrUnexpectedEOF) {
		what = "is not JSON: " + e.Err.Error()
	}
	return fmt.Sprintf("not a JSON document: ops[%d], after byte %d, %s", e.Index, e.Offset, what)
}

func (e *BrokenError) Unwrap() error { return e.Err }

// broken is the error of a document that breaks at the operation at index
// i, which begins after byte at. A syntax error's own offset is not used:
// encoding/json counts it from where its decoder last stopped, not from
// the start of the document.
func (doc *streamedDocument) broken(i int, at int64, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &BrokenError{Index: i, Offset: at, Err: err}
}

// before is the history of the operations read whole before the document
// broke, or nil when they do not load.
func (doc *streamedDocument) before() *History {
	if doc.opsErr != nil {
		return nil
	}
	h, err := doc.history()
	if err != nil {
		return nil
	}
	return &h
}

// rawOfToken is a value that is not an array as JSON text, from its first
// token: what the error about it needs (an object is read to its end).
func rawOfToken(dec *json.Decoder, t json.Token) (json.RawMessage, error) {
	if t == json.Delim('{') {
		for depth := 1; depth > 0; {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			switch t {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
		return json.RawMessage("{}"), nil
	}
	if n, ok := t.(json.Number); ok {
		return json.RawMessage(n), nil
	}
	raw, err := json.Marshal(t)
	return raw, err
}

// history checks the top-level fields, then the operations, as
// decodeHistory does.
func (doc *streamedDocument) history() (History, error) {
	if doc.isArray {
		doc.members.set("ops", json.RawMessage("[]"))
	}
	h, err := decodeTopLevel(doc.members)
	if err != nil {
		return History{}, err
	}
	if doc.opsErr != nil {
		return History{}, doc.opsErr
	}
	h.Ops = doc.ops
	return h, checkOps(h.Ops)
}

func decodeHistory(raw json.RawMessage) (History, error) {
	m, err := asMembers("document", raw, nil)
	if err != nil {
		return History{}, err
	}
	if opsMembers(m) > 1 {
		return History{}, errOpsTwice
	}
	h, err := decodeTopLevel(m)
	if err != nil {
		return History{}, err
	}
	opsRaw, _ := m.get("ops")
	elems, _ := asArray("ops", opsRaw)
	for i, e := range elems {
		op, err := decodeOp(i, e)
		if err != nil {
			return History{}, err
		}
		h.Ops = append(h.Ops, op)
	}
	return h, checkOps(h.Ops)
}

// errOpsTwice is a document with two members "ops". encoding/json would
// keep the second, and a stream would read both; a recording has one.
var errOpsTwice = errors.New(`the document has two members "ops"; a history has one list of operations`)

// opsMembers counts the members "ops" of a document's members.
func opsMembers(m rawObject) int {
	n := 0
	for _, member := range m {
		if member.name == "ops" {
			n++
		}
	}
	return n
}

// decodeTopLevel checks format, the header and that ops is an array.
func decodeTopLevel(m rawObject) (History, error) {
	var h History
	var format string
	if err := take(m, "", "format", required, text[string]{p: &format}); err != nil {
		return h, err
	}
	if format != Format {
		return h, bad("format", "must be %q, got %q", Format, format)
	}
	if err := decodeHeader(m, &h); err != nil {
		return h, err
	}
	if !has(m, "ops") {
		return h, errors.New("ops is required")
	}
	opsRaw, _ := m.get("ops")
	_, err := asArray("ops", opsRaw)
	return h, err
}

// checkOps checks what holds between operations: unique ids, and no
// overlap within a process.
func checkOps(ops []Op) error {
	if err := checkIDs(ops); err != nil {
		return err
	}
	return checkOverlap(ops)
}

// decodeHeader reads the optional top-level fields.
func decodeHeader(m rawObject, h *History) error {
	if err := take(m, "", "name", optional, text[string]{p: &h.Name}); err != nil {
		return err
	}
	version := number[int]{&h.TransactionsVersion, versions}
	if err := take(m, "", "transactions_version", optional, version); err != nil {
		return err
	}
	if err := take(m, "", "trips", optional, packedTexts{p: &h.Trips}); err != nil {
		return err
	}
	if err := take(m, "", "output_topics", optional, texts[string]{p: &h.OutputTopics}); err != nil {
		return err
	}
	var clock string
	if err := take(m, "", "clock", optional, text[string]{p: &clock}); err != nil {
		return err
	}
	if clock != "" && clock != wallClock {
		return bad("", "clock must be %q (the broker's timers ran on the ops' clock) or absent, got %q", wallClock, clock)
	}
	h.WallClock = clock == wallClock
	var markers string
	if err := take(m, "", "markers", optional, text[string]{p: &markers}); err != nil {
		return err
	}
	if markers != "" && markers != asyncMarkers {
		return bad("", "markers must be %q (the broker answers EndTxn before its markers land) or absent, got %q", asyncMarkers, markers)
	}
	h.AsyncMarkers = markers == asyncMarkers
	var topicChanges string
	if err := take(m, "", "topic_changes", optional, text[string]{p: &topicChanges}); err != nil {
		return err
	}
	if topicChanges != "" && topicChanges != unrecordedTopicChanges {
		return bad("", "topic_changes must be %q (the topics may have changed by requests the history does not hold) "+
			"or absent, got %q", unrecordedTopicChanges, topicChanges)
	}
	h.TopicsChangeOutside = topicChanges == unrecordedTopicChanges
	if err := take(m, "", "topics", optional, topicCounts{&h.Topics}); err != nil {
		return err
	}
	if err := take(m, "", "broker_config", optional, h.brokerConfig()); err != nil {
		return err
	}
	if has(m, "trips") && h.Trips == nil {
		// "trips": [] says there was nothing to process, which is not
		// the same as not saying.
		h.Trips = []string{}
	}
	return nil
}

// decodeOp reads the operation at index i of "ops".
//
// It decodes the operation first with every field's path left unwritten
// (quietPath), because writing "req.producer_id" and the like for every
// field of every operation was a tenth of the time decoding took, and
// the paths serve only errors. An operation that does not decode is
// decoded again with its paths, so that the error names its field.
func decodeOp(i int, raw json.RawMessage) (Op, error) {
	if op, err := decodeOpPaths(i, raw, true); err == nil {
		return op, nil
	}
	return decodeOpPaths(i, raw, false)
}

// quietPath is the path of a field that decodeOp's first try does not
// write: every member of it and element of it has the same path.
const quietPath = "\x00"

// pathOf is the path of the top-level member name of an operation, or
// quietPath when quiet.
func pathOf(name string, quiet bool) string {
	if quiet {
		return quietPath
	}
	return name
}

// decodeOpPaths is decodeOp, with paths written unless quiet.
func decodeOpPaths(i int, raw json.RawMessage, quiet bool) (Op, error) {
	op := Op{Op: model.Op{Req: model.NewRequest()}, Result: model.NoAnswer()}
	var room [16]rawMember
	m, err := asMembers("", raw, room[:0])
	if err == nil {
		err = take(m, "", "id", always, number[int]{&op.ID, opIDs})
	}
	if err != nil {
		return op, fmt.Errorf("ops[%d]: %w", i, err)
	}
	if err := decodeTiming(m, &op); err != nil {
		return op, fmt.Errorf("op %d: %w", op.ID, err)
	}
	if err := decodeBody(m, &op, quiet); err != nil {
		return op, fmt.Errorf("op %d: %s: %w", op.ID, op.Kind, err)
	}
	return op, nil
}

// decodeTiming reads who issued the operation, when, and its type.
func decodeTiming(m rawObject, op *Op) error {
	if err := take(m, "", "proc", required, text[string]{p: &op.Proc}); err != nil {
		return err
	}
	if err := take(m, "", "client", optional, text[string]{p: &op.Client}); err != nil {
		return err
	}
	if err := take(m, "", "call", always, number[int64]{&op.Call, anyInt}); err != nil {
		return err
	}
	if err := take(m, "", "return", optional, number[int64]{&op.Return, anyInt}); err != nil {
		return err
	}
	op.Returned = has(m, "return")
	if op.Returned && op.Return < op.Call {
		return bad("return", "%d is before call %d", op.Return, op.Call)
	}
	if err := take(m, "", "type", required, text[model.Kind]{&op.Kind, validKind}); err != nil {
		return err
	}
	return decodeAPIVersion(m, op)
}

// decodeAPIVersion reads the optional api_version: the request header's
// version, within what Kafka has had for the request.
func decodeAPIVersion(m rawObject, op *Op) error {
	if !has(m, "api_version") {
		return nil
	}
	var n int64
	if err := take(m, "", "api_version", optional, number[int64]{&n, anyInt}); err != nil {
		return err
	}
	if n < math.MinInt16 || n > math.MaxInt16 {
		return bad("api_version", "%d is not an API version (an int16)", n)
	}
	op.APIVersion = model.AtVersion(int16(n))
	if err := model.CheckVersion(op.Kind, op.APIVersion); err != nil {
		return bad("api_version", "%s", err)
	}
	return nil
}

// decodeBody reads req, resp and error, which depend on the type.
func decodeBody(m rawObject, op *Op, quiet bool) error {
	if err := decodeRequest(m, op, quiet); err != nil {
		return err
	}
	if op.Kind.IsFault() {
		return decodeFault(m, op, quiet)
	}
	var code model.Code
	if err := take(m, "", "error", optional, text[model.Code]{&code, validCode}); err != nil {
		return err
	}
	switch {
	case code != "" && !model.Answers(op.Kind, code):
		return fmt.Errorf("Kafka does not answer %s with %s%s", withArticle(op.Kind.APIName()), code, atAnyVersion(op.APIVersion))
	case has(m, "resp") && code != "":
		return errors.New(`has both "resp" and "error"; an operation has one or neither`)
	case (has(m, "resp") || code != "") && !op.Returned:
		return errors.New(`has an answer ("resp" or "error") but no "return"; an operation that never returned has neither`)
	case code != "":
		op.Result = model.Fail(code)
		return nil
	}
	return decodeResponse(m, op, quiet)
}

// decodeFault checks that a fault carries only what the format gives it:
// no return, no error, and a resp only for timeout_abort.
func decodeFault(m rawObject, op *Op, quiet bool) error {
	for _, name := range []string{"return", "error"} {
		if has(m, name) {
			return bad(name, "a fault has none")
		}
	}
	if op.Kind == model.TimeoutAbort && !has(m, "resp") {
		return errors.New("resp is required")
	}
	return decodeResponse(m, op, quiet)
}

func decodeRequest(m rawObject, op *Op, quiet bool) error {
	slots, takes := reqSlots[op.Kind]
	switch {
	case !takes && has(m, "req"):
		return bad("req", "a %s has none", op.Kind)
	case !takes:
		return nil
	case !has(m, "req"):
		return errors.New("req is required")
	}
	if err := decodeStruct(pathOf("req", quiet), m.value("req"), &op.Req, slots); err != nil {
		return err
	}
	if op.Kind == model.LeaveGroup && op.Req.MemberID == "" && op.Req.InstanceID == "" {
		return errors.New(`req.member_id of a leave_group may be "" only with a group_instance_id (KIP-345)`)
	}
	// KIP-360: a producer bumping its own epoch sends both.
	if op.Kind == model.InitProducerID && (op.Req.ProducerID == model.NoProducerID) != (op.Req.Epoch == model.NoEpoch) {
		return errors.New("req.producer_id and req.epoch go together: both or neither")
	}
	if err := checkOffsetMetadata(op); err != nil {
		return err
	}
	if op.Kind == model.OffsetFetch {
		if err := checkFetchScope(op); err != nil {
			return err
		}
	}
	if n, known := op.APIVersion.Number(); known && n < kip939Version && (op.Req.Enable2PC || op.Req.KeepPreparedTxn) {
		return fmt.Errorf("req.enable_2pc and req.keep_prepared_txn are InitProducerId v%d's (KIP-939), but api_version is %d", kip939Version, n)
	}
	return nil
}

func decodeResponse(m rawObject, op *Op, quiet bool) error {
	slots, takes := respSlots[op.Kind]
	switch {
	case !takes && has(m, "resp"):
		return bad("resp", "a %s has none", op.Kind)
	case !has(m, "resp"):
		return nil
	}
	resp := model.NewResponse()
	if err := decodeStruct(pathOf("resp", quiet), m.value("resp"), &resp, slots); err != nil {
		return err
	}
	// KIP-939: the kept transaction is named by both.
	if (resp.OngoingTxnProducerID == model.NoProducerID) != (resp.OngoingTxnEpoch == model.NoEpoch) {
		return errors.New("resp.ongoing_txn_producer_id and resp.ongoing_txn_epoch go together: both or neither")
	}
	if n, known := op.APIVersion.Number(); known && n < kip939Version && resp.OngoingTxnProducerID != model.NoProducerID {
		return fmt.Errorf("resp.ongoing_txn_producer_id is InitProducerId v%d's (KIP-939), but api_version is %d", kip939Version, n)
	}
	if err := checkPartitionErrors(op, resp); err != nil {
		return err
	}
	if op.Kind == model.OffsetFetch {
		if err := checkFetchAnswer(op.Req, resp); err != nil {
			return err
		}
	}
	op.Result = model.OK(resp)
	return nil
}

// offsetFetchAllVersion is the first OffsetFetch version whose topics may
// be null, asking for all partitions (OffsetFetchRequest.json, KIP-88).
const offsetFetchAllVersion = 2

// checkFetchScope holds an offset_fetch to one partition or all of them.
func checkFetchScope(op *Op) error {
	switch {
	case op.Req.AllPartitions && op.Req.Partition != "":
		return errors.New("req.partition and req.all_partitions contradict: an offset_fetch names one partition or asks for all, not both")
	case !op.Req.AllPartitions && op.Req.Partition == "":
		return errors.New("req.partition is required (or req.all_partitions: true)")
	}
	if n, known := op.APIVersion.Number(); known && op.Req.AllPartitions && n < offsetFetchAllVersion {
		return fmt.Errorf("req.all_partitions is OffsetFetch v%d's (topics null, KIP-88), but api_version is %d", offsetFetchAllVersion, n)
	}
	return nil
}

// checkFetchAnswer holds an offset_fetch's answer to its request: one
// partition's answers an offset, a fetch of all partitions lists them,
// and no partition is listed both at an offset and as unstable.
func checkFetchAnswer(req model.Request, resp model.Response) error {
	listed := len(resp.FetchedOffsets) > 0 || len(resp.Unstable) > 0
	switch {
	case req.AllPartitions && resp.Offset != model.NoOffset:
		return errors.New("resp.offset answers one partition, but req.all_partitions asks for all: list them in resp.offsets")
	case !req.AllPartitions && listed:
		return fmt.Errorf("resp.offsets and resp.unstable answer a fetch of all partitions, but req names %s alone", req.Partition)
	}
	for _, p := range resp.Unstable {
		if off, ok := resp.FetchedOffsets[p]; ok {
			return fmt.Errorf("resp.offsets and resp.unstable contradict: %s is listed at offset %d and as UNSTABLE_OFFSET_COMMIT", p, off)
		}
	}
	return nil
}

// kip939Version is the first InitProducerId version with KIP-939's
// fields (InitProducerIdRequest.json, InitProducerIdResponse.json).
const kip939Version = 6

// checkIDs reports an id used twice.
func checkIDs(ops []Op) error {
	seen := map[int]int{}
	for i, op := range ops {
		if j, dup := seen[op.ID]; dup {
			return fmt.Errorf("ops[%d]: \"id\" %d is used twice (also ops[%d])", i, op.ID, j)
		}
		seen[op.ID] = i
	}
	return nil
}

// checkOverlap reports two requests of one process that overlap in time:
// one called before the other returned. A call at the very instant the
// previous answer came back touches it and does not overlap (the format
// allows a clock of any resolution, and a millisecond clock does that all
// the time). A request that never returned is exempt: its process goes on (a retry
// after a lost response) while it stays pending for ever. Faults are
// instants, and may strike a process while its request is in flight (it
// stalls, or crashes, with the request on the wire).
func checkOverlap(ops []Op) error {
	// Indexes, not copies: a long history's operations are most of what
	// loading it holds.
	byProc := map[string][]int{}
	for i, op := range ops {
		if op.Kind.IsRequest() {
			byProc[op.Proc] = append(byProc[op.Proc], i)
		}
	}
	for _, proc := range sortedKeys(byProc) {
		if err := checkProcOverlap(ops, byProc[proc]); err != nil {
			return err
		}
	}
	return nil
}

// checkProcOverlap checks the requests of one process, ops[i] for i in
// proc.
func checkProcOverlap(ops []Op, proc []int) error {
	sortByCallThenEnd(ops, proc)
	for n, i := range proc[:max(len(proc)-1, 0)] {
		// Sorted so, the next call is the first that can fall inside
		// op's run. A call at the instant op returned touches it: on a
		// coarse clock that is the next request going out.
		if op, next := ops[i], ops[proc[n+1]]; op.Returned && next.Call < op.Return {
			return fmt.Errorf("op %d: proc %q: called at %d while its op %d (call %d, return %d) was running; a process's operations do not overlap",
				next.ID, op.Proc, next.Call, op.ID, op.Call, op.Return)
		}
	}
	return nil
}

// sortByCallThenEnd orders one process's requests (indexes into ops) as
// its clock allows: by call, and among those called at one instant, the
// ones over at that instant first (answered at once, or never answered),
// so that a run of requests on one tick of a coarse clock is read in
// sequence.
func sortByCallThenEnd(ops []Op, proc []int) {
	sort.SliceStable(proc, func(i, j int) bool {
		a, b := &ops[proc[i]], &ops[proc[j]]
		if a.Call != b.Call {
			return a.Call < b.Call
		}
		return endOf(a) < endOf(b)
	})
}

// endOf is when an operation stops holding its process: its return, or its
// call when it never returned (its process goes on without it).
func endOf(op *Op) int64 {
	if op.Returned {
		return op.Return
	}
	return op.Call
}

// withArticle is name after "a" or "an", as it is spoken.
func withArticle(name string) string {
	if name != "" && strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// atAnyVersion says that a code refused for a request whose version the
// history gives is refused at every version, that one included.
func atAnyVersion(v model.Version) string {
	if _, known := v.Number(); !known {
		return ""
	}
	return fmt.Sprintf(" at any version, %s included", v)
}
