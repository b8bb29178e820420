package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// testConfig is a short pipeline history with restarts often enough that
// a few thousand operations hold several.
func testConfig(seed uint64) pipelineConfig {
	return pipelineConfig{ops: 3000, seed: seed, workers: 3, partitions: 4, restartEvery: 300, overlap: 3}
}

// writeTestPipeline writes cfg's history into a file of the test's.
func writeTestPipeline(t *testing.T, cfg pipelineConfig) (string, *pipeline) {
	t.Helper()
	var buf bytes.Buffer
	w, err := histories.NewWriter(&buf, histories.History{Name: "test", TransactionsVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	end, p, err := writePipeline(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(end); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pipeline.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, p
}

func checkFile(t *testing.T, path string) map[string]checker.Verdict {
	t.Helper()
	rep, err := checker.CheckFile(path, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]checker.Verdict{}
	for _, v := range rep.Verdicts {
		verdicts[v.Check] = v
	}
	return verdicts
}

// TestPipelineChecksClean: a pipeline history is correct, and every check
// has work on it: each says ok, none skipped or unknown.
func TestPipelineChecksClean(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			path, p := writeTestPipeline(t, testConfig(seed))
			if p.nextID < 3000 {
				t.Errorf("%d operations written; 3000 were asked for", p.nextID)
			}
			// The history holds what the checks judge: restarts that
			// fence a zombie, aborted transactions, trips committed.
			if p.restarts == 0 || p.fenced == 0 || p.aborts == 0 || p.committed < 100 {
				t.Errorf("%d restarts, %d fenced, %d aborts, %d trips committed: each check needs some", p.restarts, p.fenced, p.aborts, p.committed)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := histories.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[model.Kind]bool{}
			for _, op := range h.Ops {
				kinds[op.Op.Kind] = true
			}
			for _, k := range []model.Kind{model.InitProducerID, model.Produce, model.TxnOffsetCommit, model.EndTxn,
				model.Fetch, model.OffsetFetch, model.ConsumerGroupHeartbeat, model.Stall, model.Restart, model.Wake} {
				if !kinds[k] {
					t.Errorf("the history has no %s", k)
				}
			}
			if !overlaps(h.Ops) {
				t.Error("no two operations of the history overlap")
			}
			verdicts := checkFile(t, path)
			for _, name := range checker.Checks {
				v, ok := verdicts[name]
				if !ok || v.Status != checker.OK {
					t.Errorf("%s: %v; want ok", name, v)
				}
			}
		})
	}
}

// overlaps reports whether two requests of different processes are in
// flight at once.
func overlaps(ops []histories.Op) bool {
	for i, a := range ops {
		for _, b := range ops[i+1 : min(len(ops), i+8)] {
			if a.Returned && b.Returned && a.Proc != b.Proc && a.Call < b.Return && b.Call < a.Return {
				return true
			}
		}
	}
	return false
}

// TestPipelineSameSeedSameBytes: a seed writes the same bytes each time,
// and another seed other bytes.
func TestPipelineSameSeedSameBytes(t *testing.T) {
	digest := func(cfg pipelineConfig) [32]byte {
		var buf bytes.Buffer
		if _, err := writePipelineTo(&buf, cfg); err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(buf.Bytes())
	}
	a, b, c := digest(testConfig(7)), digest(testConfig(7)), digest(testConfig(8))
	if a != b {
		t.Error("seed 7 wrote different bytes twice")
	}
	if a == c {
		t.Error("seeds 7 and 8 wrote the same bytes")
	}
}

// TestPipelineFaultsAreCaught: each deliberate fault breaks the check it
// is meant to, and only the invariants' checks (the broker's answers are
// still the model's, so linearizable holds).
func TestPipelineFaultsAreCaught(t *testing.T) {
	names := make([]string, 0, len(faults))
	for name := range faults {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(3)
			cfg.fault = name
			path, p := writeTestPipeline(t, cfg)
			if !p.faulted {
				t.Fatalf("the fault %s was never made", name)
			}
			verdicts := checkFile(t, path)
			if v := verdicts[faults[name]]; v.Status != checker.Violated {
				t.Errorf("%s: %v; want VIOLATED", faults[name], v)
			}
			if v := verdicts[checker.Linearizable]; v.Status != checker.OK {
				t.Errorf("linearizable: %v; want ok", v)
			}
		})
	}
}

// TestSoakShapeUnchanged: the soak shape writes the bytes it wrote
// before the pipeline shape was added (commit ebf20b5).
func TestSoakShapeUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.json")
	if err := write(path, soakConfig{ops: 1000, clients: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const want = "aaa5f2bf34ae99cce1a406d43d353e8cf5f77fc85d2defe2ade47a3a2c7cf216"
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
		t.Errorf("the soak shape of 1000 operations has sha256 %s; want %s", got, want)
	}
}

// TestPipelineConfigErrors: a bad setting is named.
func TestPipelineConfigErrors(t *testing.T) {
	for _, c := range []struct {
		change func(*pipelineConfig)
		want   string
	}{
		{func(c *pipelineConfig) { c.ops = 0 }, "-ops is 0"},
		{func(c *pipelineConfig) { c.workers = 0 }, "-workers is 0"},
		{func(c *pipelineConfig) { c.partitions = -1 }, "-partitions is -1"},
		{func(c *pipelineConfig) { c.restartEvery = -5 }, "-restart-every is -5"},
		{func(c *pipelineConfig) { c.fault = "nope" }, `-fault "nope"`},
		{func(c *pipelineConfig) { c.overlap = 4 }, "-overlap is 4"},
	} {
		cfg := testConfig(1)
		c.change(&cfg)
		err := cfg.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("validate() = %v; want an error naming %s", err, c.want)
		}
	}
	if err := testConfig(1).validate(); err != nil {
		t.Errorf("validate() of a good config = %v", err)
	}
}
