package proxy

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A schedule's faults follow from its seed: the same seed plans the same
// faults, another seed others, and each kind comes about as often as its
// rate says.
func TestScheduleIsSeeded(t *testing.T) {
	every, err := ParseFaults("stall=1s,crash=4s")
	require.NoError(t, err)
	first := func(seed uint64, n int) []scheduled {
		next := Schedule{Every: every, Seed: seed}.plan()
		var out []scheduled
		for range n {
			out = append(out, next())
		}
		return out
	}
	require.Equal(t, first(7, 50), first(7, 50))
	require.NotEqual(t, first(7, 50), first(8, 50))
	counts, total := map[string]int{}, time.Duration(0)
	for _, f := range first(1, 10000) {
		counts[f.kind]++
		total += f.wait
	}
	require.InDelta(t, 8000, counts["stall"], 300, "4 stalls for each crash")
	require.InDelta(t, 0.8, (total / 10000).Seconds(), 0.05, "1.25 faults a second")
}

func TestParseFaultsErrors(t *testing.T) {
	for spec, says := range map[string]string{
		"stall":      "give KIND=EVERY",
		"explode=1s": "give KIND=EVERY, KIND one of crash, delay, lose-response, pause, stall",
		"stall=soon": "a duration of 10ms or more",
		"stall=1ms":  "a duration of 10ms or more",
		"stall=1s,,": "give KIND=EVERY",
	} {
		_, err := ParseFaults(spec)
		require.ErrorContains(t, err, says, spec)
	}
}

// Run against a proxy, a schedule stalls and wakes, crashes and restarts
// the processes it may strike, and leaves the others alone; every fault
// is in the history, each stall with its wake.
func TestScheduleFaultsTheProcessesItMay(t *testing.T) {
	c := startControl(t)
	other, err := kgo.NewClient(kgo.SeedBrokers(c.p.Addr()), kgo.ClientID("trip-source"))
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, c.producer.Ping(context.Background()))
	require.NoError(t, other.Ping(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		c.p.RunSchedule(ctx, Schedule{Every: map[string]time.Duration{"stall": 20 * time.Millisecond, "crash": 40 * time.Millisecond},
			Length: 10 * time.Millisecond, Procs: regexp.MustCompile("^fare-"), Seed: 3})
		close(done)
	}()
	require.Eventually(t, func() bool { return len(c.faults()) >= 8 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	time.Sleep(50 * time.Millisecond) // the last stall's wake
	kinds := map[string]int{}
	for _, f := range c.faults() {
		require.Regexp(t, "^fare-writer ", f, "trip-source does not match")
		kinds[f[len("fare-writer "):]]++
	}
	require.Equal(t, kinds["stall"], kinds["wake"])
	require.Equal(t, kinds["crash"], kinds["restart"])
	require.Positive(t, kinds["stall"])
	require.Positive(t, kinds["crash"])
}
