package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// produced records a produce of keys to partition p, answered at base.
func produced(r *recording, p model.Partition, base int64, keys ...string) {
	req := model.NewRequest()
	req.Partition = p
	for _, k := range keys {
		req.Records = append(req.Records, model.Record{Key: k})
	}
	resp := model.NewResponse()
	resp.BaseOffset = base
	r.Observe("trip-source", "", model.Op{Kind: model.Produce, Req: req})(model.OK(resp))
}

// The recording warns, once each, of a trip produced again (a second run
// joining the history) and of a partition's first produce landing past
// offset 0 (a cluster used before the history began); a run that does
// neither is not warned of.
func TestRecordingWarnsOfAHistoryNotItsOwn(t *testing.T) {
	l := &logLines{}
	r, err := startRecording(filepath.Join(t.TempDir(), "h.json"), "trips", l.logf)
	require.NoError(t, err)
	defer r.close()
	produced(r, "trips-0", 0, "trip-1")
	produced(r, "trips-0", 1, "trip-2")
	produced(r, "fares-0", 0, "trip-1")
	require.Empty(t, l.lines)

	produced(r, "trips-0", 2, "trip-1")
	produced(r, "trips-0", 3, "trip-2")
	require.Len(t, l.lines, 1)
	require.Contains(t, l.lines[0], `trip "trip-1" was produced to trips again: one proxy session records one history`)

	produced(r, "fares-1", 7, "trip-1")
	produced(r, "fares-2", 9, "trip-1")
	require.Len(t, l.lines, 2)
	require.Contains(t, l.lines[1], "the first produce to fares-1 in this history landed at offset 7, not 0")
}

type logLines struct{ lines []string }

func (l *logLines) logf(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// A second run through one proxy session joins the first's history: its
// trips count twice, and exactly-once is VIOLATED where no run broke it.
// The proxy says why on stderr.
func TestASecondRunThroughOneProxyIsNamed(t *testing.T) {
	run := startRecordedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 2 {
		run.produceTrips(ctx, 5)
		fareWorker(t, ctx, run.addr, 5, false)
	}
	require.Contains(t, run.stderr(), `warning: trip "trip-0" was produced to trips again: one proxy session records one history`)
	code, verdicts := run.check()
	require.Equal(t, exitViolated, code, verdicts)
	require.Contains(t, verdicts, "exactly-once: VIOLATED")
}
