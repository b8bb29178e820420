package checker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestNamesSkimAsEachDecodes: on every saved history, the operations the
// first reading hands StreamOptions.Names touch what the same operations
// touch as the second reading decodes them in full. So the pieces the
// first reading learns hold every operation the second one routes.
func TestNamesSkimAsEachDecodes(t *testing.T) {
	compared := 0
	for _, file := range savedHistories(t) {
		skimmed := map[int][]touchKey{}
		stream, err := histories.OpenStream(file, histories.StreamOptions{Names: func(op *histories.Op) {
			skimmed[op.ID] = touches(op)
		}})
		if err != nil {
			continue
		}
		_ = stream.Each(func(op *histories.Op) error {
			want, ok := skimmed[op.ID]
			require.True(t, ok, "%s: op %d was named", file, op.ID)
			require.Equal(t, touches(op), want, "%s: op %d", file, op.ID)
			compared++
			return nil
		})
	}
	require.Greater(t, compared, 3_000)
}

// TestPiecesOfSavedHistories: on every saved history, each piece that
// partition finds in the whole history lies within one of the pieces
// CheckFile's first reading learns, so that no piece search misses an
// operation its piece needs. (The first reading takes by kind alone the
// operations the search may judge, so its pieces may be fewer.) And the
// piece searches find an order wherever one streamed search of the whole
// history does. Most saved histories of several pieces break a rule, so
// both send them to the whole search, and TestCheckFileAgreesWithCheck
// shows that the verdicts are then the whole search's.
func TestPiecesOfSavedHistories(t *testing.T) {
	several, alone := 0, 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue
		}
		pieces := newPieceMap()
		for i := range h.Ops {
			pieces.note(&h.Ops[i])
		}
		n := pieces.number()
		for _, piece := range partition(porcupineOps(h)) {
			learned := map[int]bool{}
			for _, o := range piece {
				if p := pieces.of(o.Input.(*histories.Op)); p >= 0 {
					learned[p] = true
				}
			}
			require.LessOrEqual(t, len(learned), 1, "%s: a piece of the whole history lies in one learned piece", file)
		}
		if n < 2 {
			continue
		}
		several++
		if fellBack(t, file, true) {
			require.True(t, fellBack(t, file, false), "%s: the piece searches found no order where one search finds one", file)
		} else {
			alone++
		}
	}
	t.Logf("%d saved histories of several pieces, %d checked by the piece searches alone", several, alone)
	require.Greater(t, several, 10)
	require.Greater(t, alone, 5)
}

// fellBack reports whether CheckFile of file, with its pieces searched
// apart or not, checked the whole file again because the streamed search
// found no order.
func fellBack(t *testing.T, file string, apart bool) bool {
	defer func(was bool) { searchPiecesApart = was }(searchPiecesApart)
	searchPiecesApart = apart
	why := ""
	_, err := CheckFile(file, Options{Slower: func(w string) { why = w }})
	require.NoError(t, err)
	return strings.Contains(why, "streamed search")
}

// TestSpreadEvensTheLanes: the largest pieces go first, each to the lane
// with the least work, and every piece gets one lane.
func TestSpreadEvensTheLanes(t *testing.T) {
	lanes, of := spread([]int{5, 40, 30, 10, 10, 5}, 2)
	require.Equal(t, [][]int{{1, 4}, {0, 2, 3, 5}}, lanes)
	require.Equal(t, []int{1, 0, 1, 1, 0, 1}, of)
	lanes, _ = spread([]int{3, 2}, 8)
	require.Len(t, lanes, 2, "no more lanes than pieces")
	lanes, _ = spread([]int{3, 2}, 0)
	require.Len(t, lanes, 1, "at least one lane")
}

