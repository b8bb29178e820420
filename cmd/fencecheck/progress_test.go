package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
)

// The progress line names the phase, so that the invariants' long passes
// over a large history are seen working after the search's; a small
// history says nothing.
func TestProgressLineNamesThePhase(t *testing.T) {
	var stderr bytes.Buffer
	opts := checkOptions(checkFlags{}, &stderr, "h.json")
	opts.Progress(checker.PhaseRead, 0)
	opts.Progress(checker.PhaseRead, 20_000)
	opts.Progress(checker.Linearizable, 0)
	opts.Progress(checker.Linearizable, 50_000)
	opts.Progress(checker.ExactlyOnce, 0)
	opts.Progress(checker.ExactlyOnce, largeHistoryOps-1)
	opts.Progress(checker.ExactlyOnce, 100_000)
	lines := regexp.MustCompile(`(?m)^fencecheck check: h\.json: (\d+) operations (.+) in \S+ \(\d+/s\)$`).FindAllStringSubmatch(stderr.String(), -1)
	require.Len(t, lines, 3, stderr.String())
	require.Equal(t, []string{"20000", "read"}, lines[0][1:])
	require.Equal(t, []string{"50000", "checked for linearizable"}, lines[1][1:])
	require.Equal(t, []string{"100000", "checked for exactly-once"}, lines[2][1:])
}
