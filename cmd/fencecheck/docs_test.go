package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README and the guides show fencecheck at work in ```console blocks:
// a line "$ fencecheck ARGS" runs the command, and the lines after it, up
// to the next "$ " line, are what it prints on stdout (on stderr when it
// prints nothing on stdout). A line "..." stands for any number of lines,
// and "..." within a line for any text. The exit status must be the one
// the output says: 2 for an error alone on stderr, 1 for a violation or an
// unknown verdict, 0 otherwise. So every transcript a reader copies is one
// this build prints.

// docsWithTranscripts are the documents whose console blocks are run, from
// the repository's root.
var docsWithTranscripts = []string{"README.md", "docs/*.md"}

// transcript is one command of a console block and what it prints.
type transcript struct {
	doc  string
	line int
	args []string
	want []string
}

func TestDocsTranscripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var all []transcript
	for _, pattern := range docsWithTranscripts {
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		for _, path := range paths {
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			rel, _ := filepath.Rel(root, path)
			all = append(all, transcriptsOf(rel, string(text))...)
		}
	}
	require.NotEmpty(t, all, "no console transcripts found in %v", docsWithTranscripts)
	t.Chdir(root)
	t.Setenv("FENCECHECK_OUT", t.TempDir())
	for _, tr := range all {
		t.Run(tr.doc+":"+strconv.Itoa(tr.line), func(t *testing.T) {
			args := tr.args
			if args[0] == "run" {
				args = append(args[:1:1], append([]string{"--out", t.TempDir()}, args[1:]...)...)
			}
			code, stdout, stderr := runCLI(args...)
			printed := stdout
			if printed == "" {
				printed = stderr
			}
			got := strings.Split(strings.TrimRight(printed, "\n"), "\n")
			require.Truef(t, matchLines(tr.want, got),
				"%s:%d: fencecheck %s printed\n%s\nwhere the document shows\n%s\n(stderr: %s)",
				tr.doc, tr.line, strings.Join(tr.args, " "), stdout, strings.Join(tr.want, "\n"), stderr)
			require.Equal(t, exitStatusShown(tr.want), code, "%s:%d: the exit status of fencecheck %s", tr.doc, tr.line, strings.Join(tr.args, " "))
		})
	}
}

// exitStatusShown is the exit status a transcript's output implies.
func exitStatusShown(want []string) int {
	text := strings.Join(want, "\n")
	switch {
	case strings.HasPrefix(text, "fencecheck "):
		return exitUsage // an error, on stderr
	case strings.Contains(text, "VIOLAT"), strings.Contains(text, ": unknown"):
		return exitViolated
	}
	return exitHeld
}

// transcriptsOf reads the console blocks of a Markdown document.
func transcriptsOf(doc, text string) []transcript {
	var out []transcript
	inConsole := false
	current := -1 // the transcript whose output lines these are, -1 none
	for i, line := range strings.Split(text, "\n") {
		switch {
		case !inConsole && strings.TrimSpace(line) == "```console":
			inConsole, current = true, -1
		case inConsole && strings.TrimSpace(line) == "```":
			inConsole = false
		case inConsole && strings.HasPrefix(line, "$ fencecheck "):
			out = append(out, transcript{doc: doc, line: i + 1, args: strings.Fields(strings.TrimPrefix(line, "$ fencecheck "))})
			current = len(out) - 1
		case inConsole && strings.HasPrefix(line, "$ "):
			current = -1 // another program's command: not run
		case inConsole && current >= 0:
			out[current].want = append(out[current].want, line)
		}
	}
	return out
}

// matchLines reports whether got is what want shows, "..." lines matching
// any run of lines and "..." within a line any text.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0 || (len(got) == 1 && got[0] == "")
	}
	if want[0] == "..." {
		for skip := 0; skip <= len(got); skip++ {
			if matchLines(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matchLines(want[1:], got[1:])
}

func lineMatches(want, got string) bool {
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

func TestMatchLines(t *testing.T) {
	require.True(t, matchLines([]string{"a", "...", "d"}, []string{"a", "b", "c", "d"}))
	require.True(t, matchLines([]string{"a", "...", "d"}, []string{"a", "d"}))
	require.True(t, matchLines([]string{"bug report: ..."}, []string{"bug report: /tmp/x"}))
	require.False(t, matchLines([]string{"a", "d"}, []string{"a", "b", "d"}))
	require.False(t, matchLines([]string{"x: ok"}, []string{"x: VIOLATED"}))
	require.False(t, matchLines([]string{"a"}, []string{"a", "b"}), "lines past the transcript")
}

// The broker guide's target skeleton is the code ExampleTest_target
// explores, so that the guide's code compiles and holds.
func TestBrokerGuideShowsTheExploredSkeleton(t *testing.T) {
	example, err := os.ReadFile("../../example_target_test.go")
	require.NoError(t, err)
	guide, err := os.ReadFile("../../docs/test-your-broker.md")
	require.NoError(t, err)
	from := strings.Index(string(example), "// myTarget is")
	to := strings.Index(string(example), "// A target written")
	require.True(t, from >= 0 && to > from, "example_target_test.go lost its skeleton's markers")
	skeleton := strings.TrimSpace(string(example)[from:to])
	require.Contains(t, string(guide), "```go\n"+skeleton+"\n```", "docs/test-your-broker.md does not show example_target_test.go's skeleton")
}

// markdownLink is a Markdown link or image whose target is a path.
var markdownLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

// Every relative link of every Markdown file names a file that is there,
// so that no document cites one the repository lacks.
func TestDocsLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".md" {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s links to %s, which is not there", rel, target)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, checked, "no relative links found: the walk read nothing")
}

// fileMarker, a comment before a code block, says the block shows a file
// of the repository.
var fileMarker = regexp.MustCompile(`<!-- file: (\S+) -->`)

// A document that shows an example file shows it as it is.
func TestDocsShowExampleFilesAsTheyAre(t *testing.T) {
	t.Chdir("../..") // the paths in the documents are from the root
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	shown := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range fileMarker.FindAllSubmatchIndex(text, -1) {
			path := string(text[m[2]:m[3]])
			want, err := os.ReadFile(path)
			require.NoError(t, err, "%s shows %s", doc, path)
			require.Equal(t, string(want), blockAfter(t, text, m[1]), "%s shows %s as it is not", doc, path)
			shown++
		}
	}
	require.NotZero(t, shown, "no document shows an example file")
}

// blockAfter is the content of the first fenced code block after offset
// at in text.
func blockAfter(t *testing.T, text []byte, at int) string {
	t.Helper()
	rest := string(text[at:])
	open := strings.Index(rest, "```")
	require.GreaterOrEqual(t, open, 0, "no code block after a marker")
	rest = rest[open:]
	body := rest[strings.Index(rest, "\n")+1:]
	end := strings.Index(body, "```")
	require.GreaterOrEqual(t, end, 0, "a code block does not end")
	return body[:end]
}
