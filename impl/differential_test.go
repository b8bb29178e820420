//go:build !checkeronly

package impl

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/model"
)

// TestDifferentialAgainstModel sends the same random requests to the
// reference model and to the broker, one at a time, and requires every
// answer to be the same, under both transaction protocols. The requests
// are plausible enough to succeed often: they mostly use the producer ids,
// epochs, sequences, members and generations handed out so far, and
// sometimes stale or wrong ones.
func TestDifferentialAgainstModel(t *testing.T) { checkDifferential(t, false) }

// checkDifferential runs the differential property under both protocols;
// restartAlways restarts the broker after every request.
func checkDifferential(t *testing.T, restartAlways bool) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("txn-v%d", version), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				// A restart writes the markers in flight, and restartAlways
				// restarts the broker alone: the window is explored apart.
				async := !restartAlways && rapid.Bool().Draw(rt, "asyncMarkers")
				var expiry model.Expiry
				if rapid.Bool().Draw(rt, "shortExpiry") {
					// Intervals a few ticks long, so that ids,
					// producers and offsets expire, and retries and
					// fetches meet them gone.
					expiry = shortExpiry
				}
				// A small group.max.size, or none, so that joins meet a
				// full group (model: groupMaxSize).
				maxSize := rapid.SampledFrom([]int{0, 1, 2}).Draw(rt, "groupMaxSize")
				// Session timeout bounds, or none, so that a join's
				// session of 2000 or 10000 ms is out of them now and then
				// (model: session-timeout-bounds).
				bounds := rapid.SampledFrom([][2]int64{{0, 0}, {5_000, 60_000}, {1_000, 5_000}}).Draw(rt, "session bounds")
				d := newDifferential(model.Options{TxnVersion: version, AsyncMarkers: async, Expiry: expiry, GroupMaxSize: maxSize,
					GroupMinSessionTimeoutMs: bounds[0], GroupMaxSessionTimeoutMs: bounds[1]})
				d.restartAlways = restartAlways
				rt.Repeat(d.actions())
			})
		})
	}
}

var (
	txnIDs      = []string{"tx-a", "tx-b", "tx-c"}
	outputs     = []model.Partition{"out-0", "out-1", "out-2"}
	inputs      = []model.Partition{"in-0", "in-1", "in-2"}
	theGroup    = "g"
	isolations  = []model.Isolation{model.ReadCommitted, model.ReadUncommitted}
	tickLengths = []int64{100, 1_000, 5_000, 20_000, 60_000}
	shortExpiry = model.Expiry{TransactionalIDMs: 30_000, TransactionalIDCleanupMs: 5_000, ProducerIDMs: 20_000, ProducerIDCheckMs: 1_000,
		OffsetsRetentionMinutes: 1, OffsetsRetentionCheckMs: 1_000}
)

// differential is one run: both brokers, and what clients learnt from the
// answers so far.
type differential struct {
	ref  *model.RefBroker
	impl *Broker
	// sessions handed out, per transactional.id ("" for idempotent-only
	// producers), oldest first.
	sessions map[string][]session
	// next sequence per (session, partition), and the last batch sent
	// there, for retries.
	next    map[seqKey]int32
	members []joined
	keys    int
	// restartAlways restarts the broker (not the model) after every
	// request, so that every answer comes from rebuilt tables.
	restartAlways bool
}

type seqKey struct {
	session
	partition model.Partition
}

type joined struct {
	id  string
	gen int32
	// instance is the group.instance.id it joined with, "" for a dynamic
	// member (KIP-345).
	instance string
}

// instances are the group.instance.ids static members join with; ""
// joins as a dynamic member.
var instances = []string{"", "", "static-a", "static-b"}

// instanceFor is the instance a member's request names: mostly its own,
// sometimes another, so that FENCED_INSTANCE_ID and UNKNOWN_MEMBER_ID
// come up.
func instanceFor(t *rapid.T, m joined) string {
	if rapid.IntRange(0, 5).Draw(t, "other instance") == 0 {
		return rapid.SampledFrom(instances).Draw(t, "instance")
	}
	return m.instance
}

// newDifferential is the model with opts beside impl with the same
// config.
func newDifferential(opts model.Options) *differential {
	return &differential{
		ref: model.NewBroker(opts),
		impl: New(Config{TxnVersion: opts.TxnVersion, AsyncMarkers: opts.AsyncMarkers, Expiry: opts.Expiry, GroupMaxSize: opts.GroupMaxSize,
			GroupMinSessionTimeoutMs: opts.GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs: opts.GroupMaxSessionTimeoutMs}),
		sessions: map[string][]session{},
		next:     map[seqKey]int32{},
	}
}

