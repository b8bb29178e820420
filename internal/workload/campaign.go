package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Campaign is an exploration cut into batches. Batch i is one Explore of
// BatchChecks interleavings from BatchSeed(Seed, i), so a batch's outcome
// depends only on the seed, i and the flags. Batches are what is shared
// out: among the processes of --parallel, and among the jobs of --shard.
// Whatever ran them and in whatever order they ended, a campaign's
// counterexample is the lowest-numbered failing batch's, taken only once
// every batch below it has ended: the same seed and flags find the same
// first counterexample.
type Campaign struct {
	// Name names the campaign in progress lines when several run in turn.
	Name string
	// Budget is the batches' own (Steps, ShrinkTime) and the campaign's
	// Seed; its Checks is the campaign's total, 0 to run until Time.
	Budget
	// Time bounds exploring when Checks is 0: no batch starts after it.
	// The batches running then end as they would (a batch is short, and
	// one may be shrinking a counterexample).
	Time time.Duration
	// BatchChecks is a batch's interleavings (DefaultBatchChecks if 0).
	BatchChecks int
	// Shard is the part of the batches this job explores.
	Shard Shard
}

// DefaultBatchChecks is a batch's size on the in-memory targets: under a
// second of work, so that a time budget and a progress line stay close to
// the truth, and large enough that a batch's start costs nothing.
const DefaultBatchChecks = 100

// Shard is a part of a campaign's batches: Index of Of (0 ≤ Index < Of)
// takes the batches i with i mod Of = Index. The zero value is the whole.
type Shard struct{ Index, Of int }

// ParseShard reads "I/N", 1 ≤ I ≤ N (the first of N is 1/N).
func ParseShard(s string) (Shard, error) {
	var i, n int
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || fmt.Sprintf("%d/%d", i, n) != s {
		return Shard{}, fmt.Errorf("%q is not I/N, e.g. 1/4", s)
	}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q: I/N needs 1 ≤ I ≤ N", s)
	}
	return Shard{Index: i - 1, Of: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index+1, max(s.Of, 1)) }

// batch is the campaign's n-th batch of this shard's: its global number.
func (s Shard) batch(n int) int { return s.Index + n*max(s.Of, 1) }

// BatchSeed is batch i's seed: the campaign's own for batch 0, so that a
// campaign of one batch explores what one Explore from that seed does.
func BatchSeed(seed uint64, i int) uint64 { return seed + uint64(i)*0x9e3779b97f4a7c15 }

// Batch is one batch to run: its number, seed and size. A batch with a
// Round is a round of the search for a shorter counterexample than batch
// Index found (see shortening): only a violation in fewer than
// ShorterThan operations counts.
type Batch struct {
	Index       int
	Seed        uint64
	Checks      int
	Round       int `json:",omitempty"`
	ShorterThan int `json:",omitempty"`
}

// key tells running batches apart: the rounds of a search share their
// batch's number, and a round started again against a shorter
// counterexample its number.
type key struct{ batch, round, shorterThan int }

func (b Batch) key() key { return key{b.Index, b.Round, b.ShorterThan} }

func (b Batch) round() round {
	return round{N: b.Round, Seed: b.Seed, Checks: b.Checks, ShorterThan: b.ShorterThan}
}

// BatchResult is what a batch found.
type BatchResult struct {
	Batch   Batch
	Outcome Outcome
	// Sightings are the error-code differences and known findings it met.
	Sightings []Sighting
	// Sequences are the distinct action sequences its interleavings took.
	Sequences []uint64
}

// Runner runs batches one at a time; Campaign.Run runs one batch on each
// runner it is given at once. progress is told the checks and operations
// done so far in the batch. A runner whose ctx is cancelled may give up on its batch and
// return ctx's error.
type Runner interface {
	Run(ctx context.Context, b Batch, progress func(BatchProgress)) (BatchResult, error)
	Close() error
}

// InProcess runs batches in this process, one at a time: rapid keeps
// process-wide settings, so a second batch at once needs another process.
// It cannot stop a batch midway.
func InProcess(opts Options, steps int, shrinkTime time.Duration) Runner {
	return &inProcess{opts: opts, steps: steps, shrinkTime: shrinkTime}
}

type inProcess struct {
	mu         sync.Mutex
	opts       Options
	steps      int
	shrinkTime time.Duration
}

