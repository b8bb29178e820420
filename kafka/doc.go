// Package kafka is the Kafka target: the broker interface of package model
// spoken over the real Kafka wire protocol, so that fencecheck can check any
// Kafka-protocol broker. NewKfake runs an in-process kfake cluster (the
// default, needing no server); New drives a cluster by its bootstrap
// addresses.
//
// Every request is a raw kmsg request that the caller shapes: the producer
// ids, epochs, sequences, generations and member ids it carries are the
// caller's, and nothing is retried unless the broker said it did nothing (a
// request sent to a broker that is not the coordinator or the leader, or a
// dial that failed). A request whose answer never came is an undecided
// result (model.NoAnswer); an answer this package cannot read, or an error
// code the history format does not know, is REQUEST_TIMED_OUT, also
// undecided, with the reason logged.
//
// Names. A run works in a namespace of its own: topic "fares" is
// TopicPrefix+RunID+"fares" on the cluster, and transactional ids and group
// names carry the same prefix. On a shared cluster this keeps earlier runs'
// logs, producer ids and groups out of sight, as the model starts empty.
// Only topics with the prefix are ever created.
//
// Time. The model's clock is in milliseconds; a Kafka broker's is the wall
// clock. Config.TimeScale converts: transaction and session timeouts are
// sent scaled (60 s becomes 600 ms at the default 0.01). Tick(ms) waits
// until the broker has fired the timers the model fires at that tick, and while a transaction
// the model keeps is open it sleeps until the transaction's time on the
// broker has caught up with the model's; with nothing due and nothing
// open it returns at once (clock.go). Real time also passes between
// requests, which the model does not see: at the default scale, a run
// must send its requests well within the scaled timeouts, or the broker
// expires what the model keeps. TickLength lengthens a tick that would
// leave a transaction nearly due on kfake to its deadline, so that the
// model aborts it at that tick too. CatchUp, asked before each request,
// says when the requests since the last tick have brought a timer the
// model keeps (a transaction, a member's session) within 50 ms of its
// deadline on the broker: the workload then records a tick for the real
// time that passed, run on past that deadline (catchup.go). A timer that
// may have fired on the broker before an answer, with no check between,
// is the target's clock lost step: CatchUp says so, naming
// Config.TimeScale's flag, --time-scale.
//
// Reads. A read_committed fetch is answered the way Kafka answers it: the
// broker stops at the last stable offset and sends, with the batches, the
// list of aborted transactions in their range; the records of those
// transactions are dropped by that list, exactly as a Kafka consumer does,
// and control batches are never returned. Nothing else is filtered: what
// the checker sees is what the broker declared.
//
// A real client. StartSession runs a consume-transform-produce worker on
// franz-go's own exactly-once loop (kgo.GroupTransactSession). It sends its
// own requests, so it dials through package recorder, which reads each
// request and response frame off the connection and records the ones the
// history format has types for (SessionConfig.Record), and imposes the
// workload's faults there: a stall holds the worker's traffic, a crash
// drops it, a lost response closes the connection after the request. With
// SessionConfig.Proxy the worker goes through a fencecheck proxy in front
// of the cluster instead (NewProxy), recorded and faulted there as any
// client is.
//
// Settings. A cluster reached by its address (New) must be set up for
// what the target sends. The timeouts are scaled (Config.TimeScale,
// DefaultTimeScale by default; fencecheck run's --time-scale), so the
// cluster must accept short ones, and its timers must fire on time, as the
// model's do. At the default scale a broker needs:
//
//   - group.min.session.timeout.ms at most 450 (the scaled 45 s session
//     timeout; Kafka's default, 6000, refuses every join);
//   - group.max.session.timeout.ms at least 450;
//   - transaction.max.timeout.ms at least 9000 (the scaled 15 minutes,
//     the longest transaction timeout a run sends);
//   - group.consumer.session.timeout.ms 450 (the scaled 45 s session of a
//     KIP-848 member, which the model keeps; Kafka takes it only with
//     group.consumer.min.session.timeout.ms at most 450, and a heartbeat
//     interval below it); checked only with Config.ConsumerGroups, for a
//     run whose workers speak KIP-848;
//   - group.initial.rebalance.delay.ms 0: the first join of a new group
//     would otherwise wait 3 s, and the open transactions run out;
//   - transaction.abort.timed.out.transaction.cleanup.interval.ms at most
//     10: a transaction must be aborted at its deadline, not up to 10 s
//     after it;
//   - transaction.state.log.replication.factor, transaction.state.log.min.isr
//     and offsets.topic.replication.factor at most its number of brokers
//     (1 on a one-broker cluster), or no coordinator is ever available;
//   - transactional.id.expiration.ms and producer.id.expiration.ms of at
//     least a day, so that no id expires during a run;
//   - offsets.retention.minutes of at least a day (1440), so that no
//     committed offset expires during a run;
//   - transaction.partition.verification.enable true (Kafka's default):
//     the target's histories name no broker settings, so the model takes
//     each leader to verify a transactional write with its coordinator.
//
// New reads each broker's settings (DescribeConfigs) and refuses a
// cluster whose settings do not fit, naming each: the setting, its value
// and the value needed. A setting the broker does not report (kfake
// reports few) is not checked. What cannot be checked: that the brokers'
// clocks agree with this machine's (the target compares the start times
// the broker reports with its own clock), and that nothing else uses the
// topics, ids and groups under the run's prefix.
package kafka
