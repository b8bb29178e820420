package workload

// Topics are the topics the workload writes and reads, with the most
// partitions any exploration draws: a real broker needs them created.
var Topics = map[string]int32{inputTopic: 2, writerTopic: 2, workerTopic: 2}
