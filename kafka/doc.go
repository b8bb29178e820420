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
// sent scaled (60 s becomes 600 ms at the default 0.01). On a real cluster
// Tick(ms) sleeps ms*TimeScale; on kfake it waits until the broker has
// fired the timers the model fires at that tick, and while a transaction
// the model keeps is open it sleeps until the transaction's time on the
// broker has caught up with the model's; with nothing due and nothing
// open it returns at once (clock.go). Real time also passes between
// requests, which the model does not see: at the default scale, a run
// must send its requests well within the scaled timeouts, or the broker
// expires what the model keeps. TickLength lengthens a tick that would
// leave a transaction nearly due on kfake to its deadline, so that the
// model aborts it at that tick too.
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
package kafka
