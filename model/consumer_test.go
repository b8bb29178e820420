package model_test

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/fencecheck/fencecheck/model"
)

// The transcript command consumer-heartbeat is a ConsumerGroupHeartbeat
// (KIP-848): group member member-epoch, and instance rebalance
// topics=(...) regex assignor owned=(...) where the request sends them.
// A list left out is Kafka's null (unchanged); () is empty. Its answer
// takes got-member got-member-epoch got-interval got-assignment=(...).

// consumerSessionConfig is the broker setting a transcript's reset may
// name: group.consumer.session.timeout.ms.
const consumerSessionConfig = "group.consumer.session.timeout.ms"

func parseConsumerHeartbeat(t *testing.T, td *datadriven.TestData, op *model.Op) {
	r := &op.Req
	r.MemberEpoch = int32(intArg(t, td, "member-epoch", 0))
	r.InstanceID = strArg(td, "instance")
	r.RebalanceTimeoutMs = int64(intArg(t, td, "rebalance", 0))
	r.SubscribedRegex = strArg(td, "regex")
	r.ServerAssignor = strArg(td, "assignor")
	if _, ok := td.Arg("topics"); ok {
		var topics []string
		for _, p := range partitions(td, "topics") {
			topics = append(topics, string(p))
		}
		r.SubscribedTopics = &topics
	}
	r.OwnedPartitions = nullablePartitions(td, "owned")
}

// parseConsumerAnswer reads the answer's own fields.
func parseConsumerAnswer(t *testing.T, td *datadriven.TestData, r *model.Response) {
	r.MemberEpoch = int32(intArg(t, td, "got-member-epoch", 0))
	r.HeartbeatIntervalMs = int64(intArg(t, td, "got-interval", 0))
	r.MemberAssignment = nullablePartitions(td, "got-assignment")
}

// nullablePartitions is nil when key is left out, and a list (perhaps
// empty) when it is there.
func nullablePartitions(td *datadriven.TestData, key string) *[]model.Partition {
	if _, ok := td.Arg(key); !ok {
		return nil
	}
	ps := partitions(td, key)
	return &ps
}

func renderConsumerHeartbeat(r model.Response) string {
	assigned := "assignment unchanged"
	if r.MemberAssignment != nil {
		assigned = fmt.Sprintf("assigned %v", *r.MemberAssignment)
	}
	return fmt.Sprintf("%s epoch %d %s", r.MemberID, r.MemberEpoch, assigned)
}

// Every shape of ConsumerGroupHeartbeat, with every list left out, empty
// or set, is answered and judged without a panic, against a group with
// a member, one revoking, and none.
func TestConsumerHeartbeatShapesNeverPanic(t *testing.T) {
	lists := []*[]model.Partition{nil, {}, {"foo-0"}, {"foo-0", "foo-1"}}
	topics := []*[]string{nil, {}, {"foo"}}
	answers := []model.Result{model.NoAnswer(), model.Fail(model.FencedMemberEpoch), model.Fail(model.UnknownMemberID)}
	for _, assigned := range lists {
		answers = append(answers, model.OK(consumerAnswer("a", 2, assigned)))
	}
	for _, s := range consumerStates(t) {
		for _, epoch := range []int32{-3, -2, -1, 0, 1, 2, 3} {
			for _, id := range []string{"", "a", "b"} {
				for _, instance := range []string{"", "a"} {
					for _, owned := range lists {
						for _, subscribed := range topics {
							for _, regex := range []string{"", "f.*"} {
								r := model.NewRequest()
								r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = "g", id, epoch, instance
								r.RebalanceTimeoutMs, r.OwnedPartitions, r.SubscribedTopics, r.SubscribedRegex = 5000, owned, subscribed, regex
								op := model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}
								model.Apply(s, op)
								for _, got := range answers {
									_, _ = model.Check(s, op, got)
								}
							}
						}
					}
				}
			}
		}
	}
}

// consumerStates are a fresh broker, a group whose member a owns foo-0
// and foo-1, and one where a is revoking foo-1 for b.
func consumerStates(t *testing.T) []model.State {
	s := model.Init(model.Options{})
	states := []model.State{s}
	steps := []struct {
		id     string
		epoch  int32
		owned  *[]model.Partition
		answer model.Response
	}{
		{"a", 0, &[]model.Partition{}, consumerAnswer("a", 1, &[]model.Partition{"foo-0", "foo-1"})},
		{"b", 0, &[]model.Partition{}, consumerAnswer("b", 2, &[]model.Partition{})},
		{"a", 1, nil, consumerAnswer("a", 1, &[]model.Partition{"foo-0"})},
	}
	for i, st := range steps {
		r := model.NewRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.OwnedPartitions = "g", st.id, st.epoch, st.owned
		r.RebalanceTimeoutMs = 5000
		r.SubscribedTopics = &[]string{"foo"}
		next, err := model.Check(s, model.Op{Kind: model.ConsumerGroupHeartbeat, Req: r}, model.OK(st.answer))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		s = next
		if i > 0 {
			states = append(states, s)
		}
	}
	return states
}

func consumerAnswer(id string, epoch int32, assigned *[]model.Partition) model.Response {
	r := model.NewResponse()
	r.MemberID, r.MemberEpoch, r.MemberAssignment = id, epoch, assigned
	return r
}
