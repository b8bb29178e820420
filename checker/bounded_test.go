package checker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// boundedVerdicts judges h's operations in call order with the folds
// bounded (boundedFold), as CheckFile judges a file, and returns their
// verdicts and what they forgot that an operation needed.
func boundedVerdicts(h histories.History) ([]Verdict, string) {
	s := boundedStream(h, true)
	return s.verdicts(), s.forgotten()
}

// boundedStream judges h's operations in call order with the folds
// bounded as CheckFile bounds them (with the fetches ahead), or not, and
// returns the stream, before its verdicts are asked for.
func boundedStream(h histories.History, bounded bool) *invariantStream {
	s := newStreamOf(h, bounded)
	for _, i := range callOrder(h.Ops) {
		s.add(&h.Ops[i])
	}
	return s
}

// newStreamOf is an invariant stream of h, told what a first reading of
// h's file tells CheckFile's, and bounded when bounded; no operation in.
func newStreamOf(h histories.History, bounded bool) *invariantStream {
	reads, ahead := model.NewReads(), newFetchesAhead()
	for i := range h.Ops {
		noteRead(reads, &h.Ops[i])
		ahead.note(&h.Ops[i])
	}
	s := newInvariantStream(h, nil)
	s.onlyRead(reads)
	if bounded {
		s.readAhead(ahead)
		s.bound()
	}
	return s
}

// TestBoundedFoldsAgreeOrSayWhatTheyForgot: on every saved history, the
// bounded folds give the verdicts, reasons included, that the folds
// keeping everything give, or they name the operation that needed what
// they forgot, so that CheckFile judges the file whole.
func TestBoundedFoldsAgreeOrSayWhatTheyForgot(t *testing.T) {
	forgot := 0
	for _, file := range savedHistories(t) {
		h, err := histories.LoadFile(file)
		if err != nil {
			continue // a file kept to show an error
		}
		got, why := boundedVerdicts(h)
		if why != "" {
			forgot++
			t.Logf("%s: %s", file, why)
			continue
		}
		require.Equal(t, judgeInvariants(h, nil), got, file)
	}
	t.Logf("%d histories needed what a bounded fold forgot", forgot)
}
