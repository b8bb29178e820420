package fencecheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
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
