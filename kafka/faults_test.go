package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/internal/wire"
	"github.com/fencecheck/fencecheck/model"
)

// A broker restart keeps the log and the producer state rebuilt from it:
// the idempotent producer goes on with its next sequence, and the resend
// of its last batch is still recognised as a duplicate.
func TestBrokerRestartKeepsLogAndProducerState(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		got := s.ok("P", model.InitProducerID, initRequest(""))
		p := session{"", got.ProducerID, got.Epoch}
		require.Equal(t, int64(0), s.ok("P", model.Produce, p.produce(fares2, 0, "trip-9001")).BaseOffset)

		s.rec.Fault("broker", model.BrokerRestart, model.NewRequest())
		s.target.Restart()

		require.Equal(t, int64(1), s.ok("P", model.Produce, p.produce(fares2, 1, "trip-9002")).BaseOffset)
		require.Equal(t, int64(1), s.ok("P", model.Produce, p.produce(fares2, 1, "trip-9002")).BaseOffset)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9001", "trip-9002"}, keysOf(read.Records))
		s.check("broker-restart")
	})
}

// A transaction older than its timeout is aborted by the coordinator,
// which bumps the epoch: the producer that let it expire is fenced, and a
// committed read sees nothing of it. Time passes for real (Tick sleeps the
// scaled duration).
func TestTransactionTimeoutFences(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		req := initRequest("fare-writer-7")
		req.TimeoutMs = 10_000 // 100 ms of real time at the default scale
		got := s.ok("A", model.InitProducerID, req)
		a := session{"fare-writer-7", got.ProducerID, got.Epoch}
		if s.target.TransactionsVersion() == 1 {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))

		s.rec.Fault("clock", model.Tick, model.Request{Ms: 30_000})
		s.target.Tick(30_000)

		commit := s.send("A", model.EndTxn, a.endTxn(true))
		require.False(t, commit.Succeeded(), "%+v", commit)
		read := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Empty(t, read.Records)
		require.Equal(t, int64(2), read.HighWatermark) // the record and the ABORT marker
		s.check("transaction-timeout")
	})
}

// read_committed stops at the first offset of an open transaction and never
// returns an aborted one; read_uncommitted sees everything but markers.
func TestReadIsolation(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		ended := s.ok("A", model.EndTxn, a.endTxn(false)) // ABORT at 1
		if s.target.TransactionsVersion() == 2 {
			a.epoch = ended.Epoch
		} else {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		seq := int32(1)
		if s.target.TransactionsVersion() == 2 {
			seq = 0 // a new epoch starts its sequences again
		}
		s.ok("A", model.Produce, a.produce(fares2, seq, "trip-9002")) // 2, open

		committed := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Empty(t, committed.Records)
		require.Equal(t, int64(2), committed.LastStableOffset)
		uncommitted := s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadUncommitted))
		require.Equal(t, []string{"trip-9001", "trip-9002"}, keysOf(uncommitted.Records))

		s.ok("A", model.EndTxn, a.endTxn(true)) // COMMIT at 3
		committed = s.ok("reader", model.Fetch, fetchRequest(fares2, model.ReadCommitted))
		require.Equal(t, []string{"trip-9002"}, keysOf(committed.Records))
		require.Equal(t, int64(4), committed.HighWatermark)
		s.check("read-isolation")
	})
}

// A broker restart keeps an open transaction: the coordinator logged its
// partitions to __transaction_state (KIP-98), so the producer writes on
// into it after the restart. Under transactions v1 kfake forgets them
// (FINDINGS.md, 13).
func TestRestartKeepsOpenTransaction(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-7", fares2)
		s.rec.Fault("broker", model.BrokerRestart, model.Request{})
		s.target.Restart()
		s.send("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		s.send("A", model.EndTxn, a.endTxn(true))
		s.check("restart-keeps-open-txn")
	})
}

