package checker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// porcupineModel is the reference model seen by porcupine: each step asks
// model.Check whether the broker's answer is one the rules allow. The rules
// live in model/ only. Strict, an answer must be what the rules say, error
// class included; otherwise (judging effects only) a rightful refusal with
// another class fits too, as the refusal the rules give.
func porcupineModel(opts model.Options, topics map[string]int32, strict bool, accepted []Signature) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return model.WithTopics(model.Init(opts), topics) },
		StepContext: func(ctx context.Context, state, input, _ any) (bool, any) {
			op := input.(*histories.Op)
			next, err := model.CheckContext(ctx, state.(model.State), spanned(op), op.Result)
			return fits(op, err, strict, accepted), next
		},
		Equal: func(a, b any) bool { return model.Equal(a.(model.State), b.(model.State)) },
		Hash:  func(s any) uint64 { return model.Hash(s.(model.State)) },
		DescribeOperation: func(input, _ any) string {
			op := input.(*histories.Op)
			does, result := describe(*op)
			return fmt.Sprintf("op %d: %s → %s", op.ID, does, result)
		},
		DescribeState: func(s any) string { return s.(model.State).String() },
		Partition:     partition,
	}
}

// spanned is op's request with the span in which it took effect, which
// the model reads on a wall clock.
func spanned(op *histories.Op) model.Op {
	m := op.Op
	m.Span = model.Span{From: op.Call, To: model.Unanswered}
	if op.Returned && !model.AppliesAfterAnswer(op.Kind) {
		m.Span.To = op.Return
	}
	return m
}

// fits reports whether model.Check's verdict lets an answer stand: with no
// error, or with only its error class wrong when effects alone are judged
// or the wrong code is an accepted one.
func fits(op *histories.Op, err error, strict bool, accepted []Signature) bool {
	if err == nil {
		return true
	}
	d := codeOnly(err)
	return d != nil && (!strict || slices.Contains(accepted, codeSignature(op, d)))
}

// codeSignature is the error-codes signature of op's wrong code d.
func codeSignature(op *histories.Op, d *model.Disallowed) Signature {
	return Signature{Check: ErrorCodes, Type: op.Kind, Rule: d.Rule, Answer: model.ClassOf(op.Kind, op.Result.Err)}
}

// codeOnly is err when it says the answer's effects are right and its
// error class is not, or nil.
func codeOnly(err error) *model.Disallowed {
	var d *model.Disallowed
	if errors.As(err, &d) && d.CodeOnly {
		return d
	}
	return nil
}

// linearizability is the outcome of the linearizable and error-codes
// checks, with what the visualization needs.
type linearizability struct {
	verdict Verdict // linearizable: effects
	codes   Verdict // error-codes: the classes of rightful refusals
	model   porcupine.Model
	info    porcupine.LinearizationInfo
	ops     []porcupine.Operation // drawn, with Options.Visualize only
	// judged is how many operations the search judged: WriteHTML needs to
	// know, and a long history's ops are not kept once judged.
	judged int
}

// modelOptions are the model's options for judging h at one transaction
// version: what the history says of its broker, and the deviations opts
// allow.
func modelOptions(h histories.History, version int, opts Options) model.Options {
	return model.Options{TxnVersion: version, WallClock: h.WallClock, MarkerWindow: h.AsyncMarkers, Allow: opts.Allow,
		Expiry: h.Expiry, TxnMaxTimeoutMs: h.TxnMaxTimeoutMs, NoPartitionVerification: h.NoPartitionVerification,
		GroupMaxSize: h.GroupMaxSize, ConsumerGroupMaxSize: h.ConsumerGroupMaxSize,
		MigrationPolicy: h.MigrationPolicy, TwoPhaseCommit: h.TwoPhaseCommit,
		GroupMinSessionTimeoutMs: h.GroupMinSessionTimeoutMs, GroupMaxSessionTimeoutMs: h.GroupMaxSessionTimeoutMs,
		OffsetMetadataMaxBytes: h.OffsetMetadataMaxBytes, OffsetMetadataMaxKnown: h.OffsetMetadataMaxKnown,
		TopicsChangeOutside: h.TopicsChangeOutside}
}

