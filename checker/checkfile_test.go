package checker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
)

// savedHistories are the history files the repository keeps.
func savedHistories(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../histories/*/*.json", "../histories/*/*/*.json", "../testdata/*.json", "../testdata/*/*.json"} {
		found, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range found {
			if !strings.Contains(f, "fuzz") {
				files = append(files, f)
			}
		}
	}
	require.Greater(t, len(files), 50)
	return files
}

func verdictLines(r Report) string {
	var b strings.Builder
	for _, v := range r.Verdicts {
		fmt.Fprintln(&b, v)
	}
	return b.String()
}

// checkFileOn is CheckFile of file with procs processors, and its
// report as text: the error, the verdicts, the timeline and the ids of
// the operations kept.
func checkFileOn(t *testing.T, file string, procs int) (Report, string, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	r, err := CheckFile(file, Options{})
	var b strings.Builder
	fmt.Fprintf(&b, "error: %v\n", err)
	b.WriteString(verdictLines(r))
	require.NoError(t, r.WriteTimeline(&b))
	for _, op := range r.History.Ops {
		fmt.Fprintf(&b, "op %d %s\n", op.ID, op.Kind)
	}
	return r, b.String(), err
}

// TestCheckFileAgreesWithCheck: on every saved history, CheckFile prints
// the verdicts, reasons included, that Check prints on the history
// LoadFile reads, and its report holds every operation a violation names.
// Its report is the same byte for byte on one processor, where the
// search and the invariants take turns and one goroutine decodes, as on
// four, where each has its own.
func TestCheckFileAgreesWithCheck(t *testing.T) {
	for _, file := range savedHistories(t) {
		t.Run(file, func(t *testing.T) {
			h, err := histories.LoadFile(file)
			got, text, streamErr := checkFileOn(t, file, 1)
			_, text4, _ := checkFileOn(t, file, 4)
			require.Equal(t, text, text4, "the same report on 1 and 4 processors")
			if err != nil {
				require.Error(t, streamErr)
				return
			}
			want := Check(h, Options{})
			require.NoError(t, streamErr)
			require.Equal(t, verdictLines(want), verdictLines(got))
			ids := map[int]bool{}
			for _, op := range got.History.Ops {
				ids[op.ID] = true
			}
			for id := range namedOps(got.Verdicts) {
				if id >= 0 {
					require.True(t, ids[id], "op %d is named and kept", id)
				}
			}
		})
	}
}

// TestStreamSearchOkIsAVerdict: where the streamed search finds an order,
// the whole search finds one too; and it finds one on every saved history
// that the whole search explains under the likelier protocol. One of them
// needs the search to come back to a window's other end state.
func TestStreamSearchOkIsAVerdict(t *testing.T) {
	var comeBack, cameBack []string
	linearizable := 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue
		}
		version := txnVersions(h)[0]
		m := porcupineModel(modelOptions(h, version, Options{}), h.Topics, true, nil)
		whole := checkWindowed(m, porcupineOps(h), time.Minute, nil).result
		search := newStreamSearch(t.Context(), m, h, neverOf(h), nil)
		for _, op := range inCallOrderCopy(h.Ops) {
			search.add(&op)
		}
		result := search.finish()
		if search.cameBack > 0 {
			cameBack = append(cameBack, filepath.Base(file))
		}
		switch {
		case result == porcupine.Ok:
			require.Equal(t, porcupine.Ok, whole, file)
		case whole == porcupine.Ok:
			comeBack = append(comeBack, filepath.Base(file))
		}
		if whole == porcupine.Ok {
			linearizable++
		}
	}
	require.Greater(t, linearizable, 40)
	require.Empty(t, comeBack, "histories the streamed search finds no order for")
	require.Equal(t, []string{"leader-of-two-rejoins-late.json"}, cameBack)
}

func neverOf(h histories.History) int64 {
	var never int64
	for _, op := range h.Ops {
		never = max(never, op.Call+1, op.Return+1)
	}
	return never
}

func inCallOrderCopy(ops []histories.Op) []histories.Op {
	var sorted []histories.Op
	for _, op := range inCallOrder(ops) {
		sorted = append(sorted, op)
	}
	return sorted
}

// TestCheckFileJudgesABrokenFileUpToItsBreak: a file cut short is judged
// up to the operation where it breaks, which the error names with its
// byte offset.
func TestCheckFileJudgesABrokenFileUpToItsBreak(t *testing.T) {
	whole, err := os.ReadFile("../histories/canonical/aborted-read.json")
	require.NoError(t, err)
	text := string(whole)
	cut := text[:strings.LastIndex(text, `{"id"`)+20]
	path := filepath.Join(t.TempDir(), "cut.json")
	require.NoError(t, os.WriteFile(path, []byte(cut), 0o644))

	_, loadErr := histories.LoadFile(path)
	var loaded *histories.BrokenError
	require.ErrorAs(t, loadErr, &loaded)
	want := Check(*loaded.Before, Options{})

	got, err := CheckFile(path, Options{})
	var broken *histories.BrokenError
	require.ErrorAs(t, err, &broken)
	require.Equal(t, loaded.Index, broken.Index)
	require.Equal(t, loaded.Offset, broken.Offset)
	require.Equal(t, verdictLines(want), verdictLines(got))
}

// TestCheckFileOfAFileOutOfOrder: a file whose operations are written in
// reverse, with its top-level members after "ops", is judged as the file
// in order is.
func TestCheckFileOfAFileOutOfOrder(t *testing.T) {
	for _, name := range []string{"aborted-read", "two-step-fencing", "wall-clock-session-expires", "leader-of-two-rejoins-late"} {
		t.Run(name, func(t *testing.T) {
			file := "../histories/canonical/" + name + ".json"
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var doc map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &doc))
			var ops []json.RawMessage
			require.NoError(t, json.Unmarshal(doc["ops"], &ops))
			require.Greater(t, len(ops), 2)
			slices.Reverse(ops)
			var b strings.Builder
			b.WriteString(`{"ops": [`)
			for i, op := range ops {
				if i > 0 {
					b.WriteString(",\n")
				}
				b.Write(op)
			}
			b.WriteString("]")
			for key, value := range doc {
				if key != "ops" {
					fmt.Fprintf(&b, ", %q: %s", key, value)
				}
			}
			b.WriteString("}")
			reversed := filepath.Join(t.TempDir(), name+".json")
			require.NoError(t, os.WriteFile(reversed, []byte(b.String()), 0o644))

			h, err := histories.LoadFile(file)
			require.NoError(t, err)
			got, err := CheckFile(reversed, Options{})
			require.NoError(t, err)
			require.Equal(t, verdictLines(Check(h, Options{})), verdictLines(got))
		})
	}
}

// TestCheckFileSaysWhyItChecksWhole: a history that breaks
// linearizability is checked whole, because only the whole search
// explains a violation, and Options.Slower is told so; one that holds
// is checked as a stream, and Slower hears nothing.
func TestCheckFileSaysWhyItChecksWhole(t *testing.T) {
	seen := map[Status]bool{}
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue
		}
		status := Check(h, Options{}).Verdict(Linearizable).Status
		if seen[status] || status == Unknown {
			continue
		}
		seen[status] = true
		var told []string
		_, err = CheckFile(file, Options{Slower: func(why string) { told = append(told, why) }})
		require.NoError(t, err)
		if status == OK {
			require.Empty(t, told, file)
		} else {
			require.Equal(t, []string{"the streamed search found no order within the windows it keeps"}, told, file)
		}
	}
	require.True(t, seen[OK] && seen[Violated], "a saved history of each kind")
}
