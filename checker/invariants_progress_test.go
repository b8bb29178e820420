package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

func TestProgressSkippedWithoutTrips(t *testing.T) {
	b, _ := seed000()
	require.Equal(t, Skipped, CheckOne(b.h, Progress).Status)
	require.Equal(t, "progress: skipped", CheckOne(b.h, Progress).String())
}

func TestProgressHoldsWhenEveryTripIsCommittedOrRead(t *testing.T) {
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 0, "trip-1")
	b.fetch("R", 10, 11, "fares-3", 0, model.ReadCommitted, rec(5, "trip-2", 4002))
	b.h.Trips = []string{"trip-1", "trip-2"}
	requireHeld(t, CheckOne(b.h, Progress))
}

func TestProgressNoProgress(t *testing.T) {
	b := &historyBuilder{}
	b.committedTxn("A", 0, fw0, "fares-2", 0, "trip-1")
	b.produce("A", 10, 11, fw0, "fares-2", 2, "trip-2") // never committed
	b.fetch("R", 12, 13, "fares-2", 0, model.ReadUncommitted, rec(2, "trip-2", 4001))
	last := b.initTxns("B", 20, 21, fw1)
	b.initTxns("C", 15, 22, session{"fare-writer-8", 4002, 0}) // last in the list, not by the clock
	b.h.Trips = []string{"trip-1", "trip-2", "trip-3", "trip-4", "trip-5", "trip-1"}
	requireViolation(t, CheckOne(b.h, Progress), last, "no progress: 4 of 5 trips never committed (trip-2, trip-3, trip-4, ...)")

	b.h.Trips = []string{"trip-1", "trip-2", "trip-3", "trip-4"}
	requireViolation(t, CheckOne(b.h, Progress), last, "no progress: 3 of 4 trips never committed (trip-2, trip-3, trip-4)")

	b.h.Trips = []string{"trip-1", "trip-2"}
	requireViolation(t, CheckOne(b.h, Progress), last, "no progress: 1 of 2 trips never committed (trip-2)")
}

// A history with trips to process and no operation has made no progress,
// and no operation to name: the verdict says op -1.
func TestProgressOfAnEmptyHistory(t *testing.T) {
	h := histories.History{Trips: []string{"trip-1"}}
	requireViolation(t, CheckOne(h, Progress), -1, "no progress: 1 of 1 trips never committed (trip-1)")
}

// A trip read from the input topic is not processed: only records in the
// output topics count when the history names them.
func TestProgressCountsOnlyOutputTopics(t *testing.T) {
	b := &historyBuilder{}
	b.fetch("W", 0, 1, "trips-0", 0, model.ReadCommitted, rec(0, "trip-1", 3001))
	b.h.Trips = []string{"trip-1"}
	requireHeld(t, CheckOne(b.h, Progress))

	b.h.OutputTopics = []string{"fares"}
	requireViolation(t, CheckOne(b.h, Progress), 0, "no progress: 1 of 1 trips never committed (trip-1)")

	b.committedTxn("A", 10, fw0, "fares-2", 0, "trip-1")
	requireHeld(t, CheckOne(b.h, Progress))
}
