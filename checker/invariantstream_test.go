package checker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The folds depend on call order: an operation out of it makes every
// invariant unknown, naming the operation, and nothing panics.
func TestInvariantStreamNamesAnOperationOutOfCallOrder(t *testing.T) {
	b, _ := seed000()
	s := newInvariantStream(b.h, nil)
	s.add(b.op(1))
	s.add(b.op(0)) // called before op 1
	s.add(b.op(2))
	verdicts := s.verdicts()
	require.Len(t, verdicts, len(Checks)-2)
	for i, v := range verdicts {
		require.Equal(t, Checks[1+i], v.Check)
		require.Equal(t, Unknown, v.Status, v.String())
		require.Equal(t, "op 0 (call 0) came after op 1 (call 10): the invariants are judged in call order, ties by id", v.Reason)
	}

	s = newInvariantStream(b.h, nil)
	s.add(b.op(0))
	s.add(b.op(0)) // the same operation twice
	require.Equal(t, Unknown, s.verdicts()[0].Status)

	s = newInvariantStream(b.h, nil)
	for _, i := range callOrder(b.h.Ops) {
		s.add(b.op(int(i)))
	}
	for _, v := range s.verdicts() {
		require.NotEqual(t, Unknown, v.Status, v.String())
	}
}
