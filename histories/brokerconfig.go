package histories

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/model"
)

// brokerConfig is "broker_config": the broker configs the model reads,
// under Kafka's own names (model.ExpiryConfigs,
// model.TxnMaxTimeoutConfig, model.PartitionVerificationConfig,
// model.GroupMaxSizeConfig and model.TwoPhaseCommitConfig), so
// that a recorder can copy them from the cluster it recorded
// (DescribeConfigs). Other names are ignored, whatever their value: a
// recorder may copy the whole config.
type brokerConfig struct {
	p *model.Expiry
	// maxTimeout is transaction.max.timeout.ms; 0 when not named.
	maxTimeout *int64
	// noVerification is transaction.partition.verification.enable set to
	// false; true or not named is Kafka's default, on.
	noVerification *bool
	// groupMaxSize is group.max.size; 0 when not named.
	groupMaxSize *int
	// twoPC is transaction.two.phase.commit.enable; unknown when not
	// named.
	twoPC *model.TwoPhaseCommit
}

// brokerConfig is h's "broker_config".
func (h *History) brokerConfig() brokerConfig {
	return brokerConfig{&h.Expiry, &h.TxnMaxTimeoutMs, &h.NoPartitionVerification, &h.GroupMaxSize, &h.TwoPhaseCommit}
}

// intervals is what an interval config, and transaction.max.timeout.ms,
// may hold: Kafka defines each as an INT at least 1
// (TransactionStateManagerConfigs, TransactionLogConfigs).
var intervals = span{lo: 1, hi: math.MaxInt32}

// groupSizes is what group.max.size may hold: Kafka defines it as an INT
// at least 1 (GroupCoordinatorConfig).
var groupSizes = span{lo: 1, hi: math.MaxInt32}

func (c brokerConfig) decode(path string, raw json.RawMessage) error {
	m, err := asMembers(path, raw, nil)
	if err != nil {
		return err
	}
	for _, cfg := range model.ExpiryConfigs {
		if err := take(m, path, cfg.Name, optional, number[int64]{cfg.Field(c.p), intervals}); err != nil {
			return err
		}
	}
	if err := take(m, path, model.TxnMaxTimeoutConfig, optional, number[int64]{c.maxTimeout, intervals}); err != nil {
		return err
	}
	if err := take(m, path, model.GroupMaxSizeConfig, optional, number[int]{c.groupMaxSize, groupSizes}); err != nil {
		return err
	}
	enabled := true
	if err := take(m, path, model.PartitionVerificationConfig, optional, flag{&enabled}); err != nil {
		return err
	}
	*c.noVerification = !enabled
	if has(m, model.TwoPhaseCommitConfig) {
		twoPC := false
		if err := take(m, path, model.TwoPhaseCommitConfig, optional, flag{&twoPC}); err != nil {
			return err
		}
		*c.twoPC = model.TwoPhaseCommitDisabled
		if twoPC {
			*c.twoPC = model.TwoPhaseCommitEnabled
		}
	}
	return nil
}

func (c brokerConfig) absent() bool {
	return *c.p == model.Expiry{} && *c.maxTimeout == 0 && !*c.noVerification && *c.groupMaxSize == 0 &&
		*c.twoPC == model.TwoPhaseCommitUnknown
}

func (c brokerConfig) encode() any {
	out := object{}
	for _, cfg := range model.ExpiryConfigs {
		if ms := *cfg.Field(c.p); ms != 0 {
			out = append(out, member{cfg.Name, ms})
		}
	}
	if *c.maxTimeout != 0 {
		out = append(out, member{model.TxnMaxTimeoutConfig, *c.maxTimeout})
	}
	if *c.groupMaxSize != 0 {
		out = append(out, member{model.GroupMaxSizeConfig, *c.groupMaxSize})
	}
	if *c.noVerification {
		out = append(out, member{model.PartitionVerificationConfig, false})
	}
	if *c.twoPC != model.TwoPhaseCommitUnknown {
		out = append(out, member{model.TwoPhaseCommitConfig, *c.twoPC == model.TwoPhaseCommitEnabled})
	}
	// Sorted by name.
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.key, b.key) })
	return out
}
