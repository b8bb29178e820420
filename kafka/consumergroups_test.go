package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/fencecheck/fencecheck/model"
)

// beat sends one KIP-848 heartbeat of proc, recorded.
func (s *scenario) beat(proc string, r model.Request) model.Result {
	s.t.Helper()
	op := model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
	end := s.rec.Observe(proc, "", op)
	res, err := model.Send(s.ctx, s.target, op)
	require.NoError(s.t, err)
	end(res)
	return res
}

// TestConsumerHeartbeatToUnknownGroup: a KIP-848 leave, and a heartbeat
// at an epoch above 0, to a group the coordinator does not have. Kafka
// answers both GROUP_ID_NOT_FOUND (GroupMetadataManager.consumerGroupLeave
// and getOrMaybeCreateConsumerGroup(groupId, false)); kfake creates the
// group and answers UNKNOWN_MEMBER_ID (FINDINGS.md, 29).
func TestConsumerHeartbeatToUnknownGroup(t *testing.T) {
	s := newScenario(t, "")
	leave := model.NewRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "fare-workers", "fare-worker-B", model.LeaveMemberEpoch
	res := s.beat("B", leave)
	require.True(t, res.Answered)
	beat := model.NewRequest()
	beat.Group, beat.MemberID, beat.MemberEpoch = "fare-riders", "fare-rider-C", 5
	res = s.beat("C", beat)
	require.True(t, res.Answered)
	t.Logf("kfake answers the leave and the heartbeat to groups it does not have %v", res.Err)
	s.check("consumer-heartbeat-creates-group")
}

// TestConsumerGroupHeartbeatRoundTrip: a KIP-848 member joins, is given
// the topic's partitions by topic id, acknowledges them and leaves, and
// every field comes back in the model's names: the member id, its epoch,
// the heartbeat interval in model time, and the assignment.
func TestConsumerGroupHeartbeatRoundTrip(t *testing.T) {
	s := newScenario(t, "")
	join := consumerJoin("fare-workers", "fare-worker-A", "fares")
	res := s.beat("A", join)
	require.True(t, res.Succeeded(), "%+v", res)
	require.Equal(t, "fare-worker-A", res.Resp.MemberID)
	require.Positive(t, res.Resp.MemberEpoch)
	require.Equal(t, int64(model.DefaultConsumerHeartbeatIntervalMs), res.Resp.HeartbeatIntervalMs)
	require.NotNil(t, res.Resp.MemberAssignment)
	require.ElementsMatch(t, []model.Partition{"fares-0", "fares-1", "fares-2"}, *res.Resp.MemberAssignment)

	ack := join
	ack.MemberEpoch, ack.RebalanceTimeoutMs = res.Resp.MemberEpoch, 0
	owned := *res.Resp.MemberAssignment
	ack.OwnedPartitions = &owned
	res = s.beat("A", ack)
	require.True(t, res.Succeeded(), "%+v", res)

	leave := model.NewRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "fare-workers", "fare-worker-A", model.LeaveMemberEpoch
	res = s.beat("A", leave)
	require.True(t, res.Succeeded(), "%+v", res)
	require.Equal(t, model.LeaveMemberEpoch, res.Resp.MemberEpoch)
	s.check("consumer-heartbeat-round-trip")
}

// TestStaleMemberEpochTxnOffsetCommitRecorded: a KIP-848 member's
// TxnOffsetCommit at a member epoch it no longer has. kfake answers
// TxnOffsetCommit v6 STALE_MEMBER_EPOCH and v5 and below
// ILLEGAL_GENERATION, as KIP-1319 has Kafka answer (trunk of May 2026:
// OffsetMetadataManager.validateTransactionalOffsetCommit passes
// StaleMemberEpochException on from v6 and converts it below). The
// target's client sends v6, so the answer is recorded as it is, and the
// history holds every check: the target records no api_version, and at
// an unknown version the model takes either code.
func TestStaleMemberEpochTxnOffsetCommitRecorded(t *testing.T) {
	s := newScenario(t, "")
	group, member := "fare-workers", "fare-worker-A"
	join := consumerJoin(group, member, "trips")
	joined := s.beat("A", join)
	require.True(t, joined.Succeeded(), "%+v", joined)
	stale := joined.Resp.MemberEpoch + 1 // an epoch the member does not have

	w := s.begin("A", "fare-worker-A")
	s.ok("A", model.AddOffsets, w.addOffsets(group))
	res := s.send("A", model.TxnOffsetCommit, w.commitOffsets(group, member, stale, map[model.Partition]int64{"trips-0": 1}))
	require.True(t, res.Answered)
	require.Equal(t, model.StaleMemberEpoch, res.Err, "STALE_MEMBER_EPOCH is recorded as it is: %+v", res)
	s.check("stale-member-epoch-txn-offset-commit")

	for _, c := range []struct {
		version int16
		want    int16
	}{{6, kerr.StaleMemberEpoch.Code}, {5, kerr.IllegalGeneration.Code}} {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = s.target.names.txnID(w.txnID), w.pid, w.epoch
		req.Group, req.MemberID, req.Generation = s.target.names.group(group), member, stale
		tp, err := s.target.names.split("trips-0")
		require.NoError(t, err)
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = tp.topic, s.target.routes.topicID(s.ctx, tp)
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1
		rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{rp}
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(req.Key(), c.version)
		cl, err := kgo.NewClient(append(s.target.clientOpts(), kgo.MaxVersions(versions))...)
		require.NoError(t, err)
		resp, err := req.RequestWith(s.ctx, cl)
		cl.Close()
		require.NoError(t, err)
		require.Equal(t, c.version, resp.Version)
		require.Equal(t, c.want, resp.Topics[0].Partitions[0].ErrorCode, "TxnOffsetCommit v%d", c.version)
	}
}

