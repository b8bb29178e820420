package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// recording is the history `fencecheck proxy --history` writes as the
// run goes, on the wall clock in milliseconds ("clock": "wall"). With keysFrom set, the
// keys of the records produced to that topic are the trips, and every
// other topic produced to is an output topic: a pipeline has processed a
// trip when its key is committed there.
type recording struct {
	*histories.Recorder
	file     *os.File
	w        *histories.Writer
	keysFrom string

	mu      sync.Mutex
	trips   map[string]bool
	outputs map[string]bool
}

func startRecording(path, keysFrom string) (*recording, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	// The cluster's timers run on the wall clock, the history's.
	w, err := histories.NewWriter(file, histories.History{Name: "recorded by fencecheck proxy", WallClock: true})
	if err != nil {
		file.Close()
		return nil, err
	}
	rec := histories.NewRecorder(nil, func() int64 { return time.Now().UnixMilli() })
	rec.Stream(w)
	return &recording{Recorder: rec, file: file, w: w, keysFrom: keysFrom,
		trips: map[string]bool{}, outputs: map[string]bool{}}, nil
}

// Observe records an operation, and notes the keys and topics of a
// produce that succeeded.
func (r *recording) Observe(proc, client string, kind model.Kind, req model.Request) func(model.Result) {
	end := r.Recorder.Observe(proc, client, kind, req)
	if kind != model.Produce || r.keysFrom == "" {
		return end
	}
	return func(res model.Result) {
		end(res)
		topic, _ := req.Partition.Topic()
		if !res.Succeeded() {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if topic != r.keysFrom {
			r.outputs[topic] = true
			return
		}
		for _, rec := range req.Records {
			r.trips[rec.Key] = true
		}
	}
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
