package recorder

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// The requests a client sends, read as operations of the history format:
// the inverse of what the Kafka target's own requests do. Requests the
// format has no type for (metadata, coordinator lookups) are not recorded.

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
	goesOn        // a join_group whose JoinGroup is asked again (KIP-394, or elsewhere)
)

// endTxnAnswersEpoch is the first EndTxn whose answer carries the
// producer id and epoch the producer goes on with (KIP-890, transactions
// v2).
const endTxnAnswersEpoch = 5

// lookupTimeout bounds a topic id's lookup while a request goes out.
const lookupTimeout = 2 * time.Second

// readsRequest reports whether sent reads requests of this key. Every
// other request is forwarded unread, because decoding it would only cost
// time.
func readsRequest(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Fetch, kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.Produce,
		kmsg.TxnOffsetCommit, kmsg.EndTxn, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.LeaveGroup,
		kmsg.OffsetFetch, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.ConsumerGroupHeartbeat, kmsg.DeleteRecords,
		kmsg.IncrementalAlterConfigs, kmsg.CreateTopics, kmsg.CreatePartitions, kmsg.DeleteTopics:
		return true
	}
	return false
}

// sent begins the operations of req, sent on a connection with fetch
// sessions sessions. It reads only the keys of readsRequest.
func (c *Client) sent(req kmsg.Request, sessions *fetchSessions) []observed {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return c.fetch(r, sessions)
	case *kmsg.InitProducerIDRequest:
		return c.initProducerID(r)
	case *initProducerIDv6:
		return c.initProducerIDv6(r)
	case *kmsg.AddPartitionsToTxnRequest:
		return c.addPartitions(r)
	case *kmsg.AddOffsetsToTxnRequest:
		return c.addOffsets(r)
	case *kmsg.ProduceRequest:
		return c.produce(r)
	case *kmsg.TxnOffsetCommitRequest:
		return c.txnOffsetCommit(r)
	case *kmsg.EndTxnRequest:
		return c.endTxn(r)
	case *kmsg.JoinGroupRequest:
		return c.joinGroup(r)
	case *kmsg.SyncGroupRequest:
		return c.syncGroup(r)
	case *kmsg.LeaveGroupRequest:
		return c.leaveGroup(r)
	case *kmsg.OffsetFetchRequest:
		return c.offsetFetch(r)
	case *kmsg.HeartbeatRequest:
		return c.heartbeat(r)
	case *kmsg.OffsetCommitRequest:
		return c.offsetCommit(r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.consumerGroupHeartbeat(r)
	case *kmsg.DeleteRecordsRequest:
		return c.deleteRecords(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.alterConfig(r)
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(r)
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(r)
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(r)
	}
	return nil
}

// heartbeat is a member keeping its session alive. Every answer is
// recorded: REBALANCE_IN_PROGRESS says the group prepares a rebalance,
// after Kafka renewed the session (GroupCoordinator.handleHeartbeat in
// 3.9, GroupMetadataManager.classicGroupHeartbeat in 4.x).
func (c *Client) heartbeat(r *kmsg.HeartbeatRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok || r.MemberID == "" || r.Generation < 0 {
		return nil // not yet, or no longer, a member's
	}
	req := model.NewRequest()
	req.Group, req.MemberID, req.GenerationID = group, r.MemberID, r.Generation
	req.EmptyGroup = group == ""
	req.InstanceID = wire.Nullable(r.InstanceID)
	return one(c, model.Heartbeat, r.Version, req,
		func(r *kmsg.HeartbeatResponse) []int16 { return []int16{r.ErrorCode} }, nil)
}

// answered ends (or leaves out, or keeps open) the operations of one
// response.
func (c *Client) answered(ops []observed, resp kmsg.Response) {
	for _, o := range ops {
		res, f := o.answer(resp)
		switch f {
		case ended:
			c.finish(o.op, res)
		case notTaken:
			c.leaveOut(o.op)
		}
	}
}

// one is a request that is one operation, answered by one set of codes.
func one[R kmsg.Response](c *Client, kind model.Kind, version int16, req model.Request, codes func(R) []int16, out func(R) model.Response) []observed {
	return []observed{{op: c.begin(kind, version, req), answer: answerWith(c, kind, codes, out)}}
}

// answerWith reads a response of type R: misrouted when any of its codes
// says so, else the first refusal, else success with out's fields.
func answerWith[R kmsg.Response](c *Client, kind model.Kind, codes func(R) []int16, out func(R) model.Response) func(kmsg.Response) (model.Result, fate) {
	return func(resp kmsg.Response) (model.Result, fate) {
		r, ok := resp.(R)
		if !ok {
			return c.undecided(kind, "the answer is a %T", resp), ended
		}
		cs := codes(r)
		for _, c := range cs {
			if wire.Misrouted(c) {
				return model.Result{}, notTaken
			}
		}
		fields := model.NewResponse()
		if out != nil {
			fields = out(r)
		}
		return c.result(kind, wire.FirstError(cs), fields), ended
	}
}

func codesOf[R kmsg.Response](codes func(kmsg.Response) []int16) func(R) []int16 {
	return func(r R) []int16 { return codes(r) }
}

// initProducerIDRequest is r in the history's terms; false when its
// transactional id is not one the history holds.
func (c *Client) initProducerIDRequest(r *kmsg.InitProducerIDRequest) (model.Request, bool) {
	req := model.NewRequest()
	if r.TransactionalID != nil && *r.TransactionalID == "" {
		// An empty id, which Kafka refuses; a null one is an
		// idempotent producer's.
		req.EmptyTransactionalID = true
		return req, true
	}
	if r.TransactionalID != nil {
		id, ok := c.cfg.Cluster.Name(*r.TransactionalID)
		if !ok {
			return req, false
		}
		req.TransactionalID, req.TimeoutMs = id, c.cfg.Cluster.Millis(r.TransactionTimeoutMillis)
	}
	req.ProducerID, req.Epoch = r.ProducerID, r.ProducerEpoch
	return req, true
}

func (c *Client) initProducerID(r *kmsg.InitProducerIDRequest) []observed {
	req, ok := c.initProducerIDRequest(r)
	if !ok {
		return nil
	}
	return one(c, model.InitProducerID, r.Version, req,
		func(r *kmsg.InitProducerIDResponse) []int16 { return []int16{r.ErrorCode} },
		func(r *kmsg.InitProducerIDResponse) model.Response {
			out := model.NewResponse()
			out.ProducerID, out.Epoch = r.ProducerID, r.ProducerEpoch
			return out
		})
}

// initProducerIDv6 is an InitProducerId with KIP-939's fields: the
// flags, and the kept transaction's producer id and epoch in the answer
// (-1 when it names none).
func (c *Client) initProducerIDv6(r *initProducerIDv6) []observed {
	req, ok := c.initProducerIDRequest(r.InitProducerIDRequest)
	if !ok {
		return nil
	}
	req.Enable2PC, req.KeepPreparedTxn = r.enable2PC, r.keepPreparedTxn
	return one(c, model.InitProducerID, r.Version, req,
		func(r *initProducerIDv6Response) []int16 { return []int16{r.ErrorCode} },
		func(r *initProducerIDv6Response) model.Response {
			out := model.NewResponse()
			out.ProducerID, out.Epoch = r.ProducerID, r.ProducerEpoch
			out.OngoingTxnProducerID, out.OngoingTxnEpoch = r.ongoingPID, r.ongoingEpoch
			return out
		})
}

// txnName is a transactional id in the history's terms: "" stays "", an
// empty id, which Kafka refuses.
func (c *Client) txnName(cluster string) (string, bool) {
	if cluster == "" {
		return "", true
	}
	return c.cfg.Cluster.Name(cluster)
}

// addPartitions reads the clients' form (v3 at most); the batched form of
// v4 on is the brokers'.
func (c *Client) addPartitions(r *kmsg.AddPartitionsToTxnRequest) []observed {
	id, ok := c.txnName(r.TransactionalID)
	if !ok || r.Version > 3 {
		return nil
	}
	req := model.NewRequest()
	req.EmptyTransactionalID = r.TransactionalID == ""
	req.TransactionalID, req.ProducerID, req.Epoch = id, r.ProducerID, r.ProducerEpoch
	for _, topic := range r.Topics {
		for _, p := range topic.Partitions {
			if mp, ok := c.partition(topic.Topic, p); ok {
				req.Partitions = append(req.Partitions, mp)
			}
		}
	}
	return one(c, model.AddPartitions, r.Version, req, codesOf[*kmsg.AddPartitionsToTxnResponse](wire.AddPartitionsCodes), nil)
}

func (c *Client) addOffsets(r *kmsg.AddOffsetsToTxnRequest) []observed {
	id, ok := c.cfg.Cluster.Name(r.TransactionalID)
	group, ok2 := c.cfg.Cluster.Name(r.Group)
	if !ok || !ok2 {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.ProducerID, req.Epoch, req.Group = id, r.ProducerID, r.ProducerEpoch, group
	req.EmptyGroup = group == ""
	return one(c, model.AddOffsets, r.Version, req,
		func(r *kmsg.AddOffsetsToTxnResponse) []int16 { return []int16{r.ErrorCode} }, nil)
}

// produce is one operation per partition: the history's produce writes
// one batch to one partition.
func (c *Client) produce(r *kmsg.ProduceRequest) []observed {
	var ops []observed
	mixed := mixedProducers(r)
	for _, topic := range r.Topics {
		name, ok := c.topic(topic.Topic, topic.TopicID, r.Version >= produceTopicIDs)
		if !ok {
			continue
		}
		for _, p := range topic.Partitions {
			req, read, ok := c.produceRequest(r, name, p)
			if !ok {
				continue
			}
			req.MixedProducers = mixed
			reading := read // reading it twice reads it the same
			if len(req.Records) >= readBeside {
				done := make(chan error, 1)
				go func() { done <- read() }()
				reading = sync.OnceValue(func() error { return <-done })
			}
			answer := answerWith(c, model.Produce,
				func(resp *kmsg.ProduceResponse) []int16 {
					rp, found := c.producePartition(resp, name, p.Partition)
					if !found {
						return []int16{kerr.UnknownServerError.Code}
					}
					return []int16{rp.ErrorCode}
				},
				func(resp *kmsg.ProduceResponse) model.Response {
					rp, _ := c.producePartition(resp, name, p.Partition)
					out := model.NewResponse()
					out.BaseOffset = rp.BaseOffset
					return out
				})
			op := c.begin(model.Produce, r.Version, req)
			op.reading = reading
			ops = append(ops, observed{op: op, answer: answer})
		}
	}
	return ops
}

// mixedProducers reports whether r's transactional batches carry more
// than one producer id and epoch, which Kafka refuses whole
// (ReplicaManager.handleProduceAppend; model/leader.go).
func mixedProducers(r *kmsg.ProduceRequest) bool {
	type producer struct {
		id    int64
		epoch int16
	}
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) < 2 {
		return false // one batch: no header to read twice
	}
	var first *producer
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			b, err := wire.ReadProduced(p.Records)
			if err != nil || !b.Transactional {
				continue
			}
			this := producer{b.ProducerID, b.Epoch}
			if first == nil {
				first = &this
			} else if *first != this {
				return true
			}
		}
	}
	return false
}

