package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fencedEndTxn is a state where producer 0's epoch 0 of "t" is fenced by
// a second init, and the EndTxn that producer then sends.
func fencedEndTxn(t *testing.T) (State, Op) {
	s := Init(Options{})
	init := NewRequest()
	init.TransactionalID = "t"
	s, first := Apply(s, Op{Kind: InitProducerID, Req: init})
	require.True(t, first.Succeeded())
	s, second := Apply(s, Op{Kind: InitProducerID, Req: init})
	require.True(t, second.Succeeded())
	end := NewRequest()
	end.TransactionalID, end.ProducerID, end.Epoch, end.Commit = "t", first.Resp.ProducerID, first.Resp.Epoch, true
	return s, Op{Kind: EndTxn, Req: end}
}

// TestFencedCodeByVersion: with a version, a fenced EndTxn's code is the
// one Kafka sends that version (KIP-588); without one, either code of
// the pair is right.
func TestFencedCodeByVersion(t *testing.T) {
	s, op := fencedEndTxn(t)
	for _, c := range []struct {
		version Version
		code    Code
		right   bool
	}{
		{Version{}, ProducerFenced, true},
		{Version{}, InvalidProducerEpoch, true},
		{AtVersion(1), InvalidProducerEpoch, true},
		{AtVersion(3), ProducerFenced, true},
		{AtVersion(3), InvalidProducerEpoch, false},
		{AtVersion(1), ProducerFenced, false},
	} {
		op.APIVersion = c.version
		_, err := Check(s, op, Fail(c.code))
		if c.right {
			require.NoError(t, err, "%s answered %s", c.version, c.code)
			continue
		}
		var d *Disallowed
		require.ErrorAs(t, err, &d, "%s answered %s", c.version, c.code)
		require.True(t, d.CodeOnly)
		require.Equal(t, versionRuleName, d.Rule)
		require.Contains(t, d.Reason, "EndTxn "+c.version.String())
	}
}

func TestAnswersAt(t *testing.T) {
	require.Error(t, answersAt(EndTxn, ProducerFenced, AtVersion(1)))
	require.NoError(t, answersAt(EndTxn, ProducerFenced, AtVersion(2)))
	require.NoError(t, answersAt(EndTxn, ProducerFenced, Version{}))
	require.Error(t, answersAt(Produce, TransactionAbortable, AtVersion(10)))
	require.NoError(t, answersAt(Produce, TransactionAbortable, AtVersion(11)))
	require.Error(t, answersAt(TxnOffsetCommit, CoordinatorLoadInProgress, AtVersion(1)))
	require.NoError(t, answersAt(TxnOffsetCommit, InvalidProducerEpoch, AtVersion(0)), "no KIP-588 rule for TxnOffsetCommit")
	require.Error(t, answersAt(Produce, ProducerFenced, Version{}), "no Produce version gets PRODUCER_FENCED")
	require.Error(t, answersAt(Produce, ProducerFenced, AtVersion(12)))
	require.NoError(t, answersAt(Produce, InvalidProducerEpoch, Version{}))
	require.Error(t, answersAt(Produce, NotCoordinator, Version{}), "ReplicaManager converts it")
	require.NoError(t, answersAt(EndTxn, NotCoordinator, Version{}))
	for _, r := range versionRules {
		if r.instead != "" {
			require.True(t, Answers(r.kind, r.instead), "%s answers %s below v%d", r.kind, r.instead, r.since)
		}
		if r.since == noVersion {
			// A conversion Kafka makes at every version: the code may
			// have another class, as a coordinator's error that a
			// leader answers as its own.
			require.NotEmpty(t, r.instead, "%s: what every version gets instead", r.code)
			continue
		}
		require.True(t, Answers(r.kind, r.code), "%s answers %s at some version", r.kind, r.code)
		if r.instead != "" {
			require.Equal(t, ClassOf(r.kind, r.code), ClassOf(r.kind, r.instead), "a pair of one class")
		}
	}
}

func TestCheckVersion(t *testing.T) {
	require.NoError(t, CheckVersion(EndTxn, AtVersion(5)))
	require.NoError(t, CheckVersion(EndTxn, AtVersion(6)), "a newer Kafka's version")
	require.Error(t, CheckVersion(EndTxn, AtVersion(-1)))
	require.Error(t, CheckVersion(Stall, AtVersion(0)))
	require.NoError(t, CheckVersion(Stall, Version{}))
}

// TestCodeNeverSentAtVersion: a code that Kafka sends a request only from
// some version on is a wrong code below it, whatever the rule that
// refused (here a refusal legal in any state): judged, never refused.
func TestCodeNeverSentAtVersion(t *testing.T) {
	s := Init(Options{})
	commit := NewRequest()
	commit.TransactionalID, commit.Group = "t", "g"
	for _, c := range []struct {
		version Version
		right   bool
	}{{Version{}, true}, {AtVersion(2), true}, {AtVersion(9), true}, {AtVersion(1), false}} {
		_, err := Check(s, Op{Kind: TxnOffsetCommit, Req: commit, APIVersion: c.version}, Fail(CoordinatorLoadInProgress))
		if c.right {
			require.NoError(t, err, "%s", c.version)
			continue
		}
		var d *Disallowed
		require.ErrorAs(t, err, &d, "%s", c.version)
		require.True(t, d.CodeOnly, "only the code is wrong")
		require.Equal(t, versionRuleName, d.Rule)
		require.Contains(t, d.Reason, "TxnOffsetCommit v1 with COORDINATOR_LOAD_IN_PROGRESS")
	}
}
