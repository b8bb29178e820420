// Package recorder reads a Kafka client's requests and responses off its
// connections and records them as operations of the history format
// (docs/history-format.md), whatever the client library: the frames hold
// every field a history needs, where a library's own hooks see only a
// request's key and size. It imposes the workload's faults at the same
// connections: a stall holds what the client sends and receives until it
// wakes (a garbage-collection pause: its heartbeats stop too), a crash drops
// its connections with nothing said (no LeaveGroup), and a lost response is
// a request that went out on a connection that closed before the answer came
// back.
//
// A Client is one process of the history. The Kafka target's franz-go
// workers dial through one (Client.Dial), and the proxy taps the
// upstream connection of each client it serves (Client.Tap).
package recorder

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/fencecheck/fencecheck/model"
)

// Observer is told of the requests a client sends, as operations of the
// history format; histories.Recorder is one. end is called with the
// answer, or unanswered when the connection closed first, and never for
// a request the broker did not take up (misrouted).
//
// proc is the request's lane (Client), and client the client's process
// when the lane is not its first, "" when it is: the history's
// operations carry both (histories.Op.Client).
//
// A produce's records may be read beside the request going on to the
// broker, so that reading them does not slow it. So op.Req.Records holds
// them once end is called, and must not be read before. Its length is
// right from the call on.
type Observer interface {
	Observe(proc, client string, op model.Op) (end func(model.Result))
}

// LeavingObserver is an Observer that is also told when an operation is
// left out: leave is called instead of end, once. histories.Recorder is
// one, so that it knows which operations are still in flight.
type LeavingObserver interface {
	Observer
	ObserveLeaving(proc, client string, op model.Op) (end func(model.Result), leave func())
}

// Cluster is what the recorder needs to know of the cluster a client
// talks to.
type Cluster interface {
	// Name is the history's name for one of the cluster's topics,
	// transactional ids or groups; false leaves the request out, as one
	// the history does not hold.
	Name(cluster string) (string, bool)
	// Partitions is how many partitions a topic of the history has
	// (a subscription spreads them all).
	Partitions(topic string) int32
	// TopicByID is the cluster topic of a topic id; newer requests name
	// topics by id.
	TopicByID(ctx context.Context, id [16]byte) (string, bool)
	// Millis is a timeout a client asked for (a transaction's, a
	// session's) in the history's milliseconds.
	Millis(ms int32) int64
}

// Config is what every Client of one recording shares.
type Config struct {
	// Observer records the operations; nil records nothing (the faults
	// still apply).
	Observer Observer
	Cluster  Cluster
	// Logf is told why an operation is undecided (an answer that does
	// not parse, an error code the history format has no name for);
	// default nothing.
	Logf func(format string, args ...any)
	// AnswersAfterForwarding has a response read once the client has it,
	// when its connection's next Read begins, rather than before Read
	// returns it. So a proxy forwards an answer without waiting for the
	// recording. It is for a reader that reads on as soon as it has
	// passed a response on, as the proxy does: an answer is recorded
	// no later than the next Read, Write or Close of the client's
	// connections.
	AnswersAfterForwarding bool
}

// DialFunc dials a connection, as net.Dialer.DialContext and kgo.Dialer.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Client records and faults one client instance, process proc of the
// history.
//
// A client has several requests in flight at once (a produce, a commit,
// a join waiting for the group), and a process's operations must not
// overlap; so each operation takes a lane, the process's name for the
// first and proc.2, proc.3, ... for those in flight beside it.
type Client struct {
	cfg  Config
	proc string
	// recording: an Observer was given. Without one, a request's
	// operations matter only to a fault armed for it.
	recording bool

	mu      sync.Mutex
	lanes   map[string][]bool   // busy, by instance (instanceOf)
	joins   map[string]*pending // member id -> its join_group, open until a JoinGroup answers
	members map[string]bool     // those whose join_group answered, who may leave
	// subscriptions are each joined member's partitions to spread, the
	// order a SyncGroup's assignment is written in.
	subscriptions map[string][]model.Partition
	conns         map[*conn]bool
	faults        faults
	// topicNames are the cluster's topics by id, as found so far.
	topicNames map[[16]byte]string
	// txnID is the first transactional id the process used (see
	// instanceOf).
	txnID string
	// spokeV1, spokeV2: an EndTxn of transactions v1, v2 went out.
	spokeV1, spokeV2 bool
}