func (p *inProcess) Run(_ context.Context, b Batch, progress func(BatchProgress)) (BatchResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	opts := p.opts
	opts.Sightings, opts.Coverage = NewSightings(), NewCoverage()
	// A batch that is no round counts any counterexample (ShorterThan 0),
	// and the campaign looks for a shorter one.
	budget := Budget{Checks: b.Checks, Steps: p.steps, Seed: b.Seed, ShrinkTime: p.shrinkTime}
	out, err := explore(opts.shortening(b.round()), budget, progress, BatchProgress{Shrinking: b.Round > 0})
	return BatchResult{Batch: b, Outcome: out, Sightings: opts.Sightings.All(), Sequences: opts.Coverage.sequenceHashes()}, err
}

func (p *inProcess) Close() error { return nil }

// CampaignOutcome is what a campaign found.
type CampaignOutcome struct {
	Seed    uint64
	Checks  int // interleavings the batches that ended explored
	Shrinks int // runs their shrinking took
	Ops     int // the operations of both
	Batches int // batches that ended
	// Sequences counts the distinct action sequences they took.
	Sequences int
	// Failure is the first failing batch's, nil when every check held;
	// FailedBatch is that batch.
	Failure     *BatchResult
	FailedBatch Batch
	Sightings   *Sightings
	// OutOfTime says the time budget ended the campaign.
	OutOfTime bool
}

// Run runs the campaign on runners (one per batch at once) and reports
// progress to p. The runners are closed when it returns.
func (c Campaign) Run(runners []Runner, p *Progress) (out CampaignOutcome, err error) {
	InTurn([]Campaign{c}, [][]Runner{runners}, p, func(_ int, o CampaignOutcome, e error) { out, err = o, e })
	return out, err
}

// InTurn runs campaigns in turn, each on its own runners, a slice at a
// time: in round r each campaign still running explores for firstSlice
// times 2^r (with Checks set, firstSliceBatches times 2^r batches), until
// it has found a counterexample or spent its own budget. A bug that only
// the last campaign meets is then found within a second or two, not after
// the time of every campaign before it (a 10 s default each), and a
// campaign's outcome is what it would be run alone: its batches are the
// same, and its counterexample is still its lowest failing batch's, since
// every batch of a slice ends before the next campaign's slice starts.
// ended is told each campaign's outcome as it ends, and the campaign's
// runners are closed then. A single campaign runs in one slice.
func InTurn(campaigns []Campaign, runners [][]Runner, p *Progress, ended func(i int, out CampaignOutcome, err error)) {
	schedules := make([]*schedule, len(campaigns))
	picked := uint64(time.Now().UnixNano()) // one for all, as --seed is
	for i, c := range campaigns {
		if c.Seed == 0 {
			c.Seed = picked
		}
		schedules[i] = newSchedule(c, p, len(campaigns) > 1)
	}
	p.start()
	defer p.stop()
	for round, left := 0, len(campaigns); left > 0; round++ {
		for i, s := range schedules {
			if s == nil {
				continue
			}
			p.showing(s)
			if !s.slice(runners[i], round) {
				continue
			}
			out, err := s.outcome()
			for _, r := range runners[i] {
				_ = r.Close()
			}
			schedules[i], left = nil, left-1
			ended(i, out, err)
		}
	}
}

// firstSlice and firstSliceBatches size a campaign's first slice when
// campaigns run in turn (see InTurn); each round doubles them. Half a
// second is enough to meet each of impl's named bugs in the scenario
// that meets it, from most seeds (docs/measurements/time-to-catch.tsv, "found by").
const (
	firstSlice        = 500 * time.Millisecond
	firstSliceBatches = 1
)

// schedule hands batches out in order and gathers what they found.
type schedule struct {
	c     Campaign
	named bool // its progress names its campaign
	mu    sync.Mutex
	next  int // the next batch, in this shard's count
	// deadline (with a time budget) or lastBatch (with Checks) ends the
	// current slice: no batch starts after it. used is the time spent in
	// the slices before, and sliceStart when this one started.
	deadline   time.Time
	lastBatch  int
	used       time.Duration
	sliceStart time.Time
	running    map[key]context.CancelFunc
	// idle wakes the runners waiting for work that a running batch may
	// yet make: a search for a shorter counterexample.
	idle   *sync.Cond
	failed *BatchResult
	// search looks for a shorter counterexample than failed's.
	search *shortening
	// shrinkingFrom is the lowest batch shrinking a counterexample, -1
	// while none is.
	shrinkingFrom int
	err           error
	state         progressState
	progress      *Progress
	seen          map[uint64]bool
	// sightings are each ended batch's, merged in batch order at the end
	// so that of two histories as short the same one is kept.
	sightings map[int][]Sighting
}

