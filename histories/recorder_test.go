package histories

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// echoBroker answers every request with success, its base offset the
// request's sequence, except that a sequence of -1 loses the response.
var echoBroker = model.BrokerFunc(func(_ context.Context, _ model.Kind, req model.Request) model.Result {
	if req.Sequence == -1 {
		return model.NoAnswer()
	}
	resp := model.NewResponse()
	resp.BaseOffset = int64(req.Sequence)
	return model.OK(resp)
})

func produceReq(seq int32) model.Request {
	r := model.NewRequest()
	r.ProducerID, r.Epoch, r.Partition, r.Sequence = 7, 0, "fares-0", seq
	r.Records = []model.Record{{Key: fmt.Sprintf("trip-%d", seq)}}
	return r
}

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	rec := NewRecorder(echoBroker, nil)
	a := rec.Proc("A")

	res := a.Produce(ctx, produceReq(0))
	require.Equal(t, int64(0), res.Resp.BaseOffset)
	require.False(t, a.Produce(ctx, produceReq(-1)).Answered)
	rec.Fault("A", model.Stall, model.NewRequest())
	tick := model.NewRequest()
	tick.Ms = 100
	rec.Fault("broker", model.Tick, tick)
	abort := model.NewResponse()
	abort.TransactionalID, abort.ProducerID, abort.Epoch = "t", 7, 1
	rec.TimeoutAbort("coordinator", abort)
	rec.Produce(ctx, produceReq(1))

	h := rec.History()
	want := []Op{
		{ID: 0, Proc: "A", Call: 1, Return: 2, Returned: true,
			Op: model.Op{Kind: model.Produce, Req: produceReq(0)}, Result: res},
		{ID: 1, Proc: "A", Call: 3, Op: model.Op{Kind: model.Produce, Req: produceReq(-1)}, Result: model.NoAnswer()},
		{ID: 2, Proc: "A", Call: 4, Op: model.Op{Kind: model.Stall, Req: model.NewRequest()}, Result: model.NoAnswer()},
		{ID: 3, Proc: "broker", Call: 5, Op: model.Op{Kind: model.Tick, Req: tick}, Result: model.NoAnswer()},
		{ID: 4, Proc: "coordinator", Call: 6, Op: model.Op{Kind: model.TimeoutAbort, Req: model.NewRequest()},
			Result: model.OK(abort)},
		{ID: 5, Proc: MainProc, Call: 7, Return: 8, Returned: true,
			Op: model.Op{Kind: model.Produce, Req: produceReq(1)}, Result: echoBroker.Produce(ctx, produceReq(1))},
	}
	require.Equal(t, want, h.Ops)

	// A lost response is the one op a process may leave pending while it
	// goes on, so the recorded history is a valid document.
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, h))
	loaded, err := Load(&buf)
	require.NoError(t, err)
	require.Equal(t, h, loaded)

	require.Panics(t, func() { rec.Fault("A", model.Produce, model.NewRequest()) })
}

// TestRecorderObserve: a request seen on the wire is called when seen and
// returns when its answer is, an unanswered one stays pending, one never
// ended is left out, and a lane keeps the client it belongs to and an op
// the API version it was read at.
func TestRecorderObserve(t *testing.T) {
	rec := NewRecorder(echoBroker, nil)
	answered := rec.Observe("W1", "", model.Op{Kind: model.Produce, Req: produceReq(0), APIVersion: model.AtVersion(11)})
	lost := rec.Observe("W1.2", "W1", model.Op{Kind: model.Produce, Req: produceReq(1)})
	_ = rec.Observe("W1.3", "W1", model.Op{Kind: model.Produce, Req: produceReq(2)}) // not taken up: never ended
	resp := model.NewResponse()
	resp.BaseOffset = 40
	answered(model.OK(resp))
	lost(model.NoAnswer())

	want := []Op{
		{ID: 0, Proc: "W1", Call: 1, Return: 4, Returned: true,
			Op: model.Op{Kind: model.Produce, Req: produceReq(0), APIVersion: model.AtVersion(11)}, Result: model.OK(resp)},
		{ID: 1, Proc: "W1.2", Client: "W1", Call: 2, Op: model.Op{Kind: model.Produce, Req: produceReq(1)}, Result: model.NoAnswer()},
	}
	require.Equal(t, want, rec.History().Ops)
}

func TestRecorderClock(t *testing.T) {
	now := int64(1000)
	rec := NewRecorder(echoBroker, func() int64 { now += 10; return now })
	rec.Produce(context.Background(), produceReq(0))
	op := rec.History().Ops[0]
	require.Equal(t, int64(1010), op.Call)
	require.Equal(t, int64(1020), op.Return)
}

