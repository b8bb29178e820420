// Package confluent is the job of package clients written on
// confluentinc/confluent-kafka-go (v2.11.1, which bundles librdkafka
// 2.11.1), in each way the library offers for committing a
// transaction's input offsets:
//
//   - kip447: the loop the library's documentation teaches (the
//     "Transactional producer API" section of kafka/kafka.go and the
//     transactional methods' docs in kafka/producer.go), with the
//     consumer handling of its transactions example: a consumer with
//     automatic commits off, a transactional producer, and
//     SendOffsetsToTransaction with consumer.GetConsumerGroupMetadata(),
//     whose member id and generation the group coordinator checks
//     (TxnOffsetCommit v3), so that it refuses a zombie's commit.
//   - group-id-only: the same loop with kafka.NewTestConsumerGroupMetadata
//     (generation -1, no member id) in place of the consumer's metadata,
//     which the broker takes without fencing: a zombie consumer's commit
//     is taken (seed 002).
//
// There is no shipped-example loop: the library's transactions example
// (examples/transactions_example in its repository) is a module of its
// own, github.com/confluentinc/confluent-kafka-go/examples/v2, which the
// library's module does not ship.
//
// librdkafka is C (cgo), so every file that imports the library is built
// only with the build tag confluent (go test -tags confluent); without it
// this package is this documentation. librdkafka opens its own
// connections: its loops are DialsItself, given TCP addresses. It
// negotiates its request versions with the brokers (ApiVersions), so
// clients.Job.KafkaVersion is not used.
package confluent
