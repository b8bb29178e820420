package fencecheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/workload"
)

// FuzzHistoryLoad feeds arbitrary documents to load and check: none may make
// them panic or hang, and whatever load accepts gets a verdict for every
// check.
func FuzzHistoryLoad(f *testing.F) {
	files, err := filepath.Glob("histories/canonical/*.json")
	require.NoError(f, err)
	for _, file := range files {
		doc, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		h, err := histories.Load(bytes.NewReader(doc))
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		report := checker.Check(h, checker.Options{Timeout: time.Second})
		require.Len(t, report.Verdicts, len(checker.Checks))
		for i, v := range report.Verdicts {
			require.Equal(t, checker.Checks[i], v.Check)
		}
	})
}

// FuzzPropertyStableIDTxnV1 and FuzzPropertyStableIDTxnV2 run the correct
// configuration's property as coverage-guided fuzz targets: the fuzzer's
// bytes are rapid's draws, so it steers toward interleavings that reach new
// code. Run them longer in your own CI with
// go test -run '^$' -fuzz '^FuzzPropertyStableIDTxnV2$' -fuzztime 500000x .
func FuzzPropertyStableIDTxnV1(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(workload.Property(workload.Options{Scenario: scenario(f, "stable-id"), Target: modelTarget(1), TxnVersion: 1}, nil)))
}

func FuzzPropertyStableIDTxnV2(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(workload.Property(workload.Options{Scenario: scenario(f, "stable-id"), Target: modelTarget(2), TxnVersion: 2}, nil)))
}
