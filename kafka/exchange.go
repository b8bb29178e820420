package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fencecheck/fencecheck/model"
)

// exchange sends req along rt and returns the broker's answer as R, or,
// when there is no answer to read, the undecided result to give instead.
func exchange[R kmsg.Response](ctx context.Context, t *Target, kind model.Kind, rt route, req kmsg.Request) (R, *model.Result) {
	var zero R
	ctx, cancel := t.requestCtx(ctx)
	defer cancel()
	sent := time.Now()
	resp, err := t.routes.send(ctx, rt, req)
	t.clock.exchanged(req, resp, sent, time.Now())
	if err != nil {
		if errors.Is(err, errNotSent) {
			// Never applied, but the format has no word for "refused
			// before it began"; undecided is never wrong.
			res := t.undecided(kind, "could not be sent: %v", err)
			return zero, &res
		}
		t.cfg.Logf("kafka: %s: no answer: %v", kind, err)
		res := model.NoAnswer()
		return zero, &res
	}
	return typedAnswer[R](t, kind, resp)
}

// typedAnswer is resp as R, or undecided when the broker answered with
// another kind of response.
func typedAnswer[R kmsg.Response](t *Target, kind model.Kind, resp kmsg.Response) (R, *model.Result) {
	typed, ok := resp.(R)
	if !ok {
		res := t.undecided(kind, "the answer is a %T", resp)
		return typed, &res
	}
	return typed, nil
}

// toCoordinator routes to the coordinator of key.
func (t *Target) toCoordinator(kind int8, key string, codes func(kmsg.Response) []int16) route {
	return route{
		pick:   func(ctx context.Context) (int32, error) { return t.routes.coordinator(ctx, kind, key) },
		forget: func() { t.routes.forgetCoordinator(kind, key) },
		codes:  codes,
	}
}

// toLeader routes to the leader of tp.
func (t *Target) toLeader(tp topicPartition, codes func(kmsg.Response) []int16) route {
	return route{
		pick: func(ctx context.Context) (int32, error) {
			id, _, err := t.routes.leader(ctx, tp)
			return id, err
		},
		forget: t.routes.forgetLeaders,
		codes:  codes,
	}
}

// toAnyBroker routes to whichever broker is known.
func (t *Target) toAnyBroker(codes func(kmsg.Response) []int16) route {
	return route{pick: t.routes.anyBroker, forget: func() {}, codes: codes}
}

// topCode reads a response's one top-level error code.
func topCode[R kmsg.Response](code func(R) int16) func(kmsg.Response) []int16 {
	return func(resp kmsg.Response) []int16 {
		if r, ok := resp.(R); ok {
			return []int16{code(r)}
		}
		return nil
	}
}
