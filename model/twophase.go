package model

// TwoPhaseCommitConfig is the broker config that lets producers take part
// in a two-phase commit (KIP-939), under Kafka's name. Kafka 4.1 added it,
// off by default (TransactionStateManagerConfig).
const TwoPhaseCommitConfig = "transaction.two.phase.commit.enable"

// TwoPhaseCommit is what a history says of TwoPhaseCommitConfig. Its zero
// value is "not said", because a recording of a cluster whose config was
// not read must not be judged by a default it may not have.
type TwoPhaseCommit int8

const (
	TwoPhaseCommitUnknown TwoPhaseCommit = iota
	TwoPhaseCommitEnabled
	TwoPhaseCommitDisabled
)
