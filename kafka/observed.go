package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// The requests a tapped client sends, read as operations of the history
// format: the inverse of what the target's own requests do (txn.go,
// produce.go, groups.go). Requests the format has no type for
// (heartbeats, metadata) are not recorded, nor fetches: in a fetch
// session (KIP-227) a request leaves out the partitions whose position did
// not change, so it does not say where each read starts.

// observed is one operation of a request seen on the wire (a produce is one
// per partition), and how the response reads for it.
type observed struct {
	op     *pending
	answer func(kmsg.Response) (model.Result, fate)
}

// fate is what an answer does to its operation.
type fate int

const (
	ended    fate = iota
	notTaken      // the broker did nothing (misrouted): left out
	goesOn        // a join_group between its JoinGroup and SyncGroup
)

// lookupTimeout bounds a topic id's lookup while a request goes out.
const lookupTimeout = 2 * time.Second

// sent begins the operations of req.
func (w *wiretap) sent(req kmsg.Request) []observed {
	switch r := req.(type) {
	case *kmsg.InitProducerIDRequest:
		return w.initProducerID(r)
	case *kmsg.AddPartitionsToTxnRequest:
		return w.addPartitions(r)
	case *kmsg.AddOffsetsToTxnRequest:
		return w.addOffsets(r)
	case *kmsg.ProduceRequest:
		return w.produce(r)
	case *kmsg.TxnOffsetCommitRequest:
		return w.txnOffsetCommit(r)
	case *kmsg.EndTxnRequest:
		return w.endTxn(r)
	case *kmsg.JoinGroupRequest:
		return w.joinGroup(r)
	case *kmsg.SyncGroupRequest:
		return w.syncGroup(r)
	case *kmsg.LeaveGroupRequest:
		return w.leaveGroup(r)
	case *kmsg.OffsetFetchRequest:
		return w.offsetFetch(r)
	}
	return nil
}

// answered ends (or leaves out, or keeps open) the operations of one
// response.
func (w *wiretap) answered(ops []observed, resp kmsg.Response) {
	for _, o := range ops {
		res, f := o.answer(resp)
		switch f {
		case ended:
			w.finish(o.op, res)
		case notTaken:
			w.free(o.op)
		}
	}
}

// one is a request that is one operation, answered by one set of codes.
func one[R kmsg.Response](w *wiretap, kind model.Kind, req model.Request, codes func(R) []int16, out func(R) model.Response) []observed {
	return []observed{{op: w.begin(kind, req), answer: answerWith(w, kind, codes, out)}}
}

// answerWith reads a response of type R: misrouted when any of its codes
// says so, else the first refusal, else success with out's fields.
func answerWith[R kmsg.Response](w *wiretap, kind model.Kind, codes func(R) []int16, out func(R) model.Response) func(kmsg.Response) (model.Result, fate) {
	return func(resp kmsg.Response) (model.Result, fate) {
		r, ok := resp.(R)
		if !ok {
			return w.t.undecided(kind, "the answer is a %T", resp), ended
		}
		cs := codes(r)
		for _, c := range cs {
			if misrouted(c) {
				return model.Result{}, notTaken
			}
		}
		fields := model.NewResponse()
		if out != nil {
			fields = out(r)
		}
		return w.t.result(kind, firstError(cs), fields), ended
	}
}

func codesOf[R kmsg.Response](codes func(kmsg.Response) []int16) func(R) []int16 {
	return func(r R) []int16 { return codes(r) }
}

func (w *wiretap) initProducerID(r *kmsg.InitProducerIDRequest) []observed {
	req := model.NewRequest()
	if r.TransactionalID != nil {
		id, ok := w.t.names.modelName(*r.TransactionalID)
		if !ok {
			return nil
		}
		req.TransactionalID, req.TimeoutMs = id, w.t.modelMs(r.TransactionTimeoutMillis)
	}
	req.ProducerID, req.Epoch = r.ProducerID, r.ProducerEpoch
	return one(w, model.InitProducerID, req,
		func(r *kmsg.InitProducerIDResponse) []int16 { return []int16{r.ErrorCode} },
		func(r *kmsg.InitProducerIDResponse) model.Response {
			out := model.NewResponse()
			out.ProducerID, out.Epoch = r.ProducerID, r.ProducerEpoch
			return out
		})
}

