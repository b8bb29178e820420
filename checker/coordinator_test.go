package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// An InitProducerId's transaction timeout is judged against
// transaction.max.timeout.ms only when the history names it: a cluster
// whose maximum is not known may be set to any.
func TestTxnMaxTimeoutOnlyWhenNamed(t *testing.T) {
	for name, c := range map[string]struct {
		timeoutMs, maxMs int64
		refused          bool
		held             bool
	}{
		"success above an unknown maximum":        {timeoutMs: 1_200_000, held: true},
		"refusal below an unknown maximum":        {timeoutMs: 30_000, refused: true, held: true},
		"success above the named maximum":         {timeoutMs: 120_000, maxMs: 60_000},
		"refusal above the named maximum":         {timeoutMs: 120_000, maxMs: 60_000, refused: true, held: true},
		"refusal at the named maximum":            {timeoutMs: 60_000, maxMs: 60_000, refused: true},
		"success at the named maximum":            {timeoutMs: 60_000, maxMs: 60_000, held: true},
		"refusal of the default timeout, 0 named": {timeoutMs: 0, maxMs: 60_000, refused: true, held: true},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.TxnMaxTimeoutMs = c.maxMs
			id := b.initTxns("A", 0, 1, session{tid: "t", pid: 1})
			b.op(id).Op.Req.TimeoutMs = c.timeoutMs
			if c.refused {
				b.fail(id, model.InvalidTransactionTimeout)
			}
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}

// Kafka bumps an epoch by one. An InitProducerId whose answer was lost
// may or may not have bumped it, so the next answer may be one or two
// past the last one seen, and never three.
func TestBumpAfterLostInit(t *testing.T) {
	for epoch, held := range map[int16]bool{1: true, 2: true, 3: false} {
		var b historyBuilder
		b.initTxns("A", 0, 1, session{tid: "t", pid: 1})
		b.lose(b.initTxns("B", 2, 3, session{tid: "t"}))
		b.initTxns("C", 4, 5, session{tid: "t", pid: 1, epoch: epoch})
		report := Check(b.h, Options{})
		require.Equal(t, held, report.Held(), "epoch %d: %v", epoch, report.Verdicts)
	}
}

// Under transactions v1, a transactional batch to a partition not in its
// transaction is written only by a broker whose history says it does not
// verify (transaction.partition.verification.enable=false).
func TestPartitionVerificationOnlyWhenOn(t *testing.T) {
	for name, off := range map[string]bool{"verification on": false, "verification off": true} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.NoPartitionVerification = off
			b.h.TransactionsVersion = 1
			s := session{tid: "t", pid: 1}
			b.initTxns("A", 0, 1, s)
			b.produce("A", 2, 3, s, "p-0", 0, "a")
			report := Check(b.h, Options{})
			require.Equal(t, off, report.Held(), "%v", report.Verdicts)
		})
	}
}

