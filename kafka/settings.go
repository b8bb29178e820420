package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// neededSetting is a broker setting the target relies on, and the
// values that fit.
type neededSetting struct {
	name string
	fits func(value string) (bool, error) // an error: value is not of the setting's type
	need string                           // the values that fit, said in words
}

// numeric is a test of a number setting's value.
func numeric(test func(v int64) bool) func(string) (bool, error) {
	return func(value string) (bool, error) {
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false, errors.New("not a number")
		}
		return test(v), nil
	}
}

// dayMs is a day in milliseconds: longer than any run.
const dayMs = 24 * 60 * 60 * 1000

// neededSettings are the settings a cluster of brokers brokers needs.
func (t *Target) neededSettings(brokers int) []neededSetting {
	session := int64(t.scaledMs(model.DefaultSessionTimeoutMs))
	longestTxn := int64(t.scaledMs(maxTimeoutMs))
	atMost := func(name string, max int64, why string) neededSetting {
		return neededSetting{name, numeric(func(v int64) bool { return v <= max }), fmt.Sprintf("at most %d (%s)", max, why)}
	}
	atLeast := func(name string, min int64, why string) neededSetting {
		return neededSetting{name, numeric(func(v int64) bool { return v >= min }), fmt.Sprintf("at least %d (%s)", min, why)}
	}
	enabled := func(name string, why string) neededSetting {
		fits := func(value string) (bool, error) {
			on, err := strconv.ParseBool(value)
			if err != nil {
				return false, errors.New("not true or false")
			}
			return on, nil
		}
		return neededSetting{name, fits, fmt.Sprintf("true (%s)", why)}
	}
	consumerSession := int64(t.scaledMs(model.DefaultConsumerSessionTimeoutMs))
	exactly := func(name string, want int64, why string) neededSetting {
		return neededSetting{name, numeric(func(v int64) bool { return v == want }), fmt.Sprintf("%d (%s)", want, why)}
	}
	replicas := fmt.Sprintf("the cluster has %d brokers", brokers)
	needed := []neededSetting{
		atMost("group.min.session.timeout.ms", session, "the scaled session timeout"),
		atLeast("group.max.session.timeout.ms", session, "the scaled session timeout"),
		atLeast("transaction.max.timeout.ms", longestTxn, "the longest scaled transaction timeout a run sends"),
		atMost("group.initial.rebalance.delay.ms", 0, "a new group's first join must not wait"),
		atMost("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10, "a transaction must be aborted at its deadline"),
		atMost("transaction.state.log.replication.factor", int64(brokers), replicas),
		atMost("transaction.state.log.min.isr", int64(brokers), replicas),
		atMost("offsets.topic.replication.factor", int64(brokers), replicas),
		atLeast("transactional.id.expiration.ms", dayMs, "no transactional id may expire during a run"),
		atLeast("producer.id.expiration.ms", dayMs, "no producer id may expire during a run"),
		atLeast("offsets.retention.minutes", dayMs/60_000, "no committed offset may expire during a run"),
		// The target's histories name no broker_config, and the model
		// then takes Kafka's default: the leader verifies a transactional
		// write with its coordinator (KIP-890 part 1).
		enabled("transaction.partition.verification.enable", "the model takes a leader to verify transactional writes"),
	}
	if t.cfg.ConsumerGroups {
		// The model runs a KIP-848 member's session at Kafka's default,
		// so a longer or a shorter one on the cluster would expire
		// members at other times than the model does.
		needed = append(needed, exactly("group.consumer.session.timeout.ms", consumerSession,
			"the scaled 45 s session of a KIP-848 consumer group member"))
	}
	return needed
}

// checkSettings reads every broker's settings and says which do not fit.
func (t *Target) checkSettings() error {
	ctx, cancel := t.requestCtx(context.Background())
	defer cancel()
	cl := t.routes.client()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka: asking the cluster for its brokers: %w", err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, b := range meta.Brokers {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(b.NodeID))
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka: reading the brokers' settings (DescribeConfigs): %w", err)
	}
	var misfits []string
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("kafka: reading broker %s's settings (DescribeConfigs): %w", r.ResourceName, err)
		}
		values := map[string]string{}
		for _, c := range r.Configs {
			if c.Value != nil {
				values[c.Name] = *c.Value
			}
		}
		misfits = append(misfits, misfitting(r.ResourceName, values, t.neededSettings(len(meta.Brokers)))...)
	}
	if len(misfits) > 0 {
		return errors.New("kafka: the cluster is not set up for fencecheck (see the kafka package documentation, Settings):\n  " + strings.Join(misfits, "\n  "))
	}
	return nil
}

// misfitting says which of broker's values do not fit the needed
// settings; a setting the broker does not report is not checked.
func misfitting(broker string, values map[string]string, needed []neededSetting) []string {
	var misfits []string
	for _, s := range needed {
		text, ok := values[s.name]
		if !ok {
			continue
		}
		fits, err := s.fits(text)
		switch {
		case err != nil:
			misfits = append(misfits, fmt.Sprintf("broker %s: %s is %q, %v; it must be %s", broker, s.name, text, err, s.need))
		case !fits:
			misfits = append(misfits, fmt.Sprintf("broker %s: %s is %s; it must be %s", broker, s.name, text, s.need))
		}
	}
	return misfits
}
