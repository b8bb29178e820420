package histories

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// streamFile reads path with a Stream: its header, its operations in the
// order Each gives them, and the first error.
func streamFile(t *testing.T, path string) (*Stream, []Op, error) {
	t.Helper()
	s, err := OpenStream(path, StreamOptions{})
	if err != nil {
		return nil, nil, err
	}
	var ops []Op
	err = s.Each(func(op *Op) error {
		ops = append(ops, *op)
		return nil
	})
	return s, ops, err
}

// inCallOrder is ops sorted as a Stream hands them on.
func inCallOrder(ops []Op) []Op {
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b Op) int { return callOrder(&a, &b) })
	return sorted
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// requireStreamsAsLoaded holds a Stream of path to LoadFile's reading of
// it: the same header, the same operations in call order, the same error.
func requireStreamsAsLoaded(t *testing.T, path string) {
	t.Helper()
	h, loadErr := LoadFile(path)
	s, ops, err := streamFile(t, path)
	if loadErr != nil {
		require.Error(t, err, "Load refuses it")
		require.Equal(t, loadErr.Error(), err.Error())
		return
	}
	require.NoError(t, err)
	header := h
	header.Ops = nil
	require.Equal(t, header, s.Header())
	require.Equal(t, len(h.Ops), s.Len())
	if len(h.Ops) == 0 {
		require.Empty(t, ops)
		return
	}
	require.Equal(t, inCallOrder(h.Ops), ops)
}

// TestStreamAgreesWithLoad: every document Load refuses, the stream
// refuses with the same error, and every one it accepts, the stream hands
// on whole, in call order.
func TestStreamAgreesWithLoad(t *testing.T) {
	for _, c := range loadRejects {
		t.Run("rejects/"+c.name, func(t *testing.T) {
			path := writeTemp(t, c.doc)
			_, _, err := streamFile(t, path)
			require.EqualError(t, err, path+": "+c.err)
		})
	}
	for name, d := range loadAccepts {
		t.Run("accepts/"+name, func(t *testing.T) { requireStreamsAsLoaded(t, writeTemp(t, d)) })
	}
}

// TestStreamReadsSavedHistories: the histories saved in the repository
// stream as they load.
func TestStreamReadsSavedHistories(t *testing.T) {
	var paths []string
	for _, pattern := range []string{"*/*.json", "*/*/*.json", "../testdata/*.json", "../testdata/*/*.json"} {
		found, err := filepath.Glob(pattern)
		require.NoError(t, err)
		paths = append(paths, found...)
	}
	require.Greater(t, len(paths), 50, "the saved histories are found")
	for _, path := range paths {
		if strings.Contains(path, "fuzz") {
			continue
		}
		t.Run(path, func(t *testing.T) { requireStreamsAsLoaded(t, path) })
	}
}