// readBeside is how many records a produce's batch holds at least for
// them to be read on a goroutine of their own, while the produce goes on
// to the broker. Reading a record took about 60 ns, and starting a
// goroutine about 1 µs, so a smaller batch is read as its operation
// ends. That is after its answer went on to the client, so it is off the
// produce's round trip too.
const readBeside = 64

// produceTopicIDs is the first Produce that names topics by id.
const produceTopicIDs = 13

// produceRequest is the request of a produce to one partition. Its
// records are read by read, which the caller runs after the produce went
// on, before the operation ends.
func (c *Client) produceRequest(r *kmsg.ProduceRequest, topic string, p kmsg.ProduceRequestTopicPartition) (req model.Request, read func() error, ok bool) {
	partition, ok := c.partition(topic, p.Partition)
	if !ok {
		return model.Request{}, nil, false
	}
	b, err := wire.ReadProduced(p.Records)
	if err != nil {
		return model.Request{}, nil, false
	}
	req = model.NewRequest()
	if b.Transactional && r.TransactionID != nil {
		if req.TransactionalID, ok = c.cfg.Cluster.Name(*r.TransactionID); !ok {
			return model.Request{}, nil, false
		}
	}
	req.ProducerID, req.Epoch, req.Partition, req.Sequence = b.ProducerID, b.Epoch, partition, b.FirstSequence
	if !c.recording {
		// No history to hold the records: a fault needs only the
		// operation's kind.
		return req, func() error { return nil }, true
	}
	if b.NumRecords == 0 {
		return req, func() error { return b.ReadRecords(nil) }, true
	}
	// The operation holds the slice from its call on, and read fills
	// it in.
	req.Records = make([]model.Record, b.NumRecords)
	return req, func() error { return b.ReadRecords(req.Records) }, true
}