// Ticks add up: a transaction open across two 50 s ticks is past its 60 s
// timeout after the second, though neither tick alone reaches it. The
// coordinator then aborts it and fences its producer
// (TransactionStateManager.timedOutTransactions, abortTimedOutTransactions:
// prepareFenceProducerEpoch), and a new owner's init bumps again: epoch 2.
// On kfake, whose timer is its own wall clock, the target's Ticks must let
// the scaled timeout (600 ms) run out over both ticks together; when each
// Tick waited at most its own scaled length (500 ms), after a first that
// found nothing due and returned at once, the transaction was still open
// at the init, which kfake answered at epoch 1 (FINDINGS.md, 14). One
// 100 s tick is the control. A broker restart between the ticks moves
// the transaction's start on kfake by the outage, not in the model's
// time.
func TestTicksAddUpToTransactionTimeout(t *testing.T) {
	const restart = 0
	for _, c := range []struct {
		name  string
		ticks []int64
	}{
		{"one-tick", []int64{100_000}},
		{"two-ticks", []int64{50_000, 50_000}},
		{"two-ticks-and-a-restart", []int64{50_000, restart, 50_000}},
		// The restart's outage outlasts the first tick (10 ms): the
		// start kfake tells after it is past that tick's end.
		{"a-short-tick-a-restart-and-the-rest", []int64{1_000, restart, 59_001}}, // past the timeout: at it, a transaction is kept
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, s *scenario) {
				a := s.begin("A", "fare-writer-1", fares2)
				s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
				for _, ms := range c.ticks {
					if ms == restart {
						s.rec.Fault("broker", model.BrokerRestart, model.Request{})
						s.target.Restart()
						continue
					}
					s.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
					s.target.Tick(ms)
				}
				owner := s.ok("C", model.InitProducerID, initRequest("fare-writer-1"))
				require.Equal(t, a.epoch+2, owner.Epoch, "the timeout's fence and the init each bump the epoch")
				s.check("ticks-add-up-" + c.name)
			})
		})
	}
}

// A Tick waits for a transaction's timeout from the transaction's start,
// not from the producer's init: here the init is 111 s old at the second
// tick, past the 60 s timeout, but the transaction began at the first
// produce, 50 s before. A Tick that counted the timeout from the init and
// waited out its deadline left kfake's transaction, begun a few real
// milliseconds after the init (the first tick, with nothing open, returned
// at once), just short of its own, and the broker restart's outage then
// ran it out: the commit was refused where the model, with 10 s of the
// timeout left, has it succeed.
func TestTickCountsFromTheTransactionsStart(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-1")
		tick := func(ms int64) {
			s.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
			s.target.Tick(ms)
		}
		tick(61_000)
		if s.target.TransactionsVersion() == 1 {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
		tick(50_000)
		s.rec.Fault("broker", model.BrokerRestart, model.Request{})
		s.target.Restart()
		s.ok("A", model.EndTxn, a.endTxn(true))
		s.check("tick-counts-from-txn-start")
	})
}

// Two transactions a tick apart: at the second tick the model aborts the
// first (begun 100 s before, past its 60 s timeout) and keeps the second
// (begun 50 s before). The first tick, with a transaction open and none
// due, must last its whole length: had it returned at once, the second
// transaction would have begun on kfake a few real milliseconds after the
// first, and waiting out the first's timeout would have left the second
// just short of its own, to run out in the broker restart's outage.
func TestTicksKeepOpenTransactionsInStep(t *testing.T) {
	const fares1 model.Partition = "fares-1"
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		tick := func(ms int64) {
			s.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
			s.target.Tick(ms)
		}
		a := s.begin("A", "fare-writer-0", fares1)
		s.ok("A", model.Produce, a.produce(fares1, 0, "trip-101"))
		tick(50_000)
		b := s.begin("B", "fare-writer-1", fares2)
		s.ok("B", model.Produce, b.produce(fares2, 0, "trip-201"))
		tick(50_000)
		s.rec.Fault("broker", model.BrokerRestart, model.Request{})
		s.target.Restart()
		s.ok("B", model.EndTxn, b.endTxn(true))
		owner := s.ok("C", model.InitProducerID, initRequest("fare-writer-0"))
		require.Equal(t, a.epoch+2, owner.Epoch, "the timeout's fence and the init each bump the epoch")
		s.check("ticks-keep-open-txns-in-step")
	})
}

// A tick that lasts its whole length for an open transaction still stops
// short of its timeout when the model keeps it: a 50.1 s timeout scales
// to 501 ms, past the 500 ms of a 50 s tick, and the model, 100 ms short
// of it, keeps the transaction open; the tick stops tickSlack short of
// the broker's deadline.
func TestTickStopsShortOfAKeptTransaction(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		req := initRequest("fare-writer-7")
		req.TimeoutMs = 50_100
		got := s.ok("A", model.InitProducerID, req)
		a := session{"fare-writer-7", got.ProducerID, got.Epoch}
		if s.target.TransactionsVersion() == 1 {
			s.ok("A", model.AddPartitions, a.addPartitions(fares2))
		}
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-9001"))
		s.rec.Fault("clock", model.Tick, model.Request{Ms: 50_000})
		s.target.Tick(50_000)
		s.ok("A", model.EndTxn, a.endTxn(true))
		s.check("tick-stops-short-of-kept-txn")
	})
}