// An alter_config turns verification off while the broker runs. A batch
// the coordinator does not know of may be written once the change was
// sent, whenever the broker applied it, and never before: a batch
// answered before the change was sent was verified.
func TestAlterConfigTurnsVerificationOff(t *testing.T) {
	for name, c := range map[string]struct {
		alterCall, alterReturn int64
		held                   bool
	}{
		"change answered before the batch":        {alterCall: 2, alterReturn: 3, held: true},
		"change answered after the batch":         {alterCall: 2, alterReturn: 9, held: true},
		"change sent after the batch was written": {alterCall: 6, alterReturn: 7},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.TransactionsVersion = 1
			s := session{tid: "t", pid: 1}
			b.initTxns("A", 0, 1, s)
			req := model.NewRequest()
			req.PartitionVerification = false
			b.add("admin", c.alterCall, c.alterReturn, model.AlterConfig, req, model.NewResponse())
			b.produce("A", 4, 5, s, "p-0", 0, "a")
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}

// A DeleteRecords moves the log start offset: a fetch below it is
// OFFSET_OUT_OF_RANGE, and one that still returns a deleted record is a
// violation; the deletion cannot reach above the high watermark.
func TestDeleteRecordsMovesTheLogStart(t *testing.T) {
	for name, c := range map[string]struct {
		before     int64
		refused    bool
		fetchFails bool
		held       bool
	}{
		"deleted record fetched":       {before: 1},
		"deleted record out of range":  {before: 1, fetchFails: true, held: true},
		"nothing deleted":              {before: 0, held: true},
		"above the high watermark":     {before: 2},
		"refused above high watermark": {before: 2, refused: true, held: true},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			s := session{pid: 1}
			b.initTxns("A", 0, 1, s)
			b.produce("A", 2, 3, s, "p-0", 0, "a")
			req := model.NewRequest()
			req.Partition, req.Offset = "p-0", c.before
			resp := model.NewResponse()
			resp.LowWatermark = c.before
			id := b.add("admin", 4, 5, model.DeleteRecords, req, resp)
			if c.refused {
				b.fail(id, model.OffsetOutOfRange)
			}
			f := b.fetch("R", 6, 7, "p-0", 0, model.ReadUncommitted, rec(0, "a", 1))
			if c.fetchFails {
				b.fail(f, model.OffsetOutOfRange)
			}
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}

// A JoinGroup's GROUP_MAX_SIZE_REACHED is judged only when the history
// names group.max.size: a cluster whose size is not known may be set to
// any, and the refusal then changes nothing the checker can see.
func TestGroupMaxSizeOnlyWhenNamed(t *testing.T) {
	for name, c := range map[string]struct {
		maxSize       int
		secondRefused bool
		held          bool
	}{
		"refusal below an unknown size": {secondRefused: true, held: true},
		"refusal below the named size":  {maxSize: 2, secondRefused: true},
		"refusal at the named size":     {maxSize: 1, secondRefused: true, held: true},
		"success at the named size":     {maxSize: 1},
		"success below the named size":  {maxSize: 2, held: true},
		"success, size not said":        {held: true},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.GroupMaxSize = c.maxSize
			first := b.joinGroup("A", 0, 1, "g", 1, "in-0")
			b.op(first).Op.Req.JoinOnly, b.op(first).Result.Resp.Assignment = true, nil
			b.op(first).Result.Resp.MemberID = "A"
			second := b.joinGroup("B", 2, 3, "g", 2, "in-0")
			b.op(second).Op.Req.JoinOnly, b.op(second).Result.Resp.Assignment = true, nil
			b.op(second).Result.Resp.MemberID = "B"
			if c.secondRefused {
				b.fail(second, model.GroupMaxSizeReached)
			}
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}

// A ConsumerGroupHeartbeat from a new member of a full KIP-848 group is
// judged only when the history names group.consumer.max.size; the
// refusal is taken in any state, because it changes nothing.
func TestConsumerGroupMaxSizeOnlyWhenNamed(t *testing.T) {
	for name, c := range map[string]struct {
		maxSize       int
		secondRefused bool
		held          bool
	}{
		"success, size not said":       {held: true},
		"success below the named size": {maxSize: 2, held: true},
		"success at the named size":    {maxSize: 1},
		"refusal at the named size":    {maxSize: 1, secondRefused: true, held: true},
		"refusal below the named size": {maxSize: 2, secondRefused: true, held: true},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.ConsumerGroupMaxSize = c.maxSize
			join := func(proc string, call, ret int64, member string, epoch int32, assigned ...model.Partition) int {
				id := b.consumerHeartbeat(proc, call, ret, "g", member, epoch, assigned...)
				req := &b.op(id).Op.Req
				req.MemberEpoch, req.RebalanceTimeoutMs = model.JoinMemberEpoch, 5000
				req.SubscribedTopics, req.OwnedPartitions = &[]string{"in"}, &[]model.Partition{}
				return id
			}
			join("A", 0, 1, "a", 1, "in-0")
			second := join("B", 2, 3, "b", 2)
			if c.secondRefused {
				b.fail(second, model.GroupMaxSizeReached)
			}
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}

// A JoinGroup's session timeout is judged against
// group.min.session.timeout.ms and group.max.session.timeout.ms only
// where the history names them; the refusal is ruled out only where both
// are named.
func TestSessionTimeoutBoundsOnlyWhenNamed(t *testing.T) {
	for name, c := range map[string]struct {
		sessionMs, minMs, maxMs int64
		refused                 bool
		held                    bool
	}{
		"success below unknown bounds":        {sessionMs: 1, held: true},
		"refusal within unknown bounds":       {sessionMs: 10_000, refused: true, held: true},
		"success below the named minimum":     {sessionMs: 5_000, minMs: 6_000},
		"success above the named maximum":     {sessionMs: 2_000_000, maxMs: 1_800_000},
		"refusal below the named minimum":     {sessionMs: 5_000, minMs: 6_000, maxMs: 1_800_000, refused: true, held: true},
		"refusal within both named bounds":    {sessionMs: 6_000, minMs: 6_000, maxMs: 1_800_000, refused: true},
		"refusal with only the maximum":       {sessionMs: 6_000, maxMs: 1_800_000, refused: true, held: true},
		"success within both named bounds":    {sessionMs: 1_800_000, minMs: 6_000, maxMs: 1_800_000, held: true},
		"refusal of a session the join omits": {sessionMs: 0, minMs: 6_000, maxMs: 1_800_000, refused: true, held: true},
	} {
		t.Run(name, func(t *testing.T) {
			var b historyBuilder
			b.h.GroupMinSessionTimeoutMs, b.h.GroupMaxSessionTimeoutMs = c.minMs, c.maxMs
			id := b.joinGroup("A", 0, 1, "g", 1, "in-0")
			b.op(id).Op.Req.SessionTimeoutMs = c.sessionMs
			b.op(id).Result.Resp.MemberID = "m"
			b.op(id).Op.Req.Partitions = []model.Partition{"in-0"}
			if c.refused {
				b.fail(id, model.InvalidSessionTimeout)
			}
			report := Check(b.h, Options{})
			require.Equal(t, c.held, report.Held(), "%v", report.Verdicts)
		})
	}
}
