package fencecheck_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
)

// fencecheck.Test against a cluster by address, here kfake on real ports
// as 'fencecheck broker' runs it: a correct configuration holds, with
// kfake's known divergences from Kafka gone past (Known), within the
// budget Options documents for a test that must stay under a minute.
func TestTestHoldsOnAKfakeClusterByAddress(t *testing.T) {
	cluster, err := kafka.StartListening("127.0.0.1:0", workload.Topics, t.Logf)
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	fencecheck.Test(t, fencecheck.Brokers(cluster.ListenAddrs()...), fencecheck.Options{
		Checks: 20, Seed: 5, ShrinkTime: 10 * time.Second, Known: kafka.KnownFindings(), Out: t.TempDir()})
}
