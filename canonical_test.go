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

// TestGoldenHistories replays histories as golden cases: the hand-written
// ones under histories/canonical/, the shrunk counterexample of each
// seeded bug under histories/mutants/, and the minimized counterexample of
// each client loop that breaks a check under histories/clients/. Each NAME.json is checked and its
// verdict lines must match NAME.verdict up to the reason in parentheses
// (the check, the status and the operation that breaks it are pinned; the
// wording of reasons may improve).
func TestGoldenHistories(t *testing.T) {
	for _, dir := range []string{"histories/canonical", "histories/mutants", "histories/clients"} {
		files, err := filepath.Glob(dir + "/*.json")
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, file := range files {
			t.Run(strings.TrimPrefix(strings.TrimSuffix(file, ".json"), "histories/"), func(t *testing.T) { replayGolden(t, file) })
		}
	}
}

func replayGolden(t *testing.T, file string) {
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
