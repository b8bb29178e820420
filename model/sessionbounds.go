package model

import "fmt"

// The broker configs that bound a classic member's session timeout,
// under Kafka's names.
const (
	GroupMinSessionTimeoutConfig = "group.min.session.timeout.ms"
	GroupMaxSessionTimeoutConfig = "group.max.session.timeout.ms"
)

// sessionTimeoutBounds refuses a JoinGroup whose session timeout is
// outside the broker's bounds with INVALID_SESSION_TIMEOUT. Kafka checks
// them before it looks at the group, so the refusal changes nothing
// (GroupCoordinator.handleJoinGroup, 3.9; GroupCoordinatorService
// .joinGroup, 4.x). Tests: GroupCoordinatorTest
// #testJoinGroupSessionTimeoutTooSmall, #testJoinGroupSessionTimeoutTooLarge.
// Only a bound the history names is judged, and only a session timeout
// the request names: 0 is one the history does not know.
func (st *step) sessionTimeoutBounds(r Request) *outcome {
	ms, lo, hi := r.SessionTimeoutMs, st.s.opts.GroupMinSessionTimeoutMs, st.s.opts.GroupMaxSessionTimeoutMs
	if ms <= 0 {
		return nil
	}
	if lo > 0 && ms < lo {
		out := refuse("session-timeout-bounds", InvalidSessionTimeout, "session timeout %d ms is below %s %d", ms, GroupMinSessionTimeoutConfig, lo)
		return &out
	}
	if hi > 0 && ms > hi {
		out := refuse("session-timeout-bounds", InvalidSessionTimeout, "session timeout %d ms is above %s %d", ms, GroupMaxSessionTimeoutConfig, hi)
		return &out
	}
	return nil
}

// WrongSessionTimeoutRefusal says why got is an INVALID_SESSION_TIMEOUT
// that Kafka cannot have answered: op is a JoinGroup whose session
// timeout is within both bounds, which the history names (opts). With
// either bound not named, the cluster may be set to any, so the refusal
// is taken, as before the bounds were known. It is nil otherwise.
func WrongSessionTimeoutRefusal(opts Options, op Op, got Result) error {
	ms, lo, hi := op.Req.SessionTimeoutMs, opts.GroupMinSessionTimeoutMs, opts.GroupMaxSessionTimeoutMs
	if op.Kind != JoinGroup || !got.Answered || got.Err != InvalidSessionTimeout || ms <= 0 || lo <= 0 || hi <= 0 || ms < lo || ms > hi {
		return nil
	}
	return &Disallowed{Rule: "session-timeout-bounds", Want: Success, Got: ClassOf(op.Kind, got.Err),
		Reason: fmt.Sprintf("answered %s, but session timeout %d ms is within %s %d and %s %d", got.Err, ms,
			GroupMinSessionTimeoutConfig, lo, GroupMaxSessionTimeoutConfig, hi)}
}
