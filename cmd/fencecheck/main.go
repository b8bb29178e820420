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
	"slices"
	"strings"
)

// Exit codes, as docs/history-format.md fixes them.
const (
	exitHeld     = 0
	exitViolated = 1
	exitUsage    = 2
)

// command is one of fencecheck's commands. The top-level usage is made
// from this list and from each command's own flag set, so that it names
// every flag a command has.
type command struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
	// args are the arguments after the flags, as the synopsis writes them.
	args string
	// required are the flags the command refuses to run without; the
	// synopsis writes them first, without brackets.
	required []string
	about    string
}

// commands are fencecheck's commands. They are set in init: a command's
// --help writes its synopsis from this list, and a list that named the
// commands' functions in its own initializer would refer to itself.
var commands []command

func init() {
	commands = []command{
		{name: "run", run: runRun, about: "explore random interleavings of producers and workers with zombies, " +
			"restarts and rebalances against a broker; a violation is shrunk to a short timeline and saved as a bug report."},
		{name: "check", run: runCheck, args: "HISTORY...", about: "judge history files (format v1, docs/history-format.md): " +
			"linearizability against the reference broker, one live producer per transactional.id, " +
			"exactly-once reads, no aborted reads, monotonic group offsets, progress and error codes."},
		{name: "replay", run: runReplay, args: "BUNDLE", about: "run a bug report's interleaving again."},
		{name: "report", run: runReport, args: "DIR...", about: "merge the outputs of runs that explored one seed's shards."},
		{name: "proxy", run: runProxy, required: []string{"upstream"}, about: "a Kafka-protocol proxy any client " +
			"connects to unchanged, in front of a cluster: it records what the clients do as a history to check, " +
			"and faults them (stall, crash, lost and late requests) on request."},
		{name: "broker", run: runBroker, about: "the embedded cluster (kfake) on real ports, to try a client or the proxy against."},
	}
}

// usageWidth is the column the top-level usage wraps its lines at.
const usageWidth = 80

// usage is the top-level usage: a synopsis of every command, with all
// its flags, then what each command does.
func usage() string {
	var b strings.Builder
	b.WriteString("fencecheck: a model checker for Kafka's fencing invariants.\n\nUsage:\n")
	for _, c := range commands {
		b.WriteString(c.synopsis())
	}
	b.WriteString("\nCommands:\n")
	for _, c := range commands {
		b.WriteString(wrap(fmt.Sprintf("  %-7s ", c.name), strings.Fields(c.about)))
	}
	b.WriteString("\nRun 'fencecheck COMMAND --help' for a command's flags.\n" +
		"Exit status: 0 every check holds, 1 a check is violated, 2 unusable input.\n")
	return b.String()
}

// synopsis is the command's line of the top-level usage: its required
// flags, its other flags in brackets, then its arguments.
func (c command) synopsis() string { return c.synopsisOf(c.flags()) }

// synopsisOf is the synopsis for the flags of fs.
func (c command) synopsisOf(fs *flag.FlagSet) string {
	var required, optional []string
	fs.VisitAll(func(f *flag.Flag) {
		word := "--" + f.Name + argName(f)
		if slices.Contains(c.required, f.Name) {
			required = append(required, word)
			return
		}
		optional = append(optional, "["+word+"]")
	})
	words := append(required, optional...)
	if c.args != "" {
		words = append(words, c.args)
	}
	return wrap("  fencecheck "+c.name+" ", words)
}

// flags is the command's flag set, as the command itself makes it: the
// command is asked for its --help with a flagProbe as its stderr.
func (c command) flags() *flag.FlagSet {
	probe := &flagProbe{}
	c.run([]string{"--help"}, io.Discard, probe)
	if probe.fs == nil {
		// A command that makes no flag set with newCommand has no flags.
		return flag.NewFlagSet(c.name, flag.ContinueOnError)
	}
	return probe.fs
}

// flagProbe is a stderr that discards what is written to it and keeps the
// flag set newCommand makes with it.
type flagProbe struct{ fs *flag.FlagSet }

func (*flagProbe) Write(p []byte) (int, error) { return len(p), nil }

// argName is what a synopsis writes after a flag's name: a space and the
// name the flag's usage puts in backquotes, upper-cased, or one for its
// type. A boolean flag takes no argument; one on by default is written
// =false, the way it is used.
func argName(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "":
		if f.DefValue == "true" {
			return "=false"
		}
		return ""
	case "duration":
		return " D"
	case "int", "uint", "int64", "uint64":
		return " N"
	case "string", "value", "float":
		return " VALUE"
	}
	return " " + strings.ToUpper(name)
}

// wrap writes words after prefix, as many to a line as fit in
// usageWidth, each further line indented as deep as prefix.
func wrap(prefix string, words []string) string {
	var b strings.Builder
	line := prefix
	indent := strings.Repeat(" ", len(prefix))
	for _, w := range words {
		if len(line) > len(indent) && len(line)+len(w) > usageWidth {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += w + " "
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// commandNamed is the command of that name; a flag set of no command (a
// test's) is a command with no arguments.
func commandNamed(name string) command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return command{name: name}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage())
		return exitHeld
	}
	fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage())
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
	if probe, ok := stderr.(*flagProbe); ok {
		probe.fs = fs
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage:\n"+commandNamed(name).synopsisOf(fs)+"\n"+usage)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}
