package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// A deviation's search that runs out of time explains nothing: the same
// consequence of kfake's finding 1 is explained with time to search, and
// not once the deadline has passed.
func TestHoldsWithinGivesUpAtItsDeadline(t *testing.T) {
	h, err := histories.LoadFile("../histories/kfake/zombie-produce-invalid-txn-state-txn-v1.json")
	require.NoError(t, err)
	require.False(t, Check(h, Options{}).Verdict(ErrorCodes).Held(), "the finding's history breaks error-codes")
	d, err := model.ParseDeviation("fenced-produce-invalid-txn-state")
	require.NoError(t, err)
	require.True(t, holdsWithin(h, ErrorCodes, time.Now().Add(explainBudget))(d))
	require.False(t, holdsWithin(h, ErrorCodes, time.Now().Add(-time.Second))(d))
}
