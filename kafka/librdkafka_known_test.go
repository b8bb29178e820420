package kafka

import (
	"cmp"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/clients"
	"github.com/fencecheck/fencecheck/model"
)

// librdkafkaStaleRecords is librdkafka's known finding, decided and
// written up in histories/clients/README.md ("a partition unassigned
// during its offset reset is fetched anyway", "a partition started at
// auto.offset.reset on a stale UNSTABLE_OFFSET_COMMIT", "a partition sent
// back to an earlier assignment's reset"): two bugs of librdkafka 2.11.1
// that hand confluent-kafka-go's KIP-447 loop records that are not its to
// process. TestLibrdkafkaFetchesAfterUnassign and
// TestLibrdkafkaRewindsOnAnOutdatedOffsetAnswer show the first,
// TestLibrdkafkaResetsOnAStaleUnstableAnswer and
// TestLibrdkafkaResetsOnAnUnstableAnswerAfterAnIncrementalAssign the
// second, each with the library alone
// (internal/clients/confluent/stale_fetch_test.go).
//
// The client-loop property runs the loop to judge the loop and the
// broker under it: a violation this finding explains is logged, as
// kfake's known findings are, and the search goes on.
const librdkafkaStaleRecords = "librdkafka-stale-records"

// confluentLibrary is the library name of confluent-kafka-go's loops
// (clients.Loop.Library), whose package builds only with cgo.
const confluentLibrary = "confluent-kafka-go"

// explainedByLibrdkafka reports whether every violation of v, a check of
// h, is one that a commit of records librdkafka should not have handed
// its loop (staleRecordCommits) takes part in: exactly-once, a trip
// committed by such a commit's transaction, or the transaction that
// committed it again; offsets-monotonic, such a commit's offset, or an
// offset read or committed against it.
func explainedByLibrdkafka(h histories.History, v checker.Verdict) bool {
	if v.Held() || len(v.Violations) == 0 {
		return false
	}
	commits, ends := staleRecordCommits(h)
	stale := commits
	if v.Check == checker.ExactlyOnce {
		stale = ends
	}
	for _, violation := range v.Violations {
		if !stale[violation.Op] && !slices.ContainsFunc(violation.Related, func(id int) bool { return stale[id] }) {
			return false
		}
	}
	return true
}

// staleRecordCommits are the ids of the successful txn_offset_commits of
// h that commit a partition past a record its client should not have
// processed, and of the end_txns that committed their transactions.
//
// A record is not the client's to process when it came from one of these:
//  1. A stray fetch: the client fetched the partition while its group had
//     not given it the partition (its last assignment did not hold it),
//     and no fetch since the partition was given back returned the record.
//  2. A reset on a stale UNSTABLE_OFFSET_COMMIT: given the partition, the
//     client fetched it before any offset_fetch of it succeeded, after an
//     offset_fetch answer of it came back UNSTABLE_OFFSET_COMMIT (or one
//     of a partition it no longer has, which was sent with it). librdkafka
//     sends such a request again while its assignment is unchanged, and
//     starts the partition only when the answer comes back to a changed
//     one (an eager round, or KIP-848's incremental assign of another
//     partition): at auto.offset.reset. Every record of the partition it
//     fetched until its next assignment or its next successful
//     offset_fetch of it started from there.
//  3. A rewind on an outdated reset: given the partition, the client was
//     told by an offset_fetch that no offset is committed (so librdkafka
//     looks its offset up by ListOffsets, which the history does not
//     show), and its assignment changed before it fetched the partition
//     (a new eager round, or a KIP-848 assignment that moves any
//     partition, whose incremental rebalance pauses them all): that
//     lookup's answer comes back outdated, and sends the partition back
//     to auto.offset.reset half a second later, whatever it was assigned
//     since or how far it was read. Later, holding the partition, the
//     client fetched it from below the position its fetches had reached
//     in that assignment, with no offset_fetch of it since: the records of
//     that fetch below the position, until its next assignment or its
//     next successful offset_fetch of it.
func staleRecordCommits(h histories.History) (commits, ends map[int]bool) {
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) })
	clients := map[string]*librdkafkaClient{}
	commits, ends = map[int]bool{}, map[int]bool{}
	for _, op := range ops {
		c := clients[op.Process()]
		if c == nil || op.Kind == model.Crash || op.Kind == model.Restart {
			c = newLibrdkafkaClient() // a new instance starts afresh
			clients[op.Process()] = c
		}
		// An answer that came before op was called is known when op
		// is sent: answers are taken in the order they came.
		for _, answered := range c.pending(op.Call) {
			c.answered(answered)
		}
		c.called(op)
		switch {
		case op.Kind == model.TxnOffsetCommit && op.Returned && op.Result.Answered && op.Result.Err == "":
			if c.committsStale(op) {
				commits[op.ID] = true
				c.staleTxn = true
			}
		case op.Kind == model.EndTxn && c.staleTxn:
			if op.Req.Commit && op.Returned && op.Result.Answered && op.Result.Err == "" {
				ends[op.ID] = true
			}
			c.staleTxn = false
		}
		c.calls = append(c.calls, op)
	}
	return commits, ends
}

