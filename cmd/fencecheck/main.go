// Command fencecheck checks Kafka fencing invariants: it judges recorded
// histories (check) against the reference broker and the exactly-once
// invariants.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes, as HISTORY.md fixes them.
const (
	exitHeld     = 0
	exitViolated = 1
	exitUsage    = 2
)

const usage = `fencecheck: a model checker for Kafka's fencing invariants.

Usage:
  fencecheck run [--target T] [--scenario S] [--seed N] [--time D | --checks N] [--parallel N] [--shard I/N] [--out DIR]
  fencecheck check [--html FILE] [--timeline FILE] [--timeout D] HISTORY...
  fencecheck replay BUNDLE
  fencecheck report DIR...

Commands:
  run     explore random interleavings of producers and workers with zombies,
          restarts and rebalances against a broker; a violation is shrunk to
          a short timeline and saved as a bug report.
  check   judge history files (HISTORY.md format v1): linearizability against
          the reference broker, one live producer per transactional.id,
          exactly-once reads, no aborted reads, monotonic group offsets, and
          progress.
  replay  run a bug report's interleaving again.
  report  merge the outputs of runs that explored one seed's shards.

Run 'fencecheck COMMAND --help' for a command's flags.
Exit status: 0 every check holds, 1 a check is violated, 2 unusable input.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdout, stderr)
	case "report":
		return runReport(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitHeld
	}
	fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
