package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A member that does not rejoin while another member's join rebalances the
// group is dropped by the coordinator when the rebalance times out (Kafka's
// classic group protocol); its later rejoin with the old member id is
// UNKNOWN_MEMBER_ID, which the model accepts (FINDINGS.md, finding 7).
// Here W1's process is paused as a whole: its heartbeats stop too.
func TestDroppedMemberRejoins(t *testing.T) {
	trips0 := model.Partition("trips-0")
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		j1 := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		s.target.silence(j1.MemberID)
		j2 := s.ok("W2", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		require.Greater(t, j2.GenerationID, j1.GenerationID)
		s.send("W1", model.JoinGroup, joinRequest("fare-workers", j1.MemberID, trips0))
		s.check("dropped-member-rejoins")
	})
}

// A member busy with its own work while another joins is kept in the
// group by its heartbeats, which the target sends for it: the round
// completes with both, each with its share, and the busy member's rejoin
// finds it still a member (FINDINGS.md, finding 8).
func TestBusyMemberKeptByItsHeartbeats(t *testing.T) {
	parts := []model.Partition{"fares-0", "fares-1"}
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		j1 := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", parts...))
		require.Equal(t, parts, j1.Assignment)
		j2 := s.ok("W2", model.JoinGroup, joinRequest("fare-workers", "", parts...))
		require.Greater(t, j2.GenerationID, j1.GenerationID)
		require.Len(t, j2.Assignment, 1, "W1 was dropped: W2 got every partition")
		// W1 learns of it when it joins again: it is still a member (as
		// the round's leader, its join starts another round, which
		// keeps W2 in the same way).
		again := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", j1.MemberID, parts...))
		require.GreaterOrEqual(t, again.GenerationID, j2.GenerationID)
		require.Len(t, again.Assignment, 1)
		s.check("busy-member-kept")
	})
}

// A member whose process sent nothing for a session timeout has stopped
// heartbeating (it crashed): the target does not keep it, and the next
// join's round completes without it, as in the model.
func TestSilentMemberNotKept(t *testing.T) {
	parts := []model.Partition{"fares-0", "fares-1"}
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", parts...))
		tick := model.NewRequest()
		tick.Ms = model.DefaultSessionTimeoutMs
		s.target.Tick(tick.Ms)
		s.rec.Fault("clock", model.Tick, tick)
		j2 := s.ok("W2", model.JoinGroup, joinRequest("fare-workers", "", parts...))
		require.Equal(t, parts, j2.Assignment)
		s.check("silent-member-dropped")
	})
}

// A member's plain OffsetCommit goes over the wire with its member id and
// generation: the group's offset moves, a commit under the generation
// before a rebalance is ILLEGAL_GENERATION and moves nothing, and the
// recorded history (one operation per commit, no more) is judged correct.
func TestPlainOffsetCommit(t *testing.T) {
	trips0 := model.Partition("trips-0")
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		commit := func(member string, gen int32, offset int64) model.Request {
			r := model.NewRequest()
			r.Group, r.MemberID, r.GenerationID = "fare-workers", member, gen
			r.Offsets = map[model.Partition]int64{trips0: offset}
			return r
		}
		j1 := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		s.ok("W1", model.OffsetCommit, commit(j1.MemberID, j1.GenerationID, 2))
		require.Equal(t, int64(2), s.ok("W1", model.OffsetFetch, offsetFetchRequest("fare-workers", trips0)).Offset)

		j2 := s.ok("W2", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		require.Greater(t, j2.GenerationID, j1.GenerationID)
		stale := s.send("W1", model.OffsetCommit, commit(j1.MemberID, j1.GenerationID, 1))
		require.Equal(t, model.IllegalGeneration, stale.Err)
		require.Equal(t, int64(2), s.ok("W2", model.OffsetFetch, offsetFetchRequest("fare-workers", trips0)).Offset)

		h := s.history("plain-offset-commit")
		var commits int
		for _, op := range h.Ops {
			if op.Kind == model.OffsetCommit {
				commits++
			}
		}
		require.Equal(t, 2, commits, "each commit recorded once")
		s.check("plain-offset-commit")
	})
}