// TransactionsVersion is the transaction protocol the client's EndTxns
// spoke: 2 (KIP-890) when each went out at version 5 or later, 1 when
// each was older, 0 when it sent none, or both kinds. A Kafka 4 broker
// runs a transaction in the protocol its client speaks (KafkaApis'
// handleEndTxnRequest: TransactionVersion.transactionVersionForEndTxn,
// v2 from EndTxn version 5), so a client library that does
// not speak KIP-890 is answered in transactions v1 there too.
func (c *Client) TransactionsVersion() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.spokeV1 && !c.spokeV2:
		return 1
	case c.spokeV2 && !c.spokeV1:
		return 2
	}
	return 0
}

func (c *Client) noteEndTxnVersion(version int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version >= endTxnAnswersEpoch {
		c.spokeV2 = true
	} else {
		c.spokeV1 = true
	}
}

// New is the recording of process proc.
func New(proc string, cfg Config) *Client {
	recording := cfg.Observer != nil
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Client{cfg: cfg, proc: proc, recording: recording, lanes: map[string][]bool{}, joins: map[string]*pending{},
		members: map[string]bool{}, subscriptions: map[string][]model.Partition{}, conns: map[*conn]bool{},
		topicNames: map[[16]byte]string{}}
}

// Dial is dial, for the client: a crashed client dials nowhere, and every
// connection is tapped.
func (c *Client) Dial(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if err := c.gate(ctx.Done()); err != nil {
			return nil, err
		}
		raw, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		tapped := c.tap(raw)
		tapped.dial, tapped.address = dial, address
		return tapped, nil
	}
}

// Tap records what goes over raw, a connection to the cluster: what is
// written to it are the client's requests, what is read its responses.
func (c *Client) Tap(raw net.Conn) net.Conn { return c.tap(raw) }

func (c *Client) tap(raw net.Conn) *conn {
	tapped := &conn{Conn: raw, c: c, inflight: map[int32]inflight{}, closed: make(chan struct{})}
	c.mu.Lock()
	c.conns[tapped] = true
	c.mu.Unlock()
	return tapped
}

// Close ends what is still in flight unanswered: the client is gone. A
// member's rejoin never answered is unanswered; a new member's join that
// only learned its member id never joined, and is left out.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.connList()
	joins := c.joins
	c.joins = map[string]*pending{}
	c.mu.Unlock()
	for _, tapped := range conns {
		tapped.lost()
	}
	for _, p := range joins {
		switch {
		case p.memberID != "":
			c.finish(p, model.NoAnswer())
		default:
			c.leaveOut(p)
		}
	}
}

// connList is the open connections; the caller holds c.mu.
func (c *Client) connList() []*conn {
	conns := make([]*conn, 0, len(c.conns))
	for tapped := range c.conns {
		conns = append(conns, tapped)
	}
	return conns
}

// leaves reports whether member joined (its JoinGroup answered), and
// forgets it: a member that never joined leaves nothing the history
// knows of.
func (c *Client) leaves(member string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	joined := c.members[member]
	delete(c.members, member)
	delete(c.subscriptions, member)
	return joined
}

// pending is one operation in flight.
//
// It keeps only the fields of its request that the recorder reads again,
// not the whole request, which the observer holds: a recording makes
// one for every request, and the smaller it is the less it costs.
type pending struct {
	instance string
	lane     int
	kind     model.Kind
	// memberID is the request's, and learned is a join_group's member
	// id, learned from MEMBER_ID_REQUIRED.
	memberID, learned string
	partition         model.Partition   // a produce's
	partitions        []model.Partition // a join_group's subscription
	end               func(model.Result)
	leave             func() // nil when the observer is not told
	// reading has a produce's records in the request's Records (read
	// then, or beside the request going on) and says whether they
	// read; nil for any other operation.
	reading func() error
}

