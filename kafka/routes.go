package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator types of FindCoordinator.
const (
	groupCoordinator int8 = 0
	txnCoordinator   int8 = 1
)

// routes knows where requests go: the coordinator of a group or a
// transactional id, the leader of a partition, and topic ids (which newer
// Produce and Fetch versions name topics by). What it knows may go stale;
// a broker that says it is not the one makes it look again.
type routes struct {
	names  names
	topics map[string]int32 // the model's topics and partition counts

	mu           sync.Mutex
	cl           *kgo.Client // replaced when the broker restarts
	coordinators map[coordinatorKey]int32
	leaders      map[string][]int32 // cluster topic -> leader by partition
	topicIDs     map[string][16]byte
	brokers      []int32 // sorted
}

type coordinatorKey struct {
	kind int8
	key  string
}

func newRoutes(cl *kgo.Client, n names, topics map[string]int32) *routes {
	r := &routes{cl: cl, names: n, topics: topics}
	r.forgetAll()
	return r
}

// client is the client requests go through now.
func (r *routes) client() *kgo.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cl
}

// replaceClient puts cl in the old client's place, forgetting every route,
// and returns the old client.
func (r *routes) replaceClient(cl *kgo.Client) *kgo.Client {
	r.forgetAll()
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cl
	r.cl = cl
	return old
}

func (r *routes) forgetAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.coordinators = map[coordinatorKey]int32{}
	r.leaders = map[string][]int32{}
	r.topicIDs = map[string][16]byte{}
}

// errNotSent says a request never left the client: sending it again cannot
// apply it twice.
var errNotSent = errors.New("not sent")

// coordinator is the broker coordinating key.
func (r *routes) coordinator(ctx context.Context, kind int8, key string) (int32, error) {
	ck := coordinatorKey{kind, key}
	r.mu.Lock()
	id, ok := r.coordinators[ck]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys, req.CoordinatorType = key, []string{key}, kind
	resp, err := req.RequestWith(ctx, r.client())
	if err != nil {
		return 0, fmt.Errorf("%w: finding the coordinator of %q: %v", errNotSent, key, err)
	}
	id, code := resp.NodeID, resp.ErrorCode
	if len(resp.Coordinators) > 0 {
		id, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return 0, fmt.Errorf("%w: finding the coordinator of %q: %v", errNotSent, key, err)
	}
	r.mu.Lock()
	r.coordinators[ck] = id
	r.mu.Unlock()
	return id, nil
}

func (r *routes) forgetCoordinator(kind int8, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.coordinators, coordinatorKey{kind, key})
}

// leader is the broker leading tp, with the topic's id.
func (r *routes) leader(ctx context.Context, tp topicPartition) (int32, [16]byte, error) {
	if _, ok := r.topics[tp.model]; !ok {
		return 0, [16]byte{}, fmt.Errorf("topic %q is not among the configured topics", tp.model)
	}
	if id, topicID, ok := r.cachedLeader(tp); ok {
		return id, topicID, nil
	}
	if err := r.loadMetadata(ctx); err != nil {
		return 0, [16]byte{}, err
	}
	if id, topicID, ok := r.cachedLeader(tp); ok {
		return id, topicID, nil
	}
	return 0, [16]byte{}, fmt.Errorf("%w: no leader known for %s partition %d", errNotSent, tp.topic, tp.partition)
}

// topicID is the cluster's id of tp's topic, zero when it cannot be learnt
// (the request then names the topic by name, which older versions use).
func (r *routes) topicID(ctx context.Context, tp topicPartition) [16]byte {
	_, id, _ := r.leader(ctx, tp)
	return id
}

func (r *routes) cachedLeader(tp topicPartition) (int32, [16]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	leaders := r.leaders[tp.topic]
	if int(tp.partition) >= len(leaders) || tp.partition < 0 || leaders[tp.partition] < 0 {
		return 0, [16]byte{}, false
	}
	return leaders[tp.partition], r.topicIDs[tp.topic], true
}

