package workload

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/model"
)

// The defaults of an exploration. `fencecheck run` and fencecheck.Test
// both take them from here.
const (
	// DefaultSteps is how many actions an interleaving takes, on
	// average: rapid's own default for its steps setting.
	DefaultSteps = 30
	// DefaultTime is how long each scenario is explored when no number
	// of interleavings is given: enough, measured, for the default
	// scenarios to catch every named bug of impl's from a random seed
	// (README, "How fast the named bugs are caught").
	DefaultTime = 10 * time.Second
	// DefaultTxnVersion is the transaction protocol the clients speak:
	// 2 (KIP-890).
	DefaultTxnVersion = 2
	// RealTimeBatchChecks is a batch's size on a target whose clock is
	// the wall clock (a Kafka cluster): a batch of DefaultBatchChecks
	// there takes minutes, and a time budget waits for the batches it
	// started.
	RealTimeBatchChecks = 10
)

// CorrectScenarios are the scenarios whose configuration is correct: a
// broker must hold every check under them. They are what an exploration
// explores when given no scenario.
func CorrectScenarios() []Scenario {
	var correct []Scenario
	for _, sc := range Scenarios {
		if sc.Correct() {
			correct = append(correct, sc)
		}
	}
	return correct
}

// Exploration is the one way into exploring: scenarios explored in turn
// (InTurn) against one target, each a campaign of batches, and what each
// met shrunk. `fencecheck run` and fencecheck.Test are presenters of its
// outcomes.
type Exploration struct {
	// Scenarios are explored in turn; none is CorrectScenarios.
	Scenarios []Scenario
	// Grouped says that Scenarios were asked for as a group (fencecheck
	// run's --scenario correct or all): those the target cannot run are
	// left out with a line in the log, as the defaults are, not refused.
	Grouped bool
	// Target makes a fresh broker per interleaving. Run makes one first,
	// to see that it can (an unreachable cluster fails there) and whether
	// its clock is the wall clock.
	Target model.NewTarget
	// TxnVersion is the clients' transaction protocol; 0 is
	// DefaultTxnVersion.
	TxnVersion int
	// Known are the findings that do not stop exploring.
	Known checker.Known
	// Swarm draws, per interleaving, which kinds of fault it offers.
	Swarm bool
	// Checks is each scenario's number of interleavings; 0 explores each
	// for Time (DefaultTime if 0).
	Checks int
	Time   time.Duration
	// Steps is the interleavings' average length; 0 is DefaultSteps.
	Steps int
	// Seed is the campaigns' seed; 0 picks one, told in each outcome.
	Seed uint64
	// ShrinkTime bounds shrinking a counterexample, and shrinking each
	// error-code difference; 0 is DefaultShrinkTime.
	ShrinkTime time.Duration
	// Shard is the part of the batches explored here.
	Shard Shard
	// Runners are a scenario's runners; nil runs its batches in this
	// process (InProcess).
	Runners func(opts Options) ([]Runner, error)
	// Progress reports progress; nil reports none.
	Progress *Progress
	// Logf is told what the exploration does between campaigns; nil is
	// silent.
	Logf func(format string, args ...any)
}

// Explored is what exploring one scenario found.
type Explored struct {
	Scenario Scenario
	Outcome  CampaignOutcome
	// Sightings are the error-code differences and known findings met.
	// When nothing worse was found, each error-code difference was
	// shrunk on its own; beside a violation, each keeps the shortest
	// history that showed it.
	Sightings []Sighting
	// Err says why the exploration could not finish (a worker process
	// died): Outcome then holds what was done before.
	Err error
}

// Options are the workload's options for exploring sc.
func (e Exploration) Options(sc Scenario) Options {
	return Options{Scenario: sc, Target: e.Target, TxnVersion: e.txnVersion(), Known: e.Known, Swarm: e.Swarm}
}

// InProcess runs the exploration's batches of opts in this process.
func (e Exploration) InProcess(opts Options) Runner {
	return InProcess(opts, e.steps(), e.ShrinkTime)
}

func (e Exploration) txnVersion() int {
	if e.TxnVersion == 0 {
		return DefaultTxnVersion
	}
	return e.TxnVersion
}

func (e Exploration) steps() int {
	if e.Steps == 0 {
		return DefaultSteps
	}
	return e.Steps
}

func (e Exploration) time() time.Duration {
	if e.Time == 0 {
		return DefaultTime
	}
	return e.Time
}