// begin records an operation's call on a free lane.
// version is the API version of the request the operation was read from.
func (c *Client) begin(kind model.Kind, version int16, req model.Request) *pending {
	c.mu.Lock()
	instance := c.instanceOf(req.TransactionalID)
	lanes := c.lanes[instance]
	lane := slices.Index(lanes, false)
	if lane < 0 {
		lane = len(lanes)
		lanes = append(lanes, false)
	}
	lanes[lane] = true
	c.lanes[instance] = lanes
	c.mu.Unlock()
	proc, client := c.laneName(instance, lane)
	p := &pending{instance: instance, lane: lane, kind: kind, memberID: req.MemberID, partition: req.Partition, partitions: req.Partitions}
	op := model.Op{Kind: kind, Req: req, APIVersion: model.AtVersion(version)}
	if lo, ok := c.cfg.Observer.(LeavingObserver); ok {
		p.end, p.leave = lo.ObserveLeaving(proc, client, op)
	} else {
		p.end = c.cfg.Observer.Observe(proc, client, op)
	}
	return p
}

// instanceOf is the process of the history that a request carrying
// transactional id txnID (or none) belongs to. Client instances that
// share a client.id are one client of the proxy's (librdkafka names every
// one "rdkafka"; sarama's exactly-once example gives each partition a
// producer of its own), but a transactional id is one producer's: the
// process's first keeps its name, each other one is a process of its
// own, proc[txnID], whose client is proc (histories.Op.Client), so that
// its commits are still related to the client's joins. Requests with no
// transactional id (fetches, joins) are the client's.
func (c *Client) instanceOf(txnID string) string {
	if c.txnID == "" {
		c.txnID = txnID
	}
	if txnID == "" || txnID == c.txnID {
		return c.proc
	}
	return c.proc + "[" + txnID + "]"
}

// laneName is the process name of an instance's lane, and the client's
// when it is not the client's own first lane.
func (c *Client) laneName(instance string, lane int) (string, string) {
	name := instance
	if lane > 0 {
		name += "." + strconv.Itoa(lane+1)
	}
	if name == c.proc {
		return name, ""
	}
	return name, c.proc
}

// finish records an operation's result and frees its lane. A member whose
// join_group succeeded may leave.
func (c *Client) finish(p *pending, res model.Result) {
	if p.reading != nil {
		if err := p.reading(); err != nil {
			// As a produce whose batch header does not read.
			c.cfg.Logf("recorder: %s's produce to %s is left out, because its records do not read: %v", c.proc, p.partition, err)
			c.leaveOut(p)
			return
		}
	}
	if p.kind == model.JoinGroup && res.Succeeded() {
		c.mu.Lock()
		c.members[res.Resp.MemberID] = true
		c.mu.Unlock()
	}
	p.end(res)
	c.free(p)
}

// leaveOut frees the lane of an operation never finished, and tells the
// observer that it is left out.
func (c *Client) leaveOut(p *pending) {
	if p.leave != nil {
		p.leave()
	}
	c.free(p)
}

// free frees an operation's lane.
func (c *Client) free(p *pending) {
	c.mu.Lock()
	c.lanes[p.instance][p.lane] = false
	c.mu.Unlock()
}

// member is the member a join_group is for, "" for another operation or a
// new member that has not learned its id.
func (p *pending) member() string {
	if p.kind != model.JoinGroup {
		return ""
	}
	if p.learned != "" {
		return p.learned
	}
	return p.memberID
}

// awaitRejoin keeps a member's join_group open until its next JoinGroup:
// the rejoin with the member id MEMBER_ID_REQUIRED gave (KIP-394), or the
// same JoinGroup asked again elsewhere.
func (c *Client) awaitRejoin(member string, p *pending) {
	c.mu.Lock()
	c.joins[member] = p
	c.mu.Unlock()
}

// noteSubscription keeps the partitions a joined member spreads.
func (c *Client) noteSubscription(member string, partitions []model.Partition) {
	c.mu.Lock()
	c.subscriptions[member] = partitions
	c.mu.Unlock()
}

// subscription is the partitions member joined to spread, nil when its
// join was not seen.
func (c *Client) subscription(member string) []model.Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subscriptions[member]
}

// takeJoin is the open join_group of member, if any.
func (c *Client) takeJoin(member string) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.joins[member]
	delete(c.joins, member)
	return p
}

// noObserver is the observer of a client whose requests are not recorded.
type noObserver struct{}

func (noObserver) Observe(string, string, model.Op) func(model.Result) {
	return func(model.Result) {}
}
