package model_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

// The conformance suite: Apache Kafka's own unit tests, written down as
// transcripts under testdata/kafka/, one file per test class. See
// testdata/kafka/README.md for the conventions.
//
// TestTranscripts replays these files like every other. The functions
// here hold what makes them a conformance suite: every answer a Kafka
// test shows is accepted, every answer it shows cannot happen is refused,
// and every method of the class is accounted for exactly once.

const conformanceDir = "testdata/kafka"

// conformanceMismatch holds one judged command of a conformance transcript
// to what Kafka's test says. An answer the test shows is accepted; one
// marked never is refused. A line marked model-wrong is a disagreement
// not yet fixed: it must still be one, so that fixing it removes the mark.
func conformanceMismatch(td *datadriven.TestData, verdict string) string {
	accepted := verdict == "accepted"
	want := !td.HasArg("never")
	if td.HasArg("model-wrong") {
		want = !want
	}
	switch {
	case accepted == want:
		return ""
	case td.HasArg("model-wrong"):
		return fmt.Sprintf("%s: the model now agrees with Kafka here (%s): remove model-wrong", td.Pos, verdict)
	case td.HasArg("never"):
		return fmt.Sprintf("%s: Kafka's test shows this answer cannot happen, but the model accepts it", td.Pos)
	default:
		return fmt.Sprintf("%s: Kafka's test shows this answer, but the model says %s", td.Pos, verdict)
	}
}

// isConformance reports whether a transcript is part of the Kafka suite.
func isConformance(path string) bool {
	return filepath.Base(filepath.Dir(path)) == filepath.Base(conformanceDir)
}

// classFile is what one conformance transcript says of its test class.
type classFile struct {
	File      string // the transcript's file name
	Class     string // the test class, for example TransactionCoordinatorTest
	Source    string // its path in Apache Kafka's repository
	ReadAt    string // the Kafka versions it was read at
	Methods   int    // test methods in the class, across those versions
	Ported    []string
	Internal  map[string]string // method: why no client can observe it
	NotYet    map[string]string // method: why it cannot be written yet
	Outside   map[string]string // method: what it tests, outside fencing
	Judged    int               // judged commands (got=)
	Never     int               // of those, answers Kafka's test rules out
	WrongOnes int               // of those, lines marked model-wrong
}

var (
	headerLine  = regexp.MustCompile(`^# (class|source|read at|methods): (.+)$`)
	methodLine  = regexp.MustCompile(`^# ([A-Za-z]+Test)#([A-Za-z0-9_]+) \(([^)]+)\)$`)
	leftOutLine = regexp.MustCompile(`^# (internal|not yet|outside): ([A-Za-z0-9_]+): (.+)$`)
)