// librdkafkaClient follows what one client instance was told and fetched.
type librdkafkaClient struct {
	// calls are its operations whose answers are not taken yet.
	calls []histories.Op
	// owned is its last assignment, each partition with the time it was
	// given it (the answer's).
	owned map[model.Partition]int64
	// strayCall are its fetches sent for a partition it did not own.
	strayCall map[int]bool
	// stray are the offsets of records it fetched of a partition while
	// it did not own it; fresh, the offsets it fetched since it was
	// given the partition back (its own to process).
	stray, fresh map[model.Partition]map[int64]bool
	// unknown: a partition given it whose committed offset no
	// offset_fetch has told it since, until a fetch of it; unstable: such
	// a partition an offset_fetch answer said UNSTABLE_OFFSET_COMMIT of;
	// resetFrom: such a partition fetched all the same, whose records it
	// fetched are from the reset.
	unknown, unstable, resetFrom map[model.Partition]bool
	// resetPending: a partition given it whose offset_fetch said no
	// offset is committed, not fetched since (its offset lookup may be in
	// flight); outdatedReset: such a partition whose assignment ended
	// before it was fetched (the lookup's answer comes back outdated).
	resetPending, outdatedReset map[model.Partition]bool
	// position is how far its fetches of a partition it holds reached in
	// this assignment, since its last offset_fetch of it (a seek may
	// follow one); rewindBelow, a fetch of an outdatedReset partition sent
	// below its position, with that position; rewound, the offsets of the
	// records such a fetch returned below it.
	position    map[model.Partition]int64
	rewindBelow map[int]int64
	rewound     map[model.Partition]map[int64]bool
	// staleTxn: its open transaction commits a stale record's offset.
	staleTxn bool
}

func newLibrdkafkaClient() *librdkafkaClient {
	return &librdkafkaClient{owned: map[model.Partition]int64{}, strayCall: map[int]bool{},
		stray: map[model.Partition]map[int64]bool{}, fresh: map[model.Partition]map[int64]bool{},
		unknown: map[model.Partition]bool{}, unstable: map[model.Partition]bool{},
		resetFrom:    map[model.Partition]bool{},
		resetPending: map[model.Partition]bool{}, outdatedReset: map[model.Partition]bool{},
		position: map[model.Partition]int64{}, rewindBelow: map[int]int64{}, rewound: map[model.Partition]map[int64]bool{}}
}

// pending takes the calls answered before t off the list, in the order
// of their answers.
func (c *librdkafkaClient) pending(t int64) []histories.Op {
	var done []histories.Op
	c.calls = slices.DeleteFunc(c.calls, func(op histories.Op) bool {
		if op.Returned && op.Return < t {
			done = append(done, op)
			return true
		}
		return false
	})
	slices.SortStableFunc(done, func(a, b histories.Op) int { return cmp.Compare(a.Return, b.Return) })
	return done
}