// A tick that would leave a transaction nearly due on kfake is lengthened
// to its deadline, so that the model aborts it at that tick, as kfake is
// about to. After a 50 s tick, a transaction begun just before has 10 s
// (100 ms at the default scale) of its 60 s left, and keeps them: the
// zombie consumer such a tick evicts keeps its producer. A 1 s tick then
// would leave it 9 s, which a restart and a few requests took on kfake's
// clock in round 8 (FINDINGS.md): it runs on to 1 ms past the deadline.
// The new owner's init then finds the transaction aborted and its
// producer fenced: epoch 2.
func TestATickLeavingATransactionNearlyDueRunsToItsDeadline(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		a := s.begin("A", "fare-writer-1", fares2)
		s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
		tick := func(ms int64) int64 {
			ms = s.target.TickLength(ms)
			s.rec.Fault("clock", model.Tick, model.Request{Ms: ms})
			s.target.Tick(ms)
			return ms
		}
		require.Equal(t, int64(50_000), tick(50_000), "10 s of the timeout left are kept")
		require.Equal(t, int64(10_001), tick(1_000), "9 s left are nearly due: the tick runs past the deadline")
		owner := s.ok("C", model.InitProducerID, initRequest("fare-writer-1"))
		require.Equal(t, a.epoch+2, owner.Epoch, "the timeout's fence and the init each bump the epoch")
		s.check("tick-runs-to-nearly-due-deadline")
	})
}

// kfake's coordinator, in raw requests: InitProducerId,
// AddPartitionsToTxn, then InitProducerId again answers epoch 2 once the
// transaction's timeout has run out on kfake's clock (the timeout abort
// bumped the epoch, as Kafka's prepareFenceProducerEpoch does, and the
// init bumped it again), and, the control, epoch 1 while it has not
// (kfake fences an open transaction in one step, which the model
// accepts: TestFencedAbortAfterInit). That is why finding 14 is the
// target's: the epoch says whether the timer ran out on kfake's clock,
// and how much of that clock passes is the target's Tick's to decide.
func TestKfakeTimeoutAbortBumpsEpoch(t *testing.T) {
	c := newRawCoordinator(t, "")
	control := c.s.target.names.txnID("not-yet-expired")
	c.open(control)
	_, epoch := c.init(control)
	require.Equal(t, int16(1), epoch, "an open transaction fenced by an init in one step")

	expired := c.s.target.names.txnID("expired")
	c.open(expired)
	time.Sleep(2 * rawTimeoutMs * time.Millisecond)
	c.flush()
	_, epoch = c.init(expired)
	require.Equal(t, int16(2), epoch, "the timeout abort's bump, then the init's")
}

// Finding 24: a transaction whose timeout runs out while kfake is down is
// aborted when the cluster reloads (loadSessionState), without the bump
// its timer's abort makes. Its producer is not fenced: an init bumps to
// epoch 1, not 2, and the producer's own commit, at the epoch it still
// holds, is answered INVALID_TXN_STATE, as a commit after its own abort
// would be, and it may begin a new transaction at that epoch. Kafka's coordinator fences the producer of every transaction
// it times out, whenever it finds it (abortTimedOutTransactions:
// prepareFenceProducerEpoch), after a restart as before: the commit is
// PRODUCER_FENCED, and the init bumps to epoch 2.
func TestKfakeReloadAbortKeepsEpoch(t *testing.T) {
	c := newRawCoordinator(t, "3.9") // EndTxn before version 5: no KIP-890 retry answers
	id := c.s.target.names.txnID("expired-while-down")
	pid := c.open(id)
	e := c.s.target.embedded
	e.mu.Lock()
	e.cluster.Close()
	time.Sleep(2 * rawTimeoutMs * time.Millisecond) // the outage outlasts the timeout
	cluster, err := kfake.NewCluster(e.opts...)
	e.cluster = cluster
	e.mu.Unlock()
	require.NoError(t, err)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, 0, true
	resp, err := end.RequestWith(context.Background(), c.cl)
	require.NoError(t, err)
	require.Equal(t, kerr.InvalidTxnState.Code, resp.ErrorCode, "kfake's answer; Kafka's is PRODUCER_FENCED: %v", kerr.ErrorForCode(resp.ErrorCode))
	require.Equal(t, []int16{0}, c.add(id, pid, 0), "kfake lets the producer begin again at its epoch; Kafka fenced it")
	_, epoch := c.init(id)
	require.Equal(t, int16(1), epoch, "kfake's reload aborted without a bump; Kafka's timeout abort bumps, and the init then answers 2")
}

// rawCoordinator sends kfake's coordinator raw requests, with a
// transaction timeout in kfake's own milliseconds: no scaling.
type rawCoordinator struct {
	t  *testing.T
	s  *scenario
	cl *kgo.Client
}

const rawTimeoutMs = 200

