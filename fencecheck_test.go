package fencecheck_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// fencecheck.Test holds on a correct broker, and proves it looked: a
// misconfiguration it is told to explore is caught, and that is no
// failure.
func TestTestHoldsOnACorrectBroker(t *testing.T) {
	correct := func() (model.Target, error) { return impl.New(impl.Config{TxnVersion: 2}), nil }
	fencecheck.Test(t, correct, fencecheck.Options{Scenarios: []string{"stable-id", "adversary", "fresh-id-per-start"}, Checks: 200, Out: t.TempDir()})
}

// On a broker with a bug, it fails the test with the bug report's path,
// and the report is there; a misconfiguration that nothing catches fails
// it too.
func TestTestFailsWithTheBugReport(t *testing.T) {
	buggy := func() (model.Target, error) {
		return impl.New(impl.Config{TxnVersion: 2, Mutants: map[string]bool{"no-epoch-check": true}}), nil
	}
	rec := &firstLines{}
	dir := t.TempDir()
	fencecheck.Test(rec, buggy, fencecheck.Options{Scenarios: []string{"stable-id"}, Checks: 100, Seed: 4, ShrinkTime: time.Second, Out: dir})
	require.True(t, rec.failed)
	require.Contains(t, rec.errors[0], "VIOLATION")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	_, err = os.Stat(dir + "/stable-id/history.json")
	require.NoError(t, err)

	rec = &firstLines{}
	fencecheck.Test(rec, buggy, fencecheck.Options{Scenarios: []string{"no-such-scenario"}, Checks: 1})
	require.True(t, rec.failed)
	require.True(t, strings.Contains(rec.errors[0], "unknown scenario"), rec.errors[0])
}

// losesStep is a broker whose target's clock loses step at the third
// request of each interleaving while losing is set, as a Kafka target's
// does on a machine too busy for its time scale.
type losesStep struct {
	model.Target
	losing   *atomic.Bool
	requests int
}

func (l *losesStep) CatchUp() (int64, error) {
	l.requests++
	if l.requests == 3 && l.losing.Load() {
		return 0, errors.New("the target's clock lost step with the broker's: a timer it kept may have fired")
	}
	return 0, nil
}

// logsOnce records the lines logged, and stops the clock losing step
// once Test says that it explores a scenario again.
type logsOnce struct {
	firstLines
	losing *atomic.Bool
	again  bool
	logged []string
}

func (l *logsOnce) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.logged = append(l.logged, line)
	if strings.Contains(line, "exploring it once more") && !l.again {
		l.again = true
		l.losing.Store(false)
	}
}

// A scenario whose exploration ends in NO VERDICT, because the target's
// clock lost step, is explored once more with the same seed, and the
// first answer is logged with its bug report. When the machine has room
// again the second holds and the test passes; a second NO VERDICT fails
// it.
func TestTestExploresALostStepOnceMore(t *testing.T) {
	for _, busyAgain := range []bool{false, true} {
		losing := &atomic.Bool{}
		losing.Store(true)
		target := func() (model.Target, error) {
			return &losesStep{Target: impl.New(impl.Config{TxnVersion: 2}), losing: losing}, nil
		}
		rec := &logsOnce{losing: losing}
		if busyAgain {
			rec.losing = &atomic.Bool{} // Test's line does not give the machine room
		}
		dir := t.TempDir()
		fencecheck.Test(rec, target, fencecheck.Options{Scenarios: []string{"stable-id"}, Checks: 20, Seed: 3, ShrinkTime: time.Second, Out: dir})
		require.True(t, rec.again, "explored once more")
		require.Contains(t, strings.Join(rec.logged, "\n"), "stable-id: NO VERDICT, because the target's clock lost step; bug report: "+dir+"/stable-id-lost-step")
		_, err := os.Stat(dir + "/stable-id-lost-step/history.json")
		require.NoError(t, err, "the first NO VERDICT's bug report is written")
		if !busyAgain {
			require.False(t, rec.failed, "the second exploration holds: %v", rec.errors)
			continue
		}
		require.True(t, rec.failed)
		require.Len(t, rec.errors, 1)
		require.Contains(t, rec.errors[0], "stable-id: NO VERDICT after")
	}
}
