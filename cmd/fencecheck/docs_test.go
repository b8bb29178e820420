package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The format's documents show example files and what fencecheck prints
// for them. A comment before each block says what the block is, so that
// this test can hold it to the truth:
//
//	<!-- file: PATH -->                     the block is PATH's content
//	<!-- output: fencecheck ARGS; exit N --> the block is "$ fencecheck ARGS"
//	                                          and what it prints, exiting N
var (
	fileMarker   = regexp.MustCompile(`<!-- file: (\S+) -->`)
	outputMarker = regexp.MustCompile(`<!-- output: fencecheck (.+); exit (\d) -->`)
)

// formatDocs are the documents checked, from the repository's root, with
// the blocks each must have.
var formatDocs = map[string][]string{
	"docs/history-format.md": {
		"file: docs/examples/three-ops.json",
		"output: fencecheck check docs/examples/three-ops.json; exit 0",
	},
	"docs/known-format.md": {
		"file: docs/examples/known.json",
		"output: fencecheck check --known docs/examples/known.json histories/canonical/error-code-zombie-produce.json; exit 0",
	},
}

func TestFormatDocsShowWhatIsTrue(t *testing.T) {
	t.Chdir("../..") // the paths in the documents are from the root
	for doc, must := range formatDocs {
		t.Run(doc, func(t *testing.T) {
			text, err := os.ReadFile(doc)
			require.NoError(t, err)
			for _, m := range must {
				require.Contains(t, string(text), "<!-- "+m+" -->", "the example is gone from %s", doc)
			}
			for _, m := range fileMarker.FindAllSubmatchIndex(text, -1) {
				path := string(text[m[2]:m[3]])
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, string(want), blockAfter(t, text, m[1]), "%s shows %s as it is not", doc, path)
			}
			for _, m := range outputMarker.FindAllSubmatchIndex(text, -1) {
				args := strings.Fields(string(text[m[2]:m[3]]))
				exit, _ := strconv.Atoi(string(text[m[4]:m[5]]))
				code, stdout, stderr := runCLI(args...)
				command := "fencecheck " + strings.Join(args, " ")
				require.Equal(t, blockAfter(t, text, m[1]), "$ "+command+"\n"+stdout,
					"%s shows another output for %s (stderr: %s)", doc, command, stderr)
				require.Equal(t, exit, code, "exit status of %s", command)
			}
		})
	}
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
