package workload

import (
	"maps"
	"slices"
	"time"
)

// shortening plans the search for a shorter counterexample (see Explore)
// round by round, so that its rounds can run side by side and still end
// as they would one after another. Round r explores from the first
// exploration's seed plus r, r times shortenEffort times its
// interleavings, for a counterexample shorter than the best the rounds
// before r found. A round that finds one makes the rounds after it,
// started against the old best, stale: they start again, against the new
// one. Whatever runs the rounds, and however many at once, the search
// ends with the counterexample one round after another would end with,
// unless its time (the budget's ShrinkTime) cuts it short.
type shortening struct {
	seed     uint64
	first    int // the first exploration's interleavings
	deadline time.Time
	best     Outcome
	next     int // the next round to start
	// against is the length each running round beats (stale: a stale
	// round's, until it ends or starts again); ended holds the rounds
	// that ended before a round below them did.
	against map[int]int
	ended   map[int]roundEnd
	// sightings are those of the rounds taken, in round order.
	sightings []Sighting
}

// stale marks a round started against a best since beaten.
const stale = -1

type roundEnd struct {
	out       Outcome
	sightings []Sighting
}

// round is one round of a search for a shorter counterexample: explore
// Checks interleavings from Seed for one shorter than ShorterThan.
type round struct {
	N           int
	Seed        uint64
	Checks      int
	ShorterThan int
}

// newShortening plans the search for a shorter counterexample than
// first's, explored in checks interleavings; nil when first needs none.
func newShortening(first Outcome, checks int, shrinkTime time.Duration) *shortening {
	if !first.longerThan(readableOps) {
		return nil
	}
	return &shortening{seed: first.Seed, first: checks, deadline: time.Now().Add(shrinkTime), best: first, next: 1,
		against: map[int]int{}, ended: map[int]roundEnd{}}
}

// start is the next round to run, if one may start now: the best is
// still too long to read at a glance, rounds are left, and time is.
func (s *shortening) start() (round, bool) {
	if s == nil || !s.best.longerThan(readableOps) || s.next > shortenRounds || !time.Now().Before(s.deadline) {
		return round{}, false
	}
	h, _, _, _ := s.best.Failure.Found()
	r := round{N: s.next, Seed: s.seed + uint64(s.next), Checks: s.first * shortenEffort * s.next, ShorterThan: len(h.Ops)}
	s.against[r.N] = r.ShorterThan
	s.next++
	return r, true
}

// end takes round r's outcome and sightings. It returns the rounds made
// stale, which are to be stopped (their outcomes, when they come, are
// discarded); r's own outcome is discarded when it is stale.
func (s *shortening) end(r round, out Outcome, sightings []Sighting) (stop []round) {
	if against := s.against[r.N]; against != r.ShorterThan {
		if against == stale {
			delete(s.against, r.N)
		}
		out.Discard()
		return nil
	}
	delete(s.against, r.N)
	s.ended[r.N] = roundEnd{out, sightings}
	for {
		low := s.lowestStarted()
		next, ok := s.ended[low]
		if !ok {
			return stop
		}
		delete(s.ended, low)
		stop = append(stop, s.take(low, next)...)
	}
}

// lowestStarted is the lowest round started and not yet taken, 0 if none.
func (s *shortening) lowestStarted() int {
	rounds := slices.Concat(slices.Collect(maps.Keys(s.against)), slices.Collect(maps.Keys(s.ended)))
	if len(rounds) == 0 {
		return 0
	}
	return slices.Min(rounds)
}

// take applies round n's outcome, every round below it taken already.
func (s *shortening) take(n int, end roundEnd) (stop []round) {
	out := end.out
	s.best.Shrinks += out.Shrinks
	s.best.Ops += out.Ops
	s.sightings = append(s.sightings, end.sightings...)
	if out.Failure == nil {
		return nil
	}
	s.best.Discard()
	s.best.Failure, s.best.FailFile, s.best.Log = out.Failure, out.FailFile, out.Log
	// The rounds above n looked for one shorter than the old best.
	for m, e := range s.ended {
		e.out.Discard()
		delete(s.ended, m)
	}
	for m, against := range s.against {
		stop = append(stop, round{N: m, ShorterThan: against})
		s.against[m] = stale
	}
	s.next = n + 1
	return stop
}

// outcome is the search's best, or first when there was no search.
func (s *shortening) outcome(first Outcome) Outcome {
	if s == nil {
		return first
	}
	return s.best
}

// shortening are the options of round r: only a counterexample shorter
// than r's counts.
func (o Options) shortening(r round) Options {
	o.shorterThan = r.ShorterThan
	return o
}

// shortening is the budget of round r.
func (b Budget) shortening(r round) Budget {
	b.Seed, b.Checks = r.Seed, r.Checks
	return b
}

// discard removes the fail files the search holds.
func (s *shortening) discard() {
	if s == nil {
		return
	}
	s.best.Discard()
	for _, e := range s.ended {
		e.out.Discard()
	}
}
