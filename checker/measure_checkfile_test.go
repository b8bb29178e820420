//go:build measure

package checker

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// TestMeasureCheckFile checks the file FENCECHECK_MEASURE_FILE names with
// CheckFile and the invariants switched off, so that
// /usr/bin/time -v of the test binary shows what the reading and the
// search hold alone (docs/performance.md):
//
//	go test -c -tags measure -o /tmp/checker.test ./checker/
//	FENCECHECK_MEASURE_FILE=/tmp/soak-5000000.json /usr/bin/time -v /tmp/checker.test -test.run TestMeasureCheckFile -test.v
//
// With FENCECHECK_MEASURE_HEAP set to a prefix, it also writes a heap
// profile, after a collection, each time the search has judged another
// million operations, to PREFIX-N.prof, so that `go tool pprof
// -sample_index=inuse_space` shows what the search holds at that moment.
func TestMeasureCheckFile(t *testing.T) {
	path := os.Getenv("FENCECHECK_MEASURE_FILE")
	require.NotEmpty(t, path, "FENCECHECK_MEASURE_FILE names the history to check")
	standInOff = true
	defer func() { standInOff = false }()
	millions := map[string]int{} // the millions each phase has reported
	progress := func(phase string, done int) {
		// A report may come a few operations past a million, because the
		// search counts whole windows.
		if m := done / 1_000_000; m > millions[phase] {
			millions[phase] = m
			var stats runtime.MemStats
			runtime.ReadMemStats(&stats)
			fmt.Fprintf(os.Stderr, "%s %d: heap in use %d MB\n", phase, done, stats.HeapInuse>>20)
			if prefix := os.Getenv("FENCECHECK_MEASURE_HEAP"); prefix != "" && phase == Linearizable {
				writeHeapProfile(t, fmt.Sprintf("%s-%d.prof", prefix, m*1_000_000))
			}
		}
	}
	report, err := CheckFile(path, Options{Progress: progress})
	require.NoError(t, err)
	for _, v := range report.Verdicts {
		t.Log(v)
	}
	require.Equal(t, OK, report.Verdict(Linearizable).Status, "the streamed search explains the history")
}

// TestMeasureFolds feeds the file FENCECHECK_MEASURE_FILE names to the
// invariants alone, without the search, and writes a heap profile taken
// after a collection once every operation is in, before the verdicts:
// what the folds hold at the end of a long history (docs/performance.md).
//
//	go test -c -tags measure -o /tmp/checker.test ./checker/
//	FENCECHECK_MEASURE_FILE=/tmp/soak-1000000.json /tmp/checker.test -test.run TestMeasureFolds -test.v
//	go tool pprof -sample_index=inuse_space -top /tmp/checker.test folds.heap
func TestMeasureFolds(t *testing.T) {
	path := os.Getenv("FENCECHECK_MEASURE_FILE")
	require.NotEmpty(t, path, "FENCECHECK_MEASURE_FILE names the history to check")
	// The partitions the file's fetches read, as CheckFile learns them.
	reads, ahead := model.NewReads(), newFetchesAhead()
	find := func(op *histories.Op) bool { noteRead(reads, op); ahead.note(op); return false }
	stream, err := histories.OpenStream(path, histories.StreamOptions{Find: find, FindKinds: []model.Kind{model.Fetch}})
	require.NoError(t, err)
	s := newInvariantStream(stream.Header(), nil)
	s.onlyRead(reads)
	s.readsAhead(ahead)
	s.bound()
	require.NoError(t, stream.Each(func(op *histories.Op) error {
		s.add(op)
		return nil
	}))
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(os.Stderr, "%d operations: heap in use %d MB after a collection\n", stream.Len(), m.HeapInuse>>20)
	out, err := os.Create("folds.heap")
	require.NoError(t, err)
	require.NoError(t, pprof.WriteHeapProfile(out))
	require.NoError(t, out.Close())
	for _, v := range s.verdicts() {
		t.Log(v)
	}
}

// writeHeapProfile writes the heap in use, after a collection, to path.
func writeHeapProfile(t *testing.T, path string) {
	runtime.GC()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
}
