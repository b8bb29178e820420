package fencecheck_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
	"github.com/fencecheck/fencecheck/workload"
)

// The kfake benchmarks: how many checked operations a second an
// exploration on kfake runs, beside how many transactions a second
// franz-go's own transactional producer commits on the same kind of
// cluster, so that their ratio is read off one run:
//
//	go test -run '^$' -bench Kfake -benchtime 1x .
//
// No test asserts a time.

// The fixed exploration measured: the CLI's scenario, steps and kfake
// settings, from one seed, one after another and side by side (the same
// interleavings).
// A counterexample (kfake's, of a finding not yet listed) is shrunk
// briefly and counted like the rest.
const (
	benchExplorationChecks = 160
	benchSeed              = 11
	benchShrinkTime        = 5 * time.Second
)

func BenchmarkKfakeExploration(b *testing.B) {
	for _, parallel := range []int{1, kafkaParallel} {
		b.Run(fmt.Sprintf("parallel-%d", parallel), func(b *testing.B) {
			sc, err := workload.ScenarioNamed("stable-id")
			if err != nil {
				b.Fatal(err)
			}
			target := func() (model.Target, error) {
				return kafka.NewKfake(kafka.Config{Topics: workload.Topics, Logf: func(string, ...any) {}})
			}
			var ops int
			start := time.Now()
			for range b.N {
				out, err := workload.Explore(workload.Options{Scenario: sc, Target: target, TxnVersion: 2, Known: kafka.KnownFindings()},
					workload.Budget{Checks: benchExplorationChecks, Steps: 30, Seed: benchSeed, ShrinkTime: benchShrinkTime, Parallel: parallel}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if out.Failure != nil {
					_, report, _, _ := out.Failure.Found()
					b.Logf("a counterexample, shrunk for %v at most: %v", benchShrinkTime, report.Signatures())
				}
				out.Discard()
				ops += out.Ops
			}
			b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
		})
	}
}

// kafkaParallel is the CLI's default --parallel on kfake.
const kafkaParallel = kafka.KfakeParallel

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

// benchDataRoot is where kafka.NewKfake keeps its clusters' logs when none
// is named: shared memory where there is some.
func benchDataRoot() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}