// addPartitions reads the clients' form (v3 at most); the batched form of
// v4 on is the brokers'.
func (w *wiretap) addPartitions(r *kmsg.AddPartitionsToTxnRequest) []observed {
	id, ok := w.t.names.modelName(r.TransactionalID)
	if !ok || r.Version > 3 {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.ProducerID, req.Epoch = id, r.ProducerID, r.ProducerEpoch
	for _, topic := range r.Topics {
		for _, p := range topic.Partitions {
			if mp, ok := w.t.names.partition(topic.Topic, p); ok {
				req.Partitions = append(req.Partitions, mp)
			}
		}
	}
	return one(w, model.AddPartitions, req, codesOf[*kmsg.AddPartitionsToTxnResponse](addPartitionsCodes), nil)
}

func (w *wiretap) addOffsets(r *kmsg.AddOffsetsToTxnRequest) []observed {
	id, ok := w.t.names.modelName(r.TransactionalID)
	group, ok2 := w.t.names.modelName(r.Group)
	if !ok || !ok2 {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.ProducerID, req.Epoch, req.Group = id, r.ProducerID, r.ProducerEpoch, group
	return one(w, model.AddOffsets, req,
		func(r *kmsg.AddOffsetsToTxnResponse) []int16 { return []int16{r.ErrorCode} }, nil)
}

// produce is one operation per partition: the history's produce writes
// one batch to one partition.
func (w *wiretap) produce(r *kmsg.ProduceRequest) []observed {
	var ops []observed
	for _, topic := range r.Topics {
		name, ok := w.topic(topic.Topic, topic.TopicID, r.Version >= produceTopicIDs)
		if !ok {
			continue
		}
		for _, p := range topic.Partitions {
			req, ok := w.produceRequest(r, name, p)
			if !ok {
				continue
			}
			answer := answerWith(w, model.Produce,
				func(resp *kmsg.ProduceResponse) []int16 {
					rp, found := w.producePartition(resp, name, p.Partition)
					if !found {
						return []int16{kerr.UnknownServerError.Code}
					}
					return []int16{rp.ErrorCode}
				},
				func(resp *kmsg.ProduceResponse) model.Response {
					rp, _ := w.producePartition(resp, name, p.Partition)
					out := model.NewResponse()
					out.BaseOffset = rp.BaseOffset
					return out
				})
			ops = append(ops, observed{op: w.begin(model.Produce, req), answer: answer})
		}
	}
	return ops
}

// produceTopicIDs is the first Produce that names topics by id.
const produceTopicIDs = 13

func (w *wiretap) produceRequest(r *kmsg.ProduceRequest, topic string, p kmsg.ProduceRequestTopicPartition) (model.Request, bool) {
	partition, ok := w.t.names.partition(topic, p.Partition)
	batches, err := decodeBatches(p.Records)
	if !ok || err != nil || len(batches) != 1 {
		return model.Request{}, false
	}
	b := batches[0]
	req := model.NewRequest()
	if b.transactional && r.TransactionID != nil {
		if req.TransactionalID, ok = w.t.names.modelName(*r.TransactionID); !ok {
			return model.Request{}, false
		}
	}
	req.ProducerID, req.Epoch, req.Partition, req.Sequence = b.producerID, b.epoch, partition, b.firstSequence
	for _, rec := range b.records {
		req.Records = append(req.Records, model.Record{Key: string(rec.Key), Value: string(rec.Value)})
	}
	return req, true
}

func (w *wiretap) producePartition(resp *kmsg.ProduceResponse, topic string, partition int32) (kmsg.ProduceResponseTopicPartition, bool) {
	for _, rt := range resp.Topics {
		if name, ok := w.topic(rt.Topic, rt.TopicID, resp.Version >= produceTopicIDs); !ok || name != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp, true
			}
		}
	}
	return kmsg.ProduceResponseTopicPartition{}, false
}

// commitTopicIDs is the first TxnOffsetCommit that names topics by id.
const commitTopicIDs = 6

