//go:build !checkeronly

package impl

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/fencecheck/fencecheck/model"
)

// sequentialRecords is the size of the sequential workload: 1,000,000
// records as the goal states it; FENCECHECK_BENCH_RECORDS scales it.
func sequentialRecords() int {
	if n, err := strconv.Atoi(os.Getenv("FENCECHECK_BENCH_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// runSequential is the sequential workload: one transactional producer,
// transactions of 10 records (AddPartitionsToTxn, ten produces, EndTxn).
// Requests are built once and called directly, so that the driver costs
// next to nothing beside the broker.
func runSequential(b *testing.B, broker model.Broker, records int) {
	ctx := context.Background()
	s := sessionOf(broker.InitProducerID(ctx, initReq("t", 0)))
	add, end := addPartitionsReq("t", s, p0), endTxnReq("t", s, true)
	produce := produceReq("t", s, p0, 0, "trip")
	for written := 0; written < records; written += 10 {
		broker.AddPartitions(ctx, add)
		for range 10 {
			if res := broker.Produce(ctx, produce); !res.Succeeded() {
				b.Fatalf("produce: %s", res.Err)
			}
			produce.Sequence++
		}
		broker.EndTxn(ctx, end)
	}
}

// benchmarkSequential runs the whole workload once per iteration and
// reports its throughput.
func benchmarkSequential(b *testing.B, newBroker func() model.Broker) {
	records := sequentialRecords()
	for b.Loop() {
		runSequential(b, newBroker(), records)
	}
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkSequentialModel(b *testing.B) {
	benchmarkSequential(b, func() model.Broker { return model.NewBroker(model.Options{TxnVersion: 1}) })
}

func BenchmarkSequentialImpl(b *testing.B) {
	benchmarkSequential(b, func() model.Broker { return New(Config{TxnVersion: 1}) })
}

// BenchmarkProduceParallel writes from 1 and 2 goroutines, each an
// idempotent producer on a partition of its own: partitions share no lock,
// so throughput should grow with the goroutines. The last case gives each
// goroutine a broker of its own, which shares nothing at all: it is the
// most the machine allows.
func BenchmarkProduceParallel(b *testing.B) {
	for _, c := range []struct {
		name    string
		writers int
		brokers int
	}{{"goroutines=1", 1, 1}, {"goroutines=2", 2, 1}, {"goroutines=2/own-brokers", 2, 2}} {
		b.Run(c.name, func(b *testing.B) {
			brokers := []*Broker{New(Config{}), New(Config{})}
			var wg sync.WaitGroup
			for w := range c.writers {
				broker := brokers[w%c.brokers]
				s := sessionOf(send(broker, model.InitProducerID, initReq("", 0)))
				produce := produceReq("", s, model.Partition(fmt.Sprintf("out-%d", w)), 0, "trip")
				wg.Go(func() {
					for range b.N {
						broker.Produce(context.Background(), produce)
						produce.Sequence++
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(c.writers*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkFetchReadCommitted reads the same 100 committed records with few
// or many aborted transactions below them: the aborted-transaction index
// keeps the cost of the fetch independent of aborts outside its range. The
// model, which rescans its aborted list for every record, is shown beside.
func BenchmarkFetchReadCommitted(b *testing.B) {
	targets := map[string]func() model.Target{
		"impl":  func() model.Target { return New(Config{}) },
		"model": func() model.Target { return model.NewBroker(model.Options{TxnVersion: 1}) },
	}
	for _, target := range []string{"impl", "model"} {
		for _, aborted := range []int{10, 10_000} {
			b.Run(fmt.Sprintf("%s/aborted=%d", target, aborted), func(b *testing.B) {
				broker := targets[target]()
				from := abortThenCommit(broker, aborted, 100)
				fetch := fetchReq(p0, from, model.ReadCommitted)
				for b.Loop() {
					if res := broker.Fetch(context.Background(), fetch); len(res.Resp.Records) != 100 {
						b.Fatalf("fetched %d records", len(res.Resp.Records))
					}
				}
			})
		}
	}
}

// abortThenCommit writes aborted transactions of one record each (a
// record and a marker), then committed records in transactions of 10, and
// returns where the committed ones begin.
func abortThenCommit(b model.Broker, aborted, committed int) (from int64) {
	s := sessionOf(send(b, model.InitProducerID, initReq("t", 0)))
	var seq int32
	txn := func(records int, commit bool) {
		send(b, model.AddPartitions, addPartitionsReq("t", s, p0))
		for range records {
			send(b, model.Produce, produceReq("t", s, p0, seq, "trip"))
			seq++
		}
		send(b, model.EndTxn, endTxnReq("t", s, commit))
	}
	for range aborted {
		txn(1, false)
	}
	for range committed / 10 {
		txn(10, true)
	}
	return int64(2 * aborted)
}