func (c *Client) producePartition(resp *kmsg.ProduceResponse, topic string, partition int32) (kmsg.ProduceResponseTopicPartition, bool) {
	for _, rt := range resp.Topics {
		if name, ok := c.topic(rt.Topic, rt.TopicID, resp.Version >= produceTopicIDs); !ok || name != topic {
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

func (c *Client) txnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) []observed {
	id, ok := c.cfg.Cluster.Name(r.TransactionalID)
	group, ok2 := c.cfg.Cluster.Name(r.Group)
	if !ok || !ok2 {
		return nil
	}
	req := model.NewRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.Epoch = id, group, r.ProducerID, r.ProducerEpoch
	req.EmptyGroup = group == ""
	req.MemberID, req.GenerationID = r.MemberID, r.Generation
	req.InstanceID = wire.Nullable(r.InstanceID)
	req.Offsets = map[model.Partition]int64{}
	for _, topic := range r.Topics {
		name, ok := c.topic(topic.Topic, topic.TopicID, r.Version >= commitTopicIDs)
		for _, p := range topic.Partitions {
			if mp, ok2 := c.partition(name, p.Partition); ok && ok2 {
				req.Offsets[mp] = p.Offset
				commitMetadata(&req.OffsetMetadata, mp, p.Metadata)
			}
		}
	}
	byID := func(resp *kmsg.TxnOffsetCommitResponse) bool { return resp.Version >= commitTopicIDs }
	return []observed{{op: c.begin(model.TxnOffsetCommit, r.Version, req),
		answer: commitAnswer(c, model.TxnOffsetCommit, byID, txnOffsetCommitParts)}}
}

// offsetCommitTopicIDs is the first OffsetCommit that names topics by id
// (KIP-848).
const offsetCommitTopicIDs = 10

// offsetCommit is a consumer's own commit outside a transaction, as an
// at-least-once consumer sends it. A static member's carries its
// group.instance.id (v7+).
func (c *Client) offsetCommit(r *kmsg.OffsetCommitRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok {
		return nil
	}
	req := model.NewRequest()
	req.Group, req.MemberID, req.GenerationID = group, r.MemberID, r.Generation
	req.EmptyGroup = group == ""
	if r.Version < 1 || req.GenerationID < model.NoGeneration {
		// v0 sends no member or generation: a simple consumer's commit.
		req.MemberID, req.GenerationID = "", model.NoGeneration
	}
	req.InstanceID = wire.Nullable(r.InstanceID)
	req.Offsets = map[model.Partition]int64{}
	for _, topic := range r.Topics {
		name, ok := c.topic(topic.Topic, topic.TopicID, r.Version >= offsetCommitTopicIDs)
		for _, p := range topic.Partitions {
			if mp, ok2 := c.partition(name, p.Partition); ok && ok2 {
				req.Offsets[mp] = p.Offset
				commitMetadata(&req.OffsetMetadata, mp, p.Metadata)
			}
		}
	}
	byID := func(resp *kmsg.OffsetCommitResponse) bool { return resp.Version >= offsetCommitTopicIDs }
	return []observed{{op: c.begin(model.OffsetCommit, r.Version, req),
		answer: commitAnswer(c, model.OffsetCommit, byID, offsetCommitParts)}}
}

func (c *Client) endTxn(r *kmsg.EndTxnRequest) []observed {
	id, ok := c.txnName(r.TransactionalID)
	if !ok {
		return nil
	}
	req := model.NewRequest()
	req.EmptyTransactionalID = r.TransactionalID == ""
	req.TransactionalID, req.ProducerID, req.Epoch, req.Commit = id, r.ProducerID, r.ProducerEpoch, r.Commit
	c.noteEndTxnVersion(r.Version)
	return one(c, model.EndTxn, r.Version, req,
		func(r *kmsg.EndTxnResponse) []int16 { return []int16{r.ErrorCode} },
		func(r *kmsg.EndTxnResponse) model.Response {
			out := model.NewResponse()
			if r.GetVersion() >= endTxnAnswersEpoch {
				out.ProducerID, out.Epoch = r.ProducerID, r.ProducerEpoch
			}
			return out
		})
}

// joinGroup begins a join_group, or goes on with the one a member began:
// a new member's first JoinGroup only learns its id (KIP-394), and its
// rejoin with that id is the same operation. The operation ends when a
// JoinGroup answers: it is the JoinGroup alone (join_only), and the
// member's SyncGroup is a sync_group of its own.
func (c *Client) joinGroup(r *kmsg.JoinGroupRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok {
		return nil
	}
	op := c.takeJoin(r.MemberID)
	if op == nil {
		op = c.begin(model.JoinGroup, r.Version, c.joinRequest(group, r))
	}
	return []observed{{op: op, answer: func(resp kmsg.Response) (model.Result, fate) {
		jr, ok := resp.(*kmsg.JoinGroupResponse)
		switch {
		case !ok:
			return c.undecided(model.JoinGroup, "the answer is a %T", resp), ended
		case jr.ErrorCode == kerr.MemberIDRequired.Code:
			op.learned = jr.MemberID
			c.awaitRejoin(jr.MemberID, op)
			return model.Result{}, goesOn
		case jr.ErrorCode == 0:
			out := model.NewResponse()
			out.MemberID, out.GenerationID, out.Leader = jr.MemberID, jr.Generation, jr.LeaderID
			out.Protocol, out.ProtocolType = wire.Nullable(jr.Protocol), wire.Nullable(jr.ProtocolType)
			c.noteSubscription(jr.MemberID, op.partitions)
			return model.OK(out), ended
		case wire.Misrouted(jr.ErrorCode) && r.MemberID != "":
			c.awaitRejoin(r.MemberID, op) // it asks again elsewhere
			return model.Result{}, goesOn
		case wire.Misrouted(jr.ErrorCode):
			return model.Result{}, notTaken
		}
		return c.result(model.JoinGroup, jr.ErrorCode, model.NewResponse()), ended
	}}}
}

// joinRequest is a JoinGroup as a join_group of group: the JoinGroup
// alone, with the member's timeouts and protocols. A JoinGroup before v1
// has no rebalance timeout of its own (the session timeout serves).
func (c *Client) joinRequest(group string, r *kmsg.JoinGroupRequest) model.Request {
	req := model.NewRequest()
	req.Group, req.MemberID, req.JoinOnly = group, r.MemberID, true
	req.EmptyGroup = group == ""
	req.InstanceID = wire.Nullable(r.InstanceID)
	req.SessionTimeoutMs = c.cfg.Cluster.Millis(r.SessionTimeoutMillis)
	if r.Version >= 1 {
		req.RebalanceTimeoutMs = c.cfg.Cluster.Millis(r.RebalanceTimeoutMillis)
	}
	req.ProtocolType, req.EmptyProtocolType = r.ProtocolType, r.ProtocolType == ""
	req.Partitions = c.subscribed(r.Protocols)
	for _, p := range r.Protocols {
		req.Protocols = append(req.Protocols, model.Protocol{Name: p.Name, Topics: c.protocolTopics(r.ProtocolType, p)})
	}
	return req
}

// protocolTopics is the topics a consumer protocol's subscription names,
// those of the cluster's that the history knows; nil for another
// protocol type or metadata that does not read.
func (c *Client) protocolTopics(protocolType string, p kmsg.JoinGroupRequestProtocol) []string {
	if protocolType != "consumer" {
		return nil
	}
	var meta kmsg.ConsumerMemberMetadata
	if meta.ReadFrom(p.Metadata) != nil {
		return nil
	}
	var out []string
	for _, topic := range meta.Topics {
		if name, ok := c.cfg.Cluster.Name(topic); ok {
			out = append(out, name)
		}
	}
	return out
}

// subscribed is the partitions of the topics a member subscribes to, which
// its group's leader spreads.
func (c *Client) subscribed(protocols []kmsg.JoinGroupRequestProtocol) []model.Partition {
	if len(protocols) == 0 {
		return nil
	}
	var meta kmsg.ConsumerMemberMetadata
	if meta.ReadFrom(protocols[0].Metadata) != nil {
		return nil
	}
	var out []model.Partition
	for _, topic := range meta.Topics {
		name, ok := c.cfg.Cluster.Name(topic)
		for p := range c.cfg.Cluster.Partitions(name) {
			if mp, ok2 := c.partition(topic, p); ok && ok2 {
				out = append(out, mp)
			}
		}
	}
	return out
}

// syncGroup is a member's SyncGroup, as a sync_group: the leader's
// carries its assignment of every member. Every answer is recorded,
// REBALANCE_IN_PROGRESS too; a misrouted one is left out, as the member
// asks again at the coordinator.
func (c *Client) syncGroup(r *kmsg.SyncGroupRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok || r.MemberID == "" || r.Generation < 0 {
		return nil
	}
	requested := c.subscription(r.MemberID)
	req := model.NewRequest()
	req.Group, req.MemberID, req.GenerationID = group, r.MemberID, r.Generation
	req.EmptyGroup = group == ""
	req.InstanceID = wire.Nullable(r.InstanceID)
	req.ProtocolType, req.Protocol = wire.Nullable(r.ProtocolType), wire.Nullable(r.Protocol) // v5+
	for _, a := range r.GroupAssignment {
		share, err := wire.Assignment(a.MemberAssignment, requested, c.partition)
		if err != nil {
			c.cfg.Logf("recorder: SyncGroup of %s: %s's assignment does not read: %v", c.proc, a.MemberID, err)
			continue
		}
		if req.Assignments == nil {
			req.Assignments = map[string][]model.Partition{}
		}
		req.Assignments[a.MemberID] = share
	}
	op := c.begin(model.SyncGroup, r.Version, req)
	return []observed{{op: op, answer: func(resp kmsg.Response) (model.Result, fate) {
		sr, ok := resp.(*kmsg.SyncGroupResponse)
		switch {
		case !ok:
			return c.undecided(model.SyncGroup, "the answer is a %T", resp), ended
		case wire.Misrouted(sr.ErrorCode):
			return model.Result{}, notTaken
		case sr.ErrorCode != 0:
			return c.result(model.SyncGroup, sr.ErrorCode, model.NewResponse()), ended
		}
		assignment, err := wire.Assignment(sr.MemberAssignment, requested, c.partition)
		if err != nil {
			return c.undecided(model.SyncGroup, "unreadable assignment: %v", err), ended
		}
		out := model.NewResponse()
		out.Assignment = assignment
		return model.OK(out), ended
	}}}
}

func (c *Client) leaveGroup(r *kmsg.LeaveGroupRequest) []observed {
	group, ok := c.cfg.Cluster.Name(r.Group)
	if !ok {
		return nil
	}
	members := []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	if r.Version >= 3 {
		members = r.Members
	}
	var ops []observed
	for _, m := range members {
		if !c.leaves(m.MemberID) {
			continue
		}
		req := model.NewRequest()
		req.Group, req.MemberID, req.InstanceID = group, m.MemberID, wire.Nullable(m.InstanceID)
		req.EmptyGroup = group == ""
		ops = append(ops, one(c, model.LeaveGroup, r.Version, req, codesOf[*kmsg.LeaveGroupResponse](wire.LeaveCodes), nil)...)
	}
	return ops
}

// topic is a request's cluster topic: by id from the version that names
// topics so, else by name.
func (c *Client) topic(name string, id [16]byte, byID bool) (string, bool) {
	if !byID {
		return name, true
	}
	// An id names one topic for good (a topic made again gets a new
	// one), so a name found is kept: the lookup and its timer cost more
	// than the rest of reading a small produce.
	c.mu.Lock()
	name, ok := c.topicNames[id]
	c.mu.Unlock()
	if ok {
		return name, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if name, ok = c.cfg.Cluster.TopicByID(ctx, id); ok {
		c.mu.Lock()
		c.topicNames[id] = name
		c.mu.Unlock()
	}
	return name, ok
}

// offsetFetchTopicIDs is the first OffsetFetch that names topics by id.
const offsetFetchTopicIDs = 10

// groupPartition is one partition of one group's committed offsets, as
// the cluster names them, with the KIP-848 member that asks (OffsetFetch
// v9+; "" and -1 for none).
type groupPartition struct {
	group, topic string
	partition    int32
	memberID     string
	memberEpoch  int32
}

// offsetFetch is one offset_fetch per partition asked about, in either
// shape: one group (up to v7) or a list of groups (v8 on).
func (c *Client) offsetFetch(r *kmsg.OffsetFetchRequest) []observed {
	var asked []groupPartition
	var ops []observed
	if r.Version < 8 && r.Version >= offsetFetchAllVersion && r.Topics == nil {
		ops = c.offsetFetchAll(r, groupPartition{group: r.Group, memberEpoch: -1}, ops)
	}
	if r.Version < 8 {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				asked = append(asked, groupPartition{r.Group, t.Topic, p, "", -1})
			}
		}
	}
	for _, g := range r.Groups {
		memberID := ""
		if g.MemberID != nil {
			memberID = *g.MemberID
		}
		if g.Topics == nil {
			ops = c.offsetFetchAll(r, groupPartition{group: g.Group, memberID: memberID, memberEpoch: g.MemberEpoch}, ops)
		}
		for _, t := range g.Topics {
			name, ok := c.topic(t.Topic, t.TopicID, r.Version >= offsetFetchTopicIDs)
			for _, p := range t.Partitions {
				if ok {
					asked = append(asked, groupPartition{g.Group, name, p, memberID, g.MemberEpoch})
				}
			}
		}
	}
	for _, gp := range asked {
		group, ok := c.cfg.Cluster.Name(gp.group)
		partition, ok2 := c.partition(gp.topic, gp.partition)
		if !ok || !ok2 {
			continue
		}
		req := model.NewRequest()
		req.Group, req.Partition, req.RequireStable = group, partition, r.RequireStable
		req.EmptyGroup = group == ""
		if gp.memberID != "" {
			req.MemberID, req.MemberEpoch = gp.memberID, gp.memberEpoch
		}
		answer := answerWith(c, model.OffsetFetch,
			func(resp *kmsg.OffsetFetchResponse) []int16 {
				_, _, code := c.fetchedOffset(resp, gp)
				return []int16{code}
			},
			func(resp *kmsg.OffsetFetchResponse) model.Response {
				out := model.NewResponse()
				offset, metadata, _ := c.fetchedOffset(resp, gp)
				out.Offset = max(offset, model.NoOffset)
				// The metadata committed with the offset, written where
				// it is not empty so that most answers stay as short.
				out.Metadata, out.MetadataSaid = metadata, metadata != ""
				return out
			})
		ops = append(ops, observed{op: c.begin(model.OffsetFetch, r.Version, req), answer: answer})
	}
	return ops
}

// offsetFetchAllVersion is the first OffsetFetch version whose topics may
// be null, asking for every partition the group has an offset for.
const offsetFetchAllVersion = 2

// offsetFetchAll appends to ops the offset_fetch of all of gp.group's
// partitions: an OffsetFetch whose topics are null. Its call says "all
// partitions"; its answer lists those of the history's topics, at their
// offsets or as UNSTABLE_OFFSET_COMMIT.
func (c *Client) offsetFetchAll(r *kmsg.OffsetFetchRequest, gp groupPartition, ops []observed) []observed {
	group, ok := c.cfg.Cluster.Name(gp.group)
	if !ok {
		return ops
	}
	req := model.NewRequest()
	req.Group, req.AllPartitions, req.RequireStable = group, true, r.RequireStable
	req.EmptyGroup = group == ""
	if gp.memberID != "" {
		req.MemberID, req.MemberEpoch = gp.memberID, gp.memberEpoch
	}
	answer := func(resp kmsg.Response) (model.Result, fate) {
		r, ok := resp.(*kmsg.OffsetFetchResponse)
		if !ok {
			return c.undecided(model.OffsetFetch, "the answer is a %T", resp), ended
		}
		code, listed, err := c.fetchedAll(r, gp.group)
		if wire.Misrouted(code) {
			return model.Result{}, notTaken
		}
		if err != nil {
			return c.undecided(model.OffsetFetch, "%v", err), ended
		}
		return c.result(model.OffsetFetch, code, listed), ended
	}
	return append(ops, observed{op: c.begin(model.OffsetFetch, r.Version, req), answer: answer})
}

// fetchedAll reads the answer to an OffsetFetch of all of group's
// partitions: the group's error, or the partitions of the history's
// topics it lists. A partition refused with another code than
// UNSTABLE_OFFSET_COMMIT, or listed at a negative offset, or a topic
// whose id names none, leaves the listing unknown.
func (c *Client) fetchedAll(resp *kmsg.OffsetFetchResponse, group string) (int16, model.Response, error) {
	out := model.NewResponse()
	code, topics := resp.ErrorCode, resp.Topics
	if resp.Version >= 8 {
		code, topics = kerr.UnknownServerError.Code, nil
		for _, g := range resp.Groups {
			if g.Group == group {
				code = g.ErrorCode
				for _, t := range g.Topics {
					topics = append(topics, kmsg.OffsetFetchResponseTopic{Topic: t.Topic, Partitions: groupPartitions(t.Partitions)})
					topics[len(topics)-1].Topic, _ = c.topic(t.Topic, t.TopicID, resp.Version >= offsetFetchTopicIDs)
				}
			}
		}
	}
	if code != 0 {
		return code, out, nil
	}
	for _, t := range topics {
		if t.Topic == "" {
			return 0, out, errors.New("an OffsetFetch of all partitions lists a topic whose id names none")
		}
		for _, p := range t.Partitions {
			partition, ok := c.partition(t.Topic, p.Partition)
			switch {
			case !ok:
				continue
			case p.ErrorCode == kerr.UnstableOffsetCommit.Code:
				out.Unstable = append(out.Unstable, partition)
			case p.ErrorCode != 0:
				return 0, out, fmt.Errorf("an OffsetFetch of all partitions answers %s with error %d", partition, p.ErrorCode)
			case p.Offset < 0:
				// The format lists committed offsets, which are 0 or more.
				return 0, out, fmt.Errorf("an OffsetFetch of all partitions lists %s at offset %d", partition, p.Offset)
			default:
				if out.FetchedOffsets == nil {
					out.FetchedOffsets = map[model.Partition]int64{}
				}
				out.FetchedOffsets[partition] = p.Offset
			}
		}
	}
	return 0, out, nil
}

// groupPartitions is a v8+ answer's partitions in the shape of an older
// one's.
func groupPartitions(ps []kmsg.OffsetFetchResponseGroupTopicPartition) []kmsg.OffsetFetchResponseTopicPartition {
	out := make([]kmsg.OffsetFetchResponseTopicPartition, len(ps))
	for i, p := range ps {
		out[i] = kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: p.Offset, ErrorCode: p.ErrorCode}
	}
	return out
}

