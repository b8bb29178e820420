package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/kafka"
)

const canonical = "../../histories/canonical/"

// TestMain lets this test binary be the worker process of --parallel,
// which runs the executable it was started from.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckExitCodes(t *testing.T) {
	code, out, _ := runCLI("check", canonical+"seed-000-zombie-fenced.json")
	require.Equal(t, exitHeld, code)
	require.Equal(t, "linearizable: ok\none-live-producer: ok\nexactly-once: ok\nno-aborted-read: ok\noffsets-monotonic: ok\nprogress: ok\none-owner: skipped\nerror-codes: ok\n", out)

	code, out, _ = runCLI("check", canonical+"seed-000-zombie-accepted.json")
	require.Equal(t, exitViolated, code)
	require.Contains(t, out, "one-live-producer: VIOLATED op 11 (epoch 0 accepted after op 6 returned epoch 1 for fare-writer-7")
}

// --known judges with known findings allowed: what their deviations
// explain, and their wrong codes, then hold, and nothing else changes.
func TestCheckAllowsKnownFindings(t *testing.T) {
	dir := t.TempDir()
	knownFile := func(findings string) string {
		path := filepath.Join(dir, fmt.Sprintf("known-%d.json", len(findings)))
		require.NoError(t, os.WriteFile(path, []byte(`{"format":"fencecheck/known/v1","findings":[`+findings+`]}`), 0o644))
		return path
	}
	epochs := knownFile(`{"name":"e","allows":"epoch-per-producer-id"}`)
	unrelated := knownFile(`{"name":"u","allows":"late-first-sequence-accepted+fenced-produce-joins-txn"}`)
	code := knownFile(`{"name":"c","match":[{"check":"error-codes","type":"produce","rule":"leader-epoch-fence","answer":"invalid txn state"}]}`)

	h := "../../histories/kfake/epoch-per-producer-id-txn-v1.json"
	code1, out, _ := runCLI("check", h)
	require.Equal(t, exitViolated, code1)
	require.Contains(t, out, "linearizable: VIOLATED")
	code1, out, _ = runCLI("check", "--known", epochs, h)
	require.Equal(t, exitHeld, code1, out)
	code1, _, _ = runCLI("check", "--known", unrelated, h)
	require.Equal(t, exitViolated, code1, "deviations that do not explain it made it hold")
	code1, out, _ = runCLI("check", "--known", "kfake", h)
	require.Equal(t, exitHeld, code1, out)

	wrongCode := "../../histories/kfake/zombie-produce-invalid-txn-state-txn-v1.json"
	code1, out, _ = runCLI("check", wrongCode)
	require.Contains(t, out, "error-codes: VIOLATED")
	code1, out, _ = runCLI("check", "--known", code, wrongCode)
	require.Equal(t, exitHeld, code1, out)

	code1, out, _ = runCLI("check", "--known", epochs, canonical+"seed-000-zombie-accepted.json")
	require.Equal(t, exitViolated, code1)
	require.Contains(t, out, "one-live-producer: VIOLATED op 11")
}

func TestCheckSeveralFiles(t *testing.T) {
	fenced, accepted := canonical+"seed-000-zombie-fenced.json", canonical+"seed-000-zombie-accepted.json"
	code, out, _ := runCLI("check", fenced, accepted)
	require.Equal(t, exitViolated, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 18)
	require.Equal(t, "== "+fenced, lines[0])
	require.Equal(t, "== "+accepted, lines[9])
}

func TestCheckUnusableInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"format":"fencecheck/history/v1","ops":[{"id":0,"proc":"A","call":0,"type":"teleport"}]}`), 0o644))
	for name, args := range map[string][]string{
		"unknown op type": {"check", bad},
		"missing file":    {"check", filepath.Join(dir, "nope.json")},
		"no file":         {"check"},
		"bad timeout":     {"check", "--timeout", "0s", canonical + "seed-000-zombie-fenced.json"},
		"bad known file":  {"check", "--known", canonical + "seed-000-zombie-fenced.json", canonical + "seed-000-zombie-fenced.json"},
		"unknown flag":    {"check", "--frobnicate", canonical + "seed-000-zombie-fenced.json"},
		"unknown command": {"frobnicate"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runCLI(args...)
			require.Equal(t, exitUsage, code)
			require.NotEmpty(t, errOut)
		})
	}
	_, _, errOut := runCLI("check", bad)
	require.Contains(t, errOut, "op 0")
	require.Contains(t, errOut, "teleport")
}

// A file that cannot be read does not hide the verdicts of the others.
func TestCheckGoesOnAfterUnusableFile(t *testing.T) {
	code, out, _ := runCLI("check", "missing.json", canonical+"seed-000-zombie-fenced.json")
	require.Equal(t, exitUsage, code)
	require.Contains(t, out, "linearizable: ok")
}

func TestCheckWritesReports(t *testing.T) {
	dir := t.TempDir()
	html, timeline := filepath.Join(dir, "h.html"), filepath.Join(dir, "t.md")
	code, _, _ := runCLI("check", canonical+"seed-000-zombie-accepted.json", "--html", html, "--timeline", timeline)
	require.Equal(t, exitViolated, code)
	md, err := os.ReadFile(timeline)
	require.NoError(t, err)
	require.Contains(t, string(md), "| Clock | Who | Does | Result |")
	require.Contains(t, string(md), "breaks linearizable, one-live-producer")
	require.Contains(t, string(md), "the longest order the model accepts: ops 0, 1, 2, 3, 4, 6, 7, 8, 9")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	require.Contains(t, string(page), "breaks one-live-producer")
}

// TestCheckWritesThePage: --report writes the counterexample's page, linked
// to porcupine's when --html writes one too; with several histories each
// gets its own, as with --html.
func TestCheckWritesThePage(t *testing.T) {
	dir := t.TempDir()
	page, porcupine := filepath.Join(dir, "page.html"), filepath.Join(dir, "porcupine.html")
	code, _, _ := runCLI("check", canonical+"seed-000-zombie-accepted.json", "--report", page, "--html", porcupine)
	require.Equal(t, exitViolated, code)
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(data), `id="log-fares-2"`)
	require.Contains(t, string(data), `data-breaks="linearizable one-live-producer"`)
	require.Contains(t, string(data), `href="porcupine.html"`)

	code, _, _ = runCLI("check", "--report", filepath.Join(dir, "r.html"), canonical+"seed-000-zombie-accepted.json", canonical+"seed-000-zombie-fenced.json")
	require.Equal(t, exitViolated, code)
	for _, name := range []string{"r-seed-000-zombie-accepted.html", "r-seed-000-zombie-fenced.html"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NotContains(t, string(data), `id="porcupine"`, "no porcupine page was written to link to")
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI("--help")
	require.Equal(t, exitHeld, code)
	require.Contains(t, out, "fencecheck check")
	code, _, errOut := runCLI("check", "--help")
	require.Equal(t, exitHeld, code)
	for _, flag := range []string{"-report", "-html", "-timeline", "-timeout"} {
		require.Contains(t, errOut, flag)
	}
}

// TestUsageNamesEveryFlag: each command's line in the top-level usage
// names every flag its own --help lists, and the usage fits its width.
func TestUsageNamesEveryFlag(t *testing.T) {
	code, top, _ := runCLI("--help")
	require.Equal(t, exitHeld, code)
	for _, c := range commands {
		code, _, help := runCLI(c.name, "--help")
		require.Equal(t, exitHeld, code, c.name)
		synopsis := synopsisOf(t, top, c.name)
		for _, name := range flagsListed(help) {
			require.Regexp(t, `(^|[\[ ])--`+regexp.QuoteMeta(name)+`([ =\]]|$)`, synopsis, "fencecheck %s --%s", c.name, name)
		}
	}
	_, _, help := runCLI("check", "--help")
	require.Contains(t, flagsListed(help), "known", "the help's flags are read")
	for _, line := range strings.Split(top, "\n") {
		require.LessOrEqual(t, len(line), usageWidth, line)
	}
}

// synopsisOf is the command's synopsis in the top-level usage, its
// wrapped lines joined.
func synopsisOf(t *testing.T, usage, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(usage, "\n  fencecheck "+name+" ")
	if !ok {
		_, rest, ok = strings.Cut(usage, "\n  fencecheck "+name+"\n")
	}
	require.True(t, ok, "no synopsis of %s in\n%s", name, usage)
	var lines []string
	for _, line := range strings.Split(rest, "\n") {
		if line == "" || strings.HasPrefix(line, "  fencecheck ") {
			break
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	return strings.Join(lines, " ")
}

// flagsListed are the names of the flags a command's --help lists.
func flagsListed(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([\w-]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	return names
}

// A flag's argument is named as its usage names it, or after its type; a
// boolean on by default is written as it is turned off.
func TestSynopsisArgumentNames(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("upstream", "", "the cluster's addresses, `host:port,...`")
	fs.Duration("timeout", 0, "give up after a while")
	fs.Int("checks", 0, "how many")
	fs.String("target", "", "the broker")
	fs.Bool("swarm", true, "swarm testing")
	fs.Bool("verbose", false, "say more")
	want := map[string]string{"upstream": " HOST:PORT,...", "timeout": " D", "checks": " N", "target": " VALUE", "swarm": "=false", "verbose": ""}
	fs.VisitAll(func(f *flag.Flag) { require.Equal(t, want[f.Name], argName(f), f.Name) })
}

// A synopsis writes the required flags first, the others in brackets, then
// the arguments, wrapped under the first flag.
func TestSynopsisOrderAndWrap(t *testing.T) {
	c := command{name: "x", required: []string{"upstream"}, args: "FILE...", run: func(args []string, _, stderr io.Writer) int {
		fs := newCommand("x", "", stderr)
		fs.Bool("verbose", false, "say more")
		fs.String("upstream", "", "the cluster's address, `host:port`")
		code, _ := parseFlags(fs, args)
		return code
	}}
	require.Equal(t, "  fencecheck x --upstream HOST:PORT [--verbose] FILE...\n", c.synopsis())

	wrapped := wrap("  fencecheck x ", strings.Fields(strings.Repeat("[--abcdefghij] ", 12)))
	require.Equal(t, "  fencecheck x [--abcdefghij] [--abcdefghij] [--abcdefghij] [--abcdefghij]\n"+
		"               [--abcdefghij] [--abcdefghij] [--abcdefghij] [--abcdefghij]\n"+
		"               [--abcdefghij] [--abcdefghij] [--abcdefghij] [--abcdefghij]\n", wrapped)
}

// TestRunWritesABundleThatReplays: a misconfiguration exits 1 with its bug
// report; replaying the bundle fails again the same way; a bundle drawn by
// another workload is refused, saying why and what still works.
func TestRunWritesABundleThatReplays(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runCLI("run", "--target", "model", "--scenario", "fresh-id-per-start", "--seed", "1795956588588570039", "--out", dir)
	require.Equal(t, exitViolated, code, out)
	require.Contains(t, out, "**breaks exactly-once**")
	for _, f := range []string{"history.json", "whole-history.json", "timeline.md", "report.html", "porcupine.html", "run.json", "rapid.fail", "README.md"} {
		require.FileExists(t, filepath.Join(dir, f))
	}

	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), `href="porcupine.html"`)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "    fencecheck check "+filepath.Join(dir, "history.json"), "the replay works outside fencecheck's clone")
	require.Contains(t, string(readme), "go install github.com/fencecheck/fencecheck/cmd/fencecheck@latest")

	code, replayed, _ := runCLI("replay", dir)
	require.Equal(t, exitViolated, code, replayed)
	require.Contains(t, replayed, "**breaks exactly-once**")

	runFile := filepath.Join(dir, "run.json")
	data, err := os.ReadFile(runFile)
	require.NoError(t, err)
	require.Contains(t, string(data), `"workload": "draws v`)
	require.NoError(t, os.WriteFile(runFile, []byte(strings.Replace(string(data), `"workload": "draws v`, `"workload": "draws v0`, 1)), 0o644))
	code, _, errOut := runCLI("replay", dir)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "would replay another interleaving")
	require.Contains(t, errOut, "fencecheck check")
}

