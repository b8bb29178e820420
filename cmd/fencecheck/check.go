package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/files"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/kafka"
)

type checkFlags struct {
	html, timeline, report, known string
	follow                        bool
	timeout                       time.Duration
	allowed                       checker.Options
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	var f checkFlags
	fs := newCommand("check", "Checks each history file and prints one line per check:\n"+
		"  linearizable, one-live-producer, exactly-once, no-aborted-read,\n"+
		"  offsets-monotonic, progress, one-owner, error-codes: each ok,\n"+
		"  VIOLATED op N (why), unknown (why) or skipped. With several files,\n"+
		"  each file's lines follow '== FILE'.\n"+
		"Exit status: 0 every check holds, 1 a check is violated or unknown,\n"+
		"2 a file is unusable (the message names the operation and the field).\n\n"+
		"A file is judged as a stream, in memory that follows what is open at each\n"+
		"moment rather than the file's length. When the stream cannot decide (no\n"+
		"order found, or a check needed what it had let go), the whole file is\n"+
		"checked again, and stderr says why. While streaming, Go's collector runs\n"+
		"with GOGC=400 under a 768 MiB soft limit; GOGC and GOMEMLIMIT in the\n"+
		"environment win.\n\n"+
		"With --follow, one FILE is judged while 'fencecheck proxy --history' writes\n"+
		"it. Each check's first violation is printed as 'while following: ...' as\n"+
		"soon as the file shows it, and the verdicts once the proxy stops (or at\n"+
		"Ctrl-C). It judges each operation once, when the file's latest\n"+
		"complete_before mark (docs/history-format.md) passes its call, and holds\n"+
		"what a check of the whole file holds, not the operations judged. Answers\n"+
		"that came after that instant wait, because an operation still in flight\n"+
		"may explain them. Stopped before the file ends, it prints the verdicts of\n"+
		"the operations read, with exit status 2, as for a file cut short.\n", stderr)
	fs.StringVar(&f.html, "html", "", "write porcupine's visualization to `FILE`, violations annotated (with several histories, FILE-NAME.html for each)")
	fs.StringVar(&f.report, "report", "", "write the counterexample page (timeline, process lanes, partition logs, violations; self-contained HTML) to `FILE` (with several histories, FILE-NAME.html for each); it links to the --html page when there is one")
	fs.StringVar(&f.timeline, "timeline", "", "write a Markdown timeline (Clock | Who | Does | Result) to `FILE`, violating rows marked (with several histories, FILE-NAME.md for each)")
	fs.DurationVar(&f.timeout, "timeout", checker.DefaultTimeout, "give up the linearizability search after `D` for each 100,000 operations (it then says unknown)")
	fs.BoolVar(&f.follow, "follow", false, "judge one history FILE while the proxy writes it, and report each check's first violation as soon as the file shows it")
	fs.StringVar(&f.known, "known", "", "judge linearizable and error-codes with the known findings of `FILE` (fencecheck/known/v1; 'kfake' for kfake's own list) allowed, as fencecheck run judges what goes beyond them: their deviations from Kafka, and their wrong codes taken as right")
	files, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitHeld
	}
	if err == nil && len(files) == 0 {
		err = errors.New("no history file given")
	}
	if err == nil && f.follow && len(files) > 1 {
		err = fmt.Errorf("--follow follows one file, got %d", len(files))
	}
	if err == nil && f.timeout <= 0 {
		err = fmt.Errorf("--timeout must be positive, got %v", f.timeout)
	}
	if err == nil && f.known != "" {
		f.allowed, err = knownAllowed(f.known)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: %v\n", err)
		fs.Usage()
		return exitUsage
	}
	if f.follow {
		ctx, stop := untilStopped()
		defer stop()
		return followFile(ctx, files[0], f, stdout, stderr)
	}
	exit := exitHeld
	for _, file := range files {
		if len(files) > 1 {
			fmt.Fprintf(stdout, "== %s\n", file)
		}
		exit = max(exit, checkFile(file, f, len(files) > 1, stdout, stderr))
	}
	return exit
}

// checkOptions are the options that check file: the known findings
// --known allows, and the flags'.
func checkOptions(f checkFlags, stderr io.Writer, file string) checker.Options {
	opts := f.allowed
	line := progressLine(stderr, file)
	progress := func(phase string, ops int) {
		if phase == checker.PhaseRead {
			line("read", ops)
			return
		}
		line("checked for "+phase, ops)
	}
	opts.Timeout, opts.Visualize, opts.Progress = f.timeout, f.html != "", progress
	opts.Slower = func(why string) {
		fmt.Fprintf(stderr, "fencecheck check: %s: checking the whole file again, holding every operation, because %s\n", file, why)
		wholeGC()
	}
	return opts
}

