package model_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// Send gives a plain commit to a broker that takes one, and refuses it,
// naming the kind, to one that does not: a function that wraps another
// broker, such as a recorder's, never forwards one its broker lacks.
func TestSendOffsetCommit(t *testing.T) {
	req := model.NewRequest()
	req.Group, req.Offsets = "g", map[model.Partition]int64{"in-0": 1}
	op := model.Op{Kind: model.OffsetCommit, Req: req}

	res, err := model.Send(context.Background(), model.NewBroker(model.Options{}), op)
	require.NoError(t, err)
	require.True(t, res.Succeeded(), "%+v", res)

	wrapper := model.BrokerFunc(func(context.Context, model.Kind, model.Request) model.Result {
		t.Fatal("a broker without OffsetCommit was sent one")
		return model.Result{}
	})
	_, err = model.Send(context.Background(), wrapper, op)
	require.EqualError(t, err, `model.BrokerFunc takes no "offset_commit": it is not an OffsetCommitter`)
}