// checkLinearizable runs porcupine under each transaction protocol the
// history may have been recorded with, window by window (windows.go); it
// holds if one explains it. It asks first for an order that explains
// every answer exactly, which a correct broker's history has; failing
// that, for one that explains the effects (linearizable), whose refusals
// with another class than the rules' are then error-codes' violations.
func checkLinearizable(h histories.History, opts Options) linearizability {
	timeout, verbose := opts.Timeout, opts.Visualize
	ops := porcupineOps(h)
	versions := txnVersions(h)
	unknown := Verdict{Status: Unknown, Reason: fmt.Sprintf("porcupine gave up after %v; try a longer --timeout", timeout)}
	gaveUp := false
	for _, version := range versions {
		m := porcupineModel(modelOptions(h, version, opts), h.Topics, true, opts.AllowCodes)
		switch search := checkWindowed(m, ops, timeout, phaseReport(opts.Progress, Linearizable)); search.result {
		case porcupine.Ok:
			lin := linearizability{verdict: held(Linearizable), codes: held(ErrorCodes), model: m, judged: len(ops)}
			if verbose {
				lin.model, lin.info, lin.ops = drawn(m, ops, search, timeout)
			}
			return lin
		case porcupine.Unknown:
			gaveUp = true
		}
	}
	var first linearizability
	var firstSearch windowedResult
	for i, version := range versions {
		m := porcupineModel(modelOptions(h, version, opts), h.Topics, false, opts.AllowCodes)
		search := checkWindowed(m, ops, timeout, nil)
		lin := linearizability{verdict: held(Linearizable), codes: held(ErrorCodes), model: m, judged: len(ops)}
		if opts.only != Linearizable {
			lin.codes = wrongCodesVerdict(m, ops, timeout, opts.AllowCodes)
		}
		switch {
		case search.result == porcupine.Ok:
			if verbose {
				lin.model, lin.info, lin.ops = drawn(m, ops, search, timeout)
			}
			return lin
		case search.result == porcupine.Unknown || gaveUp:
			lin.verdict, lin.codes = unknown, unknown
			lin.verdict.Check, lin.codes.Check = Linearizable, ErrorCodes
		case opts.only != "":
			lin.verdict = Verdict{Check: Linearizable, Status: Violated}
		default:
			lin.verdict = Verdict{Check: Linearizable, Status: Violated,
				Violations: []Violation{explain(m, search, h, ops, timeout)}}
		}
		if i == 0 {
			first, firstSearch = lin, search
		}
	}
	if verbose {
		first.model, first.info, first.ops = drawn(first.model, ops, firstSearch, timeout)
	}
	return first
}

// wrongCodesVerdict is error-codes' verdict once no order explains every
// answer exactly: the refusals, in the longest order porcupine finds
// judging effects, whose class is not the rules'. That order is searched
// over the whole history, which is done up to wholeHistoryOps operations;
// beyond, the check says it could not decide.
func wrongCodesVerdict(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration, accepted []Signature) Verdict {
	if len(ops) > wholeHistoryOps {
		return Verdict{Check: ErrorCodes, Status: Unknown, Reason: fmt.Sprintf(
			"some answer's error class is not the model's; error-codes names it in histories of at most %d operations", wholeHistoryOps)}
	}
	_, info := check(m, ops, timeout, true)
	return codesVerdict(wrongCodes(m, info, accepted))
}

func held(check string) Verdict { return Verdict{Check: check} }

// codesVerdict is error-codes' verdict on the refusals found with another
// class than the rules'.
func codesVerdict(wrong []Violation) Verdict {
	if len(wrong) == 0 {
		return held(ErrorCodes)
	}
	return Verdict{Check: ErrorCodes, Status: Violated, Violations: wrong}
}

// wrongCodes replays the longest order porcupine found for each piece of
// the history and lists the refusals in it whose class is not the rules'
// and not an accepted wrong code.
// For a linearizable history that order is complete; for one that is not,
// it is the longest legal prefix, and what lies beyond is not judged.
func wrongCodes(m porcupine.Model, info porcupine.LinearizationInfo, accepted []Signature) []Violation {
	var wrong []Violation
	for _, partials := range info.PartialLinearizationsOperations() {
		state := m.Init().(model.State)
		for _, o := range longestOf(partials) {
			op := o.Input.(*histories.Op)
			next, err := model.Check(state, spanned(op), op.Result)
			if d := codeOnly(err); d != nil && !slices.Contains(accepted, codeSignature(op, d)) {
				wrong = append(wrong, Violation{Op: op.ID, Rule: d.Rule, Reason: fmt.Sprintf(
					"%s answered %s (%s); the rule %s refuses it as %s: %s", op.Kind, op.Result.Err, d.Got, d.Rule, d.Want, d.Reason)})
			}
			state = next
		}
	}
	slices.SortFunc(wrong, func(a, b Violation) int { return a.Op - b.Op })
	return wrong
}