// send gives r to both brokers and requires the same answer.
func (d *differential) send(t require.TestingT, kind model.Kind, r model.Request) model.Result {
	want := send(d.ref, kind, r)
	got := send(d.impl, kind, r)
	require.Equal(t, want, got, "%s %+v", kind, r)
	if d.restartAlways {
		d.impl.Restart()
	}
	return want
}

func (d *differential) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"InitProducer":   d.initProducer,
		"AddPartitions":  d.addPartitions,
		"ProduceRecord":  d.produceRecord,
		"AddOffsets":     d.addOffsets,
		"CommitOffsets":  d.commitOffsets,
		"PlainCommit":    d.plainCommit,
		"CommitTxn":      func(t *rapid.T) { d.endTxn(t, true) },
		"AbortTxn":       func(t *rapid.T) { d.endTxn(t, false) },
		"JoinGroup":      d.joinGroup,
		"LeaveGroup":     d.leaveGroup,
		"FetchCommitted": func(t *rapid.T) { d.fetch(t, model.ReadCommitted) },
		"FetchAll":       func(t *rapid.T) { d.fetch(t, model.ReadUncommitted) },
		"FetchOffsets":   d.offsetFetch,
		"FetchAllOffsets": func(t *rapid.T) {
			r := offsetFetchReq(rapid.SampledFrom([]string{theGroup, "other"}).Draw(t, "group"), "", rapid.Bool().Draw(t, "require stable"))
			r.AllPartitions = true
			d.send(t, model.OffsetFetch, r)
		},
		"Tick":          d.tick,
		"RestartBroker": func(*rapid.T) { d.ref.Restart(); d.impl.Restart() },
		"LandMarkers":   func(*rapid.T) { d.ref.LandMarkers(); d.impl.LandMarkers() },
		"":              func(t *rapid.T) { d.logsAgree(t) },
	}
}

// logsAgree reads every partition from the start, both ways: the logs, the
// last stable offsets and the aborted ranges must agree after every step.
func (d *differential) logsAgree(t require.TestingT) {
	for _, p := range outputs {
		for _, iso := range isolations {
			d.send(t, model.Fetch, fetchReq(p, 0, iso))
		}
	}
}

// txnID draws a transactional.id; idempotent includes "" (none).
func (d *differential) txnID(t *rapid.T, idempotent bool) string {
	ids := txnIDs
	if idempotent {
		ids = append([]string{""}, ids...)
	}
	return rapid.SampledFrom(ids).Draw(t, "txn")
}

// sessionFor draws the session a client of id uses: mostly the latest,
// sometimes an older one (a zombie), sometimes a made-up one.
func (d *differential) sessionFor(t *rapid.T, id string) session {
	known := d.sessions[id]
	switch choice := rapid.IntRange(0, 9).Draw(t, "session"); {
	case len(known) == 0 || choice == 0:
		return session{pid: rapid.Int64Range(1, 4).Draw(t, "pid"), epoch: int16(rapid.IntRange(0, 3).Draw(t, "epoch"))}
	case choice <= 2:
		return rapid.SampledFrom(known).Draw(t, "old session")
	default:
		return known[len(known)-1]
	}
}

func (d *differential) granted(id string, res model.Result) {
	if res.Succeeded() && res.Resp.ProducerID != model.NoProducerID {
		d.sessions[id] = append(d.sessions[id], sessionOf(res))
	}
}

func (d *differential) initProducer(t *rapid.T) {
	id := d.txnID(t, true)
	r := initReq(id, rapid.SampledFrom([]int64{0, 500, 3_000}).Draw(t, "timeout"))
	if id != "" && rapid.IntRange(0, 4).Draw(t, "own bump") == 0 {
		r = bumpReq(id, d.sessionFor(t, id))
	}
	d.granted(id, d.send(t, model.InitProducerID, r))
}

func (d *differential) addPartitions(t *rapid.T) {
	id := d.txnID(t, false)
	parts := rapid.SliceOfNDistinct(rapid.SampledFrom(outputs), 0, 3, rapid.ID).Draw(t, "partitions")
	d.send(t, model.AddPartitions, addPartitionsReq(id, d.sessionFor(t, id), parts...))
}

// produceRecord sends one to three batches of one producer to one
// partition, so that sequences run past the leader's window of five.
func (d *differential) produceRecord(t *rapid.T) {
	id := d.txnID(t, true)
	s := d.sessionFor(t, id)
	if rapid.IntRange(0, 19).Draw(t, "outside its transaction") == 0 {
		id = "" // a transactional producer id writing without its id
	}
	p := rapid.SampledFrom(outputs).Draw(t, "partition")
	for range rapid.IntRange(1, 3).Draw(t, "batches") {
		d.produceBatch(t, id, s, p)
	}
}

