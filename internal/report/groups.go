package report

import (
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// groupView is one consumer group: who owned which partitions in each
// generation, as the join answers handed them out.
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
	for _, row := range rows {
		op := row.Op
		if op.Kind != model.JoinGroup || !op.Result.Succeeded() {
			continue
		}
		resp := op.Result.Resp
		if gens[op.Req.Group] == nil {
			gens[op.Req.Group] = map[int32][]ownerView{}
		}
		owner := ownerView{Proc: op.Proc, Member: resp.MemberID, Partitions: orNone(partitionList(resp.Assignment)), Op: op.ID}
		gens[op.Req.Group][resp.GenerationID] = append(gens[op.Req.Group][resp.GenerationID], owner)
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
