package workload

import (
	"maps"
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
	seen map[checker.Signature]*Sighting
}

// Sighting is one signature met while exploring.
type Sighting struct {
	Signature checker.Signature
	// Known is the known finding it matches; empty for an error-code
	// difference that no finding lists.
	Known string
	// Runs counts the interleavings that showed it (shrinking's included).
	Runs int
	// History is the shortest history that showed it, cut where the
	// check broke, and Report its verdicts.
	History histories.History
	Report  checker.Report
}

// NewSightings is an empty collection.
func NewSightings() *Sightings { return &Sightings{seen: map[checker.Signature]*Sighting{}} }

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
// merge adds what another exploration's runs met, as if its runs had come
// after these.
func (s *Sightings) merge(other *Sightings) {
	if s == nil || other == nil {
		return
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sig := range slices.SortedFunc(maps.Keys(other.seen), compareSignatures) {
		sg := other.seen[sig]
		old, ok := s.seen[sig]
		if !ok {
			copied := *sg
			s.seen[sig] = &copied
			continue
		}
		old.Runs += sg.Runs
		if len(sg.History.Ops) < len(old.History.Ops) {
			old.History, old.Report = sg.History, sg.Report
		}
	}
}

func (s *Sightings) add(run map[checker.Signature]*Sighting) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sig, sg := range run {
		old, ok := s.seen[sig]
		if !ok {
			copied := *sg
			copied.Runs = 1
			s.seen[sig] = &copied
			continue
		}
		old.Runs++
		if len(sg.History.Ops) < len(old.History.Ops) {
			old.History, old.Report = sg.History, sg.Report
		}
	}
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