func check(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	if verbose {
		return porcupine.CheckOperationsVerbose(m, ops, timeout)
	}
	return porcupine.CheckOperationsTimeout(m, ops, timeout), porcupine.LinearizationInfo{}
}

// txnVersions are the protocols to try, the likelier first: a history that
// does not say is judged under both (docs/history-format.md), and an
// EndTxn answered with a producer id and epoch is a sign of transactions
// v2.
func txnVersions(h histories.History) []int {
	return versionsSigned(h, slices.ContainsFunc(h.Ops, func(op histories.Op) bool { return signsV2(&op) }))
}

// versionsSigned is txnVersions of a history whose operations show the
// sign of transactions v2 (signsV2) or not.
func versionsSigned(h histories.History, signed bool) []int {
	switch {
	case h.TransactionsVersion != 0:
		return []int{h.TransactionsVersion}
	case signed:
		return []int{2, 1}
	}
	return []int{1, 2}
}

// signsV2 reports whether op is an EndTxn answered with a producer id and
// epoch, which only transactions v2 gives.
func signsV2(op *histories.Op) bool {
	return op.Kind == model.EndTxn && op.Result.Succeeded() && op.Result.Resp.ProducerID != model.NoProducerID
}

// porcupineOps are the operations linearizability judges: requests, ticks and
// broker restarts. An undecided request stays open until after everything:
// it may take effect at any time after its call. Faults happen at an instant.
func porcupineOps(h histories.History) []porcupine.Operation {
	var never int64
	procs := map[string]int{}
	for _, op := range h.Ops {
		never = max(never, op.Call+1, op.Return+1)
		if _, ok := procs[op.Proc]; !ok {
			procs[op.Proc] = len(procs)
		}
	}
	// Room for every operation at once: grown by appending, a long
	// history's slice was copied over and over, the old and the new
	// array held at once each time.
	ops := make([]porcupine.Operation, 0, len(h.Ops))
	for i := range h.Ops {
		if o, judged := porcupineOp(h, &h.Ops[i], procs[h.Ops[i].Proc], never); judged {
			ops = append(ops, o)
		}
	}
	return ops
}

// porcupineOp is op as the search judges it, issued by porcupine's client
// id client, with never as the return of one that may take effect at any
// time after its call; judged is false for an operation the search
// leaves out. h gives the broker's config.
func porcupineOp(h histories.History, op *histories.Op, client int, never int64) (o porcupine.Operation, judged bool) {
	if !searchedKind(op.Kind) {
		return o, false
	}
	if op.Result.Undecided() && readOnly(op.Kind) {
		return o, false // a read nobody saw the answer of changes nothing
	}
	if noEffect(op) && model.WrongTimeoutRefusal(h.TxnMaxTimeoutMs, op.Op, op.Result) == nil &&
		model.WrongSessionTimeoutRefusal(modelOptions(h, 0, Options{}), op.Op, op.Result) == nil &&
		!model.JudgedByState(h.GroupMaxSize, op.Op, op.Result) &&
		!model.MetadataRefusalJudged(h.OffsetMetadataMaxKnown, op.Op, op.Result) {
		// Kafka refused it before it wrote: any state allows it. A
		// refusal the broker's config rules out, or makes depend on
		// the state, is judged.
		return o, false
	}
	ret := op.Call
	switch {
	case op.Kind.IsRequest() && (op.Result.Undecided() || model.PartlyEffective(op.Kind, op.Result) ||
		model.AppliesAfterAnswer(op.Kind)):
		ret = never
	case op.Returned:
		ret = op.Return
	}
	// Output points into the history too: the model reads the answer
	// from Input, and a copy of each would be most of what ops hold.
	return porcupine.Operation{ClientId: client, Input: op, Call: op.Call, Output: &op.Result, Return: ret}, true
}

