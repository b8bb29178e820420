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