// readClassFile parses a conformance transcript's headers and counts its
// judged commands.
func readClassFile(path string) (classFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return classFile{}, err
	}
	defer f.Close()
	c := classFile{File: filepath.Base(path), Internal: map[string]string{}, NotYet: map[string]string{}, Outside: map[string]string{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if err := c.read(line); err != nil {
			return c, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return c, sc.Err()
}

func (c *classFile) read(line string) error {
	if m := headerLine.FindStringSubmatch(line); m != nil {
		return c.readHeader(m[1], m[2])
	}
	if m := methodLine.FindStringSubmatch(line); m != nil {
		if m[1] != c.Class {
			return fmt.Errorf("method %s#%s in the file of %s", m[1], m[2], c.Class)
		}
		c.Ported = append(c.Ported, m[2])
		return nil
	}
	if m := leftOutLine.FindStringSubmatch(line); m != nil {
		map[string]map[string]string{"internal": c.Internal, "not yet": c.NotYet, "outside": c.Outside}[m[1]][m[2]] = m[3]
		return nil
	}
	if strings.HasPrefix(line, "#") || !strings.Contains(line, " got=") {
		return nil
	}
	c.Judged++
	if strings.Contains(line, " never") {
		c.Never++
	}
	if strings.Contains(line, " model-wrong") {
		c.WrongOnes++
	}
	return nil
}

func (c *classFile) readHeader(key, value string) error {
	switch key {
	case "class":
		c.Class = value
	case "source":
		c.Source = value
	case "read at":
		c.ReadAt = value
	case "methods":
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("methods: %q is not a number", value)
		}
		c.Methods = n
	}
	return nil
}

// accountFor checks that each method of the class is ported or left out
// with a reason, exactly once, and that the counts add up.
func (c classFile) accountFor() error {
	if c.Class == "" || c.Source == "" || c.ReadAt == "" || c.Methods == 0 {
		return fmt.Errorf("a conformance transcript starts with # class:, # source:, # read at: and # methods:")
	}
	seen := map[string]string{}
	note := func(method, how string) error {
		if before, dup := seen[method]; dup {
			return fmt.Errorf("%s#%s is %s and %s: each method is accounted for once", c.Class, method, before, how)
		}
		seen[method] = how
		return nil
	}
	for _, m := range c.Ported {
		if err := note(m, "ported"); err != nil {
			return err
		}
	}
	for m := range c.Internal {
		if err := note(m, "internal"); err != nil {
			return err
		}
	}
	for m := range c.NotYet {
		if err := note(m, "not yet"); err != nil {
			return err
		}
	}
	for m := range c.Outside {
		if err := note(m, "outside"); err != nil {
			return err
		}
	}
	if len(seen) != c.Methods {
		return fmt.Errorf("%s has %d methods, but %d are accounted for", c.Class, c.Methods, len(seen))
	}
	return nil
}

func readClassFiles(t *testing.T) []classFile {
	paths, err := filepath.Glob(filepath.Join(conformanceDir, "*.txt"))
	require.NoError(t, err)
	var files []classFile
	for _, p := range paths {
		c, err := readClassFile(p)
		require.NoError(t, err)
		require.NoError(t, c.accountFor(), p)
		files = append(files, c)
	}
	require.NoError(t, checkFileNames(files))
	sort.Slice(files, func(i, j int) bool { return files[i].label(files) < files[j].label(files) })
	return files
}

// module is the first directory of the class's source in Kafka's
// repository, for example core or group-coordinator.
func (c classFile) module() string {
	module, _, _ := strings.Cut(c.Source, "/")
	return module
}

// shared reports whether another file names the same class: Kafka has two
// GroupMetadataManagerTest classes, one in core and one in
// group-coordinator.
func (c classFile) shared(files []classFile) bool {
	for _, o := range files {
		if o.File != c.File && o.Class == c.Class {
			return true
		}
	}
	return false
}

// label names the class in the table, with its module where two modules
// have a class of that name.
func (c classFile) label(files []classFile) string {
	if c.shared(files) {
		return c.Class + " (" + c.module() + ")"
	}
	return c.Class
}

// checkFileNames holds each file to its name: CLASS.txt, or
// CLASS.MODULE.txt where two modules have a class of that name.
func checkFileNames(files []classFile) error {
	for _, c := range files {
		want := c.Class + ".txt"
		if c.shared(files) {
			want = c.Class + "." + c.module() + ".txt"
		}
		if c.File != want {
			return fmt.Errorf("%s holds %s of %s: name it %s", c.File, c.Class, c.module(), want)
		}
	}
	return nil
}

// TestConformanceAccountsForEveryMethod holds each class file to its
// header, and the table in testdata/kafka/README.md to the files. Run
// with -rewrite to regenerate the table.
func TestConformanceAccountsForEveryMethod(t *testing.T) {
	files := readClassFiles(t)
	readme := filepath.Join(conformanceDir, "README.md")
	body, err := os.ReadFile(readme)
	require.NoError(t, err)
	updated, err := replaceTable(string(body), conformanceTable(files))
	require.NoError(t, err, readme)
	if rewrite := flag.Lookup("rewrite"); rewrite != nil && rewrite.Value.String() == "true" {
		require.NoError(t, os.WriteFile(readme, []byte(updated), 0o644))
		return
	}
	require.Equal(t, string(body), updated, "%s: the table is out of date; run go test ./model/ -run TestConformance -rewrite", readme)
}

const (
	tableStart = "<!-- table: generated by TestConformanceAccountsForEveryMethod -->"
	tableEnd   = "<!-- end of table -->"
)

func replaceTable(doc, table string) (string, error) {
	before, rest, ok1 := strings.Cut(doc, tableStart)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("no %q ... %q markers", tableStart, tableEnd)
	}
	return before + tableStart + "\n" + table + tableEnd + after, nil
}

