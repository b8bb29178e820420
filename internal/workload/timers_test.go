package workload

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// The run's account of the broker's timers agrees with the model's rules:
// a transaction is still open 1 ms short of its deadline and aborted at
// it (past its timeout), and a member's session expires exactly at its
// deadline. So TickToDeadline lands where the model decides.
func TestTimersFindTheModelsDeadlines(t *testing.T) {
	for _, v := range []int{1, 2} {
		for _, short := range []int64{1, 0} {
			b := model.NewBroker(model.Options{TxnVersion: v})
			var ts timers
			send := func(kind model.Kind, req model.Request) model.Result {
				op := model.Op{Kind: kind, Req: req}
				res, err := model.Send(context.Background(), b, op)
				require.NoError(t, err)
				ts.answered(op, res)
				return res
			}
			tick := func(ms int64) { b.Tick(ms); ts.tick(ms) }
			tick(7_000)

			init := model.NewRequest()
			init.TransactionalID, init.TimeoutMs = "t", 40_000
			grant := send(model.InitProducerID, init).Resp
			join := model.NewRequest()
			join.Group, join.Partitions = "g", []model.Partition{"in-0"}
			member := send(model.JoinGroup, join).Resp.MemberID
			tick(1_000)
			add := model.NewRequest()
			add.TransactionalID, add.ProducerID, add.Epoch = "t", grant.ProducerID, grant.Epoch
			add.Partitions, add.Partition, add.Records = []model.Partition{"out-0"}, "out-0", []model.Record{{Key: "k"}}
			kind := model.AddPartitions
			if v == 2 {
				kind = model.Produce
			}
			require.True(t, send(kind, add).Succeeded())

			session, txn := int64(7_000+model.DefaultSessionTimeoutMs), int64(8_000+40_000+1)
			require.Equal(t, []int64{txn, session}, ts.deadlines())

			tick(txn - short - ts.clock)
			end := model.NewRequest()
			end.TransactionalID, end.ProducerID, end.Epoch, end.Commit = "t", grant.ProducerID, grant.Epoch, true
			committed := send(model.EndTxn, end).Succeeded()
			require.Equal(t, short == 1, committed, "v%d, %d ms short of the transaction's deadline", v, short)
			require.Equal(t, []int64{session}, ts.deadlines())

			tick(session - short - ts.clock)
			rejoin := join
			rejoin.MemberID = member
			require.Equal(t, short == 1, send(model.JoinGroup, rejoin).Succeeded(), "v%d, %d ms short of the session's deadline", v, short)
		}
	}
}