func (d *differential) produceBatch(t *rapid.T, id string, s session, p model.Partition) {
	key := seqKey{s, p}
	seq := d.next[key]
	switch rapid.IntRange(0, 9).Draw(t, "sequence") {
	case 0:
		seq = max(seq-1-rapid.Int32Range(0, 6).Draw(t, "back"), 0) // a retry
	case 1:
		seq++ // a gap
	case 2:
		seq = 0
	}
	keys := make([]string, rapid.IntRange(0, 2).Draw(t, "records"))
	for i := range keys {
		d.keys++
		keys[i] = fmt.Sprintf("k%d", d.keys)
	}
	res := d.send(t, model.Produce, produceReq(id, s, p, seq, keys...))
	if res.Succeeded() && seq == d.next[key] {
		d.next[key] = seq + int32(max(len(keys), 1))
	}
}

func (d *differential) addOffsets(t *rapid.T) {
	id := d.txnID(t, false)
	d.send(t, model.AddOffsets, addOffsetsReq(id, d.sessionFor(t, id), theGroup))
}

func (d *differential) commitOffsets(t *rapid.T) {
	id := d.txnID(t, false)
	m := d.memberFor(t)
	if rapid.IntRange(0, 5).Draw(t, "groupId-string overload") == 0 {
		m.gen = model.NoGeneration
	}
	offsets := map[model.Partition]int64{
		rapid.SampledFrom(inputs).Draw(t, "input"): rapid.Int64Range(0, 20).Draw(t, "offset"),
	}
	r := commitOffsetsReq(id, d.sessionFor(t, id), theGroup, m.id, m.gen, offsets)
	r.InstanceID = instanceFor(t, m)
	d.send(t, model.TxnOffsetCommit, r)
}

// plainCommit is a consumer's own commit outside a transaction: mostly a
// member's, sometimes a simple consumer's with no member and generation
// -1, to the group or to one nobody joined.
func (d *differential) plainCommit(t *rapid.T) {
	m := d.memberFor(t)
	group := theGroup
	switch rapid.IntRange(0, 5).Draw(t, "plain commit kind") {
	case 0:
		m = joined{gen: model.NoGeneration}
	case 1:
		m.gen = model.NoGeneration
	case 2:
		group = "other"
	}
	offsets := map[model.Partition]int64{
		rapid.SampledFrom(inputs).Draw(t, "input"): rapid.Int64Range(0, 20).Draw(t, "offset"),
	}
	r := offsetCommitReq(group, m.id, m.gen, offsets)
	r.InstanceID = instanceFor(t, m)
	d.send(t, model.OffsetCommit, r)
}

// memberFor draws a member as a consumer knows it: mostly one that joined
// (perhaps since rebalanced away), sometimes a made-up one.
func (d *differential) memberFor(t *rapid.T) joined {
	if len(d.members) == 0 || rapid.IntRange(0, 9).Draw(t, "made-up member") == 0 {
		return joined{id: fmt.Sprintf("member-%d", rapid.IntRange(0, 3).Draw(t, "member")),
			gen: int32(rapid.IntRange(0, 4).Draw(t, "generation"))}
	}
	return rapid.SampledFrom(d.members).Draw(t, "member")
}

func (d *differential) endTxn(t *rapid.T, commit bool) {
	id := d.txnID(t, false)
	d.granted(id, d.send(t, model.EndTxn, endTxnReq(id, d.sessionFor(t, id), commit)))
}

// joinGroup is a new member's join, dynamic or static (a static one
// takes over an instance a member holds), or a member's rejoin.
func (d *differential) joinGroup(t *rapid.T) {
	m := joined{instance: rapid.SampledFrom(instances).Draw(t, "instance")}
	if len(d.members) > 0 && rapid.Bool().Draw(t, "rejoin") {
		m = d.memberFor(t)
		m.instance = instanceFor(t, m)
	}
	sessionMs := rapid.SampledFrom([]int64{0, 2_000, 10_000}).Draw(t, "session timeout")
	r := joinReq(theGroup, m.id, sessionMs, inputs...)
	r.InstanceID = m.instance
	if rapid.Bool().Draw(t, "names protocols") {
		// Every member supports range and roundrobin, so no join is
		// INCONSISTENT_GROUP_PROTOCOL, and the order of each member's
		// list makes the vote (model.SelectProtocol).
		r.ProtocolType = "consumer"
		names := rapid.Permutation([]string{"range", "roundrobin", "sticky"}).Draw(t, "protocols")
		if rapid.Bool().Draw(t, "without sticky") {
			names = slices.DeleteFunc(names, func(n string) bool { return n == "sticky" })
		}
		for _, name := range names {
			r.Protocols = append(r.Protocols, model.Protocol{Name: name})
		}
	}
	res := d.send(t, model.JoinGroup, r)
	if res.Succeeded() {
		d.members = append(d.members, joined{id: res.Resp.MemberID, gen: res.Resp.GenerationID, instance: m.instance})
	}
}

