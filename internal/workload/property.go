package workload

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"pgregory.net/rapid"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// Options say what to explore.
type Options struct {
	Scenario Scenario
	// Target makes a fresh broker for each check.
	Target model.NewTarget
	// TxnVersion is the transaction protocol the clients speak: 1, or 2
	// (KIP-890: no AddPartitionsToTxn or AddOffsetsToTxn; EndTxn bumps
	// the epoch). It must match the target's.
	TxnVersion int
	// Coverage, when set, counts the actions taken.
	Coverage *Coverage
	// Observe, when set, sees every finished history.
	Observe func(histories.History)
	// Known are findings that do not fail the property: a run that breaks
	// a check only as one of them does goes on, and the finding is
	// counted in Sightings. Error-code differences never fail it either.
	Known checker.Known
	// Sightings, when set, collects what the runs met and went past.
	Sightings *Sightings
	// Swarm makes each run draw which kinds of fault it offers (see
	// swarm): swarm testing, after Groce et al., ISSTA 2012.
	Swarm bool
	// Hunt, when set, is the one signature that fails the property, when
	// no known finding explains it: an exploration that looks for it
	// alone, to shrink a new error-code difference to its shortest run.
	Hunt *checker.Signature
	// shorterThan, when set, is the length of the counterexample to
	// beat: only a violation in fewer operations fails the property.
	shorterThan int
}

// Failure is the last counterexample a property found. Every case rapid's
// shrinking keeps is one that failed last, so after a failed check it
// holds the shrunk counterexample.
type Failure struct {
	mu       sync.Mutex
	found    bool
	history  histories.History // cut at the first broken safety check
	whole    histories.History // the whole run it was cut from
	report   checker.Report
	steps    []string
	panicked *TargetPanic // the target's panic, if that is what failed
	// runs counts the runs since the first failure, and shortened is
	// the run that last made the counterexample shorter than any before,
	// shortest operations long (see settled): rapid keeps any case that
	// fails, and one that draws less may run longer.
	runs, shortened, shortest int
	// failedLast: the last run failed, so rapid runs its case again,
	// to record it, and that run must fail the same way.
	failedLast bool
}

// Found reports whether a counterexample was recorded, and returns it.
func (f *Failure) Found() (histories.History, checker.Report, []string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.history, f.report, f.steps, f.found
}

// Panic is the target's panic when that is the counterexample (the
// history then ends at the request it was answering), nil otherwise.
func (f *Failure) Panic() *TargetPanic {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.panicked
}

func (f *Failure) set(b *brokenRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.found || len(b.cut.Ops) < f.shortest {
		f.shortened, f.shortest = f.runs, len(b.cut.Ops)
	}
	f.found, f.history, f.whole, f.report, f.steps, f.panicked = true, b.cut, b.whole, b.report, b.steps, b.panicked
	f.failedLast = true
}

// settleRuns says when rapid's shrinking has done enough: the last
// settleRuns of rapid's attempts have not made the counterexample
// shorter. rapid shrinks until none of its passes makes any draw smaller,
// which can take tens of thousands of runs and minutes, spent mostly
// making draws smaller that change nothing a person reads. One still
// longer than a person reads at a glance (readableOps) is then looked for
// again, shorter, by exploring afresh (see Explore), which met a shorter
// one sooner: on 20 runs of the five slowest seeded bugs, settling at any
// length after 500 attempts took 257 s in all where shrinking to the end
// those longer than readableOps, and settling the others after 2,000,
// took 1,160 s. After 250 attempts rather than 500, the 10 seeds of
// docs/measurements/time-to-catch.tsv took 62.9 s rather than 76.3 s to catch
// leader-ignores-marker-epoch, and 74.8 s rather than 85.8 s
// late-endtxn-hits-next-txn, every counterexample as short
// (scripts/compare-catch.sh): rapid's attempts that far past the last
// shorter counterexample are mostly its pass that makes each draw's bits
// smaller one by one, which no longer changes the timeline. Counted in
// runs, not time, so that the same seed shrinks to the same
// counterexample on any machine.
const settleRuns = 250

// settled reports whether shrinking has done enough (see settleRuns), and
// counts the run about to start.
func (f *Failure) settled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.found {
		return false
	}
	f.runs++
	again := f.failedLast
	f.failedLast = false
	return !again && f.runs-f.shortened > settleRuns
}