// A flag out of range is a usage error that names the flag; nothing runs.
func TestRunRefusesFlagsOutOfRange(t *testing.T) {
	for flag, args := range map[string][]string{
		"--checks":      {"--checks", "-1"},
		"--time":        {"--time", "0s"},
		"--parallel":    {"--parallel", "-2"},
		"--shard":       {"--shard", "3/2"},
		"--steps":       {"--steps", "-1"},
		"--shrink-time": {"--shrink-time", "0s"},
		"--txn-version": {"--txn-version", "3"},
		"--time-scale":  {"--target", "kfake", "--time-scale", "0"},
		"--target":      {"--target", "zookeeper"},
		"--scenario":    {"--scenario", "nope"},
		"--mutant":      {"--mutant", "no-such-bug"},
	} {
		t.Run(flag, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"run"}, args...)...)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, strings.Fields(flag)[0])
			require.Empty(t, out)
		})
	}
}

// A counterexample that breaks a known finding's check beside the new
// one says which of its broken checks are known, and whose.
func TestCounterexampleNamesItsKnownFindings(t *testing.T) {
	h, err := histories.LoadFile("../../histories/kfake/epoch-per-producer-id-coordinator-bump-txn-v1.json")
	require.NoError(t, err)
	report := checker.Check(h, checker.Options{})
	var out bytes.Buffer
	printKnownInCounterexample(&out, h, report, checker.Known{})
	require.Empty(t, out.String(), "no known findings, nothing is known")
	printKnownInCounterexample(&out, h, report, kafka.KnownFindings())
	require.Equal(t, []string{
		"- linearizable is known finding zombie-wins-id-back+epoch-per-producer-id's (linearizable at produce answered fenced producer by rule must-succeed)",
		"- one-live-producer is known finding zombie-wins-id-back's (one-live-producer at init_producer_id answered success)",
	}, strings.Split(strings.TrimSpace(out.String()), "\n"))
}

// A file cut short, as a recording whose recorder was killed is, names
// where it breaks, and its whole operations are judged, with exit status 2.
func TestCheckJudgesWhatACutShortFileHolds(t *testing.T) {
	data, err := os.ReadFile(canonical + "seed-000-zombie-accepted.json")
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.json")
	require.NoError(t, os.WriteFile(cut, data[:len(data)-10], 0o644))
	code, out, errOut := runCLI("check", cut)
	require.Equal(t, exitUsage, code)
	require.Regexp(t, `not a JSON document: ops\[\d+\], after byte \d+, is cut short`, errOut)
	require.Contains(t, errOut, "operations before ops[")
	require.Contains(t, out, "one-live-producer: VIOLATED op 11", "the operations before the cut are judged")

	require.NoError(t, os.WriteFile(cut, data[:40], 0o644))
	code, out, errOut = runCLI("check", cut)
	require.Equal(t, exitUsage, code)
	require.Empty(t, out, "a document cut before its ops has nothing to judge")
	require.Contains(t, errOut, "unexpected EOF")
}
