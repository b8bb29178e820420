package kafka

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// franzGoRegainsAtOldPosition is franz-go's known finding, decided and
// written up in histories/clients/README.md ("a member whose JoinGroup is
// answered UNKNOWN_MEMBER_ID keeps its partitions and their positions";
// kafka/FINDINGS.md, 25, met through the proxy): kgo v1.22.3's
// groupConsumer.handleJoinResp only clears the member id and joins again,
// so a partition given back to the member is read on from where it was
// before, not from the group's committed offset. Java's consumer gives
// every owned partition away as lost then
// (AbstractCoordinator.resetStateOnResponseError,
// ConsumerCoordinator.onJoinPrepare), and fetches the committed offset of
// each partition assigned again. TestFranzGoRejoinAfterUnknownMember shows
// it with kgo alone.
//
// The session property runs franz-go's own loop, to judge the broker under
// it: a violation this finding explains is logged, as kfake's known
// findings are, and the search goes on.
const franzGoRegainsAtOldPosition = "franz-go-regains-at-old-position"

// explainedByStaleRegain reports whether every violation of v, a check of
// h, is an operation of a client that, before it, committed a partition
// it had lost from a stale position (staleCommits).
func explainedByStaleRegain(h histories.History, v checker.Verdict) bool {
	if v.Held() || len(v.Violations) == 0 {
		return false
	}
	stale := staleCommits(h)
	byID := make(map[int]histories.Op, len(h.Ops))
	for _, op := range h.Ops {
		byID[op.ID] = op
	}
	for _, violation := range v.Violations {
		op, ok := byID[violation.Op]
		since, committedStale := stale[op.Process()]
		if !ok || !committedStale || op.Call < since {
			return false
		}
	}
	return true
}

// staleCommits are, for each client of h that committed a partition from
// a stale position, when its first such txn_offset_commit was called.
//
// Once a JoinGroup under its member id is answered UNKNOWN_MEMBER_ID, the
// partitions a client owned are lost (Java's
// ConsumerCoordinator.onJoinPrepare): it drops what it buffered of them
// and has no position in them until it fetches their committed offset. A
// client that instead commits one of them with no offset_fetch of it
// since went on from its own position, which the group may have moved
// past meanwhile.
func staleCommits(h histories.History) map[string]int64 {
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) })
	members := map[string]*membership{}
	stale := map[string]int64{}
	for _, op := range ops {
		client := op.Process()
		m := members[client]
		if m == nil {
			m = &membership{lost: map[model.Partition]bool{}}
			members[client] = m
		}
		if _, seen := stale[client]; m.observe(op) && !seen {
			stale[client] = op.Call
		}
	}
	return stale
}

// membership follows what one client knows of its group.
type membership struct {
	owned []model.Partition // its last assignment
	// lost are the partitions it owned when a join under its member id
	// was refused as unknown, whose committed offset it has not fetched
	// since.
	lost map[model.Partition]bool
}

// observe follows the client's operation op, and reports whether op
// commits a lost partition.
func (m *membership) observe(op histories.Op) bool {
	if op.Kind == model.Crash || op.Kind == model.Restart {
		*m = membership{lost: map[model.Partition]bool{}} // a new instance starts afresh
		return false
	}
	if !op.Returned || !op.Result.Answered {
		return false
	}
	// A round recorded in two parts assigns in its sync_group, and a
	// SyncGroup that came late is answered UNKNOWN_MEMBER_ID where the
	// whole round's join_group was.
	member := op.Kind == model.SyncGroup || (op.Kind == model.JoinGroup && op.Req.MemberID != "")
	switch {
	case member && op.Result.Err == model.UnknownMemberID:
		for _, p := range m.owned {
			m.lost[p] = true
		}
	case op.Kind == model.JoinGroup && op.Result.Err == "" && !op.Req.JoinOnly,
		op.Kind == model.SyncGroup && op.Result.Err == "":
		m.owned = op.Result.Resp.Assignment
	case op.Kind == model.OffsetFetch && op.Result.Err == "":
		delete(m.lost, op.Req.Partition)
	case op.Kind == model.TxnOffsetCommit && op.Result.Err == "":
		for p := range op.Req.Offsets {
			if m.lost[p] {
				return true
			}
		}
	}
	return false
}

// TestFranzGoRegainIsNamedOnlyWhereItBroke: the known finding explains
// both checks that franz-go's regain breaks in its saved histories, and
// nothing the other libraries' saved counterexamples break; and once the
// regaining client fetches its committed offsets, as Java's consumer does,
// it explains nothing.
func TestFranzGoRegainIsNamedOnlyWhereItBroke(t *testing.T) {
	files, err := filepath.Glob("../histories/clients/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		report := checker.Check(h, checker.Options{})
		franzGo := strings.HasPrefix(filepath.Base(file), "franz-go-")
		for _, check := range []string{checker.ExactlyOnce, checker.OffsetsMonotonic} {
			v := report.Verdict(check)
			if franzGo {
				require.False(t, v.Held(), "%s: %s", file, v)
			}
			require.Equal(t, franzGo && !v.Held(), explainedByStaleRegain(h, v), "%s: %s", file, v)
		}
		if franzGo {
			fetched := fetchOffsetsAfterEachJoin(h)
			report := checker.Check(fetched, checker.Options{})
			for _, check := range []string{checker.ExactlyOnce, checker.OffsetsMonotonic} {
				require.False(t, explainedByStaleRegain(fetched, report.Verdict(check)), "%s with offsets fetched: %s", file, report.Verdict(check))
			}
		}
	}
}

// fetchOffsetsAfterEachJoin is h with an offset_fetch of every partition
// a join spreads, by the joining client, as the join is answered.
func fetchOffsetsAfterEachJoin(h histories.History) histories.History {
	out := h
	out.Ops = slices.Clone(h.Ops)
	id := slices.MaxFunc(h.Ops, func(a, b histories.Op) int { return cmp.Compare(a.ID, b.ID) }).ID
	for _, join := range h.Ops {
		if join.Kind != model.JoinGroup || !join.Returned || !join.Result.Answered {
			continue
		}
		for _, p := range join.Req.Partitions {
			id++
			req := model.NewRequest()
			req.Group, req.Partition, req.RequireStable = join.Req.Group, p, true
			resp := model.NewResponse()
			out.Ops = append(out.Ops, histories.Op{ID: id, Proc: join.Process(), Call: join.Return, Return: join.Return, Returned: true,
				Op: model.Op{Kind: model.OffsetFetch, Req: req}, Result: model.OK(resp)})
		}
	}
	return out
}
