//go:build !checkeronly

package impl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// TestRestartRebuildsState restarts the broker after every request of the
// differential property: every answer comes from tables rebuilt from the
// logs, and must still be the model's (which treats a restart as nothing:
// DESIGN, nothing acknowledged is lost).
func TestRestartRebuildsState(t *testing.T) { checkDifferential(t, true) }

// TestEpochExhaustion bumps one transactional.id's epoch until it runs out,
// with a transaction open at the last bump: the coordinator hands out a
// fresh producer id at epoch 0 and aborts the open transaction (KIP-360),
// as the model does, before and after a restart. Under transactions v2 the
// last bumps come from EndTxn.
func TestEpochExhaustion(t *testing.T) {
	for _, version := range []int{1, 2} {
		d := newDifferential(version)
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
