package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// timedLines is an output that keeps each line written with the time it
// was written.
type timedLines struct {
	mu    sync.Mutex
	part  []byte
	lines []string
	at    []time.Time
}

func (o *timedLines) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.part = append(o.part, b...)
	for {
		end := bytes.IndexByte(o.part, '\n')
		if end < 0 {
			return len(b), nil
		}
		o.lines, o.at = append(o.lines, string(o.part[:end])), append(o.at, time.Now())
		o.part = o.part[end+1:]
	}
}

// first is the first line that starts with prefix, and when it was
// written.
func (o *timedLines) first(prefix string) (string, time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, l := range o.lines {
		if strings.HasPrefix(l, prefix) {
			return l, o.at[i], true
		}
	}
	return "", time.Time{}, false
}

func (o *timedLines) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

// following runs check --follow on path until the test stops it: its
// stdout, and a function that stops it (as Ctrl-C does, when it has not
// ended by itself within a while) and gives its exit status.
func following(t *testing.T, path string) (stdout *timedLines, stderr *timedLines, stop func(within time.Duration) int) {
	t.Helper()
	stdout, stderr = &timedLines{}, &timedLines{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- followFile(ctx, path, checkFlags{timeout: checker.DefaultTimeout}, stdout, stderr) }()
	var once sync.Once
	var exit int
	stop = func(within time.Duration) int {
		once.Do(func() {
			select {
			case exit = <-code:
			case <-time.After(within):
				cancel()
				exit = <-code
			}
		})
		return exit
	}
	t.Cleanup(func() { stop(0) })
	return stdout, stderr, stop
}

// streamed is a recording streamed to a file, on a counter clock.
type streamed struct {
	t    *testing.T
	path string
	file *os.File
	w    *histories.Writer
	rec  *histories.Recorder
}

func startStreamed(t *testing.T) *streamed {
	path := filepath.Join(t.TempDir(), "live.json")
	file, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { file.Close() })
	w, err := histories.NewWriter(file, histories.History{Name: "followed"})
	require.NoError(t, err)
	rec := histories.NewRecorder(nil, nil)
	rec.Stream(w)
	return &streamed{t: t, path: path, file: file, w: w, rec: rec}
}

// op begins an operation of proc and returns its end.
func (s *streamed) op(proc string, kind model.Kind, req model.Request) func(model.Result) {
	end, _ := s.rec.ObserveLeaving(proc, "", model.Op{Kind: kind, Req: req})
	return end
}

func (s *streamed) flush() { require.NoError(s.t, s.w.Flush()) }

func (s *streamed) close() {
	require.NoError(s.t, s.w.Close(histories.History{}))
	require.NoError(s.t, s.file.Close())
}

func plainProduce(key string) model.Request {
	req := model.NewRequest()
	req.ProducerID, req.Epoch, req.Sequence = 7, 0, 0
	req.Partition, req.Records = "trips-0", []model.Record{{Key: key}}
	return req
}

func fetchFrom(offset int64) model.Request {
	req := model.NewRequest()
	req.Partition, req.Offset, req.Isolation = "trips-0", offset, model.ReadUncommitted
	return req
}

func fetched(keys ...string) model.Result {
	resp := model.NewResponse()
	for i, k := range keys {
		resp.Records = append(resp.Records, model.FetchedRecord{Offset: int64(i), Key: k, ProducerID: 7})
	}
	resp.HighWatermark, resp.LastStableOffset = int64(len(keys)), int64(len(keys))
	return model.OK(resp)
}

func producedAt(base int64) model.Result {
	resp := model.NewResponse()
	resp.BaseOffset = base
	return model.OK(resp)
}

// waitForFollower waits until the follower has had time to judge what
// the file holds: many rounds of reading and judging.
func waitForFollower() { time.Sleep(20 * followPoll) }

// A fetch that returns a record whose produce is still in flight is
// Kafka keeping its word, yet the operations written so far, judged as a
// history, call it wrong: the produce is not in the file. --follow judges
// only what comes before the produce's call, so it reports nothing; the
// whole history, once written, holds.
func TestFollowNeverJudgesAnswersThatAnOperationInFlightMayExplain(t *testing.T) {
	s := startStreamed(t)
	stdout, stderr, stop := following(t, s.path)
	endProduce := s.op("writer", model.Produce, plainProduce("trip-1"))
	s.op("reader", model.Fetch, fetchFrom(0))(fetched("trip-1"))
	s.flush()

	written, err := os.ReadFile(s.path)
	require.NoError(t, err)
	h, err := histories.Load(bytes.NewReader(append(written, "\n]}"...)))
	require.NoError(t, err)
	require.False(t, checker.Check(h, checker.Options{}).Held(),
		"the operations written so far, judged alone, call the fetch wrong")

	waitForFollower()
	require.Empty(t, stdout.String(), "nothing is violated")
	endProduce(producedAt(0))
	s.op("reader", model.Fetch, fetchFrom(0))(fetched("trip-1"))
	s.close()
	require.Equal(t, exitHeld, stop(10*time.Second), "it ends with the document: %s %s", stdout, stderr)
	require.Contains(t, stdout.String(), "linearizable: ok")
	require.NotContains(t, stdout.String(), "while following")
}

