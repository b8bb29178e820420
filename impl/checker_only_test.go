//go:build checkeronly

package impl_test

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// TestCheckerAlone judges the optimised broker as fencecheck judges a
// broker nobody here wrote: no differential against the model, no test of
// impl's own, only the exploration and its checks. Under the checkeronly
// tag it is the package's one test, so that a mutation tool run with that
// tag scores what the checker finds (a counterexample is shrunk for a
// second only: the tool needs the verdict, and a long shrink reads to it
// as a time-out):
//
//	gremlins unleash --tags checkeronly ./impl
func TestCheckerAlone(t *testing.T) {
	for _, version := range []int{1, 2} {
		target := func() (model.Target, error) {
			return impl.New(impl.Config{TxnVersion: version, SegmentSize: impl.ExploringSegmentSize}), nil
		}
		fencecheck.Test(t, target, fencecheck.Options{TxnVersion: version, Checks: 1000, Seed: 1, ShrinkTime: time.Second, Out: t.TempDir()})
	}
}
