package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The vote of ClassicGroup.selectProtocol: a protocol every member
// supports, with the most first choices; a tie goes to the first in a
// Java HashMap's order. The ties' expected picks are what a Java 17
// HashMap of the names answers to Stream.max, as selectProtocol asks it.
func TestSelectProtocol(t *testing.T) {
	for _, c := range []struct {
		supported [][]string
		chosen    string
		tied      []string
	}{
		// ClassicGroupTest#testSelectProtocol: a tie, then a majority.
		{[][]string{{"range", "roundrobin"}, {"roundrobin", "range"}}, "range", []string{"range", "roundrobin"}},
		{[][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin", "range"}}, "roundrobin", []string{"roundrobin"}},
		// #testSelectProtocolChoosesCompatibleProtocol: only a candidate counts.
		{[][]string{{"range", "roundrobin"}, {"roundrobin", "foo"}}, "roundrobin", []string{"roundrobin"}},
		// Four tied: sticky's bucket (8) comes before range's (9).
		{[][]string{{"sticky"}, {"range"}, {"roundrobin"}, {"cooperative-sticky"}}, "", nil},
		{[][]string{{"sticky", "range", "roundrobin", "cooperative-sticky"}, {"range", "sticky", "roundrobin", "cooperative-sticky"},
			{"roundrobin", "sticky", "range", "cooperative-sticky"}, {"cooperative-sticky", "sticky", "range", "roundrobin"}},
			"sticky", []string{"cooperative-sticky", "range", "roundrobin", "sticky"}},
		{nil, "", nil},
	} {
		chosen, tied := SelectProtocol(c.supported)
		require.Equal(t, c.chosen, chosen, "%v", c.supported)
		require.Equal(t, c.tied, tied, "%v", c.supported)
	}
}
