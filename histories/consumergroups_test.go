package histories

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// A consumer_group_heartbeat's lists tell null from empty, as Kafka's
// request does (KIP-848): left out is unchanged, [] is none. Load keeps
// the difference and Save writes it back.
func TestConsumerHeartbeatTellsAbsentFromEmpty(t *testing.T) {
	d := doc(`{"id": 0, "proc": "A", "call": 0, "return": 1, "type": "consumer_group_heartbeat", `+
		`"req": {"group": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 300000, `+
		`"subscribed_topic_names": ["trips"], "owned_partitions": []}, `+
		`"resp": {"member_id": "m", "member_epoch": 1, "heartbeat_interval_ms": 5000, "assignment": ["trips-0"]}}`,
		`{"id": 1, "proc": "A", "call": 2, "return": 3, "type": "consumer_group_heartbeat", `+
			`"req": {"group": "g", "member_id": "m", "member_epoch": 1}, "resp": {"member_epoch": 1}}`,
		`{"id": 2, "proc": "A", "call": 4, "return": 5, "type": "consumer_group_heartbeat", `+
			`"req": {"group": "g", "member_id": "m", "member_epoch": -1}, "resp": {"member_id": "m", "member_epoch": -1}}`)
	h, err := Load(strings.NewReader(d))
	require.NoError(t, err)
	join, beat, leave := h.Ops[0], h.Ops[1], h.Ops[2]
	require.NotNil(t, join.Req.OwnedPartitions)
	require.Empty(t, *join.Req.OwnedPartitions)
	require.Equal(t, []string{"trips"}, *join.Req.SubscribedTopics)
	require.Equal(t, int64(300000), join.Req.RebalanceTimeoutMs)
	require.Equal(t, []model.Partition{"trips-0"}, *join.Result.Resp.MemberAssignment)
	require.Nil(t, beat.Req.OwnedPartitions, "left out: unchanged")
	require.Nil(t, beat.Req.SubscribedTopics, "left out: unchanged")
	require.Nil(t, beat.Result.Resp.MemberAssignment, "left out: unchanged")
	require.Equal(t, model.LeaveMemberEpoch, leave.Req.MemberEpoch)
	require.Equal(t, model.LeaveMemberEpoch, leave.Result.Resp.MemberEpoch)

	var out bytes.Buffer
	require.NoError(t, Save(&out, h))
	require.Contains(t, out.String(), `"owned_partitions": []`)
	again, err := Load(&out)
	require.NoError(t, err)
	require.Equal(t, h.Ops, again.Ops)
}

// Bad values name the field.
func TestConsumerHeartbeatRefusals(t *testing.T) {
	for _, c := range []struct{ req, err string }{
		{`{"group": "g", "member_id": "m"}`, "req.member_epoch is required"},
		{`{"group": "g", "member_id": "m", "member_epoch": 0, "owned_partitions": ["trips"]}`, "is not a partition"},
		{`{"group": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": -1}`, "req.rebalance_timeout_ms: -1 is out of range"},
		{`{"member_id": "m", "member_epoch": 0}`, "req.group is required"},
	} {
		_, err := Load(strings.NewReader(doc(`{"id": 0, "proc": "A", "call": 0, "type": "consumer_group_heartbeat", "req": ` + c.req + `}`)))
		require.ErrorContains(t, err, c.err, c.req)
	}
}