// bound is how many operations a counterexample must be fewer than to
// fail the property, 0 for any: shorterThan, or once a counterexample was
// found, and rapid shrinks it, one more than the shortest so far. rapid
// keeps any smaller draw that fails, and one that draws less may run
// longer; such a run passes, and on a target with an exact clock ends as
// soon as it is longer (checkSoFar), so shrinking spends no time on counterexamples a person would
// not take, and never keeps one. As short as the shortest still fails:
// rapid's last run repeats the case it kept, which must fail again.
func (f *Failure) bound(shorterThan int) int {
	if f == nil {
		return shorterThan
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.found {
		return shorterThan
	}
	if shorterThan == 0 || f.shortest+1 < shorterThan {
		return f.shortest + 1
	}
	return shorterThan
}

func (f *Failure) wholeHistory() histories.History {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.whole
}

// Property is one exploration as a rapid property: draw a world, run
// rapid's choice of actions with every check after each one, end with the
// quiet phase and the final reads, and check the whole history. A failure
// is recorded in failure (when not nil) before the property fails.
//
// A check that breaks during the actions ends the run: the actions left do
// nothing, and the property fails from the same line as when a check
// breaks at the end. rapid keeps a smaller case while shrinking only if it
// fails at the same place (the same stack) as the case it shrinks, so a
// counterexample whose violation showed in the quiet phase can shrink into
// one that shows it during the actions, and back.
func Property(opts Options, failure *Failure) func(*rapid.T) {
	if opts.Coverage == nil {
		opts.Coverage = NewCoverage()
	}
	return func(t *rapid.T) {
		target, err := opts.Target()
		if err != nil {
			t.Fatalf("starting the target: %v", err)
		}
		defer target.Close()
		r := newRun(t, opts.Scenario, target, opts.TxnVersion >= 2, opts.Coverage)
		r.shorterThan = failure.bound(opts.shorterThan)
		r.known, r.hunt = opts.Known, opts.Hunt
		r.sightings = map[sightingKey]*Sighting{}
		defer func() { opts.Sightings.add(r.sightings) }()
		offered := r.actions()
		if opts.Swarm {
			offered = swarm(t, offered)
		}
		acts := r.untilDecided(boundActions(offered))
		if _, exact := target.(exactClock); exact {
			acts[""] = func(*rapid.T) { r.checkSoFar() }
		}
		t.Repeat(acts)
		opts.Coverage.took(r.steps)
		if !r.decided() {
			r.quiesce()
			r.h.Name = fmt.Sprintf("%s: %d steps", opts.Scenario.Name, len(r.steps))
			r.h.OutputTopics = r.outputs
			if opts.Observe != nil {
				opts.Observe(r.h)
			}
			if r.panicked == nil {
				r.judge(r.judged())
			}
		}
		if r.panicked != nil && r.broken == nil && r.counts(r.h) {
			r.broken = panicRun(r.h, r.steps, r.panicked, r.panickedAt)
		}
		if r.broken != nil {
			r.broken.fail(t, failure)
		}
	}
}

// brokenRun is a counterexample: the history cut at its first broken
// safety check, the whole history so far, the cut's report, and the
// actions taken.
type brokenRun struct {
	cut, whole histories.History
	report     checker.Report
	steps      []string
	panicked   *TargetPanic // set when the target panicked, and no check broke before
}

// panicRun is the counterexample of a target's panic: the history up to
// the request it was answering, judged by every check but progress (the
// run did not reach its end). What the run recorded after the panic,
// requests no answer could come to, is cut off.
func panicRun(h histories.History, steps []string, p *TargetPanic, at int) *brokenRun {
	h.Ops, h.Trips = h.Ops[:at], nil
	if p.ClockLost {
		// No check is judged: the broker may have fired a timer the
		// model keeps, and any violation would be the target's clock.
		return &brokenRun{cut: h, whole: h, report: checker.Report{History: h}, steps: steps, panicked: p}
	}
	return &brokenRun{cut: h, whole: h, report: checker.Check(h, checker.Options{}), steps: steps, panicked: p}
}

// fail records the counterexample in failure (when not nil) and fails the
// property.
func (b *brokenRun) fail(t *rapid.T, failure *Failure) {
	if failure != nil {
		failure.set(b)
	}
	var w strings.Builder
	if b.panicked != nil {
		fmt.Fprintf(&w, "%s\n\n", b.panicked)
	}
	_ = b.report.WriteTimeline(&w)
	t.Fatalf("%s\nactions: %s", w.String(), strings.Join(b.steps, "; "))
}

// counts reports whether a counterexample fails the property: any does,
// unless a shorter one is being looked for.
func (r *run) counts(cut histories.History) bool {
	return r.shorterThan == 0 || len(cut.Ops) < r.shorterThan
}

// checkSoFar runs every check but progress on the history so far: a
// violation is found at the step that causes it, which helps shrinking.
// Only on a target whose clock stands still between ticks: a check takes
// real time, growing with the history (a tenth of a second and more), and
// on a broker whose timers run on the wall clock (kfake, a cluster) that
// time runs out member sessions and transactions the model keeps (met on
// kfake: a member expired during the checks between two of its requests).
// There the history is checked once, at the end.
// Only an answer can break a check (a request still in flight, or a
// fault, can always be placed after everything else), so a step that
// brought none is not checked again. After a run's last action
// (ExhaustEpoch) nothing is checked until the end.
//
// While a shorter counterexample is looked for, a run whose history so far
// holds and is already as long as the one to beat ends there: a safety
// check that breaks later breaks at a moment after every operation so far,
// and the history cut at that moment is no shorter. Checking such a run
// only then, rather than at every step, saves most of its checks, and
// still finds its violation, cut where it broke; but the run goes on
// drawing past that step, and rapid's shrinking, which keeps the draws,
// ends elsewhere: on the 130 runs of docs/measurements/time-to-catch.tsv, at 1,118
// operations in all rather than 1,079, and from one seed at 12 rather
// than 4.
func (r *run) checkSoFar() {
	if r.decided() || r.actionsOver {
		return
	}
	if r.answers != r.checkedAnswers {
		r.checkedAnswers = r.answers
		h := r.h
		h.Trips = nil
		r.judge(h)
	}
	r.tooLong = r.broken == nil && r.outgrown()
}

// outgrown reports whether the history is as long as the counterexample
// to beat: no safety check that breaks from here on can give a shorter
// one (see checkSoFar), so the quiet phase stops there.
func (r *run) outgrown() bool { return r.shorterThan > 0 && len(r.h.Ops) >= r.shorterThan }

// judged is the history the run is judged on at its end: all of it, or,
// when the quiet phase stopped because it had outgrown the counterexample
// to beat, the part of it that can still give a shorter one, judged as
// checkSoFar does (progress and the trips that had to arrive only count at
// the end).
func (r *run) judged() histories.History {
	h := r.h
	if r.outgrown() {
		h.Trips = nil
	}
	return h
}

// decided reports whether the run has nothing more to show: a check has
// broken, or no counterexample it could still give would count.
func (r *run) decided() bool { return r.broken != nil || r.tooLong || r.panicked != nil }

// judge checks h and sorts out what it breaks. What goes beyond the known
// findings is new: a violation of the report judged with them allowed
// (checker.Known.Allowed) that none of their signatures matches. A new error-code
// difference is a sighting, and anything else new fails the property: the
// run keeps the shortest one, cut at its violation, as its counterexample
// (if it counts). What the known findings explain is a sighting under the
// finding's name. The run goes on past sightings.
//
// Each violation is judged on the history cut at it, not on the whole:
// one wrong code that a finding explains and one that none does, in the
// same history, are two sightings, one known and one new.
func (r *run) judge(h histories.History) {
	h.Ops = append([]histories.Op(nil), h.Ops...)
	plain := checker.Check(h, checker.Options{})
	if plain.Held() {
		return
	}
	beyond := plain
	if allowed := r.known.Allowed(); (allowed.Allow != 0 || len(allowed.AllowCodes) > 0) && explainable(plain) {
		beyond = checker.Check(h, allowed)
	}
	fresh := map[violationAt]bool{}
	for _, v := range violationsOf(beyond) {
		if _, known := r.known.Match(v.sig); known {
			continue
		}
		fresh[v.at()] = true
		fails := r.failsOn(v.sig)
		if !fails && r.sighted(v.sig, "") {
			continue
		}
		cut, report := cutAt(beyond, v.sig.Check, v.op)
		switch {
		case !fails:
			r.sight(v.sig, "", cut, report)
		case r.counts(cut) && (r.broken == nil || len(cut.Ops) < len(r.broken.cut.Ops)):
			r.broken = &brokenRun{cut: cut, whole: h, report: report, steps: append([]string(nil), r.steps...)}
		}
	}
	if r.hunt == nil {
		r.sightKnown(plain, fresh)
	}
}

// sightKnown counts the violations of plain that are not new as the
// known findings that explain them, each judged on the history cut at it.
// One no finding explains there is part of something new, which is
// reported on its own.
func (r *run) sightKnown(plain checker.Report, fresh map[violationAt]bool) {
	for _, v := range violationsOf(plain) {
		if fresh[v.at()] || r.sightedKnown(v.sig) {
			continue
		}
		cut, report := cutAt(plain, v.sig.Check, v.op)
		if name, known := r.known.Identify(cut, v.sig); known {
			r.sight(v.sig, name, cut, report)
		}
	}
}

// explainable reports whether a report breaks a check that the known
// findings' deviations can explain (checker.Known.Explains).
func explainable(report checker.Report) bool {
	return report.Verdict(checker.Linearizable).Status == checker.Violated ||
		report.Verdict(checker.ErrorCodes).Status == checker.Violated
}

// failsOn reports whether a new violation with signature sig fails the
// property: any but an error-code difference (the broker refused rightly,
// and exploring on finds what else it does), or, while one signature is
// hunted, that one alone.
func (r *run) failsOn(sig checker.Signature) bool {
	if r.hunt != nil {
		return sig == *r.hunt
	}
	return sig.Check != checker.ErrorCodes
}

// violation is one way a history breaks a check: the operation, and its
// signature (which names the check).
type violation struct {
	op  int
	sig checker.Signature
}

// violationAt tells violations apart by check and operation: the same
// one, judged with and without the known findings allowed.
type violationAt struct {
	check string
	op    int
}

func (v violation) at() violationAt { return violationAt{v.sig.Check, v.op} }

// violationsOf lists the report's violations, one per broken check (its
// first), except error-codes: each of its wrong codes stands alone (the
// first of each signature), so that a known one does not hide a new one.
func violationsOf(report checker.Report) []violation {
	var all []violation
	seen := map[checker.Signature]bool{}
	for _, v := range report.Verdicts {
		if v.Status != checker.Violated {
			continue
		}
		each := v.Violations[:1]
		if v.Check == checker.ErrorCodes {
			each = v.Violations
		}
		for _, one := range each {
			sig := signatureOf(report.History, checker.Verdict{Check: v.Check, Status: checker.Violated, Violations: []checker.Violation{one}})
			if !seen[sig] {
				seen[sig] = true
				all = append(all, violation{op: one.Op, sig: sig})
			}
		}
	}
	return all
}

// sight records a sighting once per run: sig, explained by the known
// finding named (or new), with the history cut at it.
func (r *run) sight(sig checker.Signature, known string, cut histories.History, report checker.Report) {
	if !r.sighted(sig, known) {
		r.sightings[sightingKey{sig, known}] = &Sighting{Signature: sig, Known: known, History: cut, Report: report}
	}
}

func (r *run) sighted(sig checker.Signature, known string) bool {
	_, seen := r.sightings[sightingKey{sig, known}]
	return seen
}

// sightedKnown reports whether sig was already met as a known finding's.
func (r *run) sightedKnown(sig checker.Signature) bool {
	for key := range r.sightings {
		if key.sig == sig && key.known != "" {
			return true
		}
	}
	return false
}

// signatureOf is the signature of verdict v on history h.
func signatureOf(h histories.History, v checker.Verdict) checker.Signature {
	sigs := checker.Report{History: h, Verdicts: []checker.Verdict{v}}.Signatures()
	return sigs[0]
}

// untilDecided makes every action do nothing once the run is decided, or
// once an action said it was the run's last.
func (r *run) untilDecided(acts map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	for name, act := range acts {
		acts[name] = func(t *rapid.T) {
			if !r.decided() && !r.actionsOver {
				act(t)
			}
		}
	}
	return acts
}

// boundActions makes every action after the first maxActions() of a run do
// nothing. rapid draws how many actions a run takes from an unbounded
// distribution whose mean is its steps setting; a fuzzer's bytes can ask
// for thousands, and each one is checked on a longer history.
func boundActions(acts map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	limit, taken := maxActions(), 0
	bounded := make(map[string]func(*rapid.T), len(acts))
	for name, act := range acts {
		bounded[name] = func(t *rapid.T) {
			if taken >= limit {
				return
			}
			taken++
			act(t)
		}
	}
	return bounded
}

// maxActions is five times rapid's average number of steps: a run of
// random draws rarely comes near it.
func maxActions() int {
	steps := DefaultSteps // rapid's default
	if f := flag.Lookup("rapid.steps"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			steps = n
		}
	}
	return 5 * steps
}
