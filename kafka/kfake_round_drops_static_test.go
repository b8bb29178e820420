package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKfakeRoundDropsStaticMember pins finding 34 (FINDINGS.md): a
// classic group's join round that completes on kfake removes every
// member that has not rejoined it, static members too (kfake's
// completeRebalance removes each member with no JoinGroup waiting).
// Kafka removes only the dynamic ones (notYetRejoinedDynamicMembers in
// GroupCoordinator.onCompleteJoin, 3.9, and in
// GroupMetadataManager.completeClassicGroupJoin, 4.x). So on Kafka the
// static member stays, the leader's answer lists it, and its next join
// with its member id is answered (tests:
// GroupCoordinatorTest#testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout,
// 3.9.0-rc3; GroupMetadataManagerTest's test of that name, trunk).
//
// Two static members, A and B, form generation 2 of group g. A, the
// leader, rejoins, which starts a round. B does not rejoin within the
// rebalance timeout (a second), so the round completes without it. On
// kfake A's answer names A alone, and B's join with its member id is
// UNKNOWN_MEMBER_ID. In the control B rejoins in time, as a client does
// once a heartbeat is answered REBALANCE_IN_PROGRESS, and both stay.
func TestKfakeRoundDropsStaticMember(t *testing.T) {
	// The control: B rejoins in time, and the round keeps both.
	kept, bJoin := staticRound(t, true)
	require.ElementsMatch(t, []string{"A", "B"}, kept, "the control: both members rejoined, so both stay")
	require.Zero(t, bJoin, "the control: B's join of the round: %v", kerr.ErrorForCode(bJoin))
	// B misses the round: kfake removes it.
	kept, bJoin = staticRound(t, false)
	require.Equal(t, []string{"A"}, kept, "kfake now keeps a static member that missed a join round, as Kafka does: finding 34 is fixed; update known.json and FINDINGS.md")
	require.Equal(t, kerr.UnknownMemberID.Code, bJoin, "kfake now keeps a static member that missed a join round, as Kafka does: finding 34 is fixed; update known.json and FINDINGS.md (B's join: %v)", kerr.ErrorForCode(bJoin))
}

// staticRound forms generation 2 of group g from static members A and B
// on a fresh kfake, then has A rejoin. When bRejoins, B rejoins the
// round once its heartbeat meets it; otherwise B sends nothing until
// A's join is answered, and then joins with its member id. It returns
// the instances of the members A's answer lists and the error code of
// B's join.
func staticRound(t *testing.T, bRejoins bool) (kept []string, bJoin int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer c.Close()
	// One client per member: a JoinGroup waits for its round, and a
	// connection answers its requests in order.
	client := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	clA, clB := client(), client()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	metadata := meta.AppendTo(nil)

	join := func(cl *kgo.Client, member, instance string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.InstanceID = "g", member, &instance
		// A session far longer than the test, so that only the round
		// can remove a member; a rebalance timeout of a second.
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", metadata
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp
	}
	sync := func(cl *kgo.Client, resp *kmsg.JoinGroupResponse, instance string) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.InstanceID, req.Generation = "g", resp.MemberID, &instance, resp.Generation
		req.ProtocolType, req.Protocol = resp.ProtocolType, resp.Protocol
		for _, m := range resp.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID = m.MemberID
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
		sresp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Zero(t, sresp.ErrorCode, "%s's sync of generation %d: %v", instance, resp.Generation, kerr.ErrorForCode(sresp.ErrorCode))
	}
	instances := func(resp *kmsg.JoinGroupResponse) []string {
		var names []string
		for _, m := range resp.Members {
			require.NotNil(t, m.InstanceID)
			names = append(names, *m.InstanceID)
		}
		return names
	}

	// Generation 1: A alone.
	a := join(clA, "", "A")
	require.Zero(t, a.ErrorCode, "A's join: %v", kerr.ErrorForCode(a.ErrorCode))
	sync(clA, a, "A")
	// rebalancing heartbeats as the static member instance of joined,
	// and reports whether a round is in progress.
	rebalancing := func(cl *kgo.Client, joined *kmsg.JoinGroupResponse, instance string) bool {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", joined.MemberID, joined.Generation, &instance
		resp, err := hb.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.ErrorCode == kerr.RebalanceInProgress.Code
	}
	// Generation 2: B's join starts a round, and A rejoins it.
	bDone := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { bDone <- join(clB, "", "B") }()
	var b *kmsg.JoinGroupResponse
	for b == nil {
		select {
		case b = <-bDone:
		case <-time.After(20 * time.Millisecond):
			// A's heartbeat meets the round B started, so A rejoins.
			if rebalancing(clA, a, "A") {
				a = join(clA, a.MemberID, "A")
				b = <-bDone
			}
		}
	}
	require.Zero(t, a.ErrorCode, "A's rejoin: %v", kerr.ErrorForCode(a.ErrorCode))
	require.Zero(t, b.ErrorCode, "B's join: %v", kerr.ErrorForCode(b.ErrorCode))
	require.Equal(t, int32(2), b.Generation)
	require.Equal(t, a.MemberID, a.LeaderID, "A leads generation 2")
	sync(clA, a, "A")
	sync(clB, b, "B")

	// The leader's rejoin starts the round of generation 3.
	aDone := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { aDone <- join(clA, a.MemberID, "A") }()
	bJoin = -1
	if bRejoins {
		var a3 *kmsg.JoinGroupResponse
		for a3 == nil {
			select {
			case a3 = <-aDone:
			case <-time.After(20 * time.Millisecond):
				if rebalancing(clB, b, "B") {
					bJoin = join(clB, b.MemberID, "B").ErrorCode
					a3 = <-aDone
				}
			}
		}
		require.Zero(t, a3.ErrorCode, "A's rejoin: %v", kerr.ErrorForCode(a3.ErrorCode))
		require.Equal(t, int32(3), a3.Generation)
		return instances(a3), bJoin
	}
	a3 := <-aDone
	require.Zero(t, a3.ErrorCode, "A's rejoin: %v", kerr.ErrorForCode(a3.ErrorCode))
	require.Equal(t, int32(3), a3.Generation)
	return instances(a3), join(clB, b.MemberID, "B").ErrorCode
}