func (w *wiretap) txnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) []observed {
	id, ok := w.t.names.modelName(r.TransactionalID)
	group, ok2 := w.t.names.modelName(r.Group)
	if !ok || !ok2 {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.Epoch = id, group, r.ProducerID, r.ProducerEpoch
	req.MemberID, req.GenerationID = r.MemberID, r.Generation
	req.Offsets = map[model.Partition]int64{}
	for _, topic := range r.Topics {
		name, ok := w.topic(topic.Topic, topic.TopicID, r.Version >= commitTopicIDs)
		for _, p := range topic.Partitions {
			if mp, ok2 := w.t.names.partition(name, p.Partition); ok && ok2 {
				req.Offsets[mp] = p.Offset
			}
		}
	}
	return one(w, model.TxnOffsetCommit, req, codesOf[*kmsg.TxnOffsetCommitResponse](txnOffsetCommitCodes), nil)
}

func (w *wiretap) endTxn(r *kmsg.EndTxnRequest) []observed {
	id, ok := w.t.names.modelName(r.TransactionalID)
	if !ok {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.ProducerID, req.Epoch, req.Commit = id, r.ProducerID, r.ProducerEpoch, r.Commit
	return one(w, model.EndTxn, req,
		func(r *kmsg.EndTxnResponse) []int16 { return []int16{r.ErrorCode} },
		func(r *kmsg.EndTxnResponse) model.Response {
			out := model.NewResponse()
			if r.GetVersion() >= endTxnV2 {
				out.ProducerID, out.Epoch = r.ProducerID, r.ProducerEpoch
			}
			return out
		})
}

// joinGroup begins a join_group, or goes on with the one a member began:
// a new member's first JoinGroup only learns its id (KIP-394), and the
// join ends when its SyncGroup answers with the assignment.
func (w *wiretap) joinGroup(r *kmsg.JoinGroupRequest) []observed {
	group, ok := w.t.names.modelName(r.Group)
	if !ok {
		return nil
	}
	op := w.takeJoin(r.MemberID)
	if op == nil {
		req := model.NewRequest()
		req.Group, req.MemberID = group, r.MemberID
		req.SessionTimeoutMs = w.t.modelMs(r.SessionTimeoutMillis)
		req.Partitions = w.subscribed(r.Protocols)
		op = w.begin(model.JoinGroup, req)
	}
	return []observed{{op: op, answer: func(resp kmsg.Response) (model.Result, fate) {
		jr, ok := resp.(*kmsg.JoinGroupResponse)
		switch {
		case !ok:
			return w.t.undecided(model.JoinGroup, "the answer is a %T", resp), ended
		case jr.ErrorCode == kerr.MemberIDRequired.Code:
			op.resp.MemberID = jr.MemberID
			w.awaitSync(jr.MemberID, op)
			return model.Result{}, goesOn
		case jr.ErrorCode == 0:
			op.resp.MemberID, op.resp.GenerationID, op.joined = jr.MemberID, jr.Generation, true
			w.awaitSync(jr.MemberID, op)
			return model.Result{}, goesOn
		case misrouted(jr.ErrorCode) && r.MemberID != "":
			w.awaitSync(r.MemberID, op) // it asks again elsewhere
			return model.Result{}, goesOn
		case misrouted(jr.ErrorCode):
			return model.Result{}, notTaken
		}
		return w.t.result(model.JoinGroup, jr.ErrorCode, model.NewResponse()), ended
	}}}
}

// subscribed is the partitions of the topics a member subscribes to, which
// its group's leader spreads.
func (w *wiretap) subscribed(protocols []kmsg.JoinGroupRequestProtocol) []model.Partition {
	if len(protocols) == 0 {
		return nil
	}
	var meta kmsg.ConsumerMemberMetadata
	if meta.ReadFrom(protocols[0].Metadata) != nil {
		return nil
	}
	var out []model.Partition
	for _, topic := range meta.Topics {
		name, ok := w.t.names.modelName(topic)
		for p := range w.t.cfg.Topics[name] {
			if mp, ok2 := w.t.names.partition(topic, p); ok && ok2 {
				out = append(out, mp)
			}
		}
	}
	return out
}

// syncGroup ends the join_group of the member it comes from.
func (w *wiretap) syncGroup(r *kmsg.SyncGroupRequest) []observed {
	op := w.takeJoin(r.MemberID)
	if op == nil {
		return nil
	}
	return []observed{{op: op, answer: func(resp kmsg.Response) (model.Result, fate) {
		sr, ok := resp.(*kmsg.SyncGroupResponse)
		switch {
		case !ok:
			return w.t.undecided(model.JoinGroup, "the answer is a %T", resp), ended
		case misrouted(sr.ErrorCode), sr.ErrorCode == kerr.RebalanceInProgress.Code:
			// Asked again elsewhere, or the member rejoins: it is a
			// member all along, and its join ends with a SyncGroup
			// that answers.
			w.awaitSync(r.MemberID, op)
			return model.Result{}, goesOn
		case sr.ErrorCode != 0:
			return w.t.result(model.JoinGroup, sr.ErrorCode, model.NewResponse()), ended
		}
		assignment, err := w.t.decodeAssignment(sr.MemberAssignment, op.req.Partitions)
		if err != nil {
			return w.t.undecided(model.JoinGroup, "unreadable assignment: %v", err), ended
		}
		out := op.resp
		out.Assignment = assignment
		return model.OK(out), ended
	}}}
}

func (w *wiretap) leaveGroup(r *kmsg.LeaveGroupRequest) []observed {
	group, ok := w.t.names.modelName(r.Group)
	if !ok {
		return nil
	}
	members := []string{r.MemberID}
	if r.Version >= 3 {
		members = members[:0]
		for _, m := range r.Members {
			members = append(members, m.MemberID)
		}
	}
	var ops []observed
	for _, m := range members {
		if !w.leaves(m) {
			continue
		}
		req := model.NewRequest()
		req.Group, req.MemberID = group, m
		ops = append(ops, one(w, model.LeaveGroup, req, codesOf[*kmsg.LeaveGroupResponse](leaveCodes), nil)...)
	}
	return ops
}

// topic is a request's cluster topic: by id from the version that names
// topics so, else by name.
func (w *wiretap) topic(name string, id [16]byte, byID bool) (string, bool) {
	if !byID {
		return name, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	return w.t.routes.topicByID(ctx, id)
}

// offsetFetchTopicIDs is the first OffsetFetch that names topics by id.
const offsetFetchTopicIDs = 10

// groupPartition is one partition of one group's committed offsets, as
// the cluster names them.
type groupPartition struct {
	group, topic string
	partition    int32
}

// offsetFetch is one offset_fetch per partition asked about, in either
// shape: one group (up to v7) or a list of groups (v8 on).
func (w *wiretap) offsetFetch(r *kmsg.OffsetFetchRequest) []observed {
	var asked []groupPartition
	if r.Version < 8 {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				asked = append(asked, groupPartition{r.Group, t.Topic, p})
			}
		}
	}
	for _, g := range r.Groups {
		for _, t := range g.Topics {
			name, ok := w.topic(t.Topic, t.TopicID, r.Version >= offsetFetchTopicIDs)
			for _, p := range t.Partitions {
				if ok {
					asked = append(asked, groupPartition{g.Group, name, p})
				}
			}
		}
	}
	var ops []observed
	for _, gp := range asked {
		group, ok := w.t.names.modelName(gp.group)
		partition, ok2 := w.t.names.partition(gp.topic, gp.partition)
		if !ok || !ok2 {
			continue
		}
		req := model.NewRequest()
		req.Group, req.Partition, req.RequireStable = group, partition, r.RequireStable
		answer := answerWith(w, model.OffsetFetch,
			func(resp *kmsg.OffsetFetchResponse) []int16 {
				_, code := w.fetchedOffset(resp, gp)
				return []int16{code}
			},
			func(resp *kmsg.OffsetFetchResponse) model.Response {
				out := model.NewResponse()
				offset, _ := w.fetchedOffset(resp, gp)
				out.Offset = max(offset, model.NoOffset)
				return out
			})
		ops = append(ops, observed{op: w.begin(model.OffsetFetch, req), answer: answer})
	}
	return ops
}

// fetchedOffset is the answer for one partition: a group's error speaks
// for its partitions, and a partition the answer leaves out is an error.
func (w *wiretap) fetchedOffset(resp *kmsg.OffsetFetchResponse, gp groupPartition) (int64, int16) {
	if resp.Version < 8 {
		if resp.ErrorCode != 0 {
			return model.NoOffset, resp.ErrorCode
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if t.Topic == gp.topic && p.Partition == gp.partition {
					return p.Offset, p.ErrorCode
				}
			}
		}
		return model.NoOffset, kerr.UnknownServerError.Code
	}
	for _, g := range resp.Groups {
		if g.Group != gp.group {
			continue
		}
		if g.ErrorCode != 0 {
			return model.NoOffset, g.ErrorCode
		}
		for _, t := range g.Topics {
			name, ok := w.topic(t.Topic, t.TopicID, resp.Version >= offsetFetchTopicIDs)
			for _, p := range t.Partitions {
				if ok && name == gp.topic && p.Partition == gp.partition {
					return p.Offset, p.ErrorCode
				}
			}
		}
	}
	return model.NoOffset, kerr.UnknownServerError.Code
}