// conformanceTable is the per-class table: how many methods a client can
// observe, how many are ported, and why the rest are left out.
func conformanceTable(files []classFile) string {
	var b strings.Builder
	b.WriteString("\n| class | read at | methods | outside fencing | internal | client-observable | ported | not yet | answers judged | ruled out | model wrong |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range files {
		observable := len(c.Ported) + len(c.NotYet)
		fmt.Fprintf(&b, "| [%s](%s) | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n",
			c.label(files), c.File, c.ReadAt, c.Methods, len(c.Outside), len(c.Internal), observable, len(c.Ported), len(c.NotYet), c.Judged, c.Never, c.WrongOnes)
	}
	for _, c := range files {
		if len(c.NotYet) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nNot yet ported from %s:\n\n", c.label(files))
		for _, m := range sortedKeys(c.NotYet) {
			fmt.Fprintf(&b, "- `%s`: %s\n", m, c.NotYet[m])
		}
	}
	b.WriteString("\n")
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestConformanceCatchesAFlippedAnswer shows the suite can fail: a Kafka
// answer the model refuses, and a ruled-out answer it accepts, are both
// reported, and so is a model-wrong mark that no longer holds.
func TestConformanceCatchesAFlippedAnswer(t *testing.T) {
	cases := []struct {
		line, verdict string
	}{
		{"init txn=t got=ok got-pid=1 got-epoch=0", "refused (x): y"},
		{"init txn=t got=ok got-pid=1 got-epoch=0 never", "accepted"},
		{"init txn=t got=ok got-pid=1 got-epoch=0 model-wrong", "accepted"},
	}
	for _, c := range cases {
		mismatch := ""
		datadriven.RunTestFromString(t, c.line+"\n----\n"+c.verdict+"\n", func(t *testing.T, td *datadriven.TestData) string {
			mismatch = conformanceMismatch(td, c.verdict)
			return c.verdict
		})
		require.NotEmpty(t, mismatch, "%q answered %q was not reported", c.line, c.verdict)
	}
}

// The held-out set: answers from the same Kafka test classes, taken from
// versions, variants and assertions the files under testdata/kafka/ did
// not take, so that the model was not tuned on them. See
// testdata/kafka-heldout/README.md. TestTranscripts skips these files;
// TestHeldOut replays them with the same marks, but without the
// every-method accounting, since a held-out file ports only some methods.
const heldOutDir = "testdata/kafka-heldout"

// isHeldOut reports whether a transcript is part of the held-out set.
func isHeldOut(path string) bool {
	return filepath.Base(filepath.Dir(path)) == filepath.Base(heldOutDir)
}

// TestHeldOut replays testdata/kafka-heldout/*.txt. Each answer a Kafka
// test shows must be accepted, and each flipped copy (never) refused.
func TestHeldOut(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(heldOutDir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		require.NoError(t, checkHeldOutFile(p), p)
		t.Run(filepath.Base(p), func(t *testing.T) {
			replayTranscript(t, p, true, nil)
		})
	}
}

// checkHeldOutFile holds a held-out file to its headers: it names its
// class, source and the versions read, ports at least one method of that
// class, and each flipped answer (never) comes right after a comment
// that says why Kafka's test rules it out.
func checkHeldOutFile(path string) error {
	c, err := readClassFile(path)
	if err != nil {
		return err
	}
	if c.Class == "" || c.Source == "" || c.ReadAt == "" || len(c.Ported) == 0 {
		return fmt.Errorf("a held-out file starts with # class:, # source:, # read at: and ports a method")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(body), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "#") || !strings.Contains(line, " got=") || !strings.Contains(line, " never") {
			continue
		}
		if i == 0 || !strings.HasPrefix(lines[i-1], "# ") {
			return fmt.Errorf("line %d: a flipped answer needs a comment right before it saying why Kafka rules it out", i+1)
		}
	}
	return nil
}

// TestConformanceNamesSharedClassesByModule shows the file-name check can
// fail: two files of one class name must each carry their module.
func TestConformanceNamesSharedClassesByModule(t *testing.T) {
	core := classFile{File: "GroupMetadataManagerTest.core.txt", Class: "GroupMetadataManagerTest",
		Source: "core/src/test/scala/unit/kafka/coordinator/group/GroupMetadataManagerTest.scala"}
	java := classFile{File: "GroupMetadataManagerTest.group-coordinator.txt", Class: "GroupMetadataManagerTest",
		Source: "group-coordinator/src/test/java/org/apache/kafka/coordinator/group/GroupMetadataManagerTest.java"}
	require.NoError(t, checkFileNames([]classFile{core, java}))
	require.Equal(t, "GroupMetadataManagerTest (core)", core.label([]classFile{core, java}))
	bare := java
	bare.File = "GroupMetadataManagerTest.txt"
	require.Error(t, checkFileNames([]classFile{core, bare}))
	alone := bare
	require.NoError(t, checkFileNames([]classFile{alone}))
	misnamed := core
	misnamed.File = "GroupMetadataManagerTest.txt"
	require.Error(t, checkFileNames([]classFile{misnamed, java}))
}