func TestRecorderConcurrent(t *testing.T) {
	const procs, calls = 8, 50
	rec := NewRecorder(echoBroker, nil)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := rec.Proc(fmt.Sprintf("P%d", p))
			for i := range calls {
				seq := int32(i)
				if i%10 == 9 {
					seq = -1 // a lost response now and then
				}
				b.Produce(context.Background(), produceReq(seq))
				if i%20 == 0 {
					rec.Fault(fmt.Sprintf("P%d", p), model.Stall, model.NewRequest())
				}
			}
		}()
	}
	wg.Wait()

	h := rec.History()
	require.Equal(t, procs*(calls+3), len(h.Ops), "every call and stall (i = 0, 20, 40)")
	require.True(t, sort.SliceIsSorted(h.Ops, func(i, j int) bool { return h.Ops[i].ID < h.Ops[j].ID }))
	for i, op := range h.Ops {
		require.Equal(t, i, op.ID, "ids are dense")
		if i > 0 {
			require.Greater(t, op.Call, h.Ops[i-1].Call, "ids follow call order")
		}
		lost := op.Kind == model.Stall || op.Req.Sequence == -1
		require.Equal(t, !lost, op.Returned, "op %d", op.ID)
	}
	// Save checks that no process's operations overlap.
	require.NoError(t, Save(&bytes.Buffer{}, h))
}

// A streamed recording is the document Save writes of the same
// operations, once closed; cut short after a Flush, it holds every
// operation written so far.
func TestStreamedRecordingIsAValidDocument(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, History{Name: "streamed"})
	require.NoError(t, err)
	rec := NewRecorder(echoBroker, nil)
	rec.Stream(w)
	p := rec.Proc("A")
	for seq := int32(0); seq < 3; seq++ {
		p.Produce(context.Background(), produceReq(seq))
	}
	rec.Fault("A", model.Stall, model.NewRequest())
	require.Empty(t, rec.History().Ops, "streamed, not kept")
	require.NoError(t, w.Flush())
	cut := out.String()
	require.NoError(t, w.Close(History{}))

	h, err := Load(bytes.NewReader(out.Bytes()))
	require.NoError(t, err)
	require.Len(t, h.Ops, 4)
	var saved bytes.Buffer
	require.NoError(t, Save(&saved, h))
	marked := regexp.MustCompile(`, "complete_before": -?[0-9]+}`)
	require.Equal(t, saved.String(), marked.ReplaceAllString(out.String(), "}"), "the layout of Save, but for the marks")
	require.Contains(t, out.String(), `"type": "stall", "complete_before": 7}`,
		"the last operation written is marked: with nothing in flight, every operation called before the clock's last reading is written")

	_, err = Load(bytes.NewReader([]byte(cut + "\n  ]\n}\n")))
	require.NoError(t, err, "closing a document cut short after an operation gives a valid one")
	require.Error(t, w.Write(h.Ops[0]), "nothing is written after Close")
}

// What only the end of a recording knows (the trips, the output topics)
// is written after the ops, and read back as if it came first.
func TestStreamedRecordingEndsWithItsKeySets(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, History{})
	require.NoError(t, err)
	rec := NewRecorder(echoBroker, nil)
	rec.Stream(w)
	rec.Proc("A").Produce(context.Background(), produceReq(0))
	require.NoError(t, w.Close(History{Trips: []string{"trip-0"}, OutputTopics: []string{"fares"}}))
	h, err := Load(bytes.NewReader(out.Bytes()))
	require.NoError(t, err, "%s", out.String())
	require.Equal(t, []string{"trip-0"}, h.Trips)
	require.Equal(t, []string{"fares"}, h.OutputTopics)
	require.Len(t, h.Ops, 1)
}

// fullDisk takes room bytes, then fails every write.
type fullDisk struct {
	room  int
	wrote bytes.Buffer
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if d.wrote.Len()+len(b) > d.room {
		return 0, errors.New("no space left on device")
	}
	return d.wrote.Write(b)
}

// A write that fails is reported, by the next Write or by Close, and so
// is every operation queued after it: none is dropped unnoticed.
func TestWriterReportsAFullDisk(t *testing.T) {
	disk := &fullDisk{room: 200}
	w, err := NewWriter(disk, History{})
	require.NoError(t, err)
	rec := NewRecorder(echoBroker, nil)
	rec.Stream(w)
	for seq := int32(0); seq < 20; seq++ {
		rec.Proc("A").Produce(context.Background(), produceReq(seq))
	}
	require.ErrorContains(t, w.Flush(), "no space left on device")
	require.ErrorContains(t, w.Write(Op{ID: 99, Proc: "A", Op: model.Op{Kind: model.Stall}}), "no space left on device", "the first error stays")
	require.ErrorContains(t, w.Close(History{}), "no space left on device")
}

// Many recording goroutines and a slow disk: the queue stays bounded, and
// every operation is written once, in the order Write took them.
func TestWriterKeepsOrderUnderLoad(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, History{})
	require.NoError(t, err)
	rec := NewRecorder(echoBroker, nil)
	rec.Stream(w)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := rec.Proc(fmt.Sprintf("P%d", g))
			for seq := int32(0); seq < 3000; seq++ {
				p.Produce(context.Background(), produceReq(seq))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close(History{}))
	h, err := Load(bytes.NewReader(out.Bytes()))
	require.NoError(t, err)
	require.Len(t, h.Ops, 12000)
	for i := 1; i < len(h.Ops); i++ {
		require.Less(t, h.Ops[i-1].Return, h.Ops[i].Return, "written in the order they ended")
	}
}

