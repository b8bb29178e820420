package proxy

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Schedule is a seeded plan of faults, for unattended runs: fault kind k
// strikes on average once every Every[k] (a Poisson process), each time on
// a process drawn among those that connected and match Procs. The moments,
// the kinds and the draws among the processes follow from Seed alone.
type Schedule struct {
	// Every is the mean time between faults of each kind: stall, crash,
	// lose-response, delay, pause (of the whole upstream).
	Every map[string]time.Duration
	// Length is how long a stall, a crash (until the restart), a delay or
	// a pause lasts.
	Length time.Duration
	// Procs picks the processes faults strike (nil: every one).
	Procs *regexp.Regexp
	Seed  uint64
}

// scheduledFaults are the kinds a Schedule draws from.
var scheduledFaults = []string{"crash", "delay", "lose-response", "pause", "stall"}

// ParseFaults reads a schedule's rates, "stall=30s,crash=2m": each fault
// kind and the mean time between two of it.
func ParseFaults(spec string) (map[string]time.Duration, error) {
	every := map[string]time.Duration{}
	for _, part := range strings.Split(spec, ",") {
		kind, mean, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !slices.Contains(scheduledFaults, kind) {
			return nil, fmt.Errorf("%q: give KIND=EVERY, KIND one of %s (as stall=30s)", part, strings.Join(scheduledFaults, ", "))
		}
		d, err := time.ParseDuration(mean)
		if err != nil || d < 10*time.Millisecond {
			return nil, fmt.Errorf("%q: the mean time between faults is a duration of 10ms or more, as 30s", part)
		}
		every[kind] = d
	}
	return every, nil
}

// RunSchedule applies s until ctx is done, logging each fault. A fault
// whose process is not running (stalled, crashed) is skipped, as is one
// when no process matches.
func (p *Proxy) RunSchedule(ctx context.Context, s Schedule) {
	next := s.plan()
	if next == nil {
		return
	}
	for {
		f := next()
		select {
		case <-ctx.Done():
			return
		case <-time.After(f.wait):
		}
		p.strike(f, s)
	}
}

// scheduled is one fault of a plan: after wait, kind, on the process at
// pick (in [0, 1)) of those it may strike.
type scheduled struct {
	wait time.Duration
	kind string
	pick float64
}

// plan is the schedule's faults one after the other, the same for the
// same seed; nil when it has none.
func (s Schedule) plan() func() scheduled {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	kinds := slices.Sorted(maps.Keys(s.Every))
	rate := 0.0 // faults a second
	for _, k := range kinds {
		rate += 1 / s.Every[k].Seconds()
	}
	if rate == 0 {
		return nil
	}
	return func() scheduled {
		wait := time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		return scheduled{wait: wait, kind: drawKind(rng, kinds, s.Every, rate), pick: rng.Float64()}
	}
}

// drawKind draws a fault kind in proportion to its rate.
func drawKind(rng *rand.Rand, kinds []string, every map[string]time.Duration, rate float64) string {
	x := rng.Float64() * rate
	for _, k := range kinds {
		if x -= 1 / every[k].Seconds(); x < 0 {
			return k
		}
	}
	return kinds[len(kinds)-1]
}

// strike applies one scheduled fault; a stall and a crash end after
// s.Length.
func (p *Proxy) strike(f scheduled, s Schedule) {
	logf, kind := p.cfg.Logf, f.kind
	if kind == "pause" {
		if err := p.PauseUpstream(s.Length); err == nil {
			logf("fault: the upstream paused for %v", s.Length)
		}
		return
	}
	var names []string
	for _, name := range p.Processes() {
		if s.Procs == nil || s.Procs.MatchString(name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	name := names[int(f.pick*float64(len(names)))]
	if p.Process(name).State() != "running" {
		return
	}
	_ = p.Fault(name, kind, s.Length)
	if kind == "lose-response" {
		logf("fault: the next answer to %s lost", name)
	} else {
		logf("fault: %s of %s for %v", kind, name, s.Length)
	}
	undo := map[string]string{"stall": "wake", "crash": "restart"}[kind]
	if undo == "" {
		return
	}
	time.AfterFunc(s.Length, func() { _ = p.Fault(name, undo, 0) }) // even once the schedule stopped
}
