//go:build !checkeronly

package impl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// TestRestartRebuildsState restarts the broker after every request of the
// differential property: every answer comes from tables rebuilt from the
// logs, and must still be the model's (which treats a restart as nothing:
// nothing acknowledged is lost).
func TestRestartRebuildsState(t *testing.T) { checkDifferential(t, true) }

// TestEpochExhaustion bumps one transactional.id's epoch until it runs out,
// with a transaction open at the last bump: the coordinator hands out a
// fresh producer id at epoch 0 and aborts the open transaction (KIP-360),
// as the model does, before and after a restart. Under transactions v2 the
// last bumps come from EndTxn.
func TestEpochExhaustion(t *testing.T) {
	for _, version := range []int{1, 2} {
		d := newDifferential(model.Options{TxnVersion: version})
		s := sessionOf(d.send(t, model.InitProducerID, initReq("t", 0)))
		first := s.pid
		for s.epoch < epochExhausted-1 {
			s = sessionOf(d.send(t, model.InitProducerID, bumpReq("t", s)))
		}
		for range 3 {
			d.send(t, model.AddPartitions, addPartitionsReq("t", s, p0))
			d.send(t, model.Produce, produceReq("t", s, p0, 0, "a"))
			res := d.send(t, model.EndTxn, endTxnReq("t", s, version == 2))
			if version == 2 {
				s = sessionOf(res)
			} else {
				s = sessionOf(d.send(t, model.InitProducerID, initReq("t", 0)))
			}
			d.impl.Restart()
			d.logsAgree(t)
		}
		require.NotEqual(t, first, s.pid, "the producer id rotated")
	}
}

// TestLongLogs writes a partition log several segments long (segmentSize
// entries each), transactions committed and aborted across the segments'
// edges, and reads it from offsets on both sides of each edge, both
// isolations, before and after a restart: the optimised broker's
// segmented logs must answer as the model's single slice does.
func TestLongLogs(t *testing.T) {
	for _, version := range []int{1, 2} {
		d := newDifferential(model.Options{TxnVersion: version})
		s := sessionOf(d.send(t, model.InitProducerID, initReq("t", 0)))
		seq := int32(0)
		for n := 0; n*7 < 3*segmentSize+100; n++ {
			if version == 1 {
				d.send(t, model.AddPartitions, addPartitionsReq("t", s, p0))
			}
			var keys []string
			for i := range 7 {
				keys = append(keys, fmt.Sprintf("k%d-%d", n, i))
			}
			d.send(t, model.Produce, produceReq("t", s, p0, seq, keys...))
			seq += 7
			res := d.send(t, model.EndTxn, endTxnReq("t", s, n%3 != 0))
			if version == 2 {
				s, seq = sessionOf(res), 0
			}
		}
		for range 2 {
			for _, edge := range []int64{segmentSize, 2 * segmentSize, 3 * segmentSize} {
				for _, from := range []int64{edge - 9, edge - 1, edge, edge + 1, edge + 8} {
					for _, iso := range isolations {
						d.send(t, model.Fetch, fetchReq(p0, from, iso))
					}
				}
			}
			d.ref.Restart()
			d.impl.Restart()
		}
	}
}

// TestRejoinsKeepAssignments: a member already in the current generation
// that joins again keeps its assignment and starts no rebalance (Kafka
// answers a follower's rejoin from the group's state), and neither does
// it take the other members' assignments away: each one's own rejoin
// after it is answered with what it held. No rapid draw of the
// differential test met this order (mutation testing found the gap).
func TestRejoinsKeepAssignments(t *testing.T) {
	d := newDifferential(model.Options{TxnVersion: 2})
	join := func(id string) model.Result {
		res := d.send(t, model.JoinGroup, joinReq(theGroup, id, 0, inputs...))
		require.True(t, res.Succeeded(), "%+v", res)
		return res
	}
	a := join("").Resp.MemberID
	b := join("").Resp.MemberID
	join(a)                       // a missed b's round: b leads, a follows
	led := join("").Resp.MemberID // a new generation, led by its joiner
	join(a)
	held := join(b)  // a and b join it, followers
	again := join(a) // in it already: no new generation
	after := join(b)
	require.Equal(t, held.Resp.GenerationID, again.Resp.GenerationID)
	require.Equal(t, held.Resp, after.Resp)
	require.Equal(t, led, after.Resp.Leader)
}
