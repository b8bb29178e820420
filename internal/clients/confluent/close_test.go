//go:build confluent

package confluent

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConfluentCloseHangsAfterAFatalError: confluent-kafka-go v2.11.1's
// Consumer.Close never returns once librdkafka raised a fatal error on the
// consumer, which is how the kip447 loop's KIP-848 consumers failed to
// close (docs/client-libraries.md).
//
// rd_kafka_consumer_close_queue returns the fatal error at once, without
// starting the close (rd_kafka_consumer_close_q: "If a fatal error has
// been raised and this is an explicit consumer_close() from the
// application we return a fatal error"). Close drops that return value
// and polls until rd_kafka_consumer_closed, which is never true, because
// the group was never told to terminate. confluent-kafka-go #1588 fixes
// Close so.
//
// In the loop the fatal error came from librdkafka 2.11's own rejoin
// after a max.poll.interval.ms leave, a ConsumerGroupHeartbeat of member
// epoch 0 with no subscription, no rebalance timeout and no owned
// partitions, which Kafka refuses with INVALID_REQUEST
// (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid)
// and librdkafka takes as fatal; librdkafka #5488 (2.15.0) fixes the
// rejoin. Here the cluster answers the member's heartbeats INVALID_REQUEST
// once it has its partitions, and the test closes the consumer.
//
// The consumer that does not close is left behind: its Close polls every
// 100 ms until the test binary exits.
func TestConfluentCloseHangsAfterAFatalError(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, labTopic), kfake.BrokerConfigs(map[string]string{
		"group.consumer.session.timeout.ms": "1000", "group.consumer.heartbeat.interval.ms": "100"}))
	must(t, err, "starting kfake")
	t.Cleanup(cluster.Close)
	admin, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic(labTopic))
	must(t, err, "a kgo client")
	t.Cleanup(admin.Close)
	must(t, admin.ProduceSync(t.Context(), &kgo.Record{Value: []byte("r0")}).FirstErr(), "producing")

	consumer, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": strings.Join(cluster.ListenAddrs(), ","), "group.id": labGroup, "group.protocol": "consumer",
		"enable.auto.commit": false, "auto.offset.reset": "earliest", "go.logs.channel.enable": true,
		"go.logs.channel": make(chan kafka.LogEvent, 1000)})
	must(t, err, "a librdkafka consumer")
	must(t, consumer.Subscribe(labTopic, nil), "Subscribe")
	if !pollUntil(consumer, func(ev kafka.Event) bool { _, ok := ev.(*kafka.Message); return ok }) {
		t.Fatal("the consumer read nothing in 10s")
	}

	cluster.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		resp := req.(*kmsg.ConsumerGroupHeartbeatRequest).ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil, true
	})
	if !pollUntil(consumer, func(ev kafka.Event) bool { e, ok := ev.(kafka.Error); return ok && e.IsFatal() }) {
		t.Fatal("librdkafka raised no fatal error in 10s after its heartbeats were answered INVALID_REQUEST")
	}

	closed := make(chan error, 1)
	go func() { closed <- consumer.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) on a consumer with a fatal error: confluent-kafka-go no longer hangs there "+
			"(the bug this test documents, seen in v2.11.1, looks fixed); make this test assert that Close returns", err)
	case <-time.After(3 * time.Second):
		t.Log("Close of a consumer with a fatal error did not return in 3s")
	}
}

// pollUntil polls the consumer until it delivers an event that is, for
// at most 10 s.
func pollUntil(c *kafka.Consumer, is func(kafka.Event) bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if ev := c.Poll(50); ev != nil && is(ev) {
			return true
		}
	}
	return false
}
