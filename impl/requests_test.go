//go:build !checkeronly

package impl

import (
	"context"

	"github.com/fencecheck/fencecheck/model"
)

// Request builders shared by the tests, one per request type, in the
// words of the history format.

// session is a (producer id, epoch) a producer holds.
type session struct {
	pid   int64
	epoch int16
}

func initReq(txn string, timeoutMs int64) model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.TimeoutMs = txn, timeoutMs
	return r
}

// bumpReq is a producer bumping its own epoch (KIP-360).
func bumpReq(txn string, s session) model.Request {
	r := initReq(txn, 0)
	r.ProducerID, r.Epoch = s.pid, s.epoch
	return r
}

func txnReq(txn string, s session) model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = txn, s.pid, s.epoch
	return r
}

func addPartitionsReq(txn string, s session, parts ...model.Partition) model.Request {
	r := txnReq(txn, s)
	r.Partitions = parts
	return r
}

func produceReq(txn string, s session, p model.Partition, seq int32, keys ...string) model.Request {
	r := txnReq(txn, s)
	r.Partition, r.Sequence = p, seq
	for _, k := range keys {
		r.Records = append(r.Records, model.Record{Key: k, Value: "v-" + k})
	}
	return r
}

func addOffsetsReq(txn string, s session, group string) model.Request {
	r := txnReq(txn, s)
	r.Group = group
	return r
}

func commitOffsetsReq(txn string, s session, group, memberID string, gen int32, offsets map[model.Partition]int64) model.Request {
	r := addOffsetsReq(txn, s, group)
	r.MemberID, r.GenerationID, r.Offsets = memberID, gen, offsets
	return r
}

// offsetCommitReq is a plain commit: memberID "" and gen -1 is a simple
// consumer's.
func offsetCommitReq(group, memberID string, gen int32, offsets map[model.Partition]int64) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID, r.GenerationID, r.Offsets = group, memberID, gen, offsets
	return r
}

func endTxnReq(txn string, s session, commit bool) model.Request {
	r := txnReq(txn, s)
	r.Commit = commit
	return r
}

func joinReq(group, memberID string, sessionMs int64, parts ...model.Partition) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID, r.SessionTimeoutMs, r.Partitions = group, memberID, sessionMs, parts
	return r
}

func leaveReq(group, memberID string) model.Request {
	r := model.NewRequest()
	r.Group, r.MemberID = group, memberID
	return r
}

func offsetFetchReq(group string, p model.Partition, requireStable bool) model.Request {
	r := model.NewRequest()
	r.Group, r.Partition, r.RequireStable = group, p, requireStable
	return r
}

func fetchReq(p model.Partition, from int64, isolation model.Isolation) model.Request {
	r := model.NewRequest()
	r.Partition, r.Offset, r.Isolation = p, from, isolation
	return r
}

// send is model.Send for requests the tests build themselves.
func send(b model.Broker, kind model.Kind, r model.Request) model.Result {
	res, err := model.Send(context.Background(), b, model.Op{Kind: kind, Req: r})
	if err != nil {
		panic(err)
	}
	return res
}

func sessionOf(res model.Result) session {
	return session{pid: res.Resp.ProducerID, epoch: res.Resp.Epoch}
}
