package workload

import (
	"slices"
	"sync"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// Sightings are the violations an exploration met and went past: error-code
// differences (a rightful refusal with another class than the model's)
// and known findings. Each is counted once per interleaving that showed
// it, with the shortest history that did, cut at the violation.
type Sightings struct {
	mu   sync.Mutex
	seen map[sightingKey]*Sighting
}

// sightingKey tells sightings apart: one signature may be a known
// finding's consequence in one history and new in another.
type sightingKey struct {
	sig   checker.Signature
	known string
}

// Sighting is one signature met while exploring.
type Sighting struct {
	Signature checker.Signature
	// Known is the known finding that explains it; empty for an
	// error-code difference that none does.
	Known string
	// Runs counts the interleavings that showed it (shrinking's included).
	Runs int
	// History is the shortest history that showed it, cut where the
	// check broke, and Report its verdicts (a new one's judged with the
	// known findings' deviations allowed, so that it shows what is new).
	History histories.History
	Report  checker.Report
}

// NewSightings is an empty collection.
func NewSightings() *Sightings { return &Sightings{seen: map[sightingKey]*Sighting{}} }

// All lists what was met, error-code differences first, then by how often.
func (s *Sightings) All() []Sighting {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []Sighting
	for _, sg := range s.seen {
		all = append(all, *sg)
	}
	slices.SortFunc(all, func(a, b Sighting) int {
		if (a.Known == "") != (b.Known == "") {
			if a.Known == "" {
				return -1
			}
			return 1
		}
		if a.Runs != b.Runs {
			return b.Runs - a.Runs
		}
		return compareSignatures(a.Signature, b.Signature)
	})
	return all
}

func compareSignatures(a, b checker.Signature) int {
	for _, pair := range [][2]string{{a.Check, b.Check}, {string(a.Type), string(b.Type)}, {a.Rule, b.Rule}, {string(a.Answer), string(b.Answer)}} {
		if pair[0] != pair[1] {
			if pair[0] < pair[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// add counts one interleaving's sightings.
func (s *Sightings) add(run map[sightingKey]*Sighting) {
	if s == nil {
		return
	}
	var all []Sighting
	for _, sg := range run {
		copied := *sg
		copied.Runs = 1
		all = append(all, copied)
	}
	s.merge(all)
}

// merge adds what another collection counted (a batch's). Of two
// histories as short, the first merged stays.
func (s *Sightings) merge(all []Sighting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sg := range all {
		key := sightingKey{sg.Signature, sg.Known}
		old, ok := s.seen[key]
		if !ok {
			copied := sg
			s.seen[key] = &copied
			continue
		}
		old.Runs += sg.Runs
		if len(sg.History.Ops) < len(old.History.Ops) {
			old.History, old.Report = sg.History, sg.Report
		}
	}
}

// ShrinkAll shrinks each error-code difference of all (known findings
// stay as they are), each from the budget's seed and checks (a batch's
// when it has none).
func ShrinkAll(opts Options, b Budget, all []Sighting) []Sighting {
	if b.Checks == 0 {
		b.Checks = DefaultBatchChecks
	}
	for i, sg := range all {
		if sg.Known == "" {
			if shrunk, err := Shrink(opts, b, sg); err == nil {
				all[i] = shrunk
			}
		}
	}
	return all
}

// Shrink looks for sg's signature alone, with the budget's seed and
// checks, and lets rapid shrink the run that shows it: the sighting comes
// back with that shrunk history when it is shorter than the one it had.
func Shrink(opts Options, b Budget, sg Sighting) (Sighting, error) {
	opts.Hunt, opts.Sightings = &sg.Signature, nil
	out, err := Explore(opts, b, nil)
	if err != nil || out.Failure == nil {
		return sg, err
	}
	defer out.Discard()
	h, report, _, _ := out.Failure.Found()
	if len(h.Ops) < len(sg.History.Ops) {
		sg.History, sg.Report = h, report
	}
	return sg, nil
}