func newSchedule(c Campaign, p *Progress, named bool) *schedule {
	s := &schedule{c: c, named: named, progress: p, shrinkingFrom: -1, running: map[key]context.CancelFunc{}, seen: map[uint64]bool{}, sightings: map[int][]Sighting{}}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// slice runs batches on runners, one at a time on each, for the
// campaign's round-th slice, or for all of it when it is the only one;
// it reports whether the campaign has ended: it failed, or spent its
// budget.
func (s *schedule) slice(runners []Runner, round int) bool {
	s.mu.Lock()
	s.sliceStart = time.Now()
	switch {
	case s.c.Checks > 0 && s.named:
		s.lastBatch = s.next + firstSliceBatches<<round
	case s.c.Checks > 0:
		s.lastBatch = math.MaxInt
	case s.named:
		s.deadline = s.sliceStart.Add(min(firstSlice<<round, s.c.Time-s.used))
	default:
		s.deadline = s.sliceStart.Add(s.c.Time)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() { s.work(r) })
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used += time.Since(s.sliceStart)
	switch {
	case s.err != nil || s.failed != nil:
		return true
	case s.c.Checks > 0:
		return s.next*s.c.batchChecks() >= s.c.Checks
	case s.used >= s.c.Time:
		s.state.outOfTime = true
		return true
	}
	return false
}

func (c Campaign) batchChecks() int {
	if c.BatchChecks > 0 {
		return c.BatchChecks
	}
	return DefaultBatchChecks
}

// take is the next batch to run, if any is left to start: a round of the
// search for a shorter counterexample first, then the next batch to
// explore. While none is, and a batch running may yet start a search, it
// waits.
func (s *schedule) take() (Batch, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.err != nil {
			return Batch{}, nil, false
		}
		b, ok := s.nextRound()
		if !ok {
			b, ok = s.nextBatch()
		}
		if ok {
			ctx, cancel := context.WithCancel(context.Background())
			s.running[b.key()] = cancel
			return b, ctx, true
		}
		if len(s.running) == 0 {
			return Batch{}, nil, false
		}
		s.idle.Wait()
	}
}

// nextRound is the next round of the search for a shorter
// counterexample, if one may start.
func (s *schedule) nextRound() (Batch, bool) {
	r, ok := s.search.start()
	if !ok {
		return Batch{}, false
	}
	return Batch{Index: s.failed.Batch.Index, Seed: r.Seed, Checks: r.Checks, Round: r.N, ShorterThan: r.ShorterThan}, true
}

// nextBatch is the next batch to explore, if one is left to start.
func (s *schedule) nextBatch() (Batch, bool) {
	size := s.c.batchChecks()
	checks := size
	switch {
	case s.c.Checks > 0:
		left := s.c.Checks - s.next*size
		if left <= 0 || s.next >= s.lastBatch {
			return Batch{}, false
		}
		checks = min(size, left)
	case !time.Now().Before(s.deadline):
		return Batch{}, false
	}
	i := s.c.Shard.batch(s.next)
	if i > s.firstFailing() {
		return Batch{}, false // a batch after the first failure shows nothing that counts
	}
	s.next++
	return Batch{Index: i, Seed: BatchSeed(s.c.Seed, i), Checks: checks}, true
}

// work runs batches on r until none is left.
func (s *schedule) work(r Runner) {
	for {
		b, ctx, ok := s.take()
		if !ok {
			return
		}
		res, err := r.Run(ctx, b, func(p BatchProgress) {
			s.state.running(b.key(), &p)
			if p.Shrinking {
				s.shrinking(b.Index)
			}
		})
		s.end(b, res, err, err != nil && ctx.Err() != nil)
	}
}

