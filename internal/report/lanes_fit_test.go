package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxyRecording is a history fencecheck proxy recorded: its clock is Unix
// milliseconds, its processes are named by client.id.
var proxyRecording = filepath.Join("testdata", "proxy-recording.json")

// The column of lane names is as wide as the longest name, within its
// bounds; a name too long for the widest column is cut with an ellipsis
// and still fits.
func TestLaneNamesFit(t *testing.T) {
	require.Equal(t, float64(minLaneNameColumn), laneNameColumn([]string{"P", "A", "B", "R"}))

	names := []string{"trip-source", "fare-writer-outside", "fare-worker-1.2"}
	column := laneNameColumn(names)
	require.Greater(t, column, float64(minLaneNameColumn))
	require.Less(t, column, float64(maxLaneNameColumn))
	room := column - laneNameInset - laneNameGap
	for _, name := range names {
		require.Equal(t, name, shortenBold(name, room, laneNameSize), "a name the column was made for is whole")
	}
	// DejaVu Sans Bold draws "fare-writer-outside" 161 pixels wide at 15.
	require.GreaterOrEqual(t, boldWidth("fare-writer-outside", laneNameSize), 161.0)

	long := "consumer-fare-workers-1-7f3a9c2e-at-10.0.0.12:54321"
	require.Equal(t, float64(maxLaneNameColumn), laneNameColumn([]string{"P", long}))
	room = maxLaneNameColumn - laneNameInset - laneNameGap
	label := shortenBold(long, room, laneNameSize)
	require.True(t, strings.HasSuffix(label, "…"), label)
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(label, "…")), label)
	require.LessOrEqual(t, boldWidth(label, laneNameSize), room)
	require.Greater(t, boldWidth(label+"x", laneNameSize), room, "the label takes the room there is")
}

// TestProxyRecordingPage: a recording's page gives times after the first
// call and its start once, and each lane its whole name.
func TestProxyRecordingPage(t *testing.T) {
	h := load(t, proxyRecording)
	page := render(t, h, Options{})
	require.Contains(t, page, `id="clock-legend">Times are seconds after the first call, made at 2026-12-05T10:03:55.150Z`)
	plus := `(\+|&#43;)` // html/template writes + as &#43;
	require.Regexp(t, `<a href="#box-0">`+plus+`0\.000 s \(op 0\)</a>`, page)
	require.Regexp(t, `<title>op 0 at `+plus+`0\.000 s, trip-source: `, page)
	require.NotRegexp(t, `<td class="clock">.*1796465035`, page, "no raw Unix milliseconds in the timeline")
	require.Contains(t, page, `>fare-writer-outside<title>fare-writer-outside</title></text>`)

	for i := range h.Ops {
		if h.Ops[i].Proc == "fare-writer-outside" {
			h.Ops[i].Proc = "consumer-fare-workers-1-7f3a9c2e-at-10.0.0.12:54321"
		}
	}
	page = render(t, h, Options{})
	require.Regexp(t, `>consumer-fare-[^<]*…<title>consumer-fare-workers-1-7f3a9c2e-at-10.0.0.12:54321</title></text>`, page)
}
