package report

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// A round in two parts: the owners come from the sync_group answers, at
// the generation their requests name, not from the join_group alone.
func TestGroupViewsReadSyncAnswers(t *testing.T) {
	row := func(id int, kind model.Kind, set func(*model.Request, *model.Response)) checker.TimelineRow {
		req, resp := model.NewRequest(), model.NewResponse()
		req.Group = "g"
		set(&req, &resp)
		return checker.TimelineRow{Op: histories.Op{ID: id, Proc: "A", Returned: true,
			Op: model.Op{Kind: kind, Req: req}, Result: model.OK(resp)}}
	}
	rows := []checker.TimelineRow{
		row(0, model.JoinGroup, func(req *model.Request, resp *model.Response) {
			req.JoinOnly = true
			resp.MemberID, resp.GenerationID = "a", 3
		}),
		row(1, model.SyncGroup, func(req *model.Request, resp *model.Response) {
			req.MemberID, req.GenerationID = "a", 3
			resp.Assignment = []model.Partition{"trips-0", "trips-1"}
		}),
	}
	views := groupViews(rows)
	require.Equal(t, []groupView{{Group: "g", Generations: []generationView{{Generation: 3,
		Owners: []ownerView{{Proc: "A", Member: "a", Partitions: "trips-0,trips-1", Op: 1}}}}}}, views)
}
