package histories

import (
	"encoding/json"
	"math"

	"github.com/fencecheck/fencecheck/model"
)

// brokerConfig is "broker_config": the broker configs the model reads,
// under Kafka's own names (model.ExpiryConfigs), so that a recorder can
// copy them from the cluster it recorded (DescribeConfigs). Other names
// are ignored, whatever their value: a recorder may copy the whole
// config.
type brokerConfig struct{ p *model.Expiry }

// intervals is what an interval config may hold: Kafka defines each as an
// INT at least 1 (TransactionStateManagerConfigs, TransactionLogConfigs).
var intervals = span{lo: 1, hi: math.MaxInt32}

func (c brokerConfig) decode(path string, raw json.RawMessage) error {
	m, err := asObject(path, raw)
	if err != nil {
		return err
	}
	for _, cfg := range model.ExpiryConfigs {
		if err := take(m, path, cfg.Name, optional, number[int64]{cfg.Field(c.p), intervals}); err != nil {
			return err
		}
	}
	return nil
}

func (c brokerConfig) absent() bool { return *c.p == model.Expiry{} }

func (c brokerConfig) encode() any {
	out := object{}
	for _, cfg := range model.ExpiryConfigs {
		if ms := *cfg.Field(c.p); ms != 0 {
			out = append(out, member{cfg.Name, ms})
		}
	}
	return out
}
