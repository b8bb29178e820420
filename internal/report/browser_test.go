//go:build browser

package report

// The page as a person sees it: headless Chromium draws the seed-000
// page at 1400×900, and the test reads the DOM after the page's script
// has marked what the first screen shows. Run with
//
//	go test -tags browser ./report/
//
// which needs Debian's chromium. The screenshot is kept as an artifact in
// $FENCECHECK_ARTIFACTS when set, else in the test's temporary directory.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
)

const windowSize = "1400,900"

// chromium runs headless Chromium on page with args, offline and with a
// profile of its own, and returns what it printed.
func chromium(t *testing.T, page string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (apt-get install -y chromium): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--window-size=" + windowSize}
	cmd := exec.CommandContext(ctx, bin, append(append(flags, args...), "file://"+page)...)
	out, err := cmd.Output()
	require.NoError(t, err, "chromium %v", args)
	return string(out)
}

func writePage(t *testing.T, dir string) string {
	t.Helper()
	h := load(t, filepath.Join("..", "..", "histories", "canonical", seed000))
	r := checker.Check(h, checker.Options{Visualize: true})
	page, porcupine := filepath.Join(dir, "report.html"), filepath.Join(dir, "porcupine.html")
	f, err := os.Create(page)
	require.NoError(t, err)
	require.NoError(t, Write(f, r, Options{Porcupine: "porcupine.html"}))
	require.NoError(t, f.Close())
	f, err = os.Create(porcupine)
	require.NoError(t, err)
	require.NoError(t, r.WriteHTML(f))
	require.NoError(t, f.Close())
	return page
}

// visible requires that the DOM has an element matching pattern (an
// element's opening tag up to the attribute) that the first screen shows.
func visible(t *testing.T, dom, what, pattern string) {
	t.Helper()
	re := regexp.MustCompile(`<[^>]*` + pattern + `[^>]*>`)
	tags := re.FindAllString(dom, -1)
	require.NotEmpty(t, tags, "%s: not in the DOM", what)
	for _, tag := range tags {
		if regexp.MustCompile(`data-visible="true"`).MatchString(tag) {
			return
		}
	}
	t.Errorf("%s: in the DOM but not on the first screen: %q", what, tags)
}

func TestSeed000PageInChromium(t *testing.T) {
	dir := t.TempDir()
	page := writePage(t, dir)
	dom := chromium(t, page, "--dump-dom")

	for _, proc := range []string{"P", "A", "B", "R"} {
		visible(t, dom, "the lane of "+proc, `id="lane-`+proc+`"`)
	}
	visible(t, dom, "fares-2's ABORT at 41", `data-from="41" data-to="41" data-marker="ABORT" data-epoch="1"`)
	visible(t, dom, "fares-2's COMMIT at 43", `data-from="43" data-to="43" data-marker="COMMIT" data-epoch="1"`)
	visible(t, dom, "op 11's box", `id="box-11"`)
	require.NotContains(t, dom, `data-fits="false"`, "a lane's name runs into its lane")
	visible(t, dom, "op 11's reason", `class="violation" data-watch="" data-check="one-live-producer" data-op="11"`)
	require.Contains(t, dom, "epoch 0 accepted after op 6 returned epoch 1 for fare-writer-7")
	require.Regexp(t, `<tr id="op-11" data-op="11" class="violating" data-breaks="linearizable one-live-producer">`, dom)

	porcupine := chromium(t, filepath.Join(dir, "porcupine.html"), "--dump-dom")
	for _, proc := range []string{"P", "A", "B", "R"} {
		require.Regexp(t, `<text x="\d+" y="\d+" text-anchor="end">`+proc+`</text>`, porcupine, "porcupine's lane of %s", proc)
	}

	shot := filepath.Join(artifacts(t), "report-seed-000.png")
	chromium(t, page, "--screenshot="+shot)
	info, err := os.Stat(shot)
	require.NoError(t, err)
	require.Positive(t, info.Size())
	t.Logf("screenshot: %s", shot)
}

// TestProxyRecordingPageInChromium: on a recording's page, each lane's
// name fits the column Chromium draws it in, a name too long for the
// widest column shortened, and the times are seconds after the first call.
func TestProxyRecordingPageInChromium(t *testing.T) {
	h := load(t, proxyRecording)
	long := "consumer-fare-workers-1-7f3a9c2e-at-10.0.0.12:54321"
	for i := range h.Ops {
		switch h.Ops[i].Proc {
		case "fare-writer-outside":
			h.Ops[i].Proc = long
		case "trip-source":
			h.Ops[i].Proc = "10.0.0.12:54321" // digits, the widest lower characters
		}
	}
	page := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(page)
	require.NoError(t, err)
	require.NoError(t, Write(f, checker.Check(h, checker.Options{}), Options{}))
	require.NoError(t, f.Close())
	dom := chromium(t, page, "--dump-dom")

	names := regexp.MustCompile(`<text class="lane-name"[^>]*>`).FindAllString(dom, -1)
	require.Len(t, names, 5)
	for _, name := range names {
		require.Contains(t, name, `data-fits="true"`)
	}
	for _, proc := range []string{long, "10.0.0.12:54321", "fare-worker-1.2"} {
		visible(t, dom, "the lane of "+proc, `id="lane-`+regexp.QuoteMeta(proc)+`"`)
	}
	require.Contains(t, dom, "<title>"+long+"</title>")
	require.Contains(t, dom, `>+0.000 s (op 0)</a>`)

	shot := filepath.Join(artifacts(t), "report-proxy-recording.png")
	chromium(t, page, "--screenshot="+shot)
	t.Logf("screenshot: %s", shot)
}

func artifacts(t *testing.T) string {
	dir := os.Getenv("FENCECHECK_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	return abs
}
