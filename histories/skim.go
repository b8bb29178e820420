package histories

import (
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// skimmed are the members of a request and of an answer that name what
// an operation acts on: its transactional id, group, partitions and
// producer ids. StreamOptions.Names is given only these.
var (
	skimmedReq  = []string{"transactional_id", "group", "partition", "partitions", "producer_id"}
	skimmedResp = []string{"producer_id", "records"}
)

// skimReqSlots and skimRespSlots are each kind's slots for the skimmed
// members, so that a skim decodes them as decodeOp does and nothing else.
var (
	skimReqSlots  = skimSlots(reqSlots, skimmedReq)
	skimRespSlots = skimSlots(respSlots, skimmedResp)
)

func skimSlots[S any](all map[model.Kind][]slot[S], names []string) map[model.Kind][]slot[S] {
	out := make(map[model.Kind][]slot[S], len(all))
	for kind, slots := range all {
		out[kind] = slices.DeleteFunc(slices.Clone(slots), func(s slot[S]) bool { return !slices.Contains(names, s.name) })
	}
	return out
}

// skimOp fills op with only the id, kind, times, skimmed members and
// whether it succeeded of the operation m, for StreamOptions.Names. It
// costs a fraction of decodeOp, because it reads no record's key or
// value unless an answer holds records, and it fills the same op each
// time. An error means only that the skim cannot tell; decodeOp then
// reads the operation and names what is wrong.
func skimOp(op *Op, id int, call, ret int64, kind model.Kind, m rawObject) error {
	*op = Op{Op: model.Op{Kind: kind, Req: model.NewRequest()}, Result: model.NoAnswer()}
	op.ID, op.Call, op.Return, op.Returned = id, call, ret, has(m, "return")
	if has(m, "req") {
		if err := decodeStruct(quietPath, m.value("req"), &op.Req, skimReqSlots[kind]); err != nil {
			return err
		}
	}
	var code model.Code
	if err := take(m, "", "error", optional, text[model.Code]{&code, validCode}); err != nil {
		return err
	}
	switch {
	case code != "":
		op.Result = model.Fail(code)
	case has(m, "resp"):
		if err := decodeStruct(quietPath, m.value("resp"), &op.Result.Resp, skimRespSlots[kind]); err != nil {
			return err
		}
		op.Result.Answered = true
	}
	return nil
}
