package checker

import (
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

func TestOneLiveProducerZombieAcceptedAfterNewerEpoch(t *testing.T) {
	b, ids := seed000()
	zombie := b.produce("A", 41000, 41001, fw0, "fares-2", 44, "trip-9002")
	v := CheckOne(b.h, OneLiveProducer)
	requireViolation(t, v, zombie, "epoch 0 accepted after op 4 returned epoch 1 for fare-writer-7")
	require.Equal(t, []int{ids["B init"]}, v.Violations[0].Related)
}

// An init that keeps a prepared transaction (KIP-939) does not fence the
// transaction's own identity: Kafka still takes its requests. A plain init
// does.
func TestOneLiveProducerKeptTransactionStaysAlive(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.addPartitions("A", 2, 3, fw0, "fares-2")
	keep := b.initTxns("B", 4, 5, fw1)
	b.op(keep).Req.Enable2PC, b.op(keep).Req.KeepPreparedTxn = true, true
	b.op(keep).Result.Resp.OngoingTxnProducerID, b.op(keep).Result.Resp.OngoingTxnEpoch = fw0.pid, fw0.epoch
	own := b.produce("A", 6, 7, fw0, "fares-2", 0, "trip-1")
	requireHeld(t, CheckOne(b.h, OneLiveProducer))

	b.op(keep).Req.KeepPreparedTxn = false
	requireViolation(t, CheckOne(b.h, OneLiveProducer), own, "")
}

func TestOneLiveProducerComparesCallToReturn(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 5, fw0)
	b.initTxns("B", 20, 30, fw1)
	// Sent before B's answer arrived: the bump may not have happened yet.
	overlapping := b.produce("A", 25, 40, fw0, "fares-2", 0, "trip-1")
	requireHeld(t, CheckOne(b.h, OneLiveProducer))

	// Sent after it arrived (though answered before A's overlapping produce).
	b.op(overlapping).Call = 31
	requireViolation(t, CheckOne(b.h, OneLiveProducer), overlapping, "")
}

func TestOneLiveProducerV2GrantFromEndTxn(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	commit := b.endTxnV2("A", 4, 5, fw0, true, fw1)
	stale := b.produce("A2", 6, 7, fw0, "fares-2", 2, "trip-2")
	requireViolation(t, CheckOne(b.h, OneLiveProducer), stale, "epoch 0 accepted after op 2 returned epoch 1 for fare-writer-7")
	require.Equal(t, 2, commit)

	// Under v1 the end_txn names no session: the epoch stays current.
	b.op(commit).Result = model.OK(model.NewResponse())
	requireHeld(t, CheckOne(b.h, OneLiveProducer))
}

// Under KIP-890 a retried end_txn of a complete transaction is answered the
// session its first answer named: a retry, not a zombie. An end_txn of the
// old epoch that ends anything else is stale.
func TestOneLiveProducerV2AllowsARetriedEndTxn(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	b.endTxnV2("A", 4, 5, fw0, true, fw1)
	b.endTxnV2("A", 6, 7, fw1, false, fw1) // an empty abort: the same session again
	retry := b.endTxnV2("A", 8, 9, fw0, true, fw1)
	requireHeld(t, CheckOne(b.h, OneLiveProducer))

	b.op(retry).Req.Commit = false // an abort is no retry of a commit ...
	b.op(retry).Proc = "A2"        // ... and from another process it is a second producer
	requireViolation(t, CheckOne(b.h, OneLiveProducer), retry, "epoch 0 accepted after op 2 returned epoch 1 for fare-writer-7")
	b.op(retry).Proc = "A"
	requireHeld(t, CheckOne(b.h, OneLiveProducer)) // A told again of the session it holds
	b.op(retry).Req.Commit = true
	b.op(retry).Result.Resp.Epoch = 2 // it ended the next transaction (KAFKA-17754)
	requireViolation(t, CheckOne(b.h, OneLiveProducer), retry, "epoch 0 accepted after op 2 returned epoch 1 for fare-writer-7")
}

func TestOneLiveProducerTimeoutAbortBumps(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	abort := b.timeoutAbort(60000, fw1)
	late := b.endTxn("A", 60001, 60002, fw0, true)
	requireViolation(t, CheckOne(b.h, OneLiveProducer), late, "epoch 0 accepted after op 2 bumped to epoch 1 for fare-writer-7")
	require.Equal(t, 2, abort)
}