// answered takes in the answer to op.
func (c *librdkafkaClient) answered(op histories.Op) {
	if !op.Result.Answered {
		return
	}
	p := op.Req.Partition
	switch {
	case assignmentOf(op) != nil:
		// librdkafka's classic assignors are eager: each round's
		// assignment is assigned anew, after all was unassigned. A
		// consumer_group_heartbeat's keeps what it had (KIP-848).
		eager := op.Kind != model.ConsumerGroupHeartbeat
		// A new round, or a KIP-848 assignment that moves any partition
		// (an incremental rebalance pauses every assigned partition),
		// bumps the op version of each partition it had: a lookup in
		// flight comes back outdated.
		changed := eager || len(*assignmentOf(op)) != len(c.owned) ||
			slices.ContainsFunc(*assignmentOf(op), func(q model.Partition) bool { _, had := c.owned[q]; return !had })
		for q := range c.owned {
			if changed && c.resetPending[q] {
				c.outdatedReset[q], c.resetPending[q] = true, false
			}
		}
		owned := map[model.Partition]int64{}
		for _, q := range *assignmentOf(op) {
			since, kept := c.owned[q]
			if !kept || eager { // given it (back): what it fetched before is not its to go on from
				since = op.Return
				c.fresh[q], c.unknown[q] = map[int64]bool{}, true
				c.unstable[q], c.resetFrom[q] = false, false
				delete(c.position, q)
				delete(c.rewound, q)
			}
			owned[q] = since
		}
		for q := range c.owned {
			if _, kept := owned[q]; !kept {
				c.unknown[q], c.resetFrom[q] = false, false
			}
		}
		c.owned = owned
	case op.Kind == model.OffsetFetch && op.Result.Err == "":
		c.unknown[p], c.resetFrom[p] = false, false
		delete(c.position, p)
		delete(c.rewound, p)
		if _, owned := c.owned[p]; owned && op.Result.Resp.Offset == model.NoOffset {
			c.resetPending[p] = true
		}
	case op.Kind == model.OffsetFetch && op.Result.Err == model.UnstableOffsetCommit:
		if _, owned := c.owned[p]; owned {
			c.unstable[p] = true
			break
		}
		// An answer for a partition it no longer owns: its request was
		// sent for an earlier assignment, and went with every
		// partition of that one's it still queries.
		for q := range c.owned {
			if c.unknown[q] {
				c.unstable[q] = true
			}
		}
	case op.Kind == model.Fetch && op.Result.Err == "":
		since, owned := c.owned[p]
		var into map[model.Partition]map[int64]bool
		switch {
		case c.strayCall[op.ID]:
			into = c.stray
		case owned && op.Call > since:
			into = c.fresh
		default:
			return // sent before it was given the partition it now has, or before it lost it
		}
		if into[p] == nil {
			into[p] = map[int64]bool{}
		}
		below, rewind := c.rewindBelow[op.ID]
		current := !c.strayCall[op.ID] // a fetch of the assignment it holds, which reaches a position
		for _, r := range op.Result.Resp.Records {
			into[p][r.Offset] = true
			if !current {
				continue
			}
			if rewind && r.Offset < below {
				if c.rewound[p] == nil {
					c.rewound[p] = map[int64]bool{}
				}
				c.rewound[p][r.Offset] = true
			}
			if _, known := c.position[p]; known {
				c.position[p] = max(c.position[p], r.Offset+1)
			}
		}
	}
}

// called takes in that op was sent: a fetch of a partition whose
// committed offset the client does not know starts from a reset.
func (c *librdkafkaClient) called(op histories.Op) {
	if op.Kind != model.Fetch {
		return
	}
	p := op.Req.Partition
	if _, owned := c.owned[p]; !owned {
		c.strayCall[op.ID] = true
		return
	}
	if c.unknown[p] {
		c.resetFrom[p] = c.unstable[p]
		c.unknown[p] = false
	}
	c.resetPending[p] = false // its lookup was answered in time
	pos, known := c.position[p]
	if c.outdatedReset[p] && known && op.Req.Offset < pos {
		c.rewindBelow[op.ID], c.outdatedReset[p] = pos, false
	}
	c.position[p] = max(pos, op.Req.Offset)
}

