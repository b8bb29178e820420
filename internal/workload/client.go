package workload

import "github.com/fencecheck/fencecheck/model"

// client is one simulated process's logic: a deterministic state machine
// that says what it sends next and learns from each answer. It talks to
// the broker only through requests, as a real client does.
type client interface {
	// next is the request to send, or false when there is nothing to do.
	next() (model.Op, bool)
	// learn takes the broker's answer to op (never an unanswered one: a
	// lost response is retried by the scheduler).
	learn(op model.Op, res model.Result)
	// closed reports that the client stopped for good (fenced).
	closed() bool
	// inTxn reports that a transaction is open.
	inTxn() bool
	// idle reports that the client has nothing to do but wait: its work is
	// done, or (a worker) it can only poll its group for more.
	idle() bool
}

// producer is what a transactional or idempotent producer holds: its
// producer id and epoch, and the next sequence per partition (KIP-98).
type producer struct {
	txnID string // "": idempotent only
	pid   int64
	epoch int16
	seqs  map[model.Partition]int32
}

func newProducer(txnID string) producer {
	return producer{txnID: txnID, pid: model.NoProducerID, epoch: model.NoEpoch, seqs: map[model.Partition]int32{}}
}

// transactionalID is the id a client's producer runs under; "" for one
// with none.
func transactionalID(c client) string {
	if p, ok := c.(interface{ transactionalID() string }); ok {
		return p.transactionalID()
	}
	return ""
}

func (p *producer) transactionalID() string { return p.txnID }

// sessionHolder is a client with a producer of its own.
type sessionHolder interface{ session() *producer }

func (p *producer) session() *producer { return p }

// sessionOf is c's producer, if it has one.
func sessionOf(c client) (*producer, bool) {
	if h, ok := c.(sessionHolder); ok {
		return h.session(), true
	}
	return nil, false
}

// request is a request carrying the producer's identity.
func (p *producer) request() model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = p.txnID, p.pid, p.epoch
	return r
}

func (p *producer) initOp() model.Op {
	r := model.NewRequest()
	r.TransactionalID = p.txnID
	return model.Op{Kind: model.InitProducerID, Req: r}
}

func (p *producer) produceOp(part model.Partition, key, value string) model.Op {
	r := p.request()
	r.Partition, r.Sequence = part, p.seqs[part]
	r.Records = []model.Record{{Key: key, Value: value}}
	return model.Op{Kind: model.Produce, Req: r}
}

func (p *producer) addPartitionsOp(part model.Partition) model.Op {
	r := p.request()
	r.Partitions = []model.Partition{part}
	return model.Op{Kind: model.AddPartitions, Req: r}
}

func (p *producer) endTxnOp(commit bool) model.Op {
	r := p.request()
	r.Commit = commit
	return model.Op{Kind: model.EndTxn, Req: r}
}

// takeGrant adopts a (producer id, epoch) the broker handed out; sequences
// start again at 0 for a new (id, epoch) (KIP-98).
func (p *producer) takeGrant(resp model.Response) {
	if resp.ProducerID == model.NoProducerID {
		return // transactions v1: EndTxn hands out nothing
	}
	if resp.ProducerID != p.pid || resp.Epoch != p.epoch {
		clear(p.seqs)
	}
	p.pid, p.epoch = resp.ProducerID, resp.Epoch
}

// answer classifies a result the way a client library reacts to it.
type answer int

const (
	succeeded answer = iota
	fenced           // fatal: the producer (or consumer) is a zombie
	retry            // send the same request again
	abortable        // abort the transaction and start the work again
)

// react handles what every client does alike: a fenced client closes, a
// retriable answer is sent again, an abortable one is recovered from. It
// reports whether the answer succeeded and is the client's to learn from.
func react(op model.Op, res model.Result, closeClient func(), recover func(model.Op, model.Result)) bool {
	switch classify(op.Kind, res) {
	case fenced:
		closeClient()
	case abortable:
		recover(op, res)
	case succeeded:
		return true
	}
	return false
}

func classify(k model.Kind, res model.Result) answer {
	if res.Err == model.InvalidProducerEpoch {
		// KIP-588: a produce refused for its epoch is abortable; the
		// client aborts (and learns then whether it is fenced for good).
		return abortable
	}
	switch model.ClassOf(k, res.Err) {
	case model.Success, model.Duplicate:
		return succeeded
	case model.FencedProducer, model.WrongProducerID:
		return fenced
	case model.Busy, model.Undecided, model.Unstable:
		return retry
	}
	return abortable
}
