package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/recorder"
	"github.com/fencecheck/fencecheck/model"
)

// recording is the history `fencecheck proxy --history` writes as the
// run goes, on the wall clock in milliseconds ("clock": "wall"). With keysFrom set, the
// keys of the records produced to that topic are the trips, and every
// other topic produced to is an output topic: a pipeline has processed a
// trip when its key is committed there.
//
// A history is judged from an empty cluster, and one proxy session records
// one history. So it warns, once each, when a run seems to break that:
// a trip produced a second time (a second run joining the first's
// history, whose trips then count twice), or the first produce to a
// partition landing past offset 0 (a cluster used before the history
// began).
type recording struct {
	*histories.Recorder
	file     *os.File
	w        *histories.Writer
	keysFrom string
	logf     func(format string, args ...any)

	mu          sync.Mutex
	trips       map[string]bool
	outputs     map[string]bool
	produces    map[model.Partition]int // produce calls per partition
	warnedTrip  bool
	warnedStart bool
}

func startRecording(path, keysFrom string, logf func(string, ...any)) (*recording, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	// The cluster's timers run on the wall clock, the history's. Its
	// topics may change by an admin the proxy does not see.
	w, err := histories.NewWriter(file, histories.History{Name: "recorded by fencecheck proxy", WallClock: true,
		TopicsChangeOutside: true})
	if err != nil {
		file.Close()
		return nil, err
	}
	rec := histories.NewRecorder(nil, func() int64 { return time.Now().UnixMilli() })
	rec.Stream(w)
	return &recording{Recorder: rec, file: file, w: w, keysFrom: keysFrom, logf: logf,
		trips: map[string]bool{}, outputs: map[string]bool{}, produces: map[model.Partition]int{}}, nil
}

// Observe records an operation, and notes the keys and topics of a
// produce that succeeded.
func (r *recording) Observe(proc, client string, op model.Op) func(model.Result) {
	end, _ := r.ObserveLeaving(proc, client, op)
	return end
}

// The proxy's recorder tells it of the operations it leaves out, so that
// they do not hold back the history's complete_before marks.
var _ recorder.LeavingObserver = (*recording)(nil)

// ObserveLeaving is Observe, told too when the operation is left out, so
// that the history's marks say which operations have ended
// (complete_before).
func (r *recording) ObserveLeaving(proc, client string, op model.Op) (func(model.Result), func()) {
	end, leave := r.Recorder.ObserveLeaving(proc, client, op)
	kind, req := op.Kind, op.Req
	if kind != model.Produce {
		return end, leave
	}
	r.mu.Lock()
	r.produces[req.Partition]++
	r.mu.Unlock()
	return func(res model.Result) {
		end(res)
		if !res.Succeeded() {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.checkStart(req.Partition, res.Resp.BaseOffset)
		if r.keysFrom == "" {
			return
		}
		topic, _ := req.Partition.Topic()
		if topic != r.keysFrom {
			r.outputs[topic] = true
			return
		}
		for _, rec := range req.Records {
			r.checkTrip(rec.Key)
			r.trips[rec.Key] = true
		}
	}, leave
}

// checkStart warns when the only produce to p the history has sent
// landed past offset 0: p held records before the history began, which
// the checks, judging from an empty cluster, will count against it. The
// caller holds r.mu.
func (r *recording) checkStart(p model.Partition, base int64) {
	if r.warnedStart || r.produces[p] != 1 || base <= 0 {
		return
	}
	r.warnedStart = true
	r.logf("warning: the first produce to %s in this history landed at offset %d, not 0: the cluster was used before the history began, "+
		"and a history is judged from an empty cluster; record each run on a new cluster (or new topics, groups and transactional ids)", p, base)
}

// checkTrip warns when trip was produced before in this history: a
// second run is joining the first's history. The caller holds r.mu.
func (r *recording) checkTrip(trip string) {
	if r.warnedTrip || !r.trips[trip] {
		return
	}
	r.warnedTrip = true
	r.logf("warning: trip %q was produced to %s again: one proxy session records one history, and a second run joins the first's, "+
		"where its trips count twice; stop the proxy (and start the cluster afresh) before another run", trip, r.keysFrom)
}

// close ends the document: valid, with its trips, from here on.
func (r *recording) close() error {
	var end histories.History
	if r.keysFrom != "" {
		r.mu.Lock()
		end.Trips = slices.Sorted(maps.Keys(r.trips))
		end.OutputTopics = slices.Sorted(maps.Keys(r.outputs))
		r.mu.Unlock()
	}
	err := r.w.Close(end)
	if closeErr := r.file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("the history %s: %w", r.file.Name(), err)
	}
	return nil
}
