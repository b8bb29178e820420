package model

import (
	"context"
	"fmt"
)

// Apply answers op the way the reference broker does, and returns the state
// that follows. Faults other than Tick and BrokerRestart leave it unchanged.
func Apply(s State, op Op) (State, Result) {
	return apply(s, op, false)
}

// apply is Apply; judging, the markers of a transaction that ends (a
// timeout's abort) stay in flight (markers.go).
func apply(s State, op Op, judging bool) (State, Result) {
	s = s.atCall(op).landedBefore(op)
	st := newStep(s, op, nil)
	st.judging = judging
	out := st.run()
	if out.refuse != "" {
		if out.effects {
			return st.s, Fail(out.refuse)
		}
		return s, Fail(out.refuse)
	}
	return st.s, OK(out.resp)
}

// Check says whether a broker may have answered op with got in state s, and
// returns the state that follows. The error names the rule that refuses the
// answer. An undecided answer is always allowed: it is taken to have had its
// effect here (the checker places it anywhere after its call, or last, which
// is the same as never).
func Check(s State, op Op, got Result) (State, error) {
	return CheckContext(context.Background(), s, op, got)
}

// CheckContext is Check that gives up when ctx is done (a fetch over a long
// log is the one step that can take a while).
//
// The error, when there is one, is a *Disallowed naming the rule. When the
// broker refused rightly but with another class than the rule's
// (Disallowed.CodeOnly), the state returned is the one that follows the
// rule's refusal: nothing took effect either way.
func CheckContext(ctx context.Context, s State, op Op, got Result) (State, error) {
	if !op.Kind.IsRequest() {
		next, _ := apply(s, op, true)
		return next, nil
	}
	next, err := checkFiring(ctx, s.atCall(op), op, got)
	if err == nil && got.Answered {
		// Right in effect and class; its code may still be one that
		// Kafka sends only at other versions of the request.
		err = codeAtVersion(op, got.Err)
	}
	if err == nil && got.Answered {
		err = WrongTimeoutRefusal(s.opts.TxnMaxTimeoutMs, op, got)
	}
	if err == nil && got.Answered {
		err = WrongSessionTimeoutRefusal(s.opts, op, got)
	}
	return next, err
}

// checkFiring is checkLanding, tried again once a timer that was due by
// the time op took effect has fired: on a wall clock any timer, on any
// clock an expiry whose sweep may have run (mayHaveFired). The answer
// stands if it is right once one did.
func checkFiring(ctx context.Context, s State, op Op, got Result) (State, error) {
	next, err := checkLanding(ctx, s, op, got)
	if err == nil {
		return next, err
	}
	for _, fired := range s.mayHaveFired(op) {
		if next, again := checkLanding(ctx, fired, op, got); again == nil {
			return next, nil
		}
	}
	return next, err
}

// checkLanding is check, tried again with the markers in flight that op
// touches landed when the answer is wrong without them: markers land at
// any moment, so as late as the answers allow (markers.go).
func checkLanding(ctx context.Context, s State, op Op, got Result) (State, error) {
	if got.Undecided() {
		// A lost answer says nothing of when the markers landed; it
		// takes the timing the model's own answers take.
		s = s.landedAhead(op)
	}
	landings := s.landings(op)
	if landings.len() > 0 && op.Kind == Produce && got.Succeeded() {
		// A produce's offset says whether the markers before it landed,
		// so trying them landed first changes no verdict; and it keeps
		// the search's states what they are when markers land at once,
		// which is how most brokers answer.
		if next, err := check(ctx, landings.at(0), op, got); err == nil {
			return next, nil
		}
	}
	next, err := check(ctx, s, op, got)
	if err == nil {
		return next.shownPending(op, got), nil
	}
	for i := min(1, landings.len()); i < landings.len(); i++ {
		if next, again := check(ctx, landings.at(i), op, got); again == nil {
			return next, nil
		}
	}
	if landings.len() > 0 {
		// Refused every way: the reason is given with every marker
		// landed, as a reader of the history expects them.
		return check(ctx, landings.at(0), op, got)
	}
	return next, err
}

// atCall is s with its clock at op's call, on a wall clock: a
// transaction begun or a session renewed by op is taken to have been so
// at the earliest, which lets its timer fire at the earliest too.
func (s State) atCall(op Op) State {
	if s.opts.WallClock && op.Kind.IsRequest() {
		s.now = max(s.now, op.Span.From)
	}
	return s
}

