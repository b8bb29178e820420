package report

import (
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// groupView is one consumer group: who owned which partitions in each
// generation, as the answers handed them out: a whole round's join_group,
// or the sync_group after a join_group that was the JoinGroup alone.
type groupView struct {
	Group       string
	Generations []generationView
}

type generationView struct {
	Generation int32
	Owners     []ownerView
}

type ownerView struct {
	Proc, Member string
	Partitions   string
	Op           int
}

func groupViews(rows []checker.TimelineRow) []groupView {
	gens := map[string]map[int32][]ownerView{}
	own := func(group string, gen int32, owner ownerView) {
		if gens[group] == nil {
			gens[group] = map[int32][]ownerView{}
		}
		gens[group][gen] = append(gens[group][gen], owner)
	}
	for _, row := range rows {
		op := row.Op
		if !op.Result.Succeeded() {
			continue
		}
		resp := op.Result.Resp
		switch {
		case op.Kind == model.JoinGroup && !op.Req.JoinOnly:
			own(op.Req.Group, resp.GenerationID, ownerView{Proc: op.Proc, Member: resp.MemberID,
				Partitions: orNone(partitionList(resp.Assignment)), Op: op.ID})
		case op.Kind == model.SyncGroup:
			own(op.Req.Group, op.Req.GenerationID, ownerView{Proc: op.Proc, Member: op.Req.MemberID,
				Partitions: orNone(partitionList(resp.Assignment)), Op: op.ID})
		}
	}
	var views []groupView
	for _, name := range slices.Sorted(maps.Keys(gens)) {
		g := groupView{Group: name}
		for _, gen := range slices.Sorted(maps.Keys(gens[name])) {
			g.Generations = append(g.Generations, generationView{Generation: gen, Owners: gens[name][gen]})
		}
		views = append(views, g)
	}
	return views
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "nothing"
	}
	return s
}
