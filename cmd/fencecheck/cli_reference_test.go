package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliReferenceFile is the command-line reference, made from the help texts.
const cliReferenceFile = "../../docs/cli.md"

// updateEnv, set to 1, makes TestCLIReference rewrite cliReferenceFile. It
// is an environment variable rather than a flag because `go test ./...`
// would pass a flag to every package, and the others do not define it.
const updateEnv = "FENCECHECK_UPDATE"

// TestCLIReference: docs/cli.md is the top-level usage and each command's
// --help, verbatim. It fails when a help text changes and the page does
// not; FENCECHECK_UPDATE=1 rewrites the page.
func TestCLIReference(t *testing.T) {
	want := cliReference(t)
	if os.Getenv(updateEnv) == "1" {
		require.NoError(t, os.WriteFile(cliReferenceFile, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(cliReferenceFile)
	require.NoError(t, err)
	require.Equal(t, want, string(got),
		"docs/cli.md differs from the commands' help: run FENCECHECK_UPDATE=1 go test ./cmd/fencecheck -run TestCLIReference")
}

// cliReference renders docs/cli.md from the help texts the commands print.
func cliReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# fencecheck command-line reference\n\n" +
		"This page is made from the commands' own help texts.\n" +
		"Do not edit it by hand: change the help, then regenerate the page with\n\n" +
		"```sh\nFENCECHECK_UPDATE=1 go test ./cmd/fencecheck -run TestCLIReference\n```\n\n" +
		"`go test ./cmd/fencecheck` fails while the page and the help differ.\n")
	code, top, _ := runCLI("--help")
	require.Equal(t, exitHeld, code)
	fmt.Fprintf(&b, "\n## fencecheck\n\n```\n%s```\n", top)
	for _, c := range commands {
		code, _, help := runCLI(c.name, "--help")
		require.Equal(t, exitHeld, code, c.name)
		require.NotEmpty(t, help, c.name)
		fmt.Fprintf(&b, "\n## fencecheck %s\n\n```\n%s```\n", c.name, help)
	}
	return b.String()
}
