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
// model.GroupMaxSizeConfig, model.ConsumerGroupMaxSizeConfig,
// model.MigrationPolicyConfig, the session timeout bounds
// model.GroupMinSessionTimeoutConfig and model.GroupMaxSessionTimeoutConfig,
// and model.TwoPhaseCommitConfig), so
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
	// consumerGroupMaxSize is group.consumer.max.size; 0 when not named.
	consumerGroupMaxSize *int
	// migration is group.consumer.migration.policy; "" when not named.
	migration *model.MigrationPolicy
	// minSession and maxSession are group.min.session.timeout.ms and
	// group.max.session.timeout.ms; 0 when not named.
	minSession, maxSession *int64
	// twoPC is transaction.two.phase.commit.enable; unknown when not
	// named.
	twoPC *model.TwoPhaseCommit
	// metadataMax is offset.metadata.max.bytes, where metadataMaxKnown.
	metadataMax      *int
	metadataMaxKnown *bool
}

// brokerConfig is h's "broker_config".
func (h *History) brokerConfig() brokerConfig {
	c := brokerConfig{&h.Expiry, &h.TxnMaxTimeoutMs, &h.NoPartitionVerification, &h.GroupMaxSize,
		&h.ConsumerGroupMaxSize, &h.MigrationPolicy,
		&h.GroupMinSessionTimeoutMs, &h.GroupMaxSessionTimeoutMs, &h.TwoPhaseCommit, nil, nil}
	c.metadataMax, c.metadataMaxKnown = &h.OffsetMetadataMaxBytes, &h.OffsetMetadataMaxKnown
	return c
}

// intervals is what an interval config, and transaction.max.timeout.ms,
// may hold: Kafka defines each as an INT at least 1
// (TransactionStateManagerConfigs, TransactionLogConfigs).
var intervals = span{lo: 1, hi: math.MaxInt32}

// groupSizes is what group.max.size and group.consumer.max.size may
// hold: Kafka defines each as an INT at least 1 (GroupCoordinatorConfig).
var groupSizes = span{lo: 1, hi: math.MaxInt32}

// sessionBounds is what group.min.session.timeout.ms and
// group.max.session.timeout.ms may hold here. Kafka defines each as an
// INT with no bound of its own (GroupCoordinatorConfig); a history names
// one from 1, because a JoinGroup's session timeout of 0 is one the
// history does not know. Kafka does not hold the minimum below the
// maximum; a broker set the other way refuses every JoinGroup, and so
// does the model.
var sessionBounds = span{lo: 1, hi: math.MaxInt32}

// metadataLimits is what offset.metadata.max.bytes may hold: Kafka
// defines it as an INT with no bound (GroupCoordinatorConfig), and a
// negative one refuses every metadata, the empty one too.
var metadataLimits = span{lo: math.MinInt32, hi: math.MaxInt32}

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
	if err := take(m, path, model.ConsumerGroupMaxSizeConfig, optional, number[int]{c.consumerGroupMaxSize, groupSizes}); err != nil {
		return err
	}
	// Kafka reads the policy in any case; the history keeps its name.
	policy := text[model.MigrationPolicy]{p: c.migration, valid: func(p model.MigrationPolicy) error {
		_, err := model.ParseMigrationPolicy(string(p))
		return err
	}}
	if err := take(m, path, model.MigrationPolicyConfig, optional, policy); err != nil {
		return err
	}
	if *c.migration != model.MigrationPolicyUnknown {
		*c.migration, _ = model.ParseMigrationPolicy(string(*c.migration))
	}
	if err := take(m, path, model.GroupMinSessionTimeoutConfig, optional, number[int64]{c.minSession, sessionBounds}); err != nil {
		return err
	}
	if err := take(m, path, model.GroupMaxSessionTimeoutConfig, optional, number[int64]{c.maxSession, sessionBounds}); err != nil {
		return err
	}
	if has(m, model.OffsetMetadataMaxConfig) {
		if err := take(m, path, model.OffsetMetadataMaxConfig, optional, number[int]{c.metadataMax, metadataLimits}); err != nil {
			return err
		}
		*c.metadataMaxKnown = true
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
		*c.consumerGroupMaxSize == 0 && *c.migration == model.MigrationPolicyUnknown &&
		*c.minSession == 0 && *c.maxSession == 0 &&
		*c.twoPC == model.TwoPhaseCommitUnknown && !*c.metadataMaxKnown
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
	if *c.consumerGroupMaxSize != 0 {
		out = append(out, member{model.ConsumerGroupMaxSizeConfig, *c.consumerGroupMaxSize})
	}
	if *c.migration != model.MigrationPolicyUnknown {
		out = append(out, member{model.MigrationPolicyConfig, string(*c.migration)})
	}
	if *c.minSession != 0 {
		out = append(out, member{model.GroupMinSessionTimeoutConfig, *c.minSession})
	}
	if *c.maxSession != 0 {
		out = append(out, member{model.GroupMaxSessionTimeoutConfig, *c.maxSession})
	}
	if *c.noVerification {
		out = append(out, member{model.PartitionVerificationConfig, false})
	}
	if *c.twoPC != model.TwoPhaseCommitUnknown {
		out = append(out, member{model.TwoPhaseCommitConfig, *c.twoPC == model.TwoPhaseCommitEnabled})
	}
	if *c.metadataMaxKnown {
		out = append(out, member{model.OffsetMetadataMaxConfig, *c.metadataMax})
	}
	// Sorted by name.
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.key, b.key) })
	return out
}