// shrinking takes word that batch i found a counterexample and is
// shrinking it: the batches after it are stopped at once, not when its
// shrinking ends (they would be discarded then, their own
// counterexamples too), and the runners they free go to the rounds of
// its search for a shorter one.
func (s *schedule) shrinking(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shrinkingFrom >= 0 && s.shrinkingFrom <= i {
		return
	}
	s.shrinkingFrom = i
	s.progress.found(s.name(), i, s.state.checksSoFar())
	if s.failed != nil && s.failed.Batch.Index > i {
		s.search.discard() // batch i's counterexample comes first
		s.search = nil
	}
	for j, cancel := range s.running {
		if j.batch > i {
			cancel()
		}
	}
}

// firstFailing is the lowest batch known to have failed, or to be
// shrinking a counterexample; math.MaxInt if none is.
func (s *schedule) firstFailing() int {
	first := math.MaxInt
	if s.failed != nil {
		first = s.failed.Batch.Index
	}
	if s.shrinkingFrom >= 0 {
		first = min(first, s.shrinkingFrom)
	}
	return first
}

// end takes a batch's result: a batch stopped midway (one after a
// failure, or a stale round) counts for nothing.
func (s *schedule) end(b Batch, res BatchResult, err error, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.idle.Broadcast() // a round may start, or nothing is left to wait for
	if cancel := s.running[b.key()]; cancel != nil {
		cancel()
	}
	delete(s.running, b.key())
	s.state.running(b.key(), nil)
	if err != nil && !stopped {
		if s.err == nil && !errors.Is(err, context.Canceled) {
			s.err = fmt.Errorf("batch %d (seed %d): %w", b.Index, b.Seed, err)
		}
		return
	}
	if b.Round > 0 {
		s.endRound(b, res, stopped)
		return
	}
	if stopped {
		res.Outcome.Discard()
		return
	}
	s.state.ended(res, s.seen, true)
	s.sightings[b.Index] = res.Sightings
	if res.Outcome.Failure == nil {
		return
	}
	if s.failed != nil && s.failed.Batch.Index < b.Index {
		res.Outcome.Discard()
		return
	}
	if s.failed != nil {
		s.search.discard()
		s.failed.Outcome.Discard()
	}
	s.failed = &res
	s.search = newShortening(res.Outcome, b.Checks, s.c.shrinkTime())
	for k, cancel := range s.running {
		if k.batch > b.Index {
			cancel() // what they find comes after this failure
		}
	}
}

// endRound takes a round's result: the search's, unless the search is
// another batch's now, or the round was stopped (it was stale).
func (s *schedule) endRound(b Batch, res BatchResult, stopped bool) {
	if s.search == nil || s.failed.Batch.Index != b.Index {
		res.Outcome.Discard()
		return
	}
	if stopped {
		res = BatchResult{}
	} else {
		s.state.ended(res, s.seen, false)
	}
	for _, stale := range s.search.end(b.round(), res.Outcome, res.Sightings) {
		if cancel := s.running[key{b.Index, stale.N, stale.ShorterThan}]; cancel != nil {
			cancel()
		}
	}
}

func (s *schedule) outcome() (CampaignOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.state
	if s.search != nil {
		s.failed.Outcome = s.search.best
		s.sightings[s.failed.Batch.Index] = append(s.sightings[s.failed.Batch.Index], s.search.sightings...)
	}
	sightings := NewSightings()
	for _, i := range slices.Sorted(maps.Keys(s.sightings)) {
		if s.failed == nil || i <= s.failed.Batch.Index {
			sightings.merge(s.sightings[i])
		}
	}
	out := CampaignOutcome{Seed: s.c.Seed, Checks: st.checks, Shrinks: st.shrinks, Ops: st.ops, Batches: st.batches,
		Sequences: len(s.seen), Failure: s.failed, Sightings: sightings, OutOfTime: st.outOfTime && s.failed == nil}
	if s.failed != nil {
		out.FailedBatch = s.failed.Batch
	}
	return out, s.err
}

// Progress reports a campaign's progress on w: a line that redraws itself
// when w is a terminal, plain lines every few seconds otherwise. A nil
// *Progress reports nothing.
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	begun    time.Time
	current  atomic.Pointer[schedule] // the campaign exploring
	mu       sync.Mutex               // one line at a time
	done     chan struct{}
	wg       sync.WaitGroup
}

// NewProgress reports on w; terminal says whether w redraws a line.
func NewProgress(w io.Writer, terminal bool) *Progress {
	every := 3 * time.Second
	if terminal {
		every = 200 * time.Millisecond
	}
	return &Progress{w: w, terminal: terminal, every: every}
}