// A zombie's write accepted after its fencing is reported while the
// recording goes on; at Ctrl-C, the part of the file that is whole is
// judged, and the exit status is check's for a file cut short.
func TestFollowReportsAViolationWhileTheRecordingGoesOn(t *testing.T) {
	s := startStreamed(t)
	stdout, stderr, stop := following(t, s.path)
	init := model.NewRequest()
	init.TransactionalID = "fare-writer-7"
	fenced := model.NewResponse()
	fenced.ProducerID, fenced.Epoch = 4001, 0
	s.op("A", model.InitProducerID, init)(model.OK(fenced))
	fencing := fenced
	fencing.Epoch = 1
	s.op("B", model.InitProducerID, init)(model.OK(fencing))
	zombie := model.NewRequest()
	zombie.TransactionalID, zombie.ProducerID, zombie.Epoch = "fare-writer-7", 4001, 0
	zombie.Partition, zombie.Sequence, zombie.Records = "fares-2", 0, []model.Record{{Key: "trip-9001"}}
	s.op("A", model.AddPartitions, func() model.Request {
		r := zombie
		r.Partitions, r.Partition, r.Records = []model.Partition{"fares-2"}, "", nil
		return r
	}())(model.OK(model.NewResponse()))
	s.op("A", model.Produce, zombie)(producedAt(0))
	s.op("C", model.Fetch, fetchFrom(0)) // in flight to the end
	s.flush()

	deadline := time.Now().Add(5 * time.Second)
	for {
		if line, _, ok := stdout.first("while following: one-live-producer: "); ok {
			require.Contains(t, line, "while following: one-live-producer: VIOLATED op 2 (epoch 0 accepted after op 1 returned epoch 1", stdout.String())
			break
		}
		require.True(t, time.Now().Before(deadline), "no violation reported in 5 s: %s", stdout.String())
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, exitUsage, stop(0))
	require.Contains(t, stdout.String(), "\none-live-producer: VIOLATED op 2 ", "the verdicts follow")
	require.Contains(t, stderr.String(), "stopped before the document ended")
}

func TestFollowFlagErrors(t *testing.T) {
	code, _, errOut := runCLI("check", "--follow", "a.json", "b.json")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--follow follows one file, got 2")
	code, _, errOut = runCLI("check", "--follow", filepath.Join(t.TempDir(), "none.json"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "no such file or directory")

	path := filepath.Join(t.TempDir(), "not-ours.json")
	require.NoError(t, os.WriteFile(path, []byte("{\"format\": \"fencecheck/history/v1\", \"ops\": [\n  {\"id\": 0, \"proc\": \"A\", \"call\": 1,\n \"type\": \"stall\"}\n]}\n"), 0o644))
	code, _, errOut = runCLI("check", "--follow", path)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "line 2 is not an operation on a line of its own")
}

// A file already ended is judged as check judges it.
func TestFollowAnEndedFile(t *testing.T) {
	code, out, _ := runCLI("check", "--follow", "../../docs/examples/three-ops.json")
	_, want, _ := runCLI("check", "../../docs/examples/three-ops.json")
	require.Equal(t, exitHeld, code)
	require.Equal(t, want, out)
}

func commitOffset(group string, offset int64) model.Request {
	req := model.NewRequest()
	req.Group, req.GenerationID, req.Offsets = group, -1, map[model.Partition]int64{"trips-0": offset}
	return req
}

// A consumer's offset committed backwards is reported while the
// recording goes on, before its writer ends the document, by the fold
// that judges offsets-monotonic as each operation is handed on; the
// verdicts at the end name it too.
func TestFollowReportsAnOffsetRegressionBeforeTheWriterEnds(t *testing.T) {
	s := startStreamed(t)
	stdout, stderr, stop := following(t, s.path)
	s.op("C", model.OffsetCommit, commitOffset("fares", 5))(model.OK(model.NewResponse()))
	s.op("C", model.OffsetCommit, commitOffset("fares", 3))(model.OK(model.NewResponse()))
	s.flush()

	deadline := time.Now().Add(5 * time.Second)
	for {
		if line, _, ok := stdout.first("while following: offsets-monotonic: "); ok {
			require.Equal(t, "while following: offsets-monotonic: VIOLATED op 1 (group fares trips-0 committed offset 3 after op 0 had committed 5)", line)
			break
		}
		require.True(t, time.Now().Before(deadline), "no violation reported in 5 s: %s %s", stdout, stderr)
		time.Sleep(20 * time.Millisecond)
	}
	s.op("C", model.OffsetCommit, commitOffset("fares", 4))(model.OK(model.NewResponse()))
	s.close()
	require.Equal(t, exitViolated, stop(10*time.Second), "it ends with the document: %s %s", stdout, stderr)
	require.Contains(t, stdout.String(), "\noffsets-monotonic: VIOLATED op 1 (group fares trips-0 committed offset 3 after op 0 had committed 5; 1 more)", "the verdicts follow")
	require.Contains(t, stdout.String(), "\nlinearizable: ok")
}

// Files already ended, with violations of the search (aborted-read), of
// folds and of exactly-once, and of progress: check --follow prints what
// check prints, and exits as it does.
func TestFollowAnEndedFileWithViolations(t *testing.T) {
	for _, name := range []string{"aborted-read", "seed-002-groupid-string", "no-progress-shared-id", "fresh-id-per-start"} {
		t.Run(name, func(t *testing.T) {
			file := "../../histories/canonical/" + name + ".json"
			code, out, _ := runCLI("check", "--follow", file)
			wantCode, want, _ := runCLI("check", file)
			require.Equal(t, exitViolated, wantCode)
			require.Equal(t, wantCode, code)
			require.Equal(t, want, out)
		})
	}
}