// check is CheckContext with no timer firing of its own.
func check(ctx context.Context, s State, op Op, got Result) (State, error) {
	st := newStep(s, op, &got)
	st.ctx = ctx
	out := st.run()
	if got.Answered && ClassOf(op.Kind, got.Err) == NoEffect && !JudgedByState(s.opts.GroupMaxSize, op, got) &&
		!MetadataRefusalJudged(s.opts.OffsetMetadataMaxKnown, op, got) {
		// Kafka refused before it wrote: legal in any state. Only a
		// transactions v2 implicit add may have come first; the checker
		// places such an answer anywhere after its call, or last, which
		// is the same as without the add (PartlyEffective).
		// The leader may have made a verification entry first
		// (verification.go).
		if st.added != nil {
			return st.mayHaveVerified(*st.added), nil
		}
		return st.mayHaveVerified(s), nil
	}
	if got.Undecided() {
		// Its effect, if the rules allow one; what the broker chose for it
		// (a producer id) stays unknown until a later answer shows it.
		if out.bad != nil || (out.refuse != "" && !out.effects) {
			return s, nil
		}
		return st.s, nil
	}
	class := ClassOf(op.Kind, got.Err)
	if out.bad != nil {
		return s, &Disallowed{Rule: out.rule, Want: Success, Got: class, Reason: out.bad.Error()}
	}
	if out.refuse != "" {
		next := s
		if out.effects {
			next = st.s
		}
		if class == ClassOf(op.Kind, out.refuse) {
			if wrong := wrongForVersion(op, out.rule, out.refuse, got.Err); wrong != nil {
				return next, wrong
			}
			return next, nil
		}
		if class == out.also {
			return next, nil
		}
		err := &Disallowed{Rule: out.rule, Want: ClassOf(op.Kind, out.refuse), Got: class, CodeOnly: isRefusal(class),
			Reason: fmt.Sprintf("answered %s, but the broker must refuse with %s: %s", answerName(got), out.refuse, out.why)}
		return next, err
	}
	if class == Success || class == out.also {
		return st.s, nil
	}
	return s, &Disallowed{Rule: mustSucceed, Want: Success, Got: class,
		Reason: fmt.Sprintf("answered %s, but the request must succeed", answerName(got))}
}

// keepBegun is out with the transaction the request began kept, when a
// later check refused it: under transactions v2 the coordinator adds the
// partition (for a produce) or the group's offsets partition (for a
// TxnOffsetCommit) before the partition's leader or the group coordinator
// looks at the request (ReplicaManager.appendRecords verifies with
// TransactionCoordinator.handleAddPartitionsToTransaction first;
// KafkaApis.handleTxnOffsetCommitRequest likewise, 4.0.0 to 4.3.1), and a
// refusal there does not take the add back.
func (st *step) keepBegun(out outcome) outcome {
	if st.begun && out.refuse != "" {
		out.effects = true
	}
	return out
}

// mustSucceed names the rule of every request the rules accept.
const mustSucceed = "must-succeed"

// Disallowed is an answer the rules do not allow: the rule that decides it
// (a stable name, such as "epoch-fence", that known findings match on),
// the class the rule answers, the class the broker answered, and why.
type Disallowed struct {
	Rule      string
	Want, Got Class
	// CodeOnly: the rule refuses and so did the broker, with another
	// class. Nothing took effect either way, so the answer's effects are
	// right and only its error code is wrong (docs/history-format.md:
	// error-codes).
	CodeOnly bool
	Reason   string
}

func (d *Disallowed) Error() string { return d.Reason }

// isRefusal reports whether an answer of class c says that nothing took
// effect. A duplicate is not one: the producer takes it as success.
func isRefusal(c Class) bool {
	switch c {
	case Success, Duplicate, Undecided:
		return false
	}
	return true
}

func answerName(r Result) string {
	if r.Err == "" {
		return "success"
	}
	return string(r.Err)
}

// outcome is what a rule decides for one request.
type outcome struct {
	resp Response
	rule string // the rule that decides, for a refusal or a bad answer
	// refuse is the refusal's code; "" is success.
	refuse Code
	why    string // for a refusal: the rule and its source
	// also is one more class the answer may take: DUPLICATE_SEQUENCE_NUMBER
	// for a retried batch, or the other fencing class where two checks
	// refuse at once.
	also Class
	// effects: the refusal changed the state all the same (Kafka's two-step
	// fencing answers CONCURRENT_TRANSACTIONS after bumping the epoch).
	effects bool
	// bad: the broker's answer breaks a rule (a wrong offset, an epoch that
	// did not grow, a record it must not return).
	bad error
}

// refuse is a refusal by the named rule.
func refuse(rule string, code Code, format string, args ...any) outcome {
	return outcome{rule: rule, refuse: code, why: fmt.Sprintf(format, args...)}
}

