// Package wire is what fencecheck reads off the Kafka protocol, the same
// for the requests the Kafka target sends and for those a recorded
// client sends: error codes in the history format's terms, and record
// batches.
package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// Result is the model's result for a Kafka error code answering a request
// of kind: success for 0, and the code's name where the history format
// knows it for that kind. Any other code is an error, since the format
// cannot say what it means: the caller records the operation as
// undecided, with the reason. A code Kafka never answers to the kind (a
// broker's own, for example FENCED_MEMBER_EPOCH to a TxnOffsetCommit)
// is one of those, because a history that holds it does not load.
func Result(kind model.Kind, code int16, resp model.Response) (model.Result, error) {
	if code == 0 {
		return model.OK(resp), nil
	}
	name := CodeName(code)
	switch {
	case !model.KnownCode(name):
		return model.Result{}, fmt.Errorf("the broker answered %s, which the history format has no name for", name)
	case !model.Answers(kind, name):
		return model.Result{}, fmt.Errorf("the broker answered %s, which Kafka never answers to %s, so the history format cannot hold it", name, kind.APIName())
	}
	return model.Fail(name), nil
}

// CodeName is Kafka's name of an error code, as kerr spells it
// ("PRODUCER_FENCED").
func CodeName(code int16) model.Code {
	if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code {
		return model.Code(e.Message)
	}
	return model.Code(fmt.Sprintf("UNKNOWN_ERROR_CODE_%d", code))
}

// FirstError picks the code that speaks for a request answered per
// partition: the first real refusal, else OPERATION_NOT_ATTEMPTED (which
// Kafka puts on the partitions it skipped because another failed), else 0.
func FirstError(codes []int16) int16 {
	var skipped int16
	for _, c := range codes {
		switch {
		case c == kerr.OperationNotAttempted.Code:
			skipped = c
		case c != 0:
			return c
		}
	}
	return skipped
}

// Misrouted reports whether an error code says the broker did nothing
// because it is not the coordinator or the leader, or not yet ready to be.
func Misrouted(code int16) bool {
	switch kerr.ErrorForCode(code) {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress,
		kerr.NotLeaderForPartition, kerr.LeaderNotAvailable, kerr.UnknownTopicOrPartition,
		kerr.UnknownTopicID, kerr.FencedLeaderEpoch, kerr.NotEnoughReplicas:
		return true
	}
	return false
}

// AddPartitionsCodes is every code of an AddPartitionsToTxn answer: the
// top-level one, then each partition's.
func AddPartitionsCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return nil
	}
	codes := []int16{r.ErrorCode}
	for _, topic := range r.Topics {
		for _, p := range topic.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// TxnOffsetCommitCodes is each partition's code of a TxnOffsetCommit
// answer, which has no top-level one.
func TxnOffsetCommitCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.TxnOffsetCommitResponse)
	if !ok {
		return nil
	}
	var codes []int16
	for _, topic := range r.Topics {
		for _, p := range topic.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// OffsetCommitCodes is each partition's code of an OffsetCommit answer,
// which has no top-level one.
func OffsetCommitCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.OffsetCommitResponse)
	if !ok {
		return nil
	}
	var codes []int16
	for _, topic := range r.Topics {
		for _, p := range topic.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// LeaveCodes is every code of a LeaveGroup answer: the top-level one,
// then each member's (v3 on).
func LeaveCodes(resp kmsg.Response) []int16 {
	r, ok := resp.(*kmsg.LeaveGroupResponse)
	if !ok {
		return nil
	}
	codes := []int16{r.ErrorCode}
	for _, m := range r.Members {
		codes = append(codes, m.ErrorCode)
	}
	return codes
}