// leaveGroup is a member's leave, sometimes an admin's removal that
// names the instance alone.
func (d *differential) leaveGroup(t *rapid.T) {
	m := d.memberFor(t)
	r := leaveReq(theGroup, m.id)
	r.InstanceID = instanceFor(t, m)
	if r.InstanceID != "" && rapid.IntRange(0, 3).Draw(t, "by instance alone") == 0 {
		r.MemberID = ""
	}
	d.send(t, model.LeaveGroup, r)
}

func (d *differential) fetch(t *rapid.T, isolation model.Isolation) {
	p := rapid.SampledFrom(outputs).Draw(t, "partition")
	d.send(t, model.Fetch, fetchReq(p, rapid.Int64Range(-1, 12).Draw(t, "from"), isolation))
}

func (d *differential) offsetFetch(t *rapid.T) {
	group := rapid.SampledFrom([]string{theGroup, "other"}).Draw(t, "group")
	p := rapid.SampledFrom(inputs).Draw(t, "input")
	d.send(t, model.OffsetFetch, offsetFetchReq(group, p, rapid.Bool().Draw(t, "require stable")))
}

func (d *differential) tick(t *rapid.T) {
	ms := rapid.SampledFrom(tickLengths).Draw(t, "ms")
	d.ref.Tick(ms)
	d.impl.Tick(ms)
}

// A follower that rejoins a stable group with other protocols starts a
// new generation, as the model says (ClassicGroupMember.matches), and
// both answer the protocol the group chose. The random walk above meets
// this rarely: the member that rejoins is most often the leader.
func TestProtocolChangeRebalancesLikeTheModel(t *testing.T) {
	d := newDifferential(model.Options{TxnVersion: 1})
	join := func(member string, protocols ...string) model.Result {
		r := joinReq(theGroup, member, 0, inputs...)
		r.ProtocolType = "consumer"
		for _, name := range protocols {
			r.Protocols = append(r.Protocols, model.Protocol{Name: name})
		}
		return d.send(t, model.JoinGroup, r)
	}
	first := join("", "range", "roundrobin").Resp.MemberID
	join("", "range", "roundrobin")
	same := join(first, "range", "roundrobin")
	require.Equal(t, "range", same.Resp.Protocol)
	changed := join(first, "roundrobin", "range")
	require.Equal(t, same.Resp.GenerationID+1, changed.Resp.GenerationID, "a changed member rebalances the group")
}

// A transactional produce that names another transactional id, with the
// producer id and epoch of a producer that has a transaction open in the
// partition, is written as the model writes it, before and after a
// restart. The leader gives such a producer the sentinel guard and asks
// the coordinator nothing (UnifiedLog.maybeStartTransactionVerification;
// UnifiedLogTest#testTransactionIsOngoingAndVerificationGuard), so no
// INVALID_PRODUCER_ID_MAPPING comes back (model.openUnverified). The
// random walk meets this only through a made-up session
// (TestRestartRebuildsState/txn-v2, seed 6627746348418945935).
func TestOtherIDWritesIntoOpenTransactionLikeTheModel(t *testing.T) {
	for _, version := range []int{1, 2} {
		for _, restart := range []bool{false, true} {
			t.Run(fmt.Sprintf("txn-v%d/restart=%v", version, restart), func(t *testing.T) {
				d := newDifferential(model.Options{TxnVersion: version})
				d.restartAlways = restart
				owner := sessionOf(d.send(t, model.InitProducerID, initReq("tx-c", 0)))
				other := sessionOf(d.send(t, model.InitProducerID, initReq("tx-b", 0)))
				if version == 1 {
					d.send(t, model.AddPartitions, addPartitionsReq("tx-c", owner, "out-0"))
				}
				d.send(t, model.Produce, produceReq("tx-c", owner, "out-0", 0, "a"))
				// tx-a is no id the coordinator knows; tx-b belongs to
				// another producer id, with no transaction open.
				unknown := d.send(t, model.Produce, produceReq("tx-a", owner, "out-0", 1, "b"))
				foreign := d.send(t, model.Produce, produceReq("tx-b", owner, "out-0", 2, "c"))
				require.True(t, unknown.Succeeded() && foreign.Succeeded(), "%+v %+v", unknown, foreign)
				require.Equal(t, []int64{1, 2}, []int64{unknown.Resp.BaseOffset, foreign.Resp.BaseOffset})
				// The other producer of tx-b still owns its id, and the
				// open transaction is still tx-c's, so the writes stay
				// uncommitted until tx-c ends.
				d.send(t, model.Produce, produceReq("tx-b", other, "out-1", 0, "d"))
				d.logsAgree(t)
				d.send(t, model.EndTxn, endTxnReq("tx-c", owner, true))
				d.logsAgree(t)
			})
		}
	}
}
