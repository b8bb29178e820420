package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A cluster by address whose settings do not fit is refused at start,
// with the setting, its value and the value needed.
func TestNewRefusesAClusterSetUpUnfit(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "1000"}))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	_, err = New(Config{Brokers: cluster.ListenAddrs(), Topics: map[string]int32{"fares": 1}, Logf: t.Logf, ConsumerGroups: true})
	require.ErrorContains(t, err, "broker 0: group.min.session.timeout.ms is 6000; it must be at most 450 (the scaled session timeout)")
	require.ErrorContains(t, err, "broker 0: transaction.max.timeout.ms is 1000; it must be at least 9000")
	require.ErrorContains(t, err, "broker 0: group.consumer.session.timeout.ms is 45000; it must be 450 (the scaled 45 s session of a KIP-848 consumer group member)")
	// A run of classic groups alone does not need the KIP-848 session.
	_, err = New(Config{Brokers: cluster.ListenAddrs(), Topics: map[string]int32{"fares": 1}, Logf: t.Logf})
	require.ErrorContains(t, err, "transaction.max.timeout.ms is 1000")
	require.NotContains(t, err.Error(), "group.consumer.session.timeout.ms")

	fit, err := StartListening("127.0.0.1:0", map[string]int32{"fares": 1}, 0, t.Logf)
	require.NoError(t, err)
	t.Cleanup(fit.Close)
	target, err := New(Config{Brokers: fit.ListenAddrs(), Topics: map[string]int32{"fares": 1}, Logf: t.Logf})
	require.NoError(t, err)
	require.NoError(t, target.Close())
}

// A boolean setting is held to its value, and a value of the wrong type
// is named as such.
func TestMisfittingNamesABooleanSettingOff(t *testing.T) {
	needed := (&Target{}).neededSettings(1)
	verification := "transaction.partition.verification.enable"
	require.Equal(t, []string{
		"broker 1: transaction.partition.verification.enable is false; it must be true (the model takes a leader to verify transactional writes)",
	}, misfitting("1", map[string]string{verification: "false"}, needed))
	require.Equal(t, []string{
		`broker 1: transaction.partition.verification.enable is "yes", not true or false; it must be true (the model takes a leader to verify transactional writes)`,
	}, misfitting("1", map[string]string{verification: "yes"}, needed))
	require.Empty(t, misfitting("1", map[string]string{verification: "true"}, needed))
}

// A cluster whose committed offsets may expire within a run is refused:
// the target's histories name no broker_config, so the model keeps them
// Kafka's default seven days.
func TestMisfittingNamesAShortOffsetsRetention(t *testing.T) {
	needed := (&Target{}).neededSettings(1)
	require.Equal(t, []string{
		"broker 1: offsets.retention.minutes is 60; it must be at least 1440 (no committed offset may expire during a run)",
	}, misfitting("1", map[string]string{"offsets.retention.minutes": "60"}, needed))
	require.Empty(t, misfitting("1", map[string]string{"offsets.retention.minutes": "10080"}, needed))
}
