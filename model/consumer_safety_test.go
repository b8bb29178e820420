package model

import (
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// The safety of KIP-848 as kafka-tlaplus states it
// (Vanlightly/kafka-tlaplus, groupprotocol/consumer_group_protocol_kip_848_v2.tla):
// no two current members hold one partition (NoDoubleClientAssignment;
// the coordinator's partition epochs), and a member's epoch never goes
// back (GcSideMemberEpochIsMonotonic). Whatever answers a broker gives,
// every state the model accepts keeps both: a random walk of requests,
// each judged against random answers, checks them after every accepted
// one. A fixed seed keeps it the same walk every run.
func TestConsumerGroupSafetyUnderRandomAnswers(t *testing.T) {
	rng := rand.New(rand.NewSource(848))
	s := Init(Options{})
	accepted := 0
	for step := 0; step < 20000; step++ {
		op := randomConsumerOp(rng, s)
		next, err := Check(s, op, randomConsumerAnswer(rng, s, op))
		if err != nil {
			continue
		}
		accepted++
		if why := consumerSafetyBroken(s, next); why != "" {
			t.Fatalf("step %d: %s accepted for %+v: %s\nbefore: %s\nafter: %s", step, op.Kind, op.Req, why, s, next)
		}
		s = next
	}
	if accepted < 2000 {
		t.Fatalf("only %d of the walk's answers were accepted: the walk tests too little", accepted)
	}
}

var walkPartitions = []Partition{"foo-0", "foo-1", "foo-2", "foo-3"}

func randomConsumerOp(rng *rand.Rand, s State) Op {
	if rng.Intn(20) == 0 {
		return Op{Kind: Tick, Req: Request{Ms: int64(rng.Intn(30000))}}
	}
	r := NewRequest()
	r.Group = "g"
	r.MemberID = []string{"a", "b", "c"}[rng.Intn(3)]
	m := s.consumer["g"].members[r.MemberID]
	r.MemberEpoch = []int32{0, m.epoch, m.epoch, m.prevEpoch, LeaveMemberEpoch}[rng.Intn(5)]
	if r.MemberEpoch == JoinMemberEpoch {
		r.RebalanceTimeoutMs = 60000
		r.SubscribedTopics = &[]string{"foo"}
		r.OwnedPartitions = &[]Partition{}
		return Op{Kind: ConsumerGroupHeartbeat, Req: r}
	}
	if rng.Intn(3) > 0 {
		owned := randomSubset(rng, slices.Concat(m.assigned, m.revoking))
		r.OwnedPartitions = &owned
	}
	return Op{Kind: ConsumerGroupHeartbeat, Req: r}
}

func randomConsumerAnswer(rng *rand.Rand, s State, op Op) Result {
	switch rng.Intn(8) {
	case 0:
		return NoAnswer()
	case 1:
		return Fail(FencedMemberEpoch)
	case 2:
		return Fail(UnknownMemberID)
	}
	resp := NewResponse()
	resp.MemberID = op.Req.MemberID
	g := s.consumer["g"]
	resp.MemberEpoch = int32(rng.Intn(int(g.epoch) + 3))
	if op.Req.MemberEpoch < 0 {
		resp.MemberEpoch = op.Req.MemberEpoch
	}
	if rng.Intn(3) > 0 {
		assigned := randomSubset(rng, walkPartitions)
		resp.MemberAssignment = &assigned
	}
	return OK(resp)
}

func randomSubset(rng *rand.Rand, from []Partition) []Partition {
	var out []Partition
	for _, p := range from {
		if rng.Intn(2) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// consumerSafetyBroken says which safety property next breaks, having
// followed before; "" when none.
func consumerSafetyBroken(before, next State) string {
	g := next.consumer["g"]
	holders := map[Partition]string{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		for _, p := range slices.Concat(m.assigned, m.revoking) {
			if other, held := holders[p]; held && !m.unsure && !g.members[other].unsure {
				return "two members hold " + string(p) + ": " + other + " and " + id
			}
			holders[p] = id
		}
		if old, was := before.consumer["g"].members[id]; was && m.epoch < old.epoch && m.epoch != StaticLeaveMemberEpoch && !old.unsure {
			return "the epoch of " + id + " went back"
		}
	}
	return ""
}

// The same safety with members on the classic protocol in the consumer
// group (KIP-848's online migration, consumermigration.go): their
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with random answers,
// walk beside the consumer members' heartbeats.
func TestMixedConsumerGroupSafetyUnderRandomAnswers(t *testing.T) {
	rng := rand.New(rand.NewSource(8480))
	s := Init(Options{})
	accepted, classic := 0, 0
	for step := 0; step < 20000; step++ {
		op := randomConsumerOp(rng, s)
		got := randomConsumerAnswer(rng, s, op)
		if rng.Intn(2) == 0 {
			op = randomClassicOp(rng, s)
			got = randomClassicAnswer(rng, s, op)
		}
		next, err := Check(s, op, got)
		if err != nil {
			continue
		}
		if next.consumer["g"].mayBeClassic {
			// The group may have become a classic group, where every
			// answer is taken: start again.
			s = Init(Options{})
			continue
		}
		accepted++
		if m, ok := next.consumer["g"].members[op.Req.MemberID]; ok && m.classic && op.Kind != ConsumerGroupHeartbeat {
			classic++
		}
		if why := consumerSafetyBroken(s, next); why != "" {
			t.Fatalf("step %d: %s accepted for %+v: %s\nbefore: %s\nafter: %s", step, op.Kind, op.Req, why, s, next)
		}
		s = next
	}
	if accepted < 2000 || classic < 1000 {
		t.Fatalf("only %d of the walk's answers were accepted, %d classic joins: the walk tests too little", accepted, classic)
	}
}

func randomClassicOp(rng *rand.Rand, s State) Op {
	r := NewRequest()
	r.Group = "g"
	r.MemberID = []string{"k", "l"}[rng.Intn(2)]
	m := s.consumer["g"].members[r.MemberID]
	r.GenerationID = []int32{m.epoch, m.epoch, m.epoch - 1, m.epoch + 1}[rng.Intn(4)]
	switch rng.Intn(6) {
	case 0, 1:
		r.ProtocolType = classicProtocolType
		r.Protocols = []Protocol{{Name: "range", Topics: []string{"foo"}}}
		r.SessionTimeoutMs, r.RebalanceTimeoutMs = 45000, 60000
		r.JoinOnly = rng.Intn(2) == 0
		return Op{Kind: JoinGroup, Req: r}
	case 2, 3:
		return Op{Kind: SyncGroup, Req: r}
	case 4:
		return Op{Kind: Heartbeat, Req: r}
	}
	return Op{Kind: LeaveGroup, Req: r}
}

func randomClassicAnswer(rng *rand.Rand, s State, op Op) Result {
	switch rng.Intn(8) {
	case 0:
		return NoAnswer()
	case 1:
		return Fail(IllegalGeneration)
	case 2:
		return Fail(UnknownMemberID)
	case 3:
		return Fail(RebalanceInProgress)
	}
	resp := NewResponse()
	resp.MemberID = op.Req.MemberID
	resp.GenerationID = int32(rng.Intn(int(s.consumer["g"].epoch) + 3))
	resp.Assignment = randomSubset(rng, walkPartitions)
	return OK(resp)
}
