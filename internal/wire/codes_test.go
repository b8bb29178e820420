package wire

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// A code is taken only where a history can hold it: Kafka answers it to
// that kind of request. STALE_MEMBER_EPOCH is an OffsetCommit's, and a
// TxnOffsetCommit's from v6 (KIP-1319). FENCED_MEMBER_EPOCH is a
// ConsumerGroupHeartbeat's alone, so a TxnOffsetCommit answered with it
// is undecided, because a history that held it would not load.
func TestResultTakesOnlyCodesTheKindIsAnswered(t *testing.T) {
	for _, kind := range []model.Kind{model.OffsetCommit, model.TxnOffsetCommit} {
		res, err := Result(kind, kerr.StaleMemberEpoch.Code, model.NewResponse())
		require.NoError(t, err, "%s", kind)
		require.Equal(t, model.StaleMemberEpoch, res.Err, "%s", kind)
	}

	_, err := Result(model.TxnOffsetCommit, kerr.FencedMemberEpoch.Code, model.NewResponse())
	require.ErrorContains(t, err, "FENCED_MEMBER_EPOCH, which Kafka never answers to TxnOffsetCommit")

	_, err = Result(model.Produce, 9999, model.NewResponse())
	require.ErrorContains(t, err, "has no name for")

	res, err := Result(model.Produce, 0, model.NewResponse())
	require.NoError(t, err)
	require.True(t, res.Succeeded())
}

// What Result refuses is what a history refuses to load.
func TestResultRefusesWhatHistoriesRefuse(t *testing.T) {
	_, err := Result(model.TxnOffsetCommit, kerr.FencedMemberEpoch.Code, model.NewResponse())
	require.Error(t, err)
	commit := model.NewRequest()
	commit.TransactionalID, commit.ProducerID, commit.Epoch = "fare-worker-A", 1, 0
	commit.Group, commit.Offsets = "fare-workers", map[model.Partition]int64{"trips-0": 1}
	h := histories.History{Ops: []histories.Op{{Proc: "A", Call: 1, Return: 2, Returned: true,
		Op: model.Op{Kind: model.TxnOffsetCommit, Req: commit}, Result: model.Fail(model.FencedMemberEpoch)}}}
	require.ErrorContains(t, histories.Save(io.Discard, h), "Kafka does not answer a TxnOffsetCommit with FENCED_MEMBER_EPOCH")
}
