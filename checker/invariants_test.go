package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// requireViolation asserts that v is violated first at op, for reason.
func requireViolation(t *testing.T, v Verdict, op int, reason string) {
	t.Helper()
	require.Equal(t, Violated, v.Status, v.String())
	require.Equal(t, op, v.Violations[0].Op, v.String())
	if reason != "" {
		require.Equal(t, reason, v.Violations[0].Reason)
	}
}

func requireHeld(t *testing.T, v Verdict) {
	t.Helper()
	require.Equal(t, OK, v.Status, v.String())
}

// Seed 000 as it should go: the zombie is fenced, the reader sees trip-9001
// once, at 42.
func TestSeed000HoldsEveryCheck(t *testing.T) {
	b, _ := seed000()
	b.fail(b.produce("A", 41000, 41001, fw0, "fares-2", -1, "trip-9002"), model.ProducerFenced)
	b.fail(b.endTxn("A", 41002, 41003, fw0, true), model.ProducerFenced)
	b.fetch("R", 42000, 42001, "fares-2", 0, model.ReadCommitted, rec(42, "trip-9001", 4001))
	b.h.Trips = []string{"trip-9001"}
	verdicts := judgeInvariants(b.h, nil)
	require.Len(t, verdicts, len(Checks)-2, "every check but linearizable and error-codes")
	for i, v := range verdicts {
		require.Equal(t, Checks[i+1], v.Check, "in the order of Checks")
		if v.Check == OneOwner {
			require.Equal(t, Skipped, v.Status, "no consumer group: %s", v)
			continue
		}
		requireHeld(t, v)
	}
}

func TestViolationsFirstByCallTime(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("A", 0, 1, fw0)
	b.initTxns("B", 2, 3, fw1)
	later := b.produce("A", 20, 21, fw0, "fares-2", 0, "trip-1")
	earlier := b.addPartitions("A", 10, 11, fw0, "fares-2")
	v := CheckOne(b.h, OneLiveProducer)
	requireViolation(t, v, earlier, "")
	require.Equal(t, later, v.Violations[1].Op)
	require.Contains(t, v.String(), "; 1 more)")
}
