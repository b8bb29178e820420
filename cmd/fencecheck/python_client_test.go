//go:build pythonclient

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Tests of a client fencecheck did not write, in another language:
// confluent-kafka-python on librdkafka (Debian's python3-confluent-kafka),
// running examples/python/exactly_once.py through fencecheck proxy against
// fencecheck broker. FENCECHECK_PYTHON names the interpreter that has the
// module (default python3); .ci/run installs it.

// python runs the example pipeline with args against a recorded run.
func python(t *testing.T, run *recordedRun, args ...string) string {
	t.Helper()
	interpreter := os.Getenv("FENCECHECK_PYTHON")
	if interpreter == "" {
		interpreter = "python3"
	}
	if out, err := exec.Command(interpreter, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import confluent_kafka (install python3-confluent-kafka, or set FENCECHECK_PYTHON): %v\n%s", interpreter, err, out)
	}
	script := filepath.Join("..", "..", "examples", "python", "exactly_once.py")
	cmd := exec.Command(interpreter, append([]string{script, "--bootstrap", run.addr, "--control", run.control}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

var allHold = []string{"linearizable: ok", "one-live-producer: ok", "exactly-once: ok",
	"no-aborted-read: ok", "offsets-monotonic: ok", "progress: ok", "error-codes: ok"}

// A correct librdkafka pipeline on a correct broker, recorded at the
// proxy, keeps every promise.
func TestPythonPipelineChecksOK(t *testing.T) {
	run := startRecordedRun(t)
	python(t, run, "--scenario", "plain", "--trips", "20")
	code, verdicts := run.check()
	require.Equal(t, exitHeld, code, verdicts)
	require.Equal(t, strings.Join(allHold, "\n")+"\n", verdicts)
}

// Worker a, stalled through the control API in the middle of a
// transaction, is dropped by its group; worker b takes its trips over;
// woken, a is a zombie, and the history shows it fenced: its offset
// commit at the old generation is refused, and it aborts. Every check
// holds.
func TestPythonZombieIsFenced(t *testing.T) {
	run := startRecordedRun(t)
	out := python(t, run, "--scenario", "zombie", "--trips", "20")
	code, verdicts := run.check()
	require.Equal(t, exitHeld, code, "%s\n%s", verdicts, out)
	require.Equal(t, strings.Join(allHold, "\n")+"\n", verdicts)

	h, err := histories.LoadFile(run.path)
	require.NoError(t, err)
	var woken, fenced, aborted bool
	for _, op := range h.Ops {
		if !strings.HasPrefix(op.Proc, "fare-worker-a") {
			continue
		}
		switch {
		case op.Kind == model.Wake:
			woken = true
		case woken && op.Kind == model.TxnOffsetCommit && (op.Result.Err == model.UnknownMemberID || op.Result.Err == model.IllegalGeneration):
			fenced = true
		case fenced && op.Kind == model.EndTxn && !op.Req.Commit && op.Result.Succeeded():
			aborted = true
		}
	}
	require.True(t, woken && fenced && aborted, "woken %v, its commit fenced %v, then aborted %v\n%s", woken, fenced, aborted, out)
}

// The same zombie, with workers that write their fares outside their
// transaction: exactly-once catches it (the zombie's aborted round's
// fares stay, and b writes them again).
func TestPythonPipelineOutsideItsTransactionIsCaught(t *testing.T) {
	run := startRecordedRun(t)
	out := python(t, run, "--scenario", "zombie", "--trips", "20", "--fares-outside-transaction")
	code, verdicts := run.check()
	require.Equal(t, exitViolated, code, "%s\n%s", verdicts, out)
	require.Contains(t, verdicts, "exactly-once: VIOLATED")
}
