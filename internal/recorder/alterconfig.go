package recorder

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// alterConfig is an admin's IncrementalAlterConfigs (KIP-339) as an
// alter_config, when it sets transaction.partition.verification.enable in
// the cluster-wide default of the brokers (resource type BROKER, name
// ""), the one change the model reads. A broker's own override, a
// DELETE (which falls back to a value the recorder cannot see), a value
// that is not a boolean and a validate-only request are left out, with
// the reason logged. The legacy AlterConfigs is not read.
func (c *Client) alterConfig(r *kmsg.IncrementalAlterConfigsRequest) []observed {
	if r.ValidateOnly {
		return nil
	}
	for _, res := range r.Resources {
		if res.ResourceType != kmsg.ConfigResourceTypeBroker {
			continue
		}
		for _, cfg := range res.Configs {
			if cfg.Name != model.PartitionVerificationConfig {
				continue
			}
			enable, ok := verificationValue(cfg)
			if !ok || res.ResourceName != "" {
				c.cfg.Logf("recorder: %s's change of %s (broker %q, op %v) is not recorded: only a SET of true or false in the cluster-wide default is",
					c.proc, cfg.Name, res.ResourceName, cfg.Op)
				continue
			}
			req := model.NewRequest()
			req.PartitionVerification = enable
			return one(c, model.AlterConfig, r.Version, req, func(resp *kmsg.IncrementalAlterConfigsResponse) []int16 {
				for _, rr := range resp.Resources {
					if rr.ResourceType == kmsg.ConfigResourceTypeBroker && rr.ResourceName == "" {
						return []int16{rr.ErrorCode}
					}
				}
				return []int16{kerr.UnknownServerError.Code} // the answer leaves it out: undecided
			}, nil)
		}
	}
	return nil
}

// verificationValue is the boolean a SET gives, as Kafka's ConfigDef
// parses a BOOLEAN: "true" or "false", in any case, trimmed.
func verificationValue(cfg kmsg.IncrementalAlterConfigsRequestResourceConfig) (bool, bool) {
	if cfg.Op != kmsg.IncrementalAlterConfigOpSet || cfg.Value == nil {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(*cfg.Value)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}