// fetchedOffset is the answer for one partition: a group's error speaks
// for its partitions, and a partition the answer leaves out is an error.
// The metadata is the one committed with the offset; "" when none.
func (c *Client) fetchedOffset(resp *kmsg.OffsetFetchResponse, gp groupPartition) (int64, string, int16) {
	if resp.Version < 8 {
		if resp.ErrorCode != 0 {
			return model.NoOffset, "", resp.ErrorCode
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if t.Topic == gp.topic && p.Partition == gp.partition {
					return p.Offset, wire.Nullable(p.Metadata), p.ErrorCode
				}
			}
		}
		return model.NoOffset, "", kerr.UnknownServerError.Code
	}
	for _, g := range resp.Groups {
		if g.Group != gp.group {
			continue
		}
		if g.ErrorCode != 0 {
			return model.NoOffset, "", g.ErrorCode
		}
		for _, t := range g.Topics {
			name, ok := c.topic(t.Topic, t.TopicID, resp.Version >= offsetFetchTopicIDs)
			for _, p := range t.Partitions {
				if ok && name == gp.topic && p.Partition == gp.partition {
					return p.Offset, wire.Nullable(p.Metadata), p.ErrorCode
				}
			}
		}
	}
	return model.NoOffset, "", kerr.UnknownServerError.Code
}

// partition is the history's name of a cluster partition, false when its
// topic is not one the history holds.
func (c *Client) partition(topic string, p int32) (model.Partition, bool) {
	name, ok := c.cfg.Cluster.Name(topic)
	if !ok {
		return "", false
	}
	return model.Partition(name + "-" + strconv.Itoa(int(p))), true
}

// result is the model's result for a Kafka error code; a code the history
// format has no name for, or cannot hold for kind, is undecided
// (wire.Result).
func (c *Client) result(kind model.Kind, code int16, resp model.Response) model.Result {
	res, err := wire.Result(kind, code, resp)
	if err != nil {
		return c.undecided(kind, "%v", err)
	}
	return res
}

// undecided is the result of an answer the history cannot hold (one that
// does not parse, a code it has no name for): REQUEST_TIMED_OUT, which
// decides nothing, with the reason logged.
func (c *Client) undecided(kind model.Kind, format string, args ...any) model.Result {
	c.cfg.Logf("recorder: %s of %s undecided: %s", kind, c.proc, fmt.Sprintf(format, args...))
	return model.Fail(model.RequestTimedOut)
}