// searchedKind reports whether the search judges operations of kind k at
// all: requests, ticks and broker restarts, not faults.
func searchedKind(k model.Kind) bool {
	return k.IsRequest() || k == model.Tick || k == model.BrokerRestart
}

// noEffect reports whether the broker refused op before it wrote anything,
// with nothing that may have come first (model.PartlyEffective).
func noEffect(op *histories.Op) bool {
	return op.Result.Answered && model.ClassOf(op.Kind, op.Result.Err) == model.NoEffect && !model.PartlyEffective(op.Kind, op.Result)
}

// readOnly reports whether a request kind never changes the broker.
func readOnly(k model.Kind) bool { return k == model.Fetch || k == model.OffsetFetch }

// partition splits a history into pieces that never meet: transactional
// ids, producer ids, partitions and groups that no operation links. A
// transaction spans partitions, so a piece is a connected component, not a
// topic-partition. Ticks and broker restarts reach every piece.
func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	uf := newUnionFind()
	var global []porcupine.Operation
	var keys []touchKey
	for _, o := range ops {
		keys = appendTouches(keys[:0], o.Input.(*histories.Op))
		if len(keys) == 0 {
			global = append(global, o)
			continue
		}
		for _, k := range keys[1:] {
			uf.union(keys[0], k)
		}
	}
	// Each operation's piece is found first, and the pieces are made
	// after, each at its size: a history that is one piece is not copied.
	rootOf := make([]touchKey, len(ops))
	sizes := map[touchKey]int{}
	var roots []touchKey
	for i, o := range ops {
		first, ok := firstTouch(o.Input.(*histories.Op))
		if !ok {
			continue
		}
		root := uf.find(first)
		if _, seen := sizes[root]; !seen {
			roots = append(roots, root)
		}
		rootOf[i] = root
		sizes[root]++
	}
	if len(roots) == 1 && len(global) == 0 {
		return [][]porcupine.Operation{ops} // one piece: the history as it is, not a copy
	}
	pieces := make(map[touchKey][]porcupine.Operation, len(roots))
	for _, root := range roots {
		pieces[root] = make([]porcupine.Operation, 0, sizes[root]+len(global))
	}
	for i, o := range ops {
		if root := rootOf[i]; root != (touchKey{}) {
			pieces[root] = append(pieces[root], o)
		}
	}
	out := make([][]porcupine.Operation, 0, len(roots))
	for _, root := range roots {
		out = append(out, append(pieces[root], global...))
	}
	return out
}

// touchKey names one thing an operation reads or writes: a
// transactional id, a group, a partition, a producer id, or, for an
// operation that names none of these, the operation itself.
type touchKey struct {
	what byte // 't', 'g', 'p', 'i' (a producer id) or 'o' (an operation)
	name string
	id   int64
}

// appendTouches appends to keys what op reads or writes.
func appendTouches(keys []touchKey, op *histories.Op) []touchKey {
	r, resp := op.Req, op.Result.Resp
	switch op.Kind {
	case model.Tick, model.BrokerRestart, model.AlterConfig, model.CreateTopics, model.CreatePartitions, model.DeleteTopics:
		// A config change, like time, reaches every piece; so does a
		// topic's change, which refreshes any consumer group and drops
		// any group's offsets (model/topics.go).
		return keys
	}
	start := len(keys)
	named := func(what byte, v string) {
		if v != "" {
			keys = append(keys, touchKey{what: what, name: v})
		}
	}
	pid := func(id int64) {
		if id != model.NoProducerID {
			keys = append(keys, touchKey{what: 'i', id: id})
		}
	}
	named('t', r.TransactionalID)
	named('g', r.Group)
	named('p', string(r.Partition))
	if op.Kind == model.AddPartitions {
		for _, p := range r.Partitions {
			named('p', string(p))
		}
	}
	pid(r.ProducerID)
	if op.Result.Succeeded() {
		pid(resp.ProducerID)
		for _, rec := range resp.Records {
			pid(rec.ProducerID)
		}
	}
	if len(keys) == start {
		// An idempotent init whose answer was lost touches nothing
		// anyone can see; it is a piece of its own.
		keys = append(keys, touchKey{what: 'o', id: int64(op.ID)})
	}
	return keys
}

// touches names what an operation reads or writes.
func touches(op *histories.Op) []touchKey { return appendTouches(nil, op) }

