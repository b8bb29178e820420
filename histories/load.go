package histories

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/fencecheck/fencecheck/model"
)

// LoadFile reads the history document at path.
func LoadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	h, err := Load(f)
	if err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Load reads one history document and checks it against every rule of
// HISTORY.md. The error names the operation and the field. Fields the
// format does not know are ignored; an unknown type or error code is not.
//
// Absent numbers hold the model's sentinels (model.NewRequest,
// model.NewResponse) and empty lists load as nil, so a loaded history
// equals the one it was saved from.
func Load(r io.Reader) (History, error) {
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

func decodeHistory(raw json.RawMessage) (History, error) {
	var h History
	m, err := asObject("document", raw)
	if err != nil {
		return h, err
	}
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
	elems, err := asArray("ops", m["ops"])
	if err != nil {
		return h, err
	}
	for i, e := range elems {
		op, err := decodeOp(i, e)
		if err != nil {
			return History{}, err
		}
		h.Ops = append(h.Ops, op)
	}
	if err := checkIDs(h.Ops); err != nil {
		return History{}, err
	}
	return h, checkOverlap(h.Ops)
}

// decodeHeader reads the optional top-level fields.
func decodeHeader(m map[string]json.RawMessage, h *History) error {
	if err := take(m, "", "name", optional, text[string]{p: &h.Name}); err != nil {
		return err
	}
	version := number[int]{&h.TransactionsVersion, versions}
	if err := take(m, "", "transactions_version", optional, version); err != nil {
		return err
	}
	if err := take(m, "", "trips", optional, texts[string]{p: &h.Trips}); err != nil {
		return err
	}
	if err := take(m, "", "output_topics", optional, texts[string]{p: &h.OutputTopics}); err != nil {
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
func decodeOp(i int, raw json.RawMessage) (Op, error) {
	op := Op{Op: model.Op{Req: model.NewRequest()}, Result: model.NoAnswer()}
	m, err := asObject("", raw)
	if err == nil {
		err = take(m, "", "id", always, number[int]{&op.ID, opIDs})
	}
	if err != nil {
		return op, fmt.Errorf("ops[%d]: %w", i, err)
	}
	if err := decodeTiming(m, &op); err != nil {
		return op, fmt.Errorf("op %d: %w", op.ID, err)
	}
	if err := decodeBody(m, &op); err != nil {
		return op, fmt.Errorf("op %d: %s: %w", op.ID, op.Kind, err)
	}
	return op, nil
}

// decodeTiming reads who issued the operation, when, and its type.
func decodeTiming(m map[string]json.RawMessage, op *Op) error {
	if err := take(m, "", "proc", required, text[string]{p: &op.Proc}); err != nil {
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
	return take(m, "", "type", required, text[model.Kind]{&op.Kind, validKind})
}

// decodeBody reads req, resp and error, which depend on the type.
func decodeBody(m map[string]json.RawMessage, op *Op) error {
	if err := decodeRequest(m, op); err != nil {
		return err
	}
	if op.Kind.IsFault() {
		return decodeFault(m, op)
	}
	var code model.Code
	if err := take(m, "", "error", optional, text[model.Code]{&code, validCode}); err != nil {
		return err
	}
	switch {
	case has(m, "resp") && code != "":
		return errors.New(`has both "resp" and "error"; an operation has one or neither`)
	case (has(m, "resp") || code != "") && !op.Returned:
		return errors.New(`has an answer ("resp" or "error") but no "return"; an operation that never returned has neither`)
	case code != "":
		op.Result = model.Fail(code)
		return nil
	}
	return decodeResponse(m, op)
}

// decodeFault checks that a fault carries only what the format gives it:
// no return, no error, and a resp only for timeout_abort.
func decodeFault(m map[string]json.RawMessage, op *Op) error {
	for _, name := range []string{"return", "error"} {
		if has(m, name) {
			return bad(name, "a fault has none")
		}
	}
	if op.Kind == model.TimeoutAbort && !has(m, "resp") {
		return errors.New("resp is required")
	}
	return decodeResponse(m, op)
}

func decodeRequest(m map[string]json.RawMessage, op *Op) error {
	slots, takes := reqSlots[op.Kind]
	switch {
	case !takes && has(m, "req"):
		return bad("req", "a %s has none", op.Kind)
	case !takes:
		return nil
	case !has(m, "req"):
		return errors.New("req is required")
	}
	if err := decodeStruct("req", m["req"], &op.Req, slots); err != nil {
		return err
	}
	// KIP-360: a producer bumping its own epoch sends both.
	if op.Kind == model.InitProducerID && (op.Req.ProducerID == model.NoProducerID) != (op.Req.Epoch == model.NoEpoch) {
		return errors.New("req.producer_id and req.epoch go together: both or neither")
	}
	return nil
}

func decodeResponse(m map[string]json.RawMessage, op *Op) error {
	slots, takes := respSlots[op.Kind]
	switch {
	case !takes && has(m, "resp"):
		return bad("resp", "a %s has none", op.Kind)
	case !has(m, "resp"):
		return nil
	}
	resp := model.NewResponse()
	if err := decodeStruct("resp", m["resp"], &resp, slots); err != nil {
		return err
	}
	op.Result = model.OK(resp)
	return nil
}

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
// previous answer came back touches it and does not overlap (HISTORY.md
// says nothing of clock resolution, and a millisecond clock does that all
// the time). A request that never returned is exempt: its process goes on (a retry
// after a lost response) while it stays pending for ever. Faults are
// instants, and may strike a process while its request is in flight (it
// stalls, or crashes, with the request on the wire).
func checkOverlap(ops []Op) error {
	byProc := map[string][]Op{}
	for _, op := range ops {
		if op.Kind.IsRequest() {
			byProc[op.Proc] = append(byProc[op.Proc], op)
		}
	}
	for _, proc := range sortedKeys(byProc) {
		if err := checkProcOverlap(byProc[proc]); err != nil {
			return err
		}
	}
	return nil
}

func checkProcOverlap(ops []Op) error {
	sortByCallThenEnd(ops)
	for i, op := range ops[:max(len(ops)-1, 0)] {
		// Sorted so, the next call is the first that can fall inside
		// op's run. A call at the instant op returned touches it: on a
		// coarse clock that is the next request going out.
		if next := ops[i+1]; op.Returned && next.Call < op.Return {
			return fmt.Errorf("op %d: proc %q: called at %d while its op %d (call %d, return %d) was running; a process's operations do not overlap",
				next.ID, op.Proc, next.Call, op.ID, op.Call, op.Return)
		}
	}
	return nil
}

// sortByCallThenEnd orders one process's requests as its clock allows: by
// call, and among those called at one instant, the ones over at that
// instant first (answered at once, or never answered), so that a run of
// requests on one tick of a coarse clock is read in sequence.
func sortByCallThenEnd(ops []Op) {
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].Call != ops[j].Call {
			return ops[i].Call < ops[j].Call
		}
		return endOf(ops[i]) < endOf(ops[j])
	})
}

// endOf is when an operation stops holding its process: its return, or its
// call when it never returned (its process goes on without it).
func endOf(op Op) int64 {
	if op.Returned {
		return op.Return
	}
	return op.Call
}