func TestOneLiveProducerZombieCannotWinItsIDBack(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.initTxns("B", 2, 3, fw1)
	// KIP-360: A asks to bump its own epoch 0 and gets epoch 2.
	bump := b.initTxns("A", 4, 5, session{"fare-writer-7", 4001, 2})
	b.op(bump).Req.ProducerID, b.op(bump).Req.Epoch = 4001, 0
	requireViolation(t, CheckOne(b.h, OneLiveProducer), bump, "epoch 0 accepted after op 1 returned epoch 1 for fare-writer-7")

	b.fail(bump, model.ProducerFenced)
	requireHeld(t, CheckOne(b.h, OneLiveProducer))
}

func TestOneLiveProducerAfterEpochRotation(t *testing.T) {
	old := session{"fare-writer-7", 4001, 32766}
	rotated := session{"fare-writer-7", 5002, 0}
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, old)
	b.initTxns("B", 2, 3, rotated)
	b.addPartitions("B", 4, 5, rotated, "fares-2")
	stale := b.addPartitions("A", 6, 7, old, "fares-2")
	requireViolation(t, CheckOne(b.h, OneLiveProducer), stale,
		"producer id 4001 epoch 32766 accepted after op 1 returned producer id 5002 epoch 0 for fare-writer-7")
}

func TestOneLiveProducerOlderEpochLandsAfterNewer(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.initTxns("B", 10, 20, fw1)
	newer := b.produce("B", 21, 22, fw1, "fares-2", 42, "trip-9001")
	// Sent before B's init returned, so not stale by the clock, yet it
	// lands above epoch 1's record.
	older := b.produce("A", 15, 30, fw0, "fares-2", 44, "trip-9002")
	v := CheckOne(b.h, OneLiveProducer)
	requireViolation(t, v, older, "producer id 4001 epoch 0 record at fares-2 offset 44 lands after op 2 wrote epoch 1 at offset 42")
	require.Equal(t, []int{newer}, v.Violations[0].Related)

	b.op(older).Result.Resp.BaseOffset = 40
	requireHeld(t, CheckOne(b.h, OneLiveProducer))
}

// A producer that retries its own KIP-360 bump after the answer was lost is
// answered the same session: not a zombie winning its id back. Anyone
// else's bump in between makes the same request stale.
func TestOneLiveProducerAllowsARetriedOwnBump(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.add("A", 2, 3, model.InitProducerID, withSession(fw0), grantOf4001(1))
	b.add("A", 4, 5, model.InitProducerID, withSession(fw0), grantOf4001(1)) // the retry
	requireHeld(t, CheckOne(b.h, OneLiveProducer))

	b.initTxns("B", 6, 7, session{"fare-writer-7", 4001, 2})
	zombie := b.add("A", 8, 9, model.InitProducerID, withSession(fw0), grantOf4001(3))
	requireViolation(t, CheckOne(b.h, OneLiveProducer), zombie, "epoch 0 accepted after op 1 returned epoch 1 for fare-writer-7")
}

func withSession(s session) model.Request {
	r := model.NewRequest()
	r.TransactionalID, r.ProducerID, r.Epoch = s.tid, s.pid, s.epoch
	return r
}

func grantOf4001(epoch int16) model.Response {
	resp := model.NewResponse()
	resp.ProducerID, resp.Epoch = 4001, epoch
	return resp
}

// Kafka 4 answers a request shaped as a retry at the epoch it moved on
// from with the current session, handing out nothing new: a KIP-360 bump
// after the producer's own v2 end_txn, and an abort after the
// coordinator's timeout abort (4.0.1+), and any retry-shaped request of
// the process that holds the session (on any lane of its client),
// answered with it. A session handed
// to another process is another matter: the fenced producer's abort
// answered with it makes two live producers (kafka/FINDINGS.md, 12).
func TestOneLiveProducerKafka4RetryShapes(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	b.endTxnV2("A", 4, 5, fw0, true, fw1)
	bump := b.add("A", 6, 7, model.InitProducerID, initWith(fw0), granting(fw1))
	requireHeld(t, CheckOne(b.h, OneLiveProducer))
	b.op(bump).Kind, b.op(bump).Proc = model.EndTxn, "A2" // another process's end_txn of epoch 0, handed A's session
	requireViolation(t, CheckOne(b.h, OneLiveProducer), bump, "")
	b.op(bump).Proc, b.op(bump).Client = "A.2", "A" // the same from a lane of A's own client
	requireHeld(t, CheckOne(b.h, OneLiveProducer))

	b = &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	b.timeoutAbort(60_010, fw1)
	abort := b.endTxnV2("A", 60_020, 60_030, fw0, false, fw1)
	requireHeld(t, CheckOne(b.h, OneLiveProducer))
	b.op(abort).Req.Commit, b.op(abort).Proc = true, "A2" // another process's commit, answered the session
	requireViolation(t, CheckOne(b.h, OneLiveProducer), abort, "")

	b = &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.produce("A", 2, 3, fw0, "fares-2", 0, "trip-1")
	b.initTxns("B", 10, 11, fw1)
	stolen := b.endTxnV2("A", 20, 21, fw0, false, fw1)
	requireViolation(t, CheckOne(b.h, OneLiveProducer), stolen, "epoch 0 accepted after op 2 returned epoch 1 for fare-writer-7")
}

