package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// answerDeviations are the deviations in what a broker answers: every
// one the model knows (and the bits none uses yet, which allow nothing)
// but the four that change what the broker holds, on events that show
// nothing of it: a fenced producer's produce joins the owner's transaction
// (fenced-produce-joins-txn), a restart forgets the open transactions
// (restart-forgets-open-txn), a re-init's timeout is not taken
// (first-timeout-kept), and a transactional first batch above sequence 0
// whose answer was lost landed (late-first-sequence-accepted; the model
// takes one state for a lost answer, and Kafka 4.1's refusal keeps the
// implicit add without the batch). kfake does each every time, and Kafka
// never, so allowing one is choosing kfake's state over Kafka's.
const answerDeviations = ^model.Deviation(0) &^ (model.FencedProduceJoinsTxn | model.RestartForgetsOpenTxn | model.FirstTimeoutKept | model.LateFirstSequenceAccepted)

// TestDeviationsOnlyWiden: a deviation in answers adds to what the model
// accepts and takes nothing away, so a history of the reference broker,
// which answers as Kafka does, holds linearizable and error-codes with
// those deviations allowed too. A deviation that replaced Kafka's answer instead would,
// once a known finding lists it, call a broker's Kafka-true answer a wrong
// code (met on kfake: end-txn-at-epoch-before took a PRODUCER_FENCED
// that Kafka gives for one).
func TestDeviationsOnlyWiden(t *testing.T) {
	for _, version := range []int{1, 2} {
		for _, name := range []string{"stable-id", "adversary"} {
			t.Run(fmt.Sprintf("%s-v%d", name, version), func(t *testing.T) {
				sc, err := ScenarioNamed(name)
				require.NoError(t, err)
				judged := 0
				opts := Options{Scenario: sc, TxnVersion: version,
					Target: func() (model.Target, error) { return model.NewBroker(model.Options{TxnVersion: version}), nil },
					Observe: func(h histories.History) {
						judged++
						report := checker.Check(h, checker.Options{Allow: answerDeviations})
						for _, check := range []string{checker.Linearizable, checker.ErrorCodes} {
							require.NotEqual(t, checker.Violated, report.Verdict(check).Status,
								"%s: the reference broker's history breaks %s once deviations are allowed: %v", h.Name, check, report.Verdict(check))
						}
					}}
				rapid.Check(t, Property(opts, nil))
				require.Positive(t, judged)
			})
		}
	}
}