// TestUnrelatedTopicBumpsConsumerGroupEpoch: a KIP-848 member joins a
// group subscribed to trips, and then a topic the group does not
// subscribe to is created. Kafka refreshes the subscription metadata of
// the groups subscribed to a changed topic only, and bumps a group's
// epoch only when its subscription metadata changed
// (GroupMetadataManager.onNewMetadataImage, groupsSubscribedToTopic;
// test: GroupMetadataManagerTest#testOnNewMetadataImage), so the member's
// next heartbeat stays at its epoch. kfake bumps the epoch of every
// consumer group with members on any topic's creation
// (Cluster.notifyTopicChange), and the heartbeat answers an epoch above
// any the group was given (FINDINGS.md, 31). On a cluster shared by
// explorations side by side, as `fencecheck broker` is, each one's topics
// bump the others' groups.
func TestUnrelatedTopicBumpsConsumerGroupEpoch(t *testing.T) {
	s := newScenario(t, "")
	join := consumerJoin("fare-workers", "fare-worker-A", "trips")
	joined := s.beat("A", join)
	require.True(t, joined.Succeeded(), "%+v", joined)
	require.NotNil(t, joined.Resp.MemberAssignment)

	create := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "unrelated", 1, -1
	create.Topics = []kmsg.CreateTopicsRequestTopic{topic}
	created, err := create.RequestWith(s.ctx, s.target.routes.client())
	require.NoError(t, err)
	require.Zero(t, created.Topics[0].ErrorCode)

	beat := join
	beat.MemberEpoch, beat.OwnedPartitions = joined.Resp.MemberEpoch, joined.Resp.MemberAssignment
	res := s.beat("A", beat)
	require.True(t, res.Succeeded(), "%+v", res)
	require.Greater(t, res.Resp.MemberEpoch, joined.Resp.MemberEpoch, "kfake bumps the group's epoch")
	s.check("unrelated-topic-bumps-group-epoch")
}

// consumerJoin is a KIP-848 member's first heartbeat: epoch 0, subscribed
// to topic, owning nothing, with a rebalance timeout of 5 minutes.
func consumerJoin(group, member, topic string) model.Request {
	join := model.NewRequest()
	join.Group, join.MemberID, join.RebalanceTimeoutMs = group, member, 300_000
	join.SubscribedTopics, join.OwnedPartitions = &[]string{topic}, &[]model.Partition{}
	return join
}

// TestStaticConsumerLeaveWithoutInstanceID: a static KIP-848 member leaves
// at member epoch -2 without its instance id, as franz-go v1.22.3 sends
// its leave (TestFranzGoStaticConsumerLeaveOmitsInstanceID). Kafka refuses
// it with INVALID_REQUEST
// (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid:
// "InstanceId can't be null."); kfake takes it (FINDINGS.md, 32). The
// same instance then rejoins under a new member id and takes the
// member's place. Kafka, having refused the leave, would answer that
// rejoin UNRELEASED_INSTANCE_ID until the old member's session ran out.
// The finding's deviation (static-leave-without-instance) explains the
// whole history, the rejoin too.
func TestStaticConsumerLeaveWithoutInstanceID(t *testing.T) {
	s := newScenario(t, "")
	join := consumerJoin("fare-workers", "fare-worker-A", "fares")
	join.InstanceID = "fare-worker-A"
	res := s.beat("A", join)
	require.True(t, res.Succeeded(), "%+v", res)
	leave := model.NewRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "fare-workers", "fare-worker-A", model.StaticLeaveMemberEpoch
	res = s.beat("A", leave)
	require.True(t, res.Succeeded(), "kfake takes a static leave with no instance id: %+v", res)
	rejoin := consumerJoin("fare-workers", "fare-worker-A2", "fares")
	rejoin.InstanceID = "fare-worker-A"
	res = s.beat("A2", rejoin)
	require.True(t, res.Succeeded(), "kfake lets the instance back in: %+v", res)
	require.ElementsMatch(t, []model.Partition{"fares-0", "fares-1", "fares-2"}, *res.Resp.MemberAssignment,
		"the rejoin takes over the assignment the static leave kept")

	name := "static-leave-without-instance"
	s.check(name)
	h := s.history(s.historyName(name))
	names, explained := KnownFindings().Explains(h, "linearizable")
	require.True(t, explained, "the finding's deviation explains the leave and the rejoin")
	require.Equal(t, name, names)
}