func (r *routes) forgetLeaders() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaders = map[string][]int32{}
}

// loadMetadata learns the leaders and ids of the configured topics.
func (r *routes) loadMetadata(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	for _, model := range slices.Sorted(maps.Keys(r.topics)) {
		rt := kmsg.NewMetadataRequestTopic()
		name := r.names.topic(model)
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, r.client())
	if err != nil {
		return fmt.Errorf("%w: metadata: %v", errNotSent, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.brokers = r.brokers[:0]
	for _, b := range resp.Brokers {
		r.brokers = append(r.brokers, b.NodeID)
	}
	slices.Sort(r.brokers)
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		leaders := make([]int32, len(t.Partitions))
		for i := range leaders {
			leaders[i] = -1
		}
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Partition >= 0 && int(p.Partition) < len(leaders) {
				leaders[p.Partition] = p.Leader
			}
		}
		r.leaders[*t.Topic] = leaders
		r.topicIDs[*t.Topic] = t.TopicID
	}
	return nil
}

// topicByID is the cluster topic of a topic id (newer requests name
// topics by id), looking the ids up again when it is not known.
func (r *routes) topicByID(ctx context.Context, id [16]byte) (string, bool) {
	for range 2 {
		r.mu.Lock()
		for topic, known := range r.topicIDs {
			if known == id {
				r.mu.Unlock()
				return topic, true
			}
		}
		r.mu.Unlock()
		if r.loadMetadata(ctx) != nil {
			break
		}
	}
	return "", false
}

// anyBroker is a broker for requests any broker answers: the lowest id.
func (r *routes) anyBroker(ctx context.Context) (int32, error) {
	if id, ok := r.firstBroker(); ok {
		return id, nil
	}
	if err := r.loadMetadata(ctx); err != nil {
		return 0, err
	}
	if id, ok := r.firstBroker(); ok {
		return id, nil
	}
	return 0, fmt.Errorf("%w: no broker known", errNotSent)
}

func (r *routes) firstBroker() (int32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.brokers) == 0 {
		return 0, false
	}
	return r.brokers[0], true
}

// route is where one request goes, how to tell from its answer that it went
// to the wrong broker, and how to forget that broker.
type route struct {
	pick   func(ctx context.Context) (int32, error)
	forget func()
	// misrouted extracts the error codes of the answer that say the broker
	// did nothing because it is not the one (the request may go again).
	codes func(kmsg.Response) []int16
}

// retryBackoff is the wait before sending a request that was not applied
// again.
const retryBackoff = 20 * time.Millisecond

// send sends req along rt until a broker that is the right one answers, the
// send may have reached a broker (err is not errNotSent then), or ctx ends.
func (r *routes) send(ctx context.Context, rt route, req kmsg.Request) (kmsg.Response, error) {
	for {
		resp, err := r.sendOnce(ctx, rt, req)
		if err == nil || !errors.Is(err, errNotSent) {
			return resp, err
		}
		rt.forget()
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(retryBackoff):
		}
	}
}

func (r *routes) sendOnce(ctx context.Context, rt route, req kmsg.Request) (kmsg.Response, error) {
	id, err := rt.pick(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := r.client().Broker(int(id)).Request(ctx, req)
	if err != nil {
		if neverSent(err) {
			return nil, fmt.Errorf("%w: %v", errNotSent, err)
		}
		return nil, err
	}
	// kgo sets the version it negotiated on the request it sends, and the
	// response answers that version: the history records it.
	model.NoteVersion(ctx, resp.GetVersion())
	for _, code := range rt.codes(resp) {
		if wire.Misrouted(code) {
			return resp, fmt.Errorf("%w: broker %d answered %v", errNotSent, id, kerr.ErrorForCode(code))
		}
	}
	return resp, nil
}

// neverSent reports whether a request error means the request never reached
// a broker: a failed dial, or a broker the client does not know.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	// kgo's errUnknownBroker is not exported; its text is stable.
	return err.Error() == "unknown broker"
}
