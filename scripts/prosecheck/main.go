// Command prosecheck measures a Markdown document's length and the length
// of its sentences, so that the README stays one a newcomer reads in ten
// minutes. It exits 1 when the document is longer than --max-lines or its
// median sentence has --max-median words or more.
//
//	go run ./scripts/prosecheck README.md
//
// Prose is what a reader reads as sentences: paragraphs and list items.
// Code blocks, tables, headings and images are left out. Inline code
// counts as one word, and a link as its text.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prosecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxLines := fs.Int("max-lines", 300, "the most lines the document may have")
	maxMedian := fs.Float64("max-median", 18, "the median sentence must have fewer words than this")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: prosecheck [--max-lines N] [--max-median W] FILE.md")
		return 2
	}
	text, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "prosecheck:", err)
		return 2
	}
	lines := strings.Count(string(text), "\n")
	lengths := sentenceLengths(string(text))
	median := medianOf(lengths)
	fmt.Fprintf(stdout, "%s: %d lines (at most %d), %d sentences, median %.1f words (under %.0f)\n",
		fs.Arg(0), lines, *maxLines, len(lengths), median, *maxMedian)
	ok := true
	if lines > *maxLines {
		fmt.Fprintf(stderr, "prosecheck: %s has %d lines, more than %d\n", fs.Arg(0), lines, *maxLines)
		ok = false
	}
	if median >= *maxMedian {
		fmt.Fprintf(stderr, "prosecheck: %s's median sentence has %.1f words, not under %.0f\n", fs.Arg(0), median, *maxMedian)
		ok = false
	}
	if !ok {
		return 1
	}
	return 0
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	listMark   = regexp.MustCompile(`^\s*([-*+]|\d+\.)\s+`)
	// a sentence ends at . ! or ? (after any closing bracket or quote)
	// followed by a space or the paragraph's end.
	sentenceEnd = regexp.MustCompile(`[.!?]["')\]]*(\s+|$)`)
)

// sentenceLengths is the number of words of each prose sentence of a
// Markdown document.
func sentenceLengths(markdown string) []int {
	var lengths []int
	for _, para := range paragraphs(markdown) {
		para = inlineCode.ReplaceAllString(para, "code")
		para = link.ReplaceAllString(para, "$1")
		for _, s := range sentenceEnd.Split(para, -1) {
			if n := words(s); n > 0 {
				lengths = append(lengths, n)
			}
		}
	}
	return lengths
}

// paragraphs joins the prose lines of markdown into paragraphs; a list
// item starts a paragraph of its own.
func paragraphs(markdown string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	inCode := false
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inCode = !inCode
			flush()
		case inCode:
		case trimmed == "", strings.HasPrefix(trimmed, "#"), strings.HasPrefix(trimmed, "|"),
			strings.HasPrefix(trimmed, "!["), strings.HasPrefix(trimmed, "<"):
			flush()
		case listMark.MatchString(line):
			flush()
			cur = append(cur, listMark.ReplaceAllString(line, ""))
		default:
			cur = append(cur, trimmed)
		}
	}
	flush()
	return out
}

// words counts the tokens of s that hold a letter or a digit.
func words(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, func(r rune) bool {
			return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		}) >= 0 {
			n++
		}
	}
	return n
}

func medianOf(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}
