//go:build pythonclient

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"no-aborted-read: ok", "offsets-monotonic: ok", "progress: ok", "one-owner: skipped", "error-codes: ok"}

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

// The same pipeline with static members (--static): each consumer has a
// group.instance.id, which the history's joins carry. Every check holds.
func TestPythonStaticPipelineChecksOK(t *testing.T) {
	run := startRecordedRun(t)
	out := python(t, run, "--scenario", "plain", "--static", "--trips", "20")
	code, verdicts := run.check()
	require.Equal(t, exitHeld, code, "%s\n%s", verdicts, out)
	require.Equal(t, strings.Join(allHold, "\n")+"\n", verdicts)

	h, err := histories.LoadFile(run.path)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
		return strings.HasPrefix(op.Proc, "fare-worker-a") && op.Kind == model.JoinGroup &&
			op.Req.InstanceID == "fare-worker-a" && op.Result.Succeeded()
	}), "no join of fare-worker-a carries its group.instance.id\n%s", out)
}

// Static members, restarted: worker a is stalled through the control API
// in the middle of a transaction, and a new process of it
// (fare-worker-a-restarted, with a's group.instance.id and
// transactional.id) takes its instance over before the group drops a.
// Woken, a's first request naming the instance is refused with
// FENCED_INSTANCE_ID. Every check holds, judged with kfake's known
// findings allowed: librdkafka 2.0 speaks the transaction requests below
// v2, and kfake answers the fenced producer's PRODUCER_FENCED where Kafka
// answers INVALID_PRODUCER_EPOCH (kafka/FINDINGS.md, 28). A copy of the
// history in which a's fenced request succeeded is flagged.
func TestPythonStaticRestartFencesTheStalled(t *testing.T) {
	run := startRecordedRun(t)
	out := python(t, run, "--scenario", "restart", "--trips", "20")
	code, verdicts := run.check("--known", "kfake")
	require.Equal(t, exitHeld, code, "%s\n%s", verdicts, out)
	require.Equal(t, strings.Join(allHold, "\n")+"\n", verdicts)

	h, err := histories.LoadFile(run.path)
	require.NoError(t, err)
	tookOver := slices.ContainsFunc(h.Ops, func(op histories.Op) bool {
		return strings.HasPrefix(op.Proc, "fare-worker-a-restarted") && op.Kind == model.JoinGroup && op.Req.MemberID == "" &&
			op.Req.InstanceID == "fare-worker-a" && op.Result.Succeeded() && op.Result.Resp.MemberID != ""
	})
	require.True(t, tookOver, "no join of fare-worker-a-restarted took instance fare-worker-a over\n%s", out)
	woke := slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Proc == "fare-worker-a" && op.Kind == model.Wake })
	require.GreaterOrEqual(t, woke, 0, "fare-worker-a never woke\n%s", out)
	next := slices.IndexFunc(h.Ops[woke:], func(op histories.Op) bool {
		return (op.Proc == "fare-worker-a" || strings.HasPrefix(op.Proc, "fare-worker-a.")) && op.Req.InstanceID == "fare-worker-a"
	})
	require.GreaterOrEqual(t, next, 0, "fare-worker-a sent nothing naming its instance after it woke\n%s", out)
	fenced := &h.Ops[woke+next]
	require.Equal(t, model.FencedInstanceID, fenced.Result.Err, "fare-worker-a's %s after it woke\n%s", fenced.Kind, out)

	fenced.Result = model.Result{Answered: true, Resp: fenced.Result.Resp}
	doctored := filepath.Join(t.TempDir(), "doctored.json")
	require.NoError(t, histories.SaveFile(doctored, h))
	code, verdicts, _ = runCLI("check", "--known", "kfake", doctored)
	require.Equal(t, exitViolated, code, verdicts)
	require.Contains(t, verdicts, "linearizable: VIOLATED")
}