// firstTouch is the first of op's touches, and false for an operation
// that reaches every piece. It holds no slice, so that asking for each
// operation costs no allocation.
func firstTouch(op *histories.Op) (touchKey, bool) {
	var room [4]touchKey
	keys := appendTouches(room[:0], op)
	if len(keys) == 0 {
		return touchKey{}, false
	}
	return keys[0], true
}

type unionFind map[touchKey]touchKey

func newUnionFind() unionFind { return unionFind{} }

func (u unionFind) find(k touchKey) touchKey {
	p, ok := u[k]
	if !ok || p == k {
		return k
	}
	root := u.find(p)
	u[k] = root
	return root
}

func (u unionFind) union(a, b touchKey) {
	ra, rb := u.find(a), u.find(b)
	if ra != rb {
		u[ra] = rb
	}
}

// explainIllegal turns porcupine's partial linearizations into a reason:
// the first operation that no order can place, after the longest legal
// order, and the rule that refuses it.
func explainIllegal(m porcupine.Model, info porcupine.LinearizationInfo, h histories.History) Violation {
	partials := info.PartialLinearizationsOperations()
	pieces := m.Partition(porcupineOps(h))
	for i, piece := range pieces {
		longest := longestOf(partials[i])
		if len(longest) == len(piece) {
			continue
		}
		return explainStuck(piece, m.Init().(model.State), map[int]bool{}, 0, longest)
	}
	return Violation{Op: -1, Reason: "porcupine found no linearization"}
}

// explainStuck names the first operation of piece that the model refuses
// after the legal order longest, which follows the `before` operations of
// placed (that left the model in state).
func explainStuck(piece []porcupine.Operation, state model.State, placed map[int]bool, before int, longest []porcupine.Operation) Violation {
	var prefix []int
	for _, o := range longest {
		op := o.Input.(*histories.Op)
		state, _ = model.Check(state, spanned(op), op.Result)
		placed[op.ID] = true
		prefix = append(prefix, op.ID)
	}
	stuck := unplaced(piece, placed)
	op, rule, why := firstRefused(state, stuck)
	return Violation{Op: op.ID, Related: prefix, Rule: rule, Reason: fmt.Sprintf("no order places op %d (%s) after the %d operations that linearize: %s", op.ID, op.Kind, before+len(prefix), why)}
}

// longestOf is the longest candidate; of several as long, the one whose
// operation ids come first in order, so that an explanation does not
// depend on the order porcupine lists its partial orders in (which varies
// from run to run).
func longestOf(candidates [][]porcupine.Operation) []porcupine.Operation {
	var longest []porcupine.Operation
	for _, c := range candidates {
		if len(c) > len(longest) || len(c) == len(longest) && slices.CompareFunc(c, longest, byOpID) < 0 {
			longest = c
		}
	}
	return longest
}

func byOpID(a, b porcupine.Operation) int {
	return a.Input.(*histories.Op).ID - b.Input.(*histories.Op).ID
}

// unplaced are the operations left out of a partial linearization, the
// earliest to return first: one of them had to come next.
func unplaced(piece []porcupine.Operation, placed map[int]bool) []*histories.Op {
	var left []porcupine.Operation
	for _, o := range piece {
		if op := o.Input.(*histories.Op); !placed[op.ID] && op.Kind.IsRequest() {
			left = append(left, o)
		}
	}
	slices.SortStableFunc(left, func(a, b porcupine.Operation) int { return int(a.Return - b.Return) })
	ops := make([]*histories.Op, len(left))
	for i, o := range left {
		ops[i] = o.Input.(*histories.Op)
	}
	return ops
}

// firstRefused is the earliest-returning operation the model refuses in
// state, judging effects, with the rule and the model's reason.
func firstRefused(state model.State, ops []*histories.Op) (*histories.Op, string, string) {
	var reasons []string
	for _, op := range ops {
		if _, err := model.Check(state, spanned(op), op.Result); !fits(op, err, false, nil) {
			var d *model.Disallowed
			errors.As(err, &d)
			return op, d.Rule, err.Error()
		}
		reasons = append(reasons, fmt.Sprint(op.ID))
	}
	if len(ops) == 0 {
		return &histories.Op{ID: -1}, "", "no operation is left to place"
	}
	return ops[0], "", "each of ops " + strings.Join(reasons, ", ") + " fits alone, but no order fits them all"
}
