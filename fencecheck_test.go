package fencecheck_test

import (
	"os"
	"strings"
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