// committsStale reports whether op, a txn_offset_commit the client
// sends, commits a partition past a record that is not its to process.
func (c *librdkafkaClient) committsStale(op histories.Op) bool {
	stale := false
	for p, next := range op.Req.Offsets {
		last := next - 1
		if c.stray[p][last] && !c.fresh[p][last] {
			stale = true
		}
		if c.resetFrom[p] && c.fresh[p][last] {
			stale = true
		}
		if c.rewound[p][last] {
			stale = true
		}
	}
	return stale
}

// assignmentOf is the assignment op's answer gives its client, nil when it
// gives none: a classic round's (join_group whole, or sync_group) or a
// consumer_group_heartbeat's that names one (KIP-848).
func assignmentOf(op histories.Op) *[]model.Partition {
	if op.Result.Err != "" {
		return nil
	}
	switch {
	case op.Kind == model.JoinGroup && !op.Req.JoinOnly, op.Kind == model.SyncGroup:
		return &op.Result.Resp.Assignment
	case op.Kind == model.ConsumerGroupHeartbeat:
		return op.Result.Resp.MemberAssignment
	}
	return nil
}

// TestLibrdkafkaStaleRecordsNamedOnlyWhereItBroke: the known finding
// explains each check that librdkafka's two bugs break in their saved
// histories, and none that the other libraries' saved counterexamples and
// the canonical histories break; and once the client is not handed the
// stale records (the stray fetch answers nothing, the offset is fetched
// before the partition is, no offset lookup is needed), it explains
// nothing.
func TestLibrdkafkaStaleRecordsNamedOnlyWhereItBroke(t *testing.T) {
	bugs := map[string]func(histories.History) histories.History{
		"confluent-kafka-go-kip447-txn-v1-stale-fetch.json":           withoutStrayRecords,
		"confluent-kafka-go-kip447-txn-v1-stale-fetch-recommit.json":  withoutStrayRecords,
		"confluent-kafka-go-kip447-txn-v2-unstable-reset.json":        withOffsetFetchedBeforeReset,
		"confluent-kafka-go-kip447-txn-v1-outdated-reset-rewind.json": withOffsetsCommitted,
		"confluent-kafka-go-kip447-kip848-unstable-reset.json":        withOffsetFetchedBeforeReset,
		"confluent-kafka-go-kip447-kip848-pause-rewind.json":          withOffsetsCommitted,
	}
	var files []string
	for _, dir := range []string{clientsDir, "../histories/canonical"} {
		found, err := filepath.Glob(filepath.Join(dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, found)
		files = append(files, found...)
	}
	violatedElsewhere := 0
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		report := checker.Check(h, checker.Options{})
		fix, bug := bugs[filepath.Base(file)]
		explained := 0
		for _, check := range []string{checker.ExactlyOnce, checker.OffsetsMonotonic} {
			v := report.Verdict(check)
			if !bug && !v.Held() {
				violatedElsewhere++
			}
			require.Equal(t, bug && !v.Held(), explainedByLibrdkafka(h, v), "%s: %s", file, v)
			if explainedByLibrdkafka(h, v) {
				explained++
			}
		}
		if bug {
			require.Positive(t, explained, "%s breaks neither check", file)
		}
		if bug {
			fixed := fix(h)
			report := checker.Check(fixed, checker.Options{})
			for _, check := range []string{checker.ExactlyOnce, checker.OffsetsMonotonic} {
				require.False(t, explainedByLibrdkafka(fixed, report.Verdict(check)), "%s without the stale records: %s", file, report.Verdict(check))
			}
		}
	}
	require.Positive(t, violatedElsewhere, "no other history breaks the checks: the test shows nothing")
}