// knownAllowed are the options that allow the known findings of path, or
// of kfake's own list.
func knownAllowed(path string) (checker.Options, error) {
	known, err := kafka.KnownNamed(path)
	if err != nil {
		return checker.Options{}, fmt.Errorf("--known: %w", err)
	}
	return known.Allowed(), nil
}

// parseInterleaved parses flags that may stand before, between or after the
// file names, as users type them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func checkFile(file string, f checkFlags, several bool, stdout, stderr io.Writer) int {
	exit := exitHeld
	report, err := judgeFile(file, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck check: %v\n", err)
		var broken *histories.BrokenError
		if !errors.As(err, &broken) || report.Verdicts == nil {
			return exitUsage
		}
		// A recording whose recorder was killed is cut short: what it
		// holds whole is still worth judging, but the file is not.
		fmt.Fprintf(stderr, "fencecheck check: %s: the %d operations before ops[%d] are judged; the file is unusable, so the exit status is %d\n",
			file, broken.Index, broken.Index, exitUsage)
		exit = exitUsage
	}
	for _, v := range report.Verdicts {
		fmt.Fprintln(stdout, v)
	}
	if err := writeReports(report, file, f, several); err != nil {
		fmt.Fprintf(stderr, "fencecheck check: %s: %v\n", file, err)
		return exitUsage
	}
	if !report.Held() {
		return max(exit, exitViolated)
	}
	return exit
}

// judgeFile judges file: as a stream (checker.CheckFile), unless a page
// or a timeline is asked for, which shows the whole history, so that it
// is loaded whole. A file cut short is judged up to its break, and the
// error says where it broke.
func judgeFile(file string, f checkFlags, stderr io.Writer) (checker.Report, error) {
	opts := checkOptions(f, stderr, file)
	if f.html != "" || f.report != "" || f.timeline != "" {
		line := progressLine(stderr, file)
		h, err := histories.LoadFileWithProgress(file, func(ops int) { line("read", ops) })
		var broken *histories.BrokenError
		switch {
		case errors.As(err, &broken) && broken.Before != nil:
			h = *broken.Before
		case err != nil:
			return checker.Report{}, err
		}
		return checker.Check(h, opts), err
	}
	defer streamGC()()
	return checker.CheckFile(file, opts)
}

func writeReports(rep checker.Report, file string, f checkFlags, several bool) error {
	porcupinePath := outputPath(f.html, file, ".html", several)
	if f.html != "" {
		if err := files.Write(porcupinePath, rep.WriteHTML); err != nil {
			return err
		}
	}
	if f.report != "" {
		pagePath := outputPath(f.report, file, ".html", several)
		opts := report.Options{Porcupine: linkTo(pagePath, porcupinePath, f.html != "")}
		write := func(w io.Writer) error { return report.Write(w, rep, opts) }
		if err := files.Write(pagePath, write); err != nil {
			return err
		}
	}
	if f.timeline != "" {
		return files.Write(outputPath(f.timeline, file, ".md", several), rep.WriteTimeline)
	}
	return nil
}

// linkTo is the address of target as the page at from links to it: a path
// relative to the page's directory, or "" when there is no target.
func linkTo(from, target string, exists bool) string {
	if !exists {
		return ""
	}
	rel, err := filepath.Rel(filepath.Dir(from), target)
	if err != nil {
		abs, _ := filepath.Abs(target)
		return "file://" + filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

// outputPath is the report file for one history: the flag's path, or with
// several histories that path with the history's name added.
func outputPath(flagPath, history, ext string, several bool) string {
	if !several {
		return flagPath
	}
	name := strings.TrimSuffix(filepath.Base(history), filepath.Ext(history))
	return strings.TrimSuffix(flagPath, filepath.Ext(flagPath)) + "-" + name + ext
}

// progressLine reports on stderr how many operations of a large history
// a phase (reading, or checking for one check) has gone through, and at
// what rate, so that a check of a long recording is seen working. The
// rate is that of the phase's pass, because a count of 0 (a pass begins)
// starts the clock again. Small histories say nothing.
func progressLine(stderr io.Writer, file string) func(phase string, ops int) {
	start := time.Now()
	return func(phase string, ops int) {
		if ops == 0 {
			start = time.Now()
		}
		if ops < largeHistoryOps {
			return
		}
		elapsed := time.Since(start)
		fmt.Fprintf(stderr, "fencecheck check: %s: %d operations %s in %v (%.0f/s)\n",
			file, ops, phase, elapsed.Round(time.Millisecond), float64(ops)/max(elapsed.Seconds(), 1e-9))
	}
}

// largeHistoryOps is the size from which check shows its progress.
const largeHistoryOps = 10_000
