package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A member that does not rejoin while another member's join rebalances the
// group is dropped by the coordinator when the rebalance times out (Kafka's
// classic group protocol); its later rejoin with the old member id is
// UNKNOWN_MEMBER_ID. The model keeps the member (FINDINGS.md, finding 7).
func TestDroppedMemberRejoins(t *testing.T) {
	trips0 := model.Partition("trips-0")
	forEachProtocol(t, func(t *testing.T, s *scenario) {
		j1 := s.ok("W1", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		j2 := s.ok("W2", model.JoinGroup, joinRequest("fare-workers", "", trips0))
		require.Greater(t, j2.GenerationID, j1.GenerationID)
		s.send("W1", model.JoinGroup, joinRequest("fare-workers", j1.MemberID, trips0))
		s.check("dropped-member-rejoins")
	})
}
