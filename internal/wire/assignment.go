package wire

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// Assignment reads a member's assignment (the consumer protocol's, as a
// SyncGroup answer carries it) into the history's partitions, in the
// order the member's join listed them; partition names a cluster
// partition, false for one the history does not hold.
func Assignment(raw []byte, requested []model.Partition, partition func(topic string, p int32) (model.Partition, bool)) ([]model.Partition, error) {
	if len(raw) == 0 {
		return nil, nil // Kafka's empty assignment
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(raw); err != nil {
		return nil, err
	}
	held := map[model.Partition]bool{}
	for _, at := range a.Topics {
		for _, p := range at.Partitions {
			if mp, ok := partition(at.Topic, p); ok {
				held[mp] = true
			}
		}
	}
	var out []model.Partition
	for _, p := range requested {
		if held[p] {
			out = append(out, p)
			delete(held, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(held)) {
		out = append(out, p) // assigned, though not asked for: the checker judges it
	}
	return out, nil
}

// Nullable is a nullable string field as the history writes it: "" when
// null, or when the version does not carry it (a dynamic member's
// group.instance.id, a JoinGroup answer's protocol type before v7).
func Nullable(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
