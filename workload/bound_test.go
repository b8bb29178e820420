package workload

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestBoundActions: however many actions rapid (or a fuzzer) asks for, a
// run takes at most maxActions of them; the rest do nothing.
func TestBoundActions(t *testing.T) {
	ran := 0
	acts := boundActions(map[string]func(*rapid.T){
		"A": func(*rapid.T) { ran++ },
		"B": func(*rapid.T) { ran++ },
	})
	for i := range 10 * maxActions() {
		acts[[]string{"A", "B"}[i%2]](nil)
	}
	require.Equal(t, maxActions(), ran)
}