// lockedBuffer is a buffer one goroutine writes and another reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An operation reaches the file about flushEvery after it is given, with
// no Flush.
func TestWriterWritesWithoutAFlush(t *testing.T) {
	var out lockedBuffer
	w, err := NewWriter(&out, History{})
	require.NoError(t, err)
	require.NoError(t, w.Write(Op{ID: 7, Proc: "A", Op: model.Op{Kind: model.Stall}}))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), `"id": 7`) }, 10*time.Second, flushEvery)
	require.NoError(t, w.Close(History{}))
}

// committingBroker is echoBroker that also takes a plain OffsetCommit.
type committingBroker struct{ model.BrokerFunc }

func (b committingBroker) OffsetCommit(ctx context.Context, r model.Request) model.Result {
	return b.BrokerFunc(ctx, model.OffsetCommit, r)
}

// TestRecorderPlainCommits: a recorder of a broker that takes a plain
// OffsetCommit records one, from its own methods and from a process's
// view; a recorder of one that does not says so, and its views are no
// OffsetCommitters, so a caller can ask before it sends.
func TestRecorderPlainCommits(t *testing.T) {
	ctx := context.Background()
	commit := model.NewRequest()
	commit.Group, commit.MemberID, commit.GenerationID = "g", "m-1", 3
	commit.Offsets = map[model.Partition]int64{"trips-0": 2}

	rec := NewRecorder(committingBroker{echoBroker}, nil)
	require.True(t, rec.TakesOffsetCommit())
	view, ok := rec.Proc("A").(model.OffsetCommitter)
	require.True(t, ok, "the view of a committing broker is an OffsetCommitter")
	require.True(t, view.OffsetCommit(ctx, commit).Succeeded())
	res, err := model.Send(ctx, rec, model.Op{Kind: model.OffsetCommit, Req: commit})
	require.NoError(t, err)
	require.True(t, res.Succeeded())
	h := rec.History()
	require.Len(t, h.Ops, 2)
	require.Equal(t, []string{"A", MainProc}, []string{h.Ops[0].Proc, h.Ops[1].Proc})
	for _, op := range h.Ops {
		require.Equal(t, model.OffsetCommit, op.Kind)
		require.Equal(t, commit, op.Req)
		require.True(t, op.Returned)
	}

	plain := NewRecorder(echoBroker, nil)
	require.False(t, plain.TakesOffsetCommit())
	_, ok = plain.Proc("A").(model.OffsetCommitter)
	require.False(t, ok, "the view of a broker without plain commits is no OffsetCommitter")
	require.PanicsWithValue(t,
		`histories: main's "offset_commit" cannot be recorded: the recorder wraps model.BrokerFunc, which is not a model.OffsetCommitter`,
		func() { plain.OffsetCommit(ctx, commit) })
	require.Empty(t, plain.History().Ops, "nothing recorded")
	plain.Proc("A").Produce(ctx, produceReq(0))
	require.Equal(t, 0, plain.History().Ops[0].ID, "no id taken by the refused commit")
}

// Each batch a streaming recorder writes ends with the instant before
// which every operation called is in the file or left out for good
// ("complete_before"): an operation in flight holds it back to its call,
// one left out does not, and with none in flight it is the clock's last
// reading.
func TestStreamedRecordingMarksWhatIsComplete(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, History{})
	require.NoError(t, err)
	rec := NewRecorder(nil, nil) // the clock reads 1, 2, 3...
	rec.Stream(w)
	marks := func() []string {
		require.NoError(t, w.Flush())
		return regexp.MustCompile(`"id": ([0-9]+).*"complete_before": ([0-9]+)}`).FindAllString(out.String(), -1)
	}
	last := func() string {
		m := marks()
		require.NotEmpty(t, m)
		return regexp.MustCompile(`"id": ([0-9]+).*"complete_before": ([0-9]+)}`).ReplaceAllString(m[len(m)-1], "op $1 complete before $2")
	}
	slow := rec.Observe("A", "", model.Op{Kind: model.Produce, Req: produceReq(0)})               // op 0, call 1
	_, leave := rec.ObserveLeaving("B", "", model.Op{Kind: model.Fetch, Req: model.NewRequest()}) // op 1, call 2
	fast := rec.Observe("C", "", model.Op{Kind: model.Produce, Req: produceReq(1)})               // op 2, call 3
	fast(model.OK(model.NewResponse()))                                                           // return 4
	require.Equal(t, "op 2 complete before 1", last(), "op 0, called at 1, is in flight")
	slow(model.OK(model.NewResponse())) // return 5
	require.Equal(t, "op 0 complete before 2", last(), "op 1, called at 2, is in flight")
	leave()
	rec.Fault("A", model.Stall, model.NewRequest()) // op 3, at 6
	require.Equal(t, "op 3 complete before 6", last(), "op 1 is left out, and nothing is in flight")
	require.NoError(t, w.Close(History{}))
	h, err := Load(bytes.NewReader(out.Bytes()))
	require.NoError(t, err, "the mark is a member the format allows")
	require.Len(t, h.Ops, 3)
}
