package histories

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackedTripsLoad: the trips a history lists load as the strings
// written, escapes and all, in their order, and an empty list stays a
// list.
func TestPackedTripsLoad(t *testing.T) {
	h, err := Load(strings.NewReader(`{"format": "fencecheck/history/v1", "trips": ["trip-1", "tr\u00efp-\"2\"", "", "trip-1"], "ops": []}`))
	require.NoError(t, err)
	require.Equal(t, []string{"trip-1", "trïp-\"2\"", "", "trip-1"}, h.Trips)
	h, err = Load(strings.NewReader(`{"format": "fencecheck/history/v1", "trips": [], "ops": []}`))
	require.NoError(t, err)
	require.Equal(t, []string{}, h.Trips)
}
