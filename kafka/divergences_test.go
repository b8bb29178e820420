package kafka

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// update rewrites the histories of known divergences from this run.
var update = flag.Bool("update", false, "rewrite the saved histories (histories/kfake, histories/clients) from this run")

// findingsDir holds the history of every known divergence.
const findingsDir = "../histories/kfake"

// findingOf is the known finding (known.json, written up in FINDINGS.md)
// that a saved history shows. A scenario's test expects its violations,
// so the suite stays green while the finding is re-checked on every run:
// once kfake (or the model) changes, the test fails and asks for the entry
// to go. histories/kfake holds divergences only: a history that turned
// out legal moves to histories/canonical with its verdict file.
func findingOf(history string) (checker.Finding, bool) {
	for _, f := range KnownFindings().Findings {
		if slices.Contains(f.Histories, history) {
			return f, true
		}
	}
	return checker.Finding{}, false
}

// consequenceOf is the known finding whose consequence a saved history
// shows (Finding.Consequences).
func consequenceOf(history string) (checker.Finding, bool) {
	for _, f := range KnownFindings().Findings {
		if slices.Contains(f.Consequences, history) {
			return f, true
		}
	}
	return checker.Finding{}, false
}

// requireConsequence holds a consequence's history to breaking checks
// that known findings explain, each as one of a finding's signatures or
// as their deviations explain it (checker.Known.Explains), and f among
// the findings that explain one.
func requireConsequence(t *testing.T, h histories.History, report checker.Report, f checker.Finding) {
	t.Helper()
	known := KnownFindings()
	require.NotEmpty(t, report.Violated(), "a consequence of %s that breaks no check: if kfake or the model changed, update kafka/known.json", f.Name)
	showsF := false
	for _, sig := range report.Signatures() {
		if g, matched := known.Match(sig); matched {
			showsF = showsF || g.Name == f.Name
			continue
		}
		names, explained := known.Explains(h, sig.Check)
		require.True(t, explained, "%s is not explained by any known finding's deviation", sig)
		showsF = showsF || slices.Contains(strings.Split(names, "+"), f.Name)
	}
	require.True(t, showsF, "no check this history breaks is explained by %s", f.Name)
}

// checksOf are the checks a finding's signatures break.
func checksOf(f checker.Finding) []string {
	var checks []string
	for _, sig := range f.Match {
		if !slices.Contains(checks, sig.Check) {
			checks = append(checks, sig.Check)
		}
	}
	return checks
}

func TestKnownFindingsLoad(t *testing.T) {
	require.NotEmpty(t, KnownFindings().Findings)
	for _, f := range KnownFindings().Findings {
		require.NotEmpty(t, slices.Concat(f.Histories, f.Consequences), "%s: a finding needs a saved history that shows it", f.Name)
		require.NotEmpty(t, f.WriteUp, "%s: a finding needs its write-up", f.Name)
	}
}

// historyName is the name of the scenario's history under its protocol.
func (s *scenario) historyName(name string) string {
	return fmt.Sprintf("%s-txn-v%d", name, s.target.TransactionsVersion())
}

// check runs every check on the recorded history. want names the checks
// that must be violated; every other must hold, except where a known
// divergence says otherwise.
func (s *scenario) check(name string, want ...string) checker.Report {
	s.t.Helper()
	full := s.historyName(name)
	h := s.history(full)
	if f, known := findingOf(full); known {
		want = append(slices.Clone(want), checksOf(f)...)
		s.t.Logf("known finding %s: %s (%s)", f.Name, f.About, f.WriteUp)
		s.saveFinding(full, h)
	}
	report := checker.Check(h, checker.Options{})
	requireVerdicts(s.t, report, want, full)
	return report
}

func requireVerdicts(t *testing.T, report checker.Report, violated []string, name string) {
	t.Helper()
	for _, v := range report.Verdicts {
		if slices.Contains(violated, v.Check) {
			require.Equal(t, checker.Violated, v.Status, "%s: expected %s violated, got %s; if kfake or the model changed, update kafka/known.json and FINDINGS.md", name, v.Check, v)
			continue
		}
		require.True(t, v.Held(), "%s: %s", name, v)
	}
}

// saveFinding writes the history of a known divergence when asked to, or
// when it has none yet.
func (s *scenario) saveFinding(name string, h histories.History) {
	path := filepath.Join(findingsDir, name+".json")
	if _, err := os.Stat(path); err == nil && !*update {
		return
	}
	require.NoError(s.t, os.MkdirAll(findingsDir, 0o755))
	require.NoError(s.t, histories.SaveFile(path, h))
}

// TestFindingsReplay holds every saved history to what it shows, as
// `fencecheck check` reports it: a known finding's history breaks exactly
// the checks of its finding, each the way the finding's signatures say,
// and a consequence's breaks only checks known findings explain. Every
// file under histories/kfake is one or the other, so each replays as a
// violation.
func TestFindingsReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(findingsDir, "*.json"))
	require.NoError(t, err)
	for _, f := range KnownFindings().Findings {
		for _, name := range slices.Concat(f.Histories, f.Consequences) {
			require.FileExists(t, filepath.Join(findingsDir, name+".json"), "run the test that records %s first", name)
		}
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			h, err := histories.LoadFile(file)
			require.NoError(t, err)
			report := checker.Check(h, checker.Options{})
			if finding, consequence := consequenceOf(name); consequence {
				requireConsequence(t, h, report, finding)
				return
			}
			finding, known := findingOf(name)
			require.True(t, known, "%s: no known finding lists it; a history that holds every check belongs in histories/canonical, with its verdict file", name)
			requireVerdicts(t, report, checksOf(finding), name)
			require.NotEmpty(t, report.Violated(), "%s: finding %s breaks no check here", name, finding.Name)
			for _, sig := range report.Signatures() {
				require.Contains(t, finding.Match, sig, "%s breaks %s in a way finding %s does not name", name, sig.Check, finding.Name)
			}
		})
	}
}