func initWith(s session) model.Request { return s.request() }

func granting(s session) model.Response {
	resp := model.NewResponse()
	resp.ProducerID, resp.Epoch = s.pid, s.epoch
	return resp
}

// TestPropertyGrantIndexIsAWalk: the grant index finds, for any session
// and any request, the grant a walk of every grant in order finds (the
// walk is supersededBefore's own promise): ties of the clock, several
// producer ids of one transactional.id (KIP-360 rotations), sessions the
// history never hands out.
func TestPropertyGrantIndexIsAWalk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := &historyBuilder{}
		for range rapid.IntRange(0, 8).Draw(t, "grants") {
			at := int64(rapid.IntRange(0, 10).Draw(t, "at"))
			got := session{"fare-writer-7", int64(rapid.IntRange(1, 2).Draw(t, "producer id")), int16(rapid.IntRange(0, 4).Draw(t, "epoch"))}
			b.initTxns("A", at, at, got)
		}
		gs := grantsByID(b.h)["fare-writer-7"]
		key := sessionKey{"fare-writer-7", int64(rapid.IntRange(1, 2).Draw(t, "key producer id")), int16(rapid.IntRange(0, 4).Draw(t, "key epoch"))}
		call := int64(rapid.IntRange(0, 12).Draw(t, "call"))
		op := histories.Op{Proc: "B", Call: call, Return: call + 1, Returned: true,
			Op: model.Op{Kind: model.Produce, Req: withSession(session{key.transactionalID, key.producerID, key.epoch})}, Result: model.OK(model.NewResponse())}

		want, wantStale := walkGrants(gs, op, key)
		got, gotStale := newGrantIndex(gs).supersededBefore(op, key)
		require.Equal(t, wantStale, gotStale)
		require.Equal(t, want.op, got.op)
	})
}

// walkGrants is the first grant, in the order they became known, that
// hands out a session newer than key before op was called: a higher epoch
// of key's producer id, or another producer id handed out after key's was
// first.
func walkGrants(gs []grant, op histories.Op, key sessionKey) (grant, bool) {
	keyFirst, handedOut := int64(0), false
	for _, g := range gs {
		if g.producerID == key.producerID {
			keyFirst, handedOut = g.at, true
			break
		}
	}
	for _, g := range gs {
		if g.at >= op.Call {
			break
		}
		newer := g.producerID == key.producerID && g.epoch > key.epoch ||
			g.producerID != key.producerID && handedOut && keyFirst < g.at
		if newer && !retriesBump(op, g) {
			return g, true
		}
	}
	return grant{}, false
}

// grantsByID lists, as the one-live-producer fold learns them, each transactional.id's grants in the order they became
// known, each session once: an answer that names a session already handed
// out (a retry's, or an empty abort's under KIP-890) makes nothing newer,
// and what is a retry is judged against the request that first made it.
func grantsByID(h histories.History) map[string][]grant {
	grants := map[string][]grant{}
	for i := range h.Ops {
		if id, g, ok := grantOf(&h.Ops[i]); ok {
			grants[id] = append(grants[id], g)
		}
	}
	for id, gs := range grants {
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].at < gs[j].at })
		seen := map[[2]int64]bool{}
		grants[id] = slices.DeleteFunc(gs, func(g grant) bool {
			session := [2]int64{g.producerID, int64(g.epoch)}
			again := seen[session]
			seen[session] = true
			return again
		})
	}
	return grants
}