func ok(resp Response) outcome { return outcome{resp: resp} }

// bad is an answer the named rule does not allow.
func bad(rule string, format string, args ...any) outcome {
	return outcome{rule: rule, bad: fmt.Errorf(format, args...)}
}

// step is one request being decided. got is nil when the model answers
// itself; otherwise the broker's answer, whose choices (producer ids,
// epochs, member ids, assignments) the rules take and check.
type step struct {
	ctx context.Context
	s   State
	op  Op
	got *Result
	// judging: the step is part of judging a broker's answers, so an
	// ending transaction's markers stay in flight (markers.go).
	judging bool
	// begun: the request began a transaction, or added to it, before a
	// later check refused it, and the refusal keeps that (KIP-890: the
	// coordinator's implicit add comes before the leader's and the
	// group's checks).
	begun bool
	// added is the state right after such an implicit add: what a refusal
	// with no effect (NoEffect) may leave behind.
	added *State
	// verified is the verification entry a transactional produce made or
	// moved at its partition's leader, which stays whatever the answer
	// (verification.go).
	verified *verification
	// staticTakeover: the join is a static member's rejoin with no member
	// id, which took its instance over from replaced (static.go).
	staticTakeover bool
	replaced       string
}

// markBegun records that the request began or added to its transaction by
// itself, with the state that add left.
func (st *step) markBegun() {
	st.begun = true
	added := st.s
	st.added = &added
}

func newStep(s State, op Op, got *Result) *step {
	return &step{ctx: context.Background(), s: s, op: op, got: got}
}

// undecided reports that the broker's answer is unknown: its choices must
// stay open, not take the model's own.
func (st *step) undecided() bool { return st.got != nil && st.got.Undecided() }

// observed is the broker's successful response, or nil when the model
// chooses (it answers itself, the answer was lost, or it was a refusal).
func (st *step) observed() *Response {
	if st.got == nil || !st.got.Succeeded() {
		return nil
	}
	return &st.got.Resp
}

// answered reports whether the broker answered with code's class.
func (st *step) answered(code Code) bool {
	return st.got != nil && st.got.Answered && ClassOf(st.op.Kind, st.got.Err) == ClassOf(st.op.Kind, code)
}

func (st *step) run() outcome {
	out := st.runOp()
	st.loadedBy()
	return out
}

// runOp answers the request, or moves the clock, by the kind's rules.
func (st *step) runOp() outcome {
	r := st.op.Req
	if out := emptyGroupID(st.op.Kind, r); out != nil {
		return *out
	}
	switch st.op.Kind {
	case InitProducerID:
		return st.initProducerID(r)
	case AddPartitions:
		return st.addPartitions(r)
	case AddOffsets:
		return st.addOffsets(r)
	case Produce:
		return st.produceDeviations(r, st.keepVerified(st.keepBegun(st.produce(r))))
	case TxnOffsetCommit:
		return st.keepBegun(st.perPartition(r, st.txnOffsetCommit))
	case EndTxn:
		return st.endTxn(r)
	case JoinGroup:
		return st.joinGroup(r)
	case LeaveGroup:
		return st.leaveGroup(r)
	case OffsetFetch:
		return st.offsetFetch(r)
	case Fetch:
		return st.fetch(r)
	case Heartbeat:
		return st.heartbeat(r)
	case OffsetCommit:
		return st.perPartition(r, st.offsetCommit)
	case SyncGroup:
		return st.syncGroup(r)
	case ConsumerGroupHeartbeat:
		return st.consumerGroupHeartbeat(r)
	case DeleteRecords:
		return st.deleteRecords(r)
	case CreateTopics, CreatePartitions, DeleteTopics:
		return st.topicAdmin(r)
	case AlterConfig:
		return st.alterConfig(r)
	case Tick:
		st.tick(r.Ms)
	case BrokerRestart:
		// A restart keeps the logs, and producer state rebuilt from them
		// is the state before (Kafka's log recovery), but for the batches
		// a clean shutdown's snapshot drops. The coordinator sends the
		// markers of the transactions it was ending again
		// (TransactionStateManager.loadTransactionsForTxnTopicPartition):
		// the model's own answers have them land now; judging, they may
		// land later still.
		st.landOwnAnswer()
		st.s.restartedAt = st.s.now
		st.restartKeepsLastBatches()
		st.restartForgetsVerification()
		st.restartForgets()
		st.restartReloadsGroups()
		st.restartReloadsConsumerGroups()
	}
	return ok(NewResponse())
}
