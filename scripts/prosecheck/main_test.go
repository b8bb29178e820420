package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSentenceLengths(t *testing.T) {
	doc := "# Title\n\nOne two three. Four five\nsix seven.\n\n" +
		"```sh\nnot prose at all here\n```\n\n" +
		"| a | table |\n|---|---|\n\n" +
		"- A list item with `inline code` and [a link](x.md).\n" +
		"- Another (with brackets.) Then more!\n"
	require.Equal(t, []int{3, 4, 8, 3, 2}, sentenceLengths(doc))
}

func TestMedianOf(t *testing.T) {
	require.Equal(t, 0.0, medianOf(nil))
	require.Equal(t, 3.0, medianOf([]int{5, 1, 3}))
	require.Equal(t, 2.5, medianOf([]int{4, 1, 3, 2}))
}

func TestRunFailsALongOrWordyDocument(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	short := write("short.md", "Short sentences read well. They say one thing.\n")
	wordy := write("wordy.md", strings.Repeat("word ", 30)+"end.\n")
	long := write("long.md", strings.Repeat("A line.\n", 301))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{short}, &out, &errOut), errOut.String())
	require.Equal(t, 1, run([]string{wordy}, &out, &errOut))
	require.Contains(t, errOut.String(), "median sentence has 31.0 words")
	require.Equal(t, 1, run([]string{long}, &out, &errOut))
	require.Contains(t, errOut.String(), "has 301 lines, more than 300")
	require.Equal(t, 2, run([]string{filepath.Join(dir, "missing.md")}, &out, &errOut))
}
