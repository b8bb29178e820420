package model

// A restarted coordinator loads each group again from __consumer_offsets
// (restartReloadsGroups). While it loads a group's partition it answers
// a heartbeat with success, blindly, and changes nothing: 3.9
// GroupCoordinator.handleHeartbeat ("the group is still loading, so
// respond just blindly"); 4.x GroupCoordinatorService.heartbeat turns
// COORDINATOR_LOAD_IN_PROGRESS into success. Test:
// GroupCoordinatorTest#testRequestHandlingWhileLoadingInProgress. The
// model does not know when the load ends. So from a restart, a group's
// heartbeat may be answered success whatever the rules say, until the
// group's first answer that only a loaded coordinator gives: a success
// to any other of its requests (a loading coordinator answers them
// COORDINATOR_LOAD_IN_PROGRESS, and a SyncGroup REBALANCE_IN_PROGRESS).
// A group the coordinator did not hold at the restart is not taken as
// loading, so a heartbeat to it is judged by the rules.

// blindHeartbeat is out, the rules' refusal of a heartbeat, with success
// taken too, with no effect, while the coordinator may be loading the
// group.
func (st *step) blindHeartbeat(r Request, out outcome) outcome {
	if g, ok := st.s.groups[r.Group]; ok && g.loading && out.refuse != "" && out.also == "" {
		out.also = Success
	}
	return out
}

// loadedBy ends the load of the group of a request whose success only a
// loaded coordinator gives. The state it marks is the one that follows
// only where the request took effect, so a refusal leaves the group as
// it was.
func (st *step) loadedBy() {
	switch st.op.Kind {
	case JoinGroup, SyncGroup, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch:
	default:
		return
	}
	if g, ok := st.s.groups[st.op.Req.Group]; ok && g.loading {
		g.loading = false
		st.s.setGroup(st.op.Req.Group, g)
	}
}
