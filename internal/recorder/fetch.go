package recorder

import (
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// Fetches, read as the history's fetch operations, one per partition the
// answer carries. In a fetch session (KIP-227) a request lists only the
// partitions whose position changed since the last one of its session, so
// each connection keeps its sessions' positions, as the broker does
// (FetchSession.java): a full request (epoch 0) starts a session with
// its partitions, the id comes back in the answer, and each incremental
// request (epoch 1, 2, ...) adds or moves the partitions it lists and
// drops the ones it forgets. A request of epoch -1 stands alone.

// fetchTopicIDs is the first Fetch that names topics by id.
const fetchTopicIDs = 13

// readCommitted is Fetch's isolation level for read_committed.
const readCommitted = 1

// fetchSessions is one connection's fetch sessions: each one's partitions
// and their positions.
type fetchSessions struct {
	mu       sync.Mutex
	sessions map[int32]map[model.Partition]int64
}

// positions is where req reads each partition from, in its session.
func (f *fetchSessions) positions(c *Client, req *kmsg.FetchRequest) map[model.Partition]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions == nil {
		f.sessions = map[int32]map[model.Partition]int64{}
	}
	at := map[model.Partition]int64{}
	if req.SessionEpoch > 0 {
		at = f.sessions[req.SessionID]
		if at == nil {
			return nil // a session this connection never started: its positions are unknown
		}
	}
	byID := req.Version >= fetchTopicIDs
	for _, topic := range req.Topics {
		name, ok := c.topic(topic.Topic, topic.TopicID, byID)
		for _, p := range topic.Partitions {
			if mp, ok2 := c.partition(name, p.Partition); ok && ok2 {
				at[mp] = p.FetchOffset
			}
		}
	}
	for _, topic := range req.ForgottenTopics {
		name, ok := c.topic(topic.Topic, topic.TopicID, byID)
		for _, p := range topic.Partitions {
			if mp, ok2 := c.partition(name, p); ok && ok2 {
				delete(at, mp)
			}
		}
	}
	if req.SessionEpoch > 0 {
		f.sessions[req.SessionID] = at
	}
	return maps.Clone(at)
}

// started notes the session a full request's answer created.
func (f *fetchSessions) started(id int32, at map[model.Partition]int64) {
	if id == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[id] = maps.Clone(at)
}

// fetch begins a fetch per partition the request reads, in its session;
// those the answer leaves out (nothing new there) are left out of the
// history.
func (c *Client) fetch(req *kmsg.FetchRequest, sessions *fetchSessions) []observed {
	at := sessions.positions(c, req)
	isolation := model.ReadUncommitted
	if req.IsolationLevel == readCommitted {
		isolation = model.ReadCommitted
	}
	var once sync.Once
	newSession := func(resp *kmsg.FetchResponse) {
		if req.SessionEpoch == 0 {
			once.Do(func() { sessions.started(resp.SessionID, at) })
		}
	}
	var ops []observed
	for _, p := range slices.Sorted(maps.Keys(at)) {
		r := model.NewRequest()
		r.Partition, r.Offset, r.Isolation = p, at[p], isolation
		answer := func(resp kmsg.Response) (model.Result, fate) {
			fr, ok := resp.(*kmsg.FetchResponse)
			if !ok {
				return c.undecided(model.Fetch, "the answer is a %T", resp), ended
			}
			newSession(fr)
			got, ok := c.fetchedPartition(fr, p)
			if !ok || fr.ErrorCode != 0 || got.ErrorCode != 0 {
				return model.Result{}, notTaken // nothing read: not an operation of the history
			}
			if !c.recording {
				return model.OK(model.NewResponse()), ended // what it read goes nowhere
			}
			batches, err := wire.DecodeBatches(got.RecordBatches)
			if err != nil {
				return c.undecided(model.Fetch, "unreadable records of %s: %v", p, err), ended
			}
			out := model.NewResponse()
			out.HighWatermark, out.LastStableOffset = got.HighWatermark, got.LastStableOffset
			out.Records = wire.CommittedView(batches, got.AbortedTransactions, isolation == model.ReadCommitted, r.Offset)
			return model.OK(out), ended
		}
		ops = append(ops, observed{op: c.begin(model.Fetch, req.Version, r), answer: answer})
	}
	return ops
}

// fetchedPartition is the answer's partition p, if it has it.
func (c *Client) fetchedPartition(resp *kmsg.FetchResponse, p model.Partition) (kmsg.FetchResponseTopicPartition, bool) {
	for _, topic := range resp.Topics {
		name, ok := c.topic(topic.Topic, topic.TopicID, resp.Version >= fetchTopicIDs)
		for _, rp := range topic.Partitions {
			if mp, ok2 := c.partition(name, rp.Partition); ok && ok2 && mp == p {
				return rp, true
			}
		}
	}
	return kmsg.FetchResponseTopicPartition{}, false
}