func newRawCoordinator(t *testing.T, kafkaVersion string) rawCoordinator {
	s := newScenario(t, kafkaVersion)
	cl, err := kgo.NewClient(s.target.clientOpts()...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return rawCoordinator{t, s, cl}
}

func (c rawCoordinator) init(txnID string) (int64, int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = rawTimeoutMs
	resp, err := req.RequestWith(context.Background(), c.cl)
	require.NoError(c.t, err)
	require.Zero(c.t, resp.ErrorCode, "%s: %v", txnID, kerr.ErrorForCode(resp.ErrorCode))
	return resp.ProducerID, resp.ProducerEpoch
}

// open begins a transaction of a new producer, adding a partition of
// fares, and returns its producer id.
func (c rawCoordinator) open(txnID string) int64 {
	pid, epoch := c.init(txnID)
	require.Zero(c.t, epoch)
	require.Equal(c.t, []int16{0}, c.add(txnID, pid, epoch))
	return pid
}

// add adds a partition of fares to the transaction, and returns the
// partition's error codes.
func (c rawCoordinator) add(txnID string, pid int64, epoch int16) []int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = c.s.target.names.topic("fares"), []int32{2}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.cl)
	require.NoError(c.t, err)
	return wire.AddPartitionsCodes(resp)[1:]
}

// flush has kfake abort its expired transactions: it does so after the
// next request it handles.
func (c rawCoordinator) flush() {
	_, err := kmsg.NewPtrListTransactionsRequest().RequestWith(context.Background(), c.cl)
	require.NoError(c.t, err)
}

// A restart or a join goes ahead only while every open transaction has
// waitMargin of its timeout left on kfake: its real time runs kfake's
// clock, not the model's. A 60 s timeout (600 ms) leaves room; a 7 s one
// (70 ms) does not, and once it has run out and been aborted, nothing
// stands in the way again.
func TestAWaitWaitsOutANearlyDueTransaction(t *testing.T) {
	s := newScenario(t, "")
	require.True(t, s.target.WaitFits(), "nothing is open")
	a := s.begin("A", "fare-writer-1", fares2)
	s.ok("A", model.Produce, a.produce(fares2, 0, "trip-201"))
	require.True(t, s.target.WaitFits(), "60 s (600 ms) left")

	req := initRequest("fare-writer-2")
	req.TimeoutMs = 7_000
	got := s.ok("B", model.InitProducerID, req)
	b := session{"fare-writer-2", got.ProducerID, got.Epoch}
	s.ok("B", model.Produce, b.produce(fares2, 0, "trip-202"))
	require.False(t, s.target.WaitFits(), "7 s (70 ms) left")

	s.rec.Fault("clock", model.Tick, model.Request{Ms: 7_001})
	s.target.Tick(7_001) // past the timeout, not at it: the model aborts it
	require.True(t, s.target.WaitFits(), "the nearly due transaction was aborted")
	s.check("wait-waits-out-nearly-due-txn")
}

// A member whose SyncGroup comes after the rebalance timeout that began
// when its join round completed is removed, with every member that had
// not synced, and its SyncGroup is answered UNKNOWN_MEMBER_ID: Kafka's
// pending-sync timer (4.x GroupMetadataManager.expirePendingSync, 3.9
// GroupCoordinator.onExpirePendingSync), which kfake keeps too. The timer
// runs on the broker's clock, which the model does not keep, and the
// target's rebalance timeout is 50 ms: a worker process starved of CPU
// that long between its JoinGroup's answer and its SyncGroup meets it
// (FINDINGS.md, round 10), and the model allows the join's answer.
func TestKfakeLateSyncRemovesTheMember(t *testing.T) {
	c := newRawCoordinator(t, "")
	// Longer than the target's 50 ms, so that the sync sent at once
	// cannot itself be late on a machine busy with other tests.
	c.s.target.cfg.RebalanceTimeout = 250 * time.Millisecond
	require.Zero(t, c.joinAndSync("on-time", 0), "a sync at once")
	require.Equal(t, kerr.UnknownMemberID.Code, c.joinAndSync("late", 2*c.s.target.cfg.RebalanceTimeout), "a sync after the rebalance timeout")
}

// joinAndSync is a new member's round in a group of its own, its
// SyncGroup sent wait after its JoinGroup's answer; it returns the
// SyncGroup's error code.
func (c rawCoordinator) joinAndSync(name string, wait time.Duration) int16 {
	group := c.s.target.names.group(name)
	join := func(member string) *kmsg.JoinGroupResponse {
		req := c.s.target.joinRequest(group, member, joinRequest(name, member, fares2))
		resp, err := req.RequestWith(context.Background(), c.cl)
		require.NoError(c.t, err)
		return resp
	}
	first := join("")
	require.Equal(c.t, kerr.MemberIDRequired.Code, first.ErrorCode)
	joined := join(first.MemberID)
	require.Zero(c.t, joined.ErrorCode, "%v", kerr.ErrorForCode(joined.ErrorCode))
	time.Sleep(wait)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = group, joined.Generation, joined.MemberID
	resp, err := req.RequestWith(context.Background(), c.cl)
	require.NoError(c.t, err)
	return resp.ErrorCode
}
