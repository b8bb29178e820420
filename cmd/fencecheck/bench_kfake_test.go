package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/kafka"
)

// The kfake benchmarks: how many checked operations a second `fencecheck
// run --target kfake` explores, one exploration at a time and at the
// default --parallel, beside how many transactions a second franz-go's
// own transactional producer commits on the same kind of cluster, so that
// their ratio is read off one run:
//
//	go test -run '^$' -bench Kfake -benchtime 1x ./cmd/fencecheck/
//
// No test asserts a time.

// The exploration measured: the CLI's defaults (both correct scenarios,
// one after the other) but for a fixed number of interleavings from one
// seed, benchChecksPerWorker for each worker process, so that starting the
// workers and waiting for the last batch weigh alike at any --parallel. A
// counterexample (kfake's, of a finding not yet listed) is shrunk briefly,
// and its time counts with the rest.
var benchExploration = []string{"run", "--target", "kfake",
	"--seed", "11", "--shrink-time", "5s"}

// benchChecksPerWorker is 16 batches of kfake's 10 interleavings a worker
// and scenario: about a minute and a half of exploring at the default
// --parallel on 2 cores, as a long run spends its time.
const benchChecksPerWorker = 160

func BenchmarkKfakeExploration(b *testing.B) {
	for _, parallel := range []int{1, runtime.NumCPU() * kafka.WaitingFactor} {
		b.Run(fmt.Sprintf("parallel-%d", parallel), func(b *testing.B) {
			args := append(benchExploration, "--parallel", fmt.Sprint(parallel),
				"--checks", fmt.Sprint(parallel*benchChecksPerWorker))
			reportExploration(b, args, func(code int) bool { return code != exitUsage })
		})
	}
}

// reportExploration runs `fencecheck args --out DIR` b.N times, fails
// the benchmark on an exit code ok refuses, and reports the checked
// operations a second.
func reportExploration(b *testing.B, args []string, ok func(code int) bool) {
	var ops int
	start := time.Now()
	for range b.N {
		dir := b.TempDir()
		run := append(slices.Clone(args), "--out", dir)
		if code, out, errOut := runCLI(run...); !ok(code) {
			b.Fatalf("fencecheck %v: exit %d\n%s\n%s", run, code, out, errOut)
		}
		ops += summarizedOperations(b, dir)
	}
	b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
}

// summarizedOperations are the operations summary.json counts.
func summarizedOperations(b *testing.B, dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		b.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(data, &s); err != nil {
		b.Fatal(err)
	}
	ops := 0
	for _, ex := range s.Explorations {
		ops += ex.Operations
	}
	return ops
}

// benchRawTransactions are committed each time round, so that one time
// round (-benchtime 1x) measures a steady rate.
const benchRawTransactions = 2000

func BenchmarkKfakeRawTransactions(b *testing.B) {
	dir, err := os.MkdirTemp(benchDataRoot(), "fencecheck-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.DataDir(dir), kfake.SeedTopics(4, "fares"))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.TransactionalID("bench"),
		kgo.DefaultProduceTopic("fares"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	commit := func() {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, kgo.StringRecord("trip")).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
	commit() // the producer id, the coordinator, the leaders
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for range benchRawTransactions {
			commit()
		}
	}
	b.ReportMetric(float64(b.N*benchRawTransactions)/time.Since(start).Seconds(), "txns/s")
}

// benchDataRoot is where the embedded kfake keeps its clusters' logs when
// none is named (shared memory where there is some), so that franz-go's
// own cluster is on the same footing.
func benchDataRoot() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}
