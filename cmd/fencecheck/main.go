// Command fencecheck checks Kafka fencing invariants: it judges recorded
// histories (check) against the reference broker and the exactly-once
// invariants.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Exit codes, as docs/history-format.md fixes them.
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
  fencecheck proxy --upstream HOST:PORT[,...] [--listen HOST:PORT] [--history FILE] [--control HOST:PORT]
  fencecheck broker [--listen HOST:PORT]

Commands:
  run     explore random interleavings of producers and workers with zombies,
          restarts and rebalances against a broker; a violation is shrunk to
          a short timeline and saved as a bug report.
  check   judge history files (format v1, docs/history-format.md):
          linearizability against the reference broker, one live producer
          per transactional.id, exactly-once reads, no aborted reads,
          monotonic group offsets, progress and error codes.
  replay  run a bug report's interleaving again.
  report  merge the outputs of runs that explored one seed's shards.
  proxy   a Kafka-protocol proxy any client connects to unchanged, in front of
          a cluster: it records what the clients do as a history to check,
          and faults them (stall, crash, lost and late requests) on request.
  broker  the embedded cluster (kfake) on real ports, to try a client or the
          proxy against.

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
	case "proxy":
		return runProxy(args[1:], stdout, stderr)
	case "broker":
		return runBroker(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitHeld
	}
	fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// parseFlags parses a command's flags: --help is exit status 0, a bad
// flag (already reported by the flag set) 2.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitHeld, false
		}
		return exitUsage, false
	}
	return exitHeld, true
}

// parseFlagsOnly is parseFlags for a command that takes no arguments
// besides its flags.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if code, ok = parseFlags(fs, args); ok && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencecheck %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return exitUsage, false
	}
	return code, ok
}

// newCommand is a command's flag set: errors and usage go to stderr, and
// the usage is text followed by the flags, when the command has any.
func newCommand(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}
