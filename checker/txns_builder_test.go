package checker

import (
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// historyBuilder writes small histories for tests. Each method adds one
// operation that succeeded and returns its id; fail and lose change how it
// ended.
type historyBuilder struct {
	h histories.History
}

// session is a producer session of a transactional.id.
type session struct {
	tid   string
	pid   int64
	epoch int16
}

func (s session) request() model.Request {
	req := model.NewRequest()
	req.TransactionalID, req.ProducerID, req.Epoch = s.tid, s.pid, s.epoch
	return req
}

func (b *historyBuilder) add(proc string, call, ret int64, kind model.Kind, req model.Request, resp model.Response) int {
	id := len(b.h.Ops)
	b.h.Ops = append(b.h.Ops, histories.Op{ID: id, Proc: proc, Call: call, Return: ret, Returned: true,
		Op: model.Op{Kind: kind, Req: req}, Result: model.OK(resp)})
	return id
}

// op is the operation id, to adjust what a method wrote.
func (b *historyBuilder) op(id int) *histories.Op { return &b.h.Ops[id] }

// fail makes op id refused with code.
func (b *historyBuilder) fail(id int, code model.Code) int {
	b.op(id).Result = model.Fail(code)
	return id
}

// lose makes op id one that never returned.
func (b *historyBuilder) lose(id int) int {
	b.op(id).Returned, b.op(id).Return, b.op(id).Result = false, 0, model.NoAnswer()
	return id
}

func (b *historyBuilder) initTxns(proc string, call, ret int64, got session) int {
	req := model.NewRequest()
	req.TransactionalID = got.tid
	resp := model.NewResponse()
	resp.ProducerID, resp.Epoch = got.pid, got.epoch
	return b.add(proc, call, ret, model.InitProducerID, req, resp)
}

func (b *historyBuilder) addPartitions(proc string, call, ret int64, s session, ps ...model.Partition) int {
	req := s.request()
	req.Partitions = ps
	return b.add(proc, call, ret, model.AddPartitions, req, model.NewResponse())
}

// produce writes keys to p at base (for a refused one, any base).
func (b *historyBuilder) produce(proc string, call, ret int64, s session, p model.Partition, base int64, keys ...string) int {
	req := s.request()
	req.Partition = p
	for _, k := range keys {
		req.Records = append(req.Records, model.Record{Key: k})
	}
	resp := model.NewResponse()
	resp.BaseOffset = base
	return b.add(proc, call, ret, model.Produce, req, resp)
}

func (b *historyBuilder) endTxn(proc string, call, ret int64, s session, commit bool) int {
	req := s.request()
	req.Commit = commit
	return b.add(proc, call, ret, model.EndTxn, req, model.NewResponse())
}

// endTxnV2 is an end_txn whose answer names the next session (KIP-890).
func (b *historyBuilder) endTxnV2(proc string, call, ret int64, s session, commit bool, next session) int {
	id := b.endTxn(proc, call, ret, s, commit)
	b.op(id).Result.Resp.ProducerID, b.op(id).Result.Resp.Epoch = next.pid, next.epoch
	return id
}

func (b *historyBuilder) timeoutAbort(call int64, next session) int {
	resp := model.NewResponse()
	resp.TransactionalID, resp.ProducerID, resp.Epoch = next.tid, next.pid, next.epoch
	id := b.add("coordinator", call, 0, model.TimeoutAbort, model.NewRequest(), resp)
	b.op(id).Returned = false
	return id
}

func (b *historyBuilder) fetch(proc string, call, ret int64, p model.Partition, from int64, iso model.Isolation, records ...model.FetchedRecord) int {
	req := model.NewRequest()
	req.Partition, req.Offset, req.Isolation = p, from, iso
	resp := model.NewResponse()
	resp.Records = records
	return b.add(proc, call, ret, model.Fetch, req, resp)
}

func rec(offset int64, key string, pid int64) model.FetchedRecord {
	return model.FetchedRecord{Offset: offset, Key: key, ProducerID: pid}
}

func (b *historyBuilder) txnOffsetCommit(proc string, call, ret int64, s session, group string, generation int32, p model.Partition, offset int64) int {
	req := s.request()
	req.Group, req.GenerationID, req.Offsets = group, generation, map[model.Partition]int64{p: offset}
	return b.add(proc, call, ret, model.TxnOffsetCommit, req, model.NewResponse())
}

// plainCommit is an offset_commit of member at generation; member "" and
// generation -1 is a simple consumer's.
func (b *historyBuilder) plainCommit(proc string, call, ret int64, group, member string, generation int32, p model.Partition, offset int64) int {
	req := model.NewRequest()
	req.Group, req.MemberID, req.GenerationID, req.Offsets = group, member, generation, map[model.Partition]int64{p: offset}
	return b.add(proc, call, ret, model.OffsetCommit, req, model.NewResponse())
}

func (b *historyBuilder) joinGroup(proc string, call, ret int64, group string, generation int32, assigned ...model.Partition) int {
	req := model.NewRequest()
	req.Group = group
	resp := model.NewResponse()
	resp.GenerationID, resp.Assignment = generation, assigned
	return b.add(proc, call, ret, model.JoinGroup, req, resp)
}

func (b *historyBuilder) offsetFetch(proc string, call, ret int64, group string, p model.Partition, offset int64) int {
	req := model.NewRequest()
	req.Group, req.Partition = group, p
	resp := model.NewResponse()
	resp.Offset = offset
	return b.add(proc, call, ret, model.OffsetFetch, req, resp)
}

// offsetFetchAll adds an offset_fetch of all of group's partitions,
// answered with listed (partition: offset) and the unstable partitions.
func (b *historyBuilder) offsetFetchAll(proc string, call, ret int64, group string, listed map[model.Partition]int64, unstable ...model.Partition) int {
	req := model.NewRequest()
	req.Group, req.AllPartitions = group, true
	resp := model.NewResponse()
	resp.FetchedOffsets, resp.Unstable = listed, unstable
	return b.add(proc, call, ret, model.OffsetFetch, req, resp)
}

// committedTxn is a whole transaction of s writing keys to p at base,
// called at call and committed by call+3; it returns the produce's id.
func (b *historyBuilder) committedTxn(proc string, call int64, s session, p model.Partition, base int64, keys ...string) int {
	b.addPartitions(proc, call, call+1, s, p)
	id := b.produce(proc, call+1, call+2, s, p, base, keys...)
	b.endTxn(proc, call+2, call+3, s, true)
	return id
}