// Run explores the scenarios in turn and tells report what each found:
// one that found a violation as soon as it ends, the others once all
// have ended, in the order given. Its error says the exploration could
// not start: the target cannot be made (an unreachable cluster, a
// misconfigured one), or a scenario's runners cannot.
func (e Exploration) Run(report func(Explored)) error {
	scenarios := e.Scenarios
	defaulted := len(scenarios) == 0
	if defaulted {
		scenarios = CorrectScenarios()
	}
	realTime, caps, err := e.probe()
	if err != nil {
		return err
	}
	if scenarios, err = e.fitting(scenarios, caps, defaulted || e.Grouped); err != nil {
		return err
	}
	batchChecks := DefaultBatchChecks
	if realTime {
		batchChecks = RealTimeBatchChecks
	}
	var campaigns []Campaign
	var runners [][]Runner
	for _, sc := range scenarios {
		r, err := e.runners(e.Options(sc))
		if err != nil {
			return err
		}
		runners = append(runners, r)
		campaigns = append(campaigns, Campaign{Name: sc.Name, Time: e.time(), Shard: e.Shard, BatchChecks: batchChecks,
			Budget: Budget{Checks: e.Checks, Steps: e.steps(), Seed: e.Seed, ShrinkTime: e.ShrinkTime}})
	}
	explored := make([]*Explored, len(scenarios))
	InTurn(campaigns, runners, e.Progress, func(i int, out CampaignOutcome, err error) {
		ex := &Explored{Scenario: scenarios[i], Outcome: out, Err: err}
		explored[i] = ex
		if out.Failure != nil || err != nil {
			report(e.shrunk(*ex))
			explored[i] = nil
		}
	})
	for _, ex := range explored {
		if ex != nil {
			report(e.shrunk(*ex))
		}
	}
	return nil
}

// probe makes one target, to see that it can, and tells whether its
// clock is the wall clock and which optional requests it answers.
func (e Exploration) probe() (realTime bool, caps targetCaps, err error) {
	if e.Target == nil {
		return false, caps, fmt.Errorf("no target to explore")
	}
	t, err := e.Target()
	if err != nil {
		return false, caps, err
	}
	_, exact := t.(exactClock)
	caps.typ = fmt.Sprintf("%T", t)
	_, caps.plainCommits = t.(model.OffsetCommitter)
	_, caps.heartbeats = t.(model.ConsumerGroupHeartbeater)
	if err := t.Close(); err != nil {
		return false, caps, fmt.Errorf("closing the target: %w", err)
	}
	return !exact, caps, nil
}

// targetCaps are the optional requests a target answers, and its type.
type targetCaps struct {
	typ          string
	plainCommits bool // a model.OffsetCommitter
	heartbeats   bool // a model.ConsumerGroupHeartbeater
}

// fitting are the scenarios the target can run. A target that takes no
// plain OffsetCommit cannot run one with at-least-once consumers, and one
// that answers no ConsumerGroupHeartbeat cannot run one with KIP-848
// workers. Among the default scenarios such a one is left out, with a
// line in the log, so that a broker written before those requests keeps
// its default exploration; named, it is an error.
func (e Exploration) fitting(scenarios []Scenario, caps targetCaps, defaulted bool) ([]Scenario, error) {
	var fit []Scenario
	for _, sc := range scenarios {
		var lacks, sends, takesNo string
		switch {
		case sc.auditors && !caps.plainCommits:
			lacks, sends, takesNo = "model.OffsetCommitter", "plain OffsetCommits", "plain OffsetCommit"
		case sc.kip848 && !caps.heartbeats:
			lacks, sends, takesNo = "model.ConsumerGroupHeartbeater", "KIP-848 ConsumerGroupHeartbeats", "ConsumerGroupHeartbeat"
		}
		switch {
		case lacks == "":
			fit = append(fit, sc)
		case !defaulted:
			return nil, fmt.Errorf("scenario %s sends %s, and the target, a %s, is not a %s", sc.Name, sends, caps.typ, lacks)
		case e.Logf != nil:
			e.Logf("fencecheck: %s left out: the target, a %s, takes no %s (%s)", sc.Name, caps.typ, takesNo, lacks)
		}
	}
	return fit, nil
}

func (e Exploration) runners(opts Options) ([]Runner, error) {
	if e.Runners == nil {
		return []Runner{e.InProcess(opts)}, nil
	}
	return e.Runners(opts)
}

// shrunk is ex with its sightings: each error-code difference shrunk
// when nothing worse was found, from a batch's checks (a shrink needs no
// more than a batch to meet again what a batch met).
func (e Exploration) shrunk(ex Explored) Explored {
	if ex.Outcome.Sightings == nil {
		return ex
	}
	ex.Sightings = ex.Outcome.Sightings.All()
	if ex.Outcome.Failure != nil || ex.Err != nil || len(ex.Sightings) == 0 || ex.Sightings[0].Known != "" {
		return ex // unknown ones sort first: none is unknown
	}
	if e.Logf != nil {
		e.Logf("fencecheck: %s: shrinking each error-code difference", ex.Scenario.Name)
	}
	budget := Budget{Checks: DefaultBatchChecks, Steps: e.steps(), Seed: ex.Outcome.Seed, ShrinkTime: e.ShrinkTime}
	ex.Sightings = ShrinkAll(e.Options(ex.Scenario), budget, ex.Sightings)
	return ex
}