// shuffledHistory is a history of n operations of one process each,
// written in an order shuffled by seed, with its largest lag.
func shuffledHistory(n int, seed uint64) (string, int64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	order := rng.Perm(n)
	var ops []string
	latest, lag := int64(-1), int64(0)
	for _, i := range order {
		call := int64(i / 2) // two at each instant, so that ties are ordered by id
		if call < latest {
			lag = max(lag, latest-call)
		}
		latest = max(latest, call)
		ops = append(ops, fmt.Sprintf(`{"id": %d, "proc": "p%d", "call": %d, "return": %d, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
			n-i, i, call, call+1))
	}
	return doc(ops...), lag
}

// TestStreamOrdersByCallThenID: operations written in any order are handed
// on by call, then by id, and the lag is the largest in the file.
func TestStreamOrdersByCallThenID(t *testing.T) {
	for seed := range uint64(5) {
		text, lag := shuffledHistory(200, seed)
		path := writeTemp(t, text)
		requireStreamsAsLoaded(t, path)
		s, ops, err := streamFile(t, path)
		require.NoError(t, err)
		require.Equal(t, lag, s.Lag())
		require.True(t, slices.IsSortedFunc(ops, func(a, b Op) int { return callOrder(&a, &b) }))
	}
}

// TestStreamHoldsWhatMayStillComeFirst: a file in call order is handed on
// one operation at a time; a file whose operations come late by a lag
// holds the ones within the lag; a complete_before mark releases earlier.
func TestStreamHoldsWhatMayStillComeFirst(t *testing.T) {
	op := func(id int, call int64, tail string) string {
		return fmt.Sprintf(`{"id": %d, "proc": "p%d", "call": %d, "return": %d, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}%s}`,
			id, id, call, call+1, tail)
	}
	var inOrder, late, marked []string
	for i := range 100 {
		inOrder = append(inOrder, op(i, int64(i), ""))
		late = append(late, op(i, int64(i), ""))
		marked = append(marked, op(i, int64(i), fmt.Sprintf(`, "complete_before": %d`, i+1)))
	}
	// One operation called at 0 is written last, as a recorder writes a
	// long request when it ends.
	late = append(late, op(100, 0, ""))
	marked = append([]string{op(100, 0, `, "complete_before": 0`)}, marked...)

	s, _, err := streamFile(t, writeTemp(t, doc(inOrder...)))
	require.NoError(t, err)
	require.Equal(t, 2, s.peakHeld, "the one read and the one before it, which a tie at its call could still precede")

	s, ops, err := streamFile(t, writeTemp(t, doc(late...)))
	require.NoError(t, err)
	require.Equal(t, int64(99), s.Lag())
	require.Equal(t, 101, s.peakHeld, "the lag holds every operation until the last is read")
	require.Equal(t, 100, ops[1].ID, "the late operation comes second: called at 0, after id 0")

	s, _, err = streamFile(t, writeTemp(t, doc(marked...)))
	require.NoError(t, err)
	require.LessOrEqual(t, s.peakHeld, 2, "each mark releases what was called before it")
}

// TestStreamRefusesAMarkThatLies: an operation called before a mark read
// earlier is an error that names both operations, not an order broken.
func TestStreamRefusesAMarkThatLies(t *testing.T) {
	text := doc(`{"id": 1, "proc": "A", "call": 5, "return": 6, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}, "complete_before": 10}`,
		`{"id": 2, "proc": "B", "call": 7, "return": 8, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`,
		`{"id": 3, "proc": "C", "call": 3, "return": 9, "type": "leave_group", "req": {"group": "g", "member_id": "m"}, "resp": {}}`)
	path := writeTemp(t, text)
	_, _, err := streamFile(t, path)
	require.EqualError(t, err, path+": op 3: called at 3, but op 2, called at 7, came before it in the file with a complete_before mark that rules it out")
}

// TestStreamBrokenOps: a document that stops being JSON inside its ops
// hands on the operations before the break, then names the operation and
// the byte as Load does.
func TestStreamBrokenOps(t *testing.T) {
	whole := `{"format": "fencecheck/history/v1", "clock": "wall", "ops": [` + okInit + ",\n" + produce(goodProduce, `, "resp": {"base_offset": 0}`) + `]}`
	second := strings.Index(whole, `{"id": 4`)
	for name, text := range map[string]string{
		"cut inside an operation": whole[:second+30],
		"cut after an operation":  whole[:second-2],
		"corrupted":               whole[:second] + "x" + whole[second+1:],
		"cut in the first":        whole[:second-40],
	} {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, text)
			_, loadErr := LoadFile(path)
			var loaded *BrokenError
			require.ErrorAs(t, loadErr, &loaded)
			s, ops, err := streamFile(t, path)
			var broken *BrokenError
			require.ErrorAs(t, err, &broken)
			require.Equal(t, loadErr.Error(), err.Error())
			require.Equal(t, loaded.Index, broken.Index)
			require.Equal(t, loaded.Offset, broken.Offset)
			require.Equal(t, len(loaded.Before.Ops), len(ops))
			if len(ops) > 0 {
				require.Equal(t, loaded.Before.Ops, ops)
			}
			require.True(t, s.Header().WallClock, "the header before the ops is kept")
		})
	}

	// The operations before the break do not load: the stream says so at once, as Load does.
	path := writeTemp(t, doc(okInit, `{"id": 0, "proc": "A", "call": 9, "type": "stall"}`, `{"id": 2`))
	_, err := OpenStream(path, StreamOptions{})
	var broken *BrokenError
	require.ErrorAs(t, err, &broken)
	_, loadErr := LoadFile(path)
	require.Equal(t, loadErr.Error(), err.Error())
}

// TestStreamFindsMembersAfterOps: a top-level member written after "ops"
// is read before any operation is handed on.
func TestStreamFindsMembersAfterOps(t *testing.T) {
	path := writeTemp(t, `{"format": "fencecheck/history/v1", "ops": [`+okInit+`], "clock": "wall", "transactions_version": 2}`)
	requireStreamsAsLoaded(t, path)
	s, err := OpenStream(path, StreamOptions{})
	require.NoError(t, err)
	require.True(t, s.Header().WallClock)
	require.Equal(t, 2, s.Header().TransactionsVersion)
}

// TestStreamPassesEachsError: an error of the caller's stops the reading
// and comes back as it was.
func TestStreamPassesEachsError(t *testing.T) {
	s, err := OpenStream(writeTemp(t, doc(okInit, produce(goodProduce, `, "resp": {"base_offset": 0}`))), StreamOptions{})
	require.NoError(t, err)
	stop := errors.New("stop")
	seen := 0
	err = s.Each(func(*Op) error { seen++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, seen)
}

// TestStreamFindStopsAKindOnceFound: Find is given every operation of
// the kinds asked for, until it returns true for one, and then none more
// of that kind, in the light first pass and in the full one alike.
func TestStreamFindStopsAKindOnceFound(t *testing.T) {
	path := filepath.Join("testdata", "every-type.json")
	h, err := LoadFile(path)
	require.NoError(t, err)
	produces := 0
	for _, op := range h.Ops {
		if op.Kind == model.Produce {
			produces++
		}
	}
	require.Greater(t, produces, 1)
	for _, full := range []bool{false, true} {
		opts := StreamOptions{FindKinds: []model.Kind{model.EndTxn, model.Produce}}
		if full {
			opts.Visit = func(*Op) {} // Visit reads every operation whole
		}
		seen := map[model.Kind]int{}
		opts.Find = func(op *Op) bool {
			seen[op.Kind]++
			return op.Kind == model.EndTxn
		}
		_, err := OpenStream(path, opts)
		require.NoError(t, err)
		require.Equal(t, map[model.Kind]int{model.EndTxn: 1, model.Produce: produces}, seen, "full pass %v", full)
	}
}
