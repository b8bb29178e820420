package checker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestLogsOfSeed000 reads fares-2 as seed 000 tells it: trip-9001 at 40
// under the ABORT at 41 that carries epoch 1, the same trip at 42, the
// COMMIT at 43.
func TestLogsOfSeed000(t *testing.T) {
	h, err := histories.LoadFile(filepath.Join("..", "histories", "canonical", "seed-000-zombie-accepted.json"))
	require.NoError(t, err)
	logs := Logs(h)
	require.Len(t, logs, 1)
	fares := logs[0]
	require.Equal(t, model.Partition("fares-2"), fares.Partition)
	require.Equal(t, int64(46), fares.HighWatermark)
	require.Equal(t, int64(46), fares.LastStableOffset)
	require.Equal(t, 13, fares.FetchedBy)
	var tail []string
	for _, e := range fares.Entries[39:] {
		tail = append(tail, entryWords(e))
	}
	require.Equal(t, []string{
		"39 trip-9000 committed",
		"40 trip-9001 aborted",
		"41 ABORT epoch 1",
		"42 trip-9001 committed",
		"43 COMMIT epoch 1",
		"44 trip-9002 committed",
		"45 COMMIT epoch 0",
	}, tail)
	require.Equal(t, []int{6}, fares.Entries[41].Ops, "the ABORT is B's init's")
}

func entryWords(e LogEntry) string {
	if e.Marker {
		kind := "ABORT"
		if e.Commit {
			kind = "COMMIT"
		}
		return fmt.Sprintf("%d %s epoch %d", e.Offset, kind, e.Epoch)
	}
	return fmt.Sprintf("%d %s %s", e.Offset, e.Key, e.Status)
}

// TestLogsOfTwoRecordsOneOffset keeps both records of a slot, marked.
func TestLogsOfTwoRecordsOneOffset(t *testing.T) {
	h, err := histories.LoadFile(filepath.Join("..", "histories", "canonical", "two-records-one-offset.json"))
	require.NoError(t, err)
	var conflicts []string
	for _, l := range Logs(h) {
		for _, e := range l.Entries {
			if e.Conflict {
				conflicts = append(conflicts, fmt.Sprintf("%s@%d %s", l.Partition, e.Offset, e.Key))
			}
		}
	}
	require.NotEmpty(t, conflicts)
	require.True(t, strings.Contains(conflicts[0], " / "), conflicts[0])
}
