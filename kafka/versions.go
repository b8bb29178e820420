package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Request versions that change what the workload sees.
const (
	// addPartitionsClientMax: from v4 AddPartitionsToTxn is the
	// brokers' batched verification request; clients send v3 at most.
	addPartitionsClientMax = 3
	// endTxnV2 is the first EndTxn of transactions v2 (KIP-890): it bumps
	// the epoch and answers the new one.
	endTxnV2 = 5
)

// versionCap is the request versions for a Kafka version ("" the newest
// stable ones franz-go knows).
func versionCap(kafkaVersion string) (*kversion.Versions, error) {
	v := kversion.Stable()
	if kafkaVersion != "" {
		if v = kversion.FromString(kafkaVersion); v == nil {
			return nil, fmt.Errorf("kafka: unknown Kafka version %q (want for example 3.9 or 4.0)", kafkaVersion)
		}
	}
	if max, ok := v.LookupMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16()); ok && max > addPartitionsClientMax {
		v.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), addPartitionsClientMax)
	}
	return v, nil
}

// transactionsVersion is 2 when both the cap and the cluster allow EndTxn
// v5 (KIP-890), else 1.
func transactionsVersion(ctx context.Context, cl *kgo.Client, cap *kversion.Versions) (int, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("kafka: asking the cluster's versions: %w", err)
	}
	broker, _ := kversion.FromApiVersionsResponse(resp).LookupMaxKeyVersion(kmsg.EndTxn.Int16())
	capped, _ := cap.LookupMaxKeyVersion(kmsg.EndTxn.Int16())
	if min(broker, capped) >= endTxnV2 {
		return 2, nil
	}
	return 1, nil
}
