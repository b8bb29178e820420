package model

// Code is a Kafka error code name.
type Code string

// The error codes the history format knows.
const (
	ProducerFenced           Code = "PRODUCER_FENCED"
	InvalidProducerEpoch     Code = "INVALID_PRODUCER_EPOCH"
	InvalidTxnState          Code = "INVALID_TXN_STATE"
	ConcurrentTransactions   Code = "CONCURRENT_TRANSACTIONS"
	OutOfOrderSequenceNumber Code = "OUT_OF_ORDER_SEQUENCE_NUMBER"
	DuplicateSequenceNumber  Code = "DUPLICATE_SEQUENCE_NUMBER"
	UnknownProducerID        Code = "UNKNOWN_PRODUCER_ID"
	InvalidProducerIDMapping Code = "INVALID_PRODUCER_ID_MAPPING"
	IllegalGeneration        Code = "ILLEGAL_GENERATION"
	UnknownMemberID          Code = "UNKNOWN_MEMBER_ID"
	FencedInstanceID         Code = "FENCED_INSTANCE_ID"
	UnstableOffsetCommit     Code = "UNSTABLE_OFFSET_COMMIT"
	TransactionAbortable     Code = "TRANSACTION_ABORTABLE"
	RequestTimedOut          Code = "REQUEST_TIMED_OUT"
	OperationNotAttempted    Code = "OPERATION_NOT_ATTEMPTED"
)

// Codes lists the error codes a history may carry.
var Codes = []Code{
	ProducerFenced, InvalidProducerEpoch, InvalidTxnState, ConcurrentTransactions,
	OutOfOrderSequenceNumber, DuplicateSequenceNumber, UnknownProducerID,
	InvalidProducerIDMapping, IllegalGeneration, UnknownMemberID, FencedInstanceID,
	UnstableOffsetCommit, TransactionAbortable, RequestTimedOut, OperationNotAttempted,
}

// Class groups the codes that brokers answer for the same refusal. Brokers
// differ in which code of a class they send (Kafka itself changed several
// across versions), so answers are compared by class. This table is the one
// place where the classes are written down.
type Class string

const (
	Success          Class = "success"
	FencedProducer   Class = "fenced producer"   // KIP-98; KIP-588 renamed INVALID_PRODUCER_EPOCH to PRODUCER_FENCED outside produce
	FencedConsumer   Class = "fenced consumer"   // KIP-447: a stale generation, member or static instance
	BadTxnState      Class = "invalid txn state" // KIP-98; KIP-890 answers TRANSACTION_ABORTABLE where v1 said INVALID_TXN_STATE
	Busy             Class = "retriable"         // CONCURRENT_TRANSACTIONS: try again, nothing happened
	OutOfOrder       Class = "out of order"      // KIP-98; KIP-360 answers UNKNOWN_PRODUCER_ID where the leader lost the producer
	Duplicate        Class = "duplicate"         // the batch is already in the log: the producer takes it as success
	WrongProducerID  Class = "wrong producer id"
	Unstable         Class = "unstable offsets" // KIP-447
	Undecided        Class = "undecided"        // no answer: may or may not have taken effect
	UnknownErrorCode Class = "unknown error"
)

var classes = map[Code]Class{
	"":                       Success,
	ProducerFenced:           FencedProducer,
	InvalidProducerEpoch:     FencedProducer,
	InvalidTxnState:          BadTxnState,
	TransactionAbortable:     BadTxnState,
	ConcurrentTransactions:   Busy,
	OutOfOrderSequenceNumber: OutOfOrder,
	UnknownProducerID:        OutOfOrder,
	DuplicateSequenceNumber:  Duplicate,
	InvalidProducerIDMapping: WrongProducerID,
	IllegalGeneration:        FencedConsumer,
	UnknownMemberID:          FencedConsumer,
	FencedInstanceID:         FencedConsumer,
	UnstableOffsetCommit:     Unstable,
	RequestTimedOut:          Undecided,
	// Under transactions v2 a client library reports a fenced producer's
	// batch as not attempted; nothing was written.
	OperationNotAttempted: FencedProducer,
}

// ClassOf is the class of an error code ("" is success).
func ClassOf(c Code) Class {
	if k, ok := classes[c]; ok {
		return k
	}
	return UnknownErrorCode
}

// KnownCode reports whether c is a code the history format knows.
func KnownCode(c Code) bool { _, ok := classes[c]; return ok && c != "" }