// TestPieceSearchesSeeEveryTick: a tick reaches every piece. Two
// transactional ids never meet, so each has a search of its own. The
// first one's transaction times out at the tick (Kafka's
// TransactionCoordinator aborts it), so its commit is refused. That
// refusal fits only an order with the tick, and a commit taken instead
// breaks the rules only after it.
func TestPieceSearchesSeeEveryTick(t *testing.T) {
	const history = `{"format": "fencecheck/history/v1", "transactions_version": 2, "ops": [
    {"id": 0, "proc": "A", "call": 1, "return": 2, "type": "init_producer_id", "req": {"transactional_id": "fare-writer-7", "timeout_ms": 10000}, "resp": {"producer_id": 7, "epoch": 0}},
    {"id": 1, "proc": "B", "call": 1, "return": 2, "type": "init_producer_id", "req": {"transactional_id": "fare-writer-8", "timeout_ms": 60000}, "resp": {"producer_id": 8, "epoch": 0}},
    {"id": 2, "proc": "A", "call": 3, "return": 4, "type": "produce", "req": {"transactional_id": "fare-writer-7", "producer_id": 7, "epoch": 0, "partition": "fares-2", "sequence": 0, "records": [{"key": "trip-1", "value": "fare of trip-1"}]}, "resp": {"base_offset": 0}},
    {"id": 3, "proc": "B", "call": 3, "return": 4, "type": "produce", "req": {"transactional_id": "fare-writer-8", "producer_id": 8, "epoch": 0, "partition": "fares-5", "sequence": 0, "records": [{"key": "trip-2", "value": "fare of trip-2"}]}, "resp": {"base_offset": 0}},
    {"id": 4, "proc": "clock", "call": 5, "type": "tick", "req": {"ms": 30000}},
    {"id": 5, "proc": "A", "call": 6, "return": 7, "type": "end_txn", "req": {"transactional_id": "fare-writer-7", "producer_id": 7, "epoch": 0, "commit": true}, ANSWER},
    {"id": 6, "proc": "B", "call": 6, "return": 7, "type": "end_txn", "req": {"transactional_id": "fare-writer-8", "producer_id": 8, "epoch": 0, "commit": true}, "resp": {"producer_id": 8, "epoch": 1}}
  ]}`
	lines := strings.Split(history, "\n")
	// The id that times out is named first, and then second, so that
	// the tick must reach each piece of a lane.
	swapped := slices.Clone(lines)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	for _, c := range []struct {
		lines  []string
		answer string
		holds  bool
	}{
		{lines, `"error": "INVALID_TXN_STATE"`, true},
		{lines, `"resp": {"producer_id": 7, "epoch": 1}`, false},
		{swapped, `"error": "INVALID_TXN_STATE"`, true},
		{swapped, `"resp": {"producer_id": 7, "epoch": 1}`, false},
	} {
		file := filepath.Join(t.TempDir(), "two-ids.json")
		doc := strings.Replace(strings.Join(c.lines, "\n"), "ANSWER", c.answer, 1)
		require.NoError(t, os.WriteFile(file, []byte(doc), 0o644))
		h, err := histories.LoadFile(file)
		require.NoError(t, err)
		pieces := newPieceMap()
		for i := range h.Ops {
			pieces.note(&h.Ops[i])
		}
		require.Equal(t, 2, pieces.number())
		want := Check(h, Options{})
		require.Equal(t, c.holds, want.Verdicts[0].Held(), verdictLines(want))
		for _, procs := range []int{1, 2} {
			got, _, err := checkFileOn(t, file, procs)
			require.NoError(t, err)
			require.Equal(t, verdictLines(want), verdictLines(got), "%d processors", procs)
		}
		if c.holds {
			require.False(t, fellBack(t, file, true), "the piece searches place the refusal after the tick")
		}
	}
}

// TestPieceSearchesReportProgressFromEveryLane: lanes take operations on
// goroutines of their own, and the progress reported is what every lane
// has taken, rising, one report at a time. Run under -race in CI.
func TestPieceSearchesReportProgressFromEveryLane(t *testing.T) {
	pieces := newPieceMap()
	for i, id := range []string{"fare-writer-7", "fare-writer-8"} {
		op := histories.Op{ID: i, Proc: id, Op: model.Op{Kind: model.InitProducerID, Req: model.NewRequest()}}
		op.Req.TransactionalID = id
		pieces.note(&op)
	}
	require.Equal(t, 2, pieces.number())
	header := histories.History{}
	m := porcupineModel(modelOptions(header, 2, Options{}), nil, true, nil)
	var reports []int
	reporting := false
	report := func(done int) {
		require.False(t, reporting, "one report at a time")
		reporting = true
		reports = append(reports, done)
		reporting = false
	}
	const ticks = 3 * progressEvery
	searches := newPieceSearches(pieces, 2, withBudget(context.Background(), m, header, 2*ticks, DefaultTimeout, nil), report)
	var wg sync.WaitGroup
	for _, judge := range searches.judges() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ticks {
				judge(&histories.Op{ID: i, Proc: "clock", Call: int64(i), Op: model.Op{Kind: model.Tick, Req: model.Request{Ms: 1}}})
			}
		}()
	}
	wg.Wait()
	require.Equal(t, porcupine.Ok, searches.finish())
	require.NotEmpty(t, reports)
	require.True(t, slices.IsSorted(reports), "%v", reports)
	require.LessOrEqual(t, reports[len(reports)-1], ticks)
	require.GreaterOrEqual(t, reports[len(reports)-1], ticks-progressEvery)
}
