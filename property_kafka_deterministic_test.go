//go:build !race

// The race detector slows every goroutine several times over, and kfake's
// timeouts run on the wall clock: under it the target would be slowed
// past them, so this test is built without it.

package fencecheck_test

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/internal/workload"
	"github.com/fencecheck/fencecheck/kafka"
	"github.com/fencecheck/fencecheck/model"
)

// TestPropertyKafkaDeterministic: on kfake too the same seed gives the same
// interleavings and the same histories, byte for byte once the names kfake
// draws at random (producer ids, member ids) are numbered in the order
// they appear. kfake's clock is the wall clock: the target waits for what
// the model's clock fires, holds a new member's join until the group has
// caught up, and assigns partitions in the order the members first
// joined, so that neither the machine's timing nor kfake's random ids
// choose the answers. (Side by side, --parallel, each exploration is a
// process of its own with a cluster of its own: only the timing is
// shared, which this test varies by running twice.)
//
// The timeouts are the broker's, on the wall clock: a process slowed past
// them (a rejoin later than the rebalance timeout) changes what kfake
// answers, as it would a real cluster's.
func TestPropertyKafkaDeterministic(t *testing.T) {
	sc := scenario(t, "stable-id")
	explore := func() []string {
		var all []string
		// The CLI's settings: the default rebalance timeout, which a
		// rejoin under way meets on a busy machine too.
		target := func() (model.Target, error) {
			return kafka.NewKfake(kafka.Config{Topics: workload.Topics, Logf: func(string, ...any) {}})
		}
		opts := workload.Options{Scenario: sc, Target: target, TxnVersion: 2, Known: kafka.KnownFindings(),
			Observe: func(h histories.History) {
				var b bytes.Buffer
				require.NoError(t, histories.Save(&b, h))
				all = append(all, string(withKfakeIDsNumbered(b.Bytes())))
			}}
		out, err := workload.Explore(opts, workload.Budget{Checks: 6, Steps: 15, Seed: 3, ShrinkTime: kfakeShrinkTime}, nil)
		require.NoError(t, err)
		if out.Failure != nil {
			defer out.Discard()
			_, report, steps, _ := out.Failure.Found()
			t.Fatalf("a counterexample (%v) after %v: no run to compare", report.Signatures(), steps)
		}
		return all
	}
	first := explore()
	require.NotEmpty(t, first)
	require.Equal(t, first, explore())
}

var (
	kfakeProducerID = regexp.MustCompile(`"producer_id": [0-9]+`)
	kfakeMemberID   = regexp.MustCompile(`kgo-[0-9a-f]{32}`)
)

// withKfakeIDsNumbered is a saved history with kfake's random producer ids
// and member ids numbered in the order they first appear.
func withKfakeIDsNumbered(h []byte) []byte {
	for _, re := range []*regexp.Regexp{kfakeProducerID, kfakeMemberID} {
		seen := map[string]int{}
		h = re.ReplaceAllFunc(h, func(id []byte) []byte {
			n, ok := seen[string(id)]
			if !ok {
				n = len(seen)
				seen[string(id)] = n
			}
			if re == kfakeProducerID {
				return fmt.Appendf(nil, `"producer_id": %d`, n)
			}
			return fmt.Appendf(nil, "member-%d", n)
		})
	}
	return h
}
