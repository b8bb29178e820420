// Package consumer is what a consumer's application keeps of its group
// membership and its place in each partition between two polls. The
// exploration's workers (internal/workload) and the long histories'
// workers (scripts/longhistory) share it, so that both take a KIP-848
// assignment the same way.
package consumer

import (
	"slices"

	"github.com/fencecheck/fencecheck/model"
)

// Member is a group member as its application sees it.
type Member struct {
	// MemberEpoch is the membership's epoch, as the last heartbeat's
	// answer said; 0 when the member is to join (KIP-848).
	MemberEpoch int32
	// Generation is the generation, or the member epoch, the
	// application last saw, which its offset commits carry.
	Generation int32
	Assigned   []model.Partition
	Unknown    []model.Partition         // assigned, committed offset not yet read
	Position   map[model.Partition]int64 // the next input offset to process
	Stable     map[model.Partition]int64 // the last stable offset the last fetch saw
	Drained    map[model.Partition]bool
	// Told is an assignment a heartbeat answered, not yet reconciled.
	// Lost: the member was fenced, and the application has not yet let
	// its partitions go. BeatDue: a heartbeat goes before the
	// application's next request (an assignment to acknowledge, or its
	// interval passed).
	Told    *[]model.Partition
	Lost    bool
	BeatDue bool
}

// Reconcile is the application's poll taking what the heartbeats told
// it: the member epoch (its group metadata), the loss of its partitions
// when the member was fenced, and a new assignment. A changed assignment
// is acknowledged by the next heartbeat. It reports whether it took an
// assignment (Take), so that the caller starts reading again.
func (m *Member) Reconcile() (took bool) {
	if m.Lost {
		m.Lost = false
		if len(m.Assigned) > 0 {
			m.BeatDue = true
		}
		m.Take(nil)
		took = true
	}
	if m.Told != nil {
		told := *m.Told
		m.Told = nil
		if !slices.Equal(told, m.Assigned) {
			m.Take(told)
			m.BeatDue = true
			took = true
		}
	}
	if m.MemberEpoch > 0 {
		m.Generation = m.MemberEpoch
	}
	return took
}

// Take makes ps the application's partitions: it stops reading those
// revoked, keeps its place in those it keeps, and marks those added as
// Unknown, whose committed offsets it reads before reading on. A
// partition revoked keeps its old place until it comes back, unread.
func (m *Member) Take(ps []model.Partition) {
	if m.Position == nil {
		m.Position, m.Stable, m.Drained = map[model.Partition]int64{}, map[model.Partition]int64{}, map[model.Partition]bool{}
	}
	var unknown []model.Partition
	for _, p := range ps {
		if !slices.Contains(m.Assigned, p) || slices.Contains(m.Unknown, p) {
			unknown = append(unknown, p)
			delete(m.Position, p)
			delete(m.Stable, p)
			delete(m.Drained, p)
		}
	}
	m.Assigned, m.Unknown = ps, unknown
}
