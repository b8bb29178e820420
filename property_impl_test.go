package fencecheck_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/model"
)

// TestPropertyDifferential runs one interleaving against the reference
// model and the optimised broker at once: every answer must be the same,
// broker restarts included (the optimised broker rebuilds its state from its
// logs; the model keeps it), and every check must hold on the history.
func TestPropertyDifferential(t *testing.T) {
	for _, version := range []int{1, 2} {
		for _, sc := range workload.CorrectScenarios() {
			if sc.SpeaksKIP848() {
				// The brokers' assignors differ: the model's is its own,
				// so their KIP-848 answers are not compared (impl/README.md).
				continue
			}
			name := sc.Name
			t.Run(fmt.Sprintf("%s-v%d", name, version), func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					var pair *twin
					target := func() (model.Target, error) {
						pair = &twin{model: model.NewBroker(model.Options{TxnVersion: version, AsyncMarkers: true}), impl: impl.New(impl.Config{TxnVersion: version, SegmentSize: impl.ExploringSegmentSize, AsyncMarkers: true})}
						pair.BrokerFunc = pair.both
						return pair, nil
					}
					opts := workload.Options{Scenario: sc, Target: target, TxnVersion: version}
					workload.Property(opts, nil)(t)
					if pair.diff != "" {
						t.Fatal(pair.diff)
					}
				})
			})
		}
	}
}

// twin sends every request to both brokers, answers with the model's
// answer, and keeps the first difference.
type twin struct {
	model.BrokerFunc
	model, impl model.Target
	mu          sync.Mutex
	diff        string
}

func (w *twin) both(_ context.Context, kind model.Kind, r model.Request) model.Result {
	op := model.Op{Kind: kind, Req: r}
	want, _ := model.Send(context.Background(), w.model, op)
	got, _ := model.Send(context.Background(), w.impl, op)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.diff == "" && fmt.Sprint(want) != fmt.Sprint(got) {
		w.diff = fmt.Sprintf("%s %+v: the model answered %+v, the optimised broker %+v", kind, r, want, got)
	}
	return want
}

// OffsetCommit sends a plain commit to both, which both take.
func (w *twin) OffsetCommit(ctx context.Context, r model.Request) model.Result {
	return w.both(ctx, model.OffsetCommit, r)
}

func (w *twin) Tick(ms int64) { w.model.Tick(ms); w.impl.Tick(ms) }

// ExactClock: both clocks move only by Tick.
func (w *twin) ExactClock() {}

// AsyncMarkers: both brokers answer EndTxn before its markers land.
func (w *twin) AsyncMarkers() bool { return true }
func (w *twin) Restart()           { w.model.Restart(); w.impl.Restart() }

// LandMarkers writes both brokers' markers in flight; both must agree on
// whether any are.
func (w *twin) LandMarkers() {
	w.model.(model.MarkerWriter).LandMarkers()
	w.impl.(model.MarkerWriter).LandMarkers()
}

func (w *twin) MarkersInFlight() bool {
	inFlight := w.model.(model.MarkerWriter).MarkersInFlight()
	if inFlight != w.impl.(model.MarkerWriter).MarkersInFlight() {
		panic(fmt.Sprintf("markers in flight: model %v, impl %v", inFlight, !inFlight))
	}
	return inFlight
}
func (w *twin) Close() error { return w.impl.Close() }