// withoutStrayRecords is h with every fetch of a partition its client did
// not own answered with no records.
func withoutStrayRecords(h histories.History) histories.History {
	out := h
	out.Ops = slices.Clone(h.Ops)
	for i, op := range out.Ops {
		if op.Kind == model.Fetch && strayFetch(h, op) {
			out.Ops[i].Result.Resp.Records = nil
		}
	}
	return out
}

// strayFetch reports whether op, a fetch, was sent while its client's
// last assignment did not hold the partition.
func strayFetch(h histories.History, op histories.Op) bool {
	var last *histories.Op
	for _, a := range h.Ops {
		if a.Process() == op.Process() && a.Returned && a.Result.Answered && a.Return < op.Call && assignmentOf(a) != nil && (last == nil || a.Return > last.Return) {
			last = &a
		}
	}
	return last != nil && !slices.Contains(*assignmentOf(*last), op.Req.Partition)
}

// withOffsetFetchedBeforeReset is h with a successful offset_fetch of its
// partition by the client of each fetch that follows an
// UNSTABLE_OFFSET_COMMIT answer, just before the fetch.
func withOffsetFetchedBeforeReset(h histories.History) histories.History {
	out := h
	out.Ops = slices.Clone(h.Ops)
	id := slices.MaxFunc(h.Ops, func(a, b histories.Op) int { return cmp.Compare(a.ID, b.ID) }).ID
	for _, f := range h.Ops {
		if f.Kind != model.Fetch || !slices.ContainsFunc(h.Ops, func(o histories.Op) bool {
			return o.Kind == model.OffsetFetch && o.Process() == f.Process() && o.Req.Partition == f.Req.Partition && o.Result.Err == model.UnstableOffsetCommit && o.Return < f.Call
		}) {
			continue
		}
		id++
		req := model.NewRequest()
		req.Group, req.Partition, req.RequireStable = "fare-workers", f.Req.Partition, true
		resp := model.NewResponse()
		resp.Offset = f.Req.Offset
		out.Ops = append(out.Ops, histories.Op{ID: id, Proc: f.Process(), Call: f.Call, Return: f.Call, Returned: true,
			Op: model.Op{Kind: model.OffsetFetch, Req: req}, Result: model.OK(resp)})
	}
	return out
}

// withOffsetsCommitted is h with every offset_fetch that found no
// committed offset answered offset 0 instead: no partition is reset by an
// offset lookup, so none is sent back to a reset by an outdated answer.
func withOffsetsCommitted(h histories.History) histories.History {
	out := h
	out.Ops = slices.Clone(h.Ops)
	for i, op := range out.Ops {
		if op.Kind == model.OffsetFetch && op.Result.Succeeded() && op.Result.Resp.Offset == model.NoOffset {
			out.Ops[i].Result.Resp.Offset = 0
		}
	}
	return out
}

// TestSessionPropertyNamesLibrdkafkaOnlyForItsLoops: the property's judge
// names the finding on a confluent-kafka-go loop's history, and not when
// the same history is franz-go's session's or sarama's loop's.
func TestSessionPropertyNamesLibrdkafkaOnlyForItsLoops(t *testing.T) {
	h, err := histories.LoadFile(filepath.Join(clientsDir, "confluent-kafka-go-kip447-txn-v1-stale-fetch-recommit.json"))
	require.NoError(t, err)
	report := checker.Check(h, checker.Options{})
	sig := report.Signatures()[slices.IndexFunc(report.Signatures(), func(s checker.Signature) bool { return s.Check == checker.ExactlyOnce })]
	for _, loop := range []*clients.Loop{{Library: confluentLibrary, Name: "kip447"}, {Library: "sarama", Name: "kip447"}, nil} {
		name, ok := (&sessionMachine{loop: loop}).knownFinding(h, report, sig)
		if loop != nil && loop.Library == confluentLibrary {
			require.True(t, ok)
			require.Equal(t, librdkafkaStaleRecords, name)
		} else {
			require.False(t, ok, "%v: %s", loop, name)
		}
	}
}
