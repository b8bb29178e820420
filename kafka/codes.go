package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fencecheck/fencecheck/model"
)

// result is the model's result for a Kafka error code: success for 0, the
// code's name where the history format knows it, and undecided (logged)
// for any other code, since the format cannot say what it means.
func (t *Target) result(kind model.Kind, code int16, resp model.Response) model.Result {
	if code == 0 {
		return model.OK(resp)
	}
	name := codeName(code)
	if model.KnownCode(name) {
		return model.Fail(name)
	}
	return t.undecided(kind, "the broker answered %s, which the history format has no name for", name)
}

// codeName is Kafka's name of an error code, as kerr spells it
// ("PRODUCER_FENCED").
func codeName(code int16) model.Code {
	if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code {
		return model.Code(e.Message)
	}
	return model.Code(fmt.Sprintf("UNKNOWN_ERROR_CODE_%d", code))
}

// firstError picks the code that speaks for a request answered per
// partition: the first real refusal, else OPERATION_NOT_ATTEMPTED (which
// Kafka puts on the partitions it skipped because another failed), else 0.
func firstError(codes []int16) int16 {
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
