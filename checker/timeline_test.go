package checker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

func TestWriteTimeline(t *testing.T) {
	b, _ := seed000()
	zombie := b.produce("A", 41000, 41001, fw0, "fares-2", 44, "trip-9002")
	b.fetch("R", 42000, 42001, "fares-2", 0, model.ReadCommitted, rec(40, "trip-9001", 4001), rec(42, "trip-9001", 4001))
	b.op(zombie).Proc = "A|zombie" // a pipe must not split the cell
	verdicts := []Verdict{{Check: Linearizable, Status: OK}}
	verdicts = append(verdicts, judgeInvariants(b.h, nil)...)

	var out strings.Builder
	require.NoError(t, WriteTimeline(&out, b.h, verdicts))
	lines := strings.Split(out.String(), "\n")
	require.Equal(t, "| Clock | Who | Does | Result |", lines[0])
	require.Equal(t, "| 0 (op 0) | A | `init_transactions()` fare-writer-7 | producer id 4001, epoch 0 |", lines[2])
	require.Equal(t, "| 20 (op 3) | A | stalls |  |", lines[5])
	require.Equal(t, "| ⚠ 41000 (op 8) | A\\|zombie | `produce()` trip-9002 to `fares-2` (pid 4001, epoch 0, seq 0) | "+
		"offset 44 — **breaks one-live-producer** |", lines[10])
	require.Equal(t, "| ⚠ 42000 (op 9) | R | `fetch()` fares-2 from 0 read_committed | "+
		"trip-9001@40, trip-9001@42, hw -1, lso -1 — **breaks exactly-once, no-aborted-read** |", lines[11])
	require.Equal(t, "", lines[12])
	require.Equal(t, "- linearizable: ok", lines[13])
	require.Equal(t, "- "+verdicts[1].String(), lines[14])
	require.Len(t, lines, 13+len(verdicts)+1)
}

func TestWriteTimelineInCallOrder(t *testing.T) {
	b := &historyBuilder{}
	b.initTxns("B", 50, 60, fw1)
	b.initTxns("A", 0, 5, fw0)
	var out strings.Builder
	require.NoError(t, WriteTimeline(&out, b.h, nil))
	require.Less(t, strings.Index(out.String(), "(op 1)"), strings.Index(out.String(), "(op 0)"))
}
