package report

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

const seed000 = "seed-000-zombie-accepted.json"

func render(t *testing.T, h histories.History, opts Options) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, Write(&b, checker.Check(h, checker.Options{}), opts))
	return b.String()
}

func load(t *testing.T, path string) histories.History {
	t.Helper()
	h, err := histories.LoadFile(path)
	require.NoError(t, err)
	return h
}

// TestSeed000Page has the parts the seed tells its story with: the lanes,
// fares-2's log with the ABORT at 41 and the COMMIT at 43, the violating
// rows with their reasons, porcupine's page linked.
func TestSeed000Page(t *testing.T) {
	page := render(t, load(t, filepath.Join("..", "..", "histories", "canonical", seed000)), Options{Porcupine: "porcupine.html"})
	for _, proc := range []string{"P", "A", "B", "R"} {
		require.Contains(t, page, fmt.Sprintf(`id="lane-%s" data-proc="%s"`, proc, proc))
	}
	require.Contains(t, page, `id="log-fares-2"`)
	require.Regexp(t, `data-from="41" data-to="41" data-marker="ABORT" data-epoch="1"`, page)
	require.Regexp(t, `data-from="43" data-to="43" data-marker="COMMIT" data-epoch="1"`, page)
	require.Regexp(t, `<tr id="op-11" data-op="11" class="violating" data-breaks="linearizable one-live-producer">`, page)
	require.Contains(t, page, "breaks one-live-producer: epoch 0 accepted after op 6 returned epoch 1 for fare-writer-7")
	require.Contains(t, page, `id="box-11"`)
	require.Contains(t, page, `class="op ok breaks"`)
	require.Contains(t, page, "the longest order the model accepts")
	require.Contains(t, page, `href="porcupine.html"`)
	require.NotContains(t, page, `id="window"`, "ten operations are drawn whole")
}

// TestPageLoadsNothing: the page is one file; nothing in it is fetched.
func TestPageLoadsNothing(t *testing.T) {
	page := render(t, load(t, filepath.Join("..", "..", "histories", "canonical", seed000)), Options{})
	for _, external := range []*regexp.Regexp{
		regexp.MustCompile(`<script[^>]+src=`),
		regexp.MustCompile(`<link[^>]+href=`),
		regexp.MustCompile(`<img`),
		regexp.MustCompile(`url\((https?:)?//`),
		regexp.MustCompile(`@import`),
	} {
		require.NotRegexp(t, external, page)
	}
}

// TestEveryHistoryRenders: every canonical and mutant history, odd offsets
// and all, gives a page, and every verdict appears on it.
func TestEveryHistoryRenders(t *testing.T) {
	for _, dir := range []string{"canonical", "mutants"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "histories", dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, file := range files {
			t.Run(dir+"/"+filepath.Base(file), func(t *testing.T) {
				h := load(t, file)
				report := checker.Check(h, checker.Options{})
				var b strings.Builder
				require.NoError(t, Write(&b, report, Options{}))
				for _, v := range report.Verdicts {
					require.Contains(t, b.String(), fmt.Sprintf(`data-check="%s"`, v.Check))
				}
			})
		}
	}
}

// TestTwoRecordsOneOffsetRenders marks the offset two records claim.
func TestTwoRecordsOneOffsetRenders(t *testing.T) {
	page := render(t, load(t, filepath.Join("..", "..", "histories", "canonical", "two-records-one-offset.json")), Options{})
	require.Contains(t, page, " conflict")
}

// TestLargeHistoryIsWindowed draws the operations around the first
// violation and says how many it left out.
func TestLargeHistoryIsWindowed(t *testing.T) {
	h := load(t, filepath.Join("..", "..", "histories", "canonical", seed000))
	h = padded(h, 500)
	page := render(t, h, Options{Window: 100})
	require.Contains(t, page, `id="window"`)
	require.Regexp(t, `This page draws 100 of the history&#39;s 5\d\d operations`, page)
	require.Contains(t, page, `id="op-11"`, "the first violation is in the window")
	require.Equal(t, 100, strings.Count(page, `<tr id="op-`))
}

// padded is h after n fetches of an empty partition, which change nothing.
func padded(h histories.History, n int) histories.History {
	last := h.Ops[len(h.Ops)-1]
	for i := range n {
		op := histories.Op{ID: last.ID + 1 + i, Proc: "R2", Call: last.Return + 10 + int64(10*i), Returned: true}
		op.Return = op.Call + 5
		op.Kind = model.Fetch
		op.Req = model.NewRequest()
		op.Req.Partition, op.Req.Offset, op.Req.Isolation = "empty-0", 0, model.ReadCommitted
		op.Result = model.Result{Answered: true, Resp: model.NewResponse()}
		op.Result.Resp.HighWatermark, op.Result.Resp.LastStableOffset = 0, 0
		h.Ops = append(h.Ops, op)
	}
	return h
}

// TestLongLogIsCut keeps a strip to maxCells cells and says so.
func TestLongLogIsCut(t *testing.T) {
	var entries []checker.LogEntry
	for off := int64(0); off < 300; off += 2 { // a gap after every record
		entries = append(entries, checker.LogEntry{Offset: off, Key: "k", Status: checker.RecordCommitted, Ops: []int{int(off)}})
	}
	got := strips([]checker.PartitionLog{{Partition: "p-0", Entries: entries, HighWatermark: model.NoOffset, LastStableOffset: model.NoOffset, FetchedBy: -1}}, nil)
	require.Len(t, got[0].Cells, maxCells)
	require.Contains(t, got[0].Left, "cells before offset")
}

func TestCallsAreCode(t *testing.T) {
	require.Equal(t, "<code>produce()</code> a&lt;b `odd", string(calls("`produce()` a<b `odd")))
}

// TestDoubleAssignmentPage marks the answer that gives a held partition
// to a second member with both checks it breaks, and names the answer
// that gave it to the first.
func TestDoubleAssignmentPage(t *testing.T) {
	page := render(t, load(t, filepath.Join("..", "..", "histories", "canonical", "kip848-double-assignment.json")), Options{})
	require.Regexp(t, `<tr id="op-1" data-op="1" class="violating" data-breaks="linearizable one-owner">`, page)
	require.Contains(t, page, "breaks one-owner: the answer gives trips-2 to member member-w2 at epoch 2, but member member-w1, given it by op 0 at epoch 1, still holds it")
}
