package fencecheck_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/model"
	"github.com/fencecheck/fencecheck/workload"
)

func modelTarget(version int) model.NewTarget {
	return func() (model.Target, error) { return model.NewBroker(model.Options{TxnVersion: version}), nil }
}

func TestPropertyStableID(t *testing.T) {
	sc, err := workload.ScenarioNamed("stable-id")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []int{1, 2} {
		cov := workload.NewCoverage()
		rapid.Check(t, workload.Property(workload.Options{Scenario: sc, Target: modelTarget(version), TxnVersion: version, Coverage: cov}, nil))
		t.Logf("coverage:\n%s", cov)
	}
}
