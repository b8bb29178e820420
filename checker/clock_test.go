package checker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
)

func rowsCalledAt(calls ...int64) []TimelineRow {
	rows := make([]TimelineRow, len(calls))
	for i, call := range calls {
		rows[i].Op = histories.Op{ID: i, Call: call}
	}
	return rows
}

// A clock from 10^12 on is Unix milliseconds: seconds after the first
// call, with the start as a date; below it, a logical clock, written as
// it is; a wall clock of its own, seconds after the first call.
func TestClockWritesTimes(t *testing.T) {
	unix := ClockOf(rowsCalledAt(1796465035150, 1796465036384), false)
	require.Equal(t, "+0.000 s", unix.At(1796465035150))
	require.Equal(t, "+1.234 s", unix.At(1796465036384))
	require.Equal(t, "+61.005 s", unix.At(1796465035150+61005))
	require.Equal(t, "Times are seconds after the first call, made at 2026-12-05T10:03:55.150Z (Unix time 1796465035150 ms).", unix.Legend())

	logical := ClockOf(rowsCalledAt(0, 990, 41001), false)
	require.Equal(t, "990", logical.At(990))
	require.Empty(t, logical.Legend())

	justBelow := ClockOf(rowsCalledAt(unixMillisFrom-1), false)
	require.Equal(t, "999999999999", justBelow.At(unixMillisFrom-1))
	require.Equal(t, "+0.000 s", ClockOf(rowsCalledAt(unixMillisFrom), false).At(unixMillisFrom))

	wall := ClockOf(rowsCalledAt(20, 10050), true)
	require.Equal(t, "+10.030 s", wall.At(10050))
	require.Equal(t, "Times are seconds after the first call, made at 20 ms on the history's clock.", wall.Legend())

	require.Empty(t, ClockOf(nil, false).Legend(), "an empty history has a logical clock")
}

// The Markdown timeline of a recording says when it began, once, and
// writes each row's time as seconds after that.
func TestTimelineWritesARecordingsTimesFromItsStart(t *testing.T) {
	h, err := histories.LoadFile("../internal/report/testdata/proxy-recording.json")
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, WriteTimeline(&b, h, Check(h, Options{}).Verdicts))
	lines := strings.Split(b.String(), "\n")
	require.True(t, strings.HasPrefix(lines[0], "Times are seconds after the first call, made at "), lines[0])
	require.Contains(t, b.String(), "| +0.000 s (op ")
	require.NotRegexp(t, `\| 1[0-9]{12} \(op`, b.String(), "a row kept its raw Unix milliseconds")
}
