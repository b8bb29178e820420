package checker

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// follow gives a Follower the operations of h as a recorder writes them:
// each once it has ended (by its return, or its call when it has none),
// with the mark that every operation called before the first of those
// still to come is given. Its header lacks the members written after the
// ops, as a recording's does. It returns the violations the follower
// reported on the way, and its final report.
func follow(t *testing.T, path string, h histories.History) ([]Verdict, Report) {
	t.Helper()
	ended := func(op histories.Op) int64 {
		if op.Returned {
			return op.Return
		}
		return op.Call
	}
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b histories.Op) int { return cmp.Compare(ended(a), ended(b)) })
	// later[i] is the earliest call of ops[i:].
	later := make([]int64, len(ops)+1)
	later[len(ops)] = 1 << 62
	for i := len(ops) - 1; i >= 0; i-- {
		later[i] = min(later[i+1], ops[i].Call)
	}
	header := h
	header.Ops, header.Trips, header.OutputTopics = nil, nil, nil
	f := NewFollower(path, header, Options{})
	var reported []Verdict
	for i, op := range ops {
		require.NoError(t, f.Add(op))
		if i%3 == 2 || i == len(ops)-1 {
			reported = append(reported, f.Judge(later[i+1])...)
		}
	}
	end := h
	end.Ops = nil
	report, err := f.Finish(&end)
	require.NoError(t, err)
	return reported, report
}

// TestFollowerAgreesWithCheckFile: on every saved history, given as a
// recorder writes it, a Follower ends with the verdicts, reasons
// included, that CheckFile prints, and its report holds every operation
// they name. Each check it reported violated on the way is violated at
// the end, and a fold's violations reported then are among the final ones.
func TestFollowerAgreesWithCheckFile(t *testing.T) {
	reportedOn := map[string]int{} // the histories each check was reported on early
	defer func() {
		for _, check := range []string{Linearizable, OneLiveProducer, OffsetsMonotonic} {
			require.Positive(t, reportedOn[check], "%s is reported while following on some saved history: %v", check, reportedOn)
		}
	}()
	for _, file := range savedHistories(t) {
		t.Run(file, func(t *testing.T) {
			h, err := histories.LoadFile(file)
			if err != nil {
				return // a file CheckFile refuses: nobody follows it
			}
			want, err := CheckFile(file, Options{})
			require.NoError(t, err)
			reported, got := follow(t, file, h)
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
			for _, v := range reported {
				reportedOn[v.Check]++
			}
			for _, early := range reported {
				at := slices.IndexFunc(got.Verdicts, func(v Verdict) bool { return v.Check == early.Check })
				final := got.Verdicts[at]
				require.Equal(t, Violated, final.Status, "%s was reported while following", early)
				if _, fold := invariantFolds[early.Check]; !fold {
					continue // judged on a cut, which may name another operation
				}
				for _, v := range early.Violations {
					require.True(t, slices.ContainsFunc(final.Violations, func(w Violation) bool { return w.Op == v.Op }),
						"%s: op %d, reported while following, is among the final violations: %s", early.Check, v.Op, final)
				}
			}
		})
	}
}

// TestFollowerStoppedBeforeTheEnd: stopped before the document ends, a
// Follower judges every operation it was given, as CheckFile judges the
// file cut short there.
func TestFollowerStoppedBeforeTheEnd(t *testing.T) {
	whole, err := os.ReadFile("../histories/canonical/seed-002-groupid-string.json")
	require.NoError(t, err)
	text := string(whole)
	cut := text[:strings.LastIndex(text, "]")] // every operation, but no end
	path := filepath.Join(t.TempDir(), "cut.json")
	require.NoError(t, os.WriteFile(path, []byte(cut), 0o644))
	want, err := CheckFile(path, Options{})
	var broken *histories.BrokenError
	require.ErrorAs(t, err, &broken)
	_, err = histories.LoadFile(path)
	require.ErrorAs(t, err, &broken)

	h := *broken.Before
	header := h
	header.Ops = nil
	why := ""
	f := NewFollower(path, header, Options{Slower: func(w string) { why = w }})
	for _, op := range h.Ops {
		require.NoError(t, f.Add(op))
	}
	got, err := f.Finish(nil)
	require.Equal(t, verdictLines(want), verdictLines(got))
	require.Contains(t, verdictLines(got), "\noffsets-monotonic: VIOLATED op 16 ")
	// The commit below an earlier one breaks Kafka's order, so the
	// bounded fold needed what it dropped, and the file is checked again
	// as CheckFile checks it, cut short.
	require.Contains(t, why, "offsets-monotonic")
	require.ErrorAs(t, err, &broken)
}

// TestFollowerRefusesAnOperationBeforeItsMark: an operation called before
// a mark already given breaks the mark's promise.
func TestFollowerRefusesAnOperationBeforeItsMark(t *testing.T) {
	f := NewFollower("unused.json", histories.History{}, Options{})
	require.NoError(t, f.Add(histories.Op{ID: 0, Proc: "A", Call: 5, Op: model.Op{Kind: model.Tick}}))
	require.Empty(t, f.Judge(10))
	err := f.Add(histories.Op{ID: 1, Proc: "A", Call: 3, Op: model.Op{Kind: model.Tick}})
	require.EqualError(t, err, "op 1 is called at 3, but came after the mark complete_before 10, which says every operation called before it came earlier")
}

// TestFollowerSearchesUnderTheProtocolAnEndTxnShows: an end_txn answered
// with the next session is transactions v2's, and the search starts under
// v2 once it is handed on. So it never runs under v1 and fails, which
// would read the file whole to explain the failure.
func TestFollowerSearchesUnderTheProtocolAnEndTxnShows(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"format": "fencecheck/history/v1", "clock": "wall", "ops": [` + "\n")
	doc.WriteString(`{"id": 0, "proc": "soak", "call": 0, "return": 1, "type": "init_producer_id", "req": {"transactional_id": "soak-0"}, "resp": {"producer_id": 1, "epoch": 0}}`)
	for i := range 20 {
		epoch, call := i, 1+2*i
		fmt.Fprintf(&doc, `,
{"id": %d, "proc": "soak", "call": %d, "return": %d, "type": "produce", "req": {"transactional_id": "soak-0", "producer_id": 1, "epoch": %d, "partition": "trips-0", "sequence": 0, "records": [{"key": "trip-%d", "value": "fare"}]}, "resp": {"base_offset": %d}},
{"id": %d, "proc": "soak", "call": %d, "return": %d, "type": "end_txn", "req": {"transactional_id": "soak-0", "producer_id": 1, "epoch": %d, "commit": true}, "resp": {"producer_id": 1, "epoch": %d}}`,
			call, call, call+1, epoch, i, 2*i, call+1, call+1, call+2, epoch, epoch+1)
	}
	doc.WriteString("\n]}\n")
	path := filepath.Join(t.TempDir(), "v2.json")
	require.NoError(t, os.WriteFile(path, []byte(doc.String()), 0o644))
	h, err := histories.LoadFile(path)
	require.NoError(t, err)
	want, err := CheckFile(path, Options{})
	require.NoError(t, err)

	header := h
	header.Ops = nil
	f := NewFollower(path, header, Options{})
	for _, op := range h.Ops {
		require.NoError(t, f.Add(op))
		require.Empty(t, f.Judge(op.Return))
	}
	got, err := f.Finish(&header)
	require.NoError(t, err)
	require.Equal(t, verdictLines(want), verdictLines(got))
	require.Equal(t, map[int]bool{2: true}, f.tried, "the search ran under v2 only")
	require.Equal(t, 41, f.search.judged)
}
