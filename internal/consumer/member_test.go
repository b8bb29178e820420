package consumer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// TestTakeKeepsThePlaceOfWhatStays: a partition kept keeps its position;
// one added is unknown until its committed offset is read; one revoked
// is no longer read, and its old place is dropped if it comes back.
func TestTakeKeepsThePlaceOfWhatStays(t *testing.T) {
	var m Member
	m.Take([]model.Partition{"trips-0", "trips-1"})
	require.Equal(t, []model.Partition{"trips-0", "trips-1"}, m.Unknown)
	m.Unknown, m.Position["trips-0"], m.Position["trips-1"] = nil, 7, 9
	m.Drained["trips-1"] = true
	m.Take([]model.Partition{"trips-1", "trips-2"})
	require.Equal(t, []model.Partition{"trips-1", "trips-2"}, m.Assigned)
	require.Equal(t, []model.Partition{"trips-2"}, m.Unknown)
	require.Equal(t, int64(9), m.Position["trips-1"])
	require.True(t, m.Drained["trips-1"])
	m.Take([]model.Partition{"trips-0", "trips-1"})
	require.Equal(t, []model.Partition{"trips-0"}, m.Unknown)
	require.NotContains(t, m.Position, model.Partition("trips-0"), "its committed offset is read again")
	require.Equal(t, int64(9), m.Position["trips-1"])
}

// TestReconcileTakesWhatTheHeartbeatsTold: a fenced member lets its
// partitions go and heartbeats; an assignment told is taken once and
// acknowledged; the same assignment again changes nothing; the member
// epoch becomes the generation the commits carry.
func TestReconcileTakesWhatTheHeartbeatsTold(t *testing.T) {
	m := Member{MemberEpoch: 3, Generation: model.NoGeneration}
	told := []model.Partition{"trips-0"}
	m.Told = &told
	require.True(t, m.Reconcile())
	require.True(t, m.BeatDue)
	require.Equal(t, told, m.Assigned)
	require.Equal(t, int32(3), m.Generation)

	m.BeatDue = false
	again := []model.Partition{"trips-0"}
	m.Told = &again
	require.False(t, m.Reconcile(), "the same assignment is not taken again")
	require.False(t, m.BeatDue)
	require.Nil(t, m.Told)

	m.Lost, m.MemberEpoch = true, model.JoinMemberEpoch
	require.True(t, m.Reconcile())
	require.Empty(t, m.Assigned)
	require.True(t, m.BeatDue, "letting partitions go is acknowledged")
	require.Equal(t, int32(3), m.Generation, "a member that is to join keeps the generation it saw")
}
