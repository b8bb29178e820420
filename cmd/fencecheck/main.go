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
  fencecheck check [--html FILE] [--timeline FILE] [--timeout D] HISTORY...

Commands:
  check   judge history files (HISTORY.md format v1): linearizability against
          the reference broker, one live producer per transactional.id,
          exactly-once reads, no aborted reads, monotonic group offsets, and
          progress.

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
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitHeld
	}
	fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
