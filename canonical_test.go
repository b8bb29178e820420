package fencecheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// TestCanonicalHistories replays the hand-written histories under
// histories/canonical/ as golden cases: each NAME.json is checked and its
// verdict lines must match NAME.verdict up to the reason in parentheses
// (the check, the status and the operation that breaks it are pinned; the
// wording of reasons may improve).
func TestCanonicalHistories(t *testing.T) {
	files, err := filepath.Glob("histories/canonical/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			h, err := histories.LoadFile(file)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".verdict")
			require.NoError(t, err)
			report := checker.Check(h, checker.Options{})
			var got []string
			for _, v := range report.Verdicts {
				got = append(got, withoutReason(v.String()))
			}
			require.Equal(t, strings.Split(strings.TrimSpace(string(want)), "\n"), got, "%s", strings.Join(lines(report), "\n"))
		})
	}
}

func lines(r checker.Report) []string {
	var out []string
	for _, v := range r.Verdicts {
		out = append(out, v.String())
	}
	return out
}

func withoutReason(line string) string {
	if i := strings.Index(line, " ("); i >= 0 {
		return line[:i]
	}
	return line
}
