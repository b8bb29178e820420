package histories

import (
	"encoding/json"
	"math"

	"github.com/fencecheck/fencecheck/model"
)

// The fields of consumer_group_heartbeat (KIP-848). Its lists tell null
// from empty, as Kafka's request does: a list left out did not change
// since the member's last heartbeat, while an empty one says "none".

// nullableTexts is a list of strings whose absence differs from the
// empty list: nil is absent, a pointer to an empty list is "none".
type nullableTexts[T ~string] struct {
	p     **[]T
	valid func(T) error
}

func (t nullableTexts[T]) decode(path string, raw json.RawMessage) error {
	var list []T
	if err := (texts[T]{&list, t.valid}).decode(path, raw); err != nil {
		return err
	}
	*t.p = &list
	return nil
}

func (t nullableTexts[T]) absent() bool { return *t.p == nil }

func (t nullableTexts[T]) encode() any {
	return encodeList(**t.p, func(v *T) any { return string(*v) })
}

var (
	// memberEpochs are a request's: 0 joins, -1 leaves, -2 leaves for a
	// static member's return. Kafka refuses others below -2
	// (INVALID_REQUEST), so they may be recorded and judged.
	memberEpochs = span{lo: math.MinInt32, hi: math.MaxInt32}
	// answeredEpochs are an answer's: -1 and -2 answer a leave, and 0
	// is absent, because Kafka answers a member that stays at epoch 1 at
	// least.
	answeredEpochs = span{lo: -2, hi: math.MaxInt32, none: 0, hasNone: true}
	// fetchEpochs are an offset_fetch's: 0 is absent, because a
	// consumer group member is at epoch 1 at least, and -1 is Kafka's
	// "no member epoch" (an admin's fetch).
	fetchEpochs = span{lo: math.MinInt32, hi: math.MaxInt32, none: 0, hasNone: true}
)

var (
	qMemberEpoch = field[request]{"member_epoch", func(r *request) codec {
		return number[int32]{&r.MemberEpoch, memberEpochs}
	}}
	qFetchMemberEpoch = field[request]{"member_epoch", func(r *request) codec {
		return number[int32]{&r.MemberEpoch, fetchEpochs}
	}}
	qSubscribedTopics = field[request]{"subscribed_topic_names", func(r *request) codec {
		return nullableTexts[string]{p: &r.SubscribedTopics}
	}}
	qSubscribedRegex = field[request]{"subscribed_topic_regex", func(r *request) codec {
		return text[string]{p: &r.SubscribedRegex}
	}}
	qServerAssignor  = field[request]{"server_assignor", func(r *request) codec { return text[string]{p: &r.ServerAssignor} }}
	qOwnedPartitions = field[request]{"owned_partitions", func(r *request) codec {
		return nullableTexts[model.Partition]{&r.OwnedPartitions, validPartition}
	}}

	pMemberEpoch = field[response]{"member_epoch", func(r *response) codec {
		return number[int32]{&r.MemberEpoch, answeredEpochs}
	}}
	pHeartbeatIntervalMs = field[response]{"heartbeat_interval_ms", func(r *response) codec {
		return number[int64]{&r.HeartbeatIntervalMs, durations}
	}}
	pMemberAssignment = field[response]{"assignment", func(r *response) codec {
		return nullableTexts[model.Partition]{&r.MemberAssignment, validPartition}
	}}
)

// consumerHeartbeatReq and consumerHeartbeatResp are the slots of
// consumer_group_heartbeat, in the order of docs/history-format.md. A
// member_id may be "": a new member's, before KIP-1082 (4.0) let the
// client choose it.
var (
	consumerHeartbeatReq = []slot[request]{qGroup.req(), qMemberID.always(), qMemberEpoch.always(),
		qInstanceID.opt(), qRebalanceTimeoutMs.opt(), qSubscribedTopics.opt(), qSubscribedRegex.opt(),
		qServerAssignor.opt(), qOwnedPartitions.opt()}
	consumerHeartbeatResp = []slot[response]{pMemberID.opt(), pMemberEpoch.opt(), pHeartbeatIntervalMs.opt(),
		pMemberAssignment.opt()}
)