func (p *Progress) start() {
	if p == nil {
		return
	}
	p.done = make(chan struct{})
	p.begun = time.Now()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(p.every)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				if p.terminal {
					fmt.Fprint(p.w, "\r\033[K")
				}
				return
			case <-tick.C:
				if s := p.current.Load(); s != nil {
					p.print(s.line(), false)
				}
			}
		}
	}()
}

// showing makes s the campaign the progress line is about.
func (p *Progress) showing(s *schedule) {
	if p != nil {
		p.current.Store(s)
	}
}

// found says at once (on a terminal, above the line that redraws itself)
// that batch of the campaign named found a counterexample, with checks
// interleavings run in all so far: a shrinking that may take minutes
// follows.
func (p *Progress) found(named string, batch, checks int) {
	if p == nil {
		return
	}
	p.print(fmt.Sprintf("fencecheck: %sbatch %d found a counterexample at %.1f s, after %d interleavings in all; shrinking it",
		named, batch, time.Since(p.begun).Seconds(), checks), true)
}

// print writes one line: elsewhere than a terminal as a line of its own;
// on a terminal over the line that redraws itself, which it replaces, or,
// kept, above it.
func (p *Progress) print(line string, kept bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.terminal:
		fmt.Fprintln(p.w, line)
	case kept:
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	default:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	}
}

func (p *Progress) stop() {
	if p == nil || p.done == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
}

// progressState counts what the batches did: the ended ones, and the
// running ones so far.
type progressState struct {
	mu             sync.Mutex
	checks, ops    int
	shrinks        int
	batches        int
	sequences      int
	outOfTime      bool
	runningBatches map[key]BatchProgress
}

// running notes how far a running batch has got; nil when it has ended.
func (st *progressState) running(batch key, p *BatchProgress) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.runningBatches == nil {
		st.runningBatches = map[key]BatchProgress{}
	}
	if p == nil {
		delete(st.runningBatches, batch)
		return
	}
	st.runningBatches[batch] = *p
}

func (st *progressState) ended(res BatchResult, seen map[uint64]bool, batch bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.checks += res.Outcome.Checks
	st.shrinks += res.Outcome.Shrinks
	st.ops += res.Outcome.Ops
	if batch {
		st.batches++ // not a round of a search for a shorter counterexample
	}
	for _, h := range res.Sequences {
		seen[h] = true
	}
	st.sequences = len(seen)
}

// checksSoFar are the interleavings of the ended batches and the running
// ones so far.
func (st *progressState) checksSoFar() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	checks := st.checks
	for _, r := range st.runningBatches {
		checks += r.Checks
	}
	return checks
}

// name prefixes the campaign's lines when several run in turn.
func (s *schedule) name() string {
	if !s.named {
		return ""
	}
	return s.c.Name + ": "
}

// line is the campaign's progress line.
func (s *schedule) line() string {
	s.mu.Lock()
	elapsed := s.used + time.Since(s.sliceStart)
	s.mu.Unlock()
	st, c := &s.state, s.c
	st.mu.Lock()
	defer st.mu.Unlock()
	checks, shrinks, ops, shrinking := st.checks, st.shrinks, st.ops, -1
	for i, r := range st.runningBatches {
		checks, shrinks, ops = checks+r.Checks, shrinks+r.Shrinks, ops+r.Ops
		if r.Shrinking && (shrinking < 0 || i.batch < shrinking) {
			shrinking = i.batch
		}
	}
	line := fmt.Sprintf("fencecheck: %s%d interleavings", s.name(), checks)
	if shrinks > 0 {
		line += fmt.Sprintf(" (and %d runs shrinking)", shrinks)
	}
	line += fmt.Sprintf(", %.0f operations/s", float64(ops)/max(elapsed.Seconds(), 1e-3))
	if st.batches > 0 {
		line += fmt.Sprintf(", %d distinct action sequences", st.sequences) // counted as batches end
	}
	switch {
	case shrinking >= 0:
		line += fmt.Sprintf(", shrinking a counterexample of batch %d", shrinking)
	case c.Checks > 0:
		line += fmt.Sprintf(", %d of %d", checks, c.Checks)
	case elapsed < c.Time:
		line += fmt.Sprintf(", %s left", (c.Time - elapsed).Round(time.Second))
	default:
		line += ", time is up"
	}
	return line
}
