// Package workload is the simulated world fencecheck explores: fare writers
// and consume-transform-produce workers talking to a broker only through
// model.Target, an orchestrator that restarts what stops answering, and the
// faults that make zombies: stalls, crashes, lost responses, rebalances,
// clock ticks and broker restarts. A scheduler driven by rapid's draws
// decides who moves next, so a seed replays the same interleaving, and
// every request and answer is recorded as a history for the checker.
package workload

import (
	"fmt"
	"slices"
	"strings"
)

// Scenario names a configuration of the pipeline, and the check a
// misconfiguration is expected to break.
type Scenario struct {
	Name string
	// Breaks lists the checks a misconfiguration is caught by (any one of
	// them); empty for a correct configuration.
	Breaks []string
	// What the scenario runs.
	writers   writerIDs   // fare writers (seed 000), or none
	replicas  int         // writer processes per shard; up to 8 for shared-id
	workers   bool        // consume-transform-produce workers (seed 002)
	groupMeta bool        // workers commit offsets with their group metadata (KIP-447)
	auditors  bool        // at-least-once consumers beside the workers, in a group of their own (newAuditor)
	instances instanceIDs // the workers' group.instance.id (KIP-345), or none
	kip848    bool        // the workers' consumers speak KIP-848's consumer group protocol (worker848.go)
	about     string
}

// writerIDs is how fare writers choose their transactional.id.
type writerIDs int

const (
	noWriters  writerIDs = iota
	stableID             // one transactional.id per shard, whoever runs it (seed 000)
	freshID              // a new transactional.id at every start (seed 000's warning)
	sharedID             // every replica of the service shares one id (seed 000)
	idempotent           // no transactional.id: idempotence only (seed 001)
)

// instanceIDs is how workers choose their group.instance.id (KIP-345).
type instanceIDs int

const (
	dynamicMembers  instanceIDs = iota // no group.instance.id
	instancePerSlot                    // one per worker the orchestrator keeps, whichever process runs it
	sharedInstance                     // every worker is given one group.instance.id
)

// Scenarios are the configurations fencecheck explores.
var Scenarios = []Scenario{
	{Name: "stable-id", writers: stableID, replicas: 1, workers: true, groupMeta: true,
		about: "one transactional.id per shard; KIP-447 workers commit offsets with their group metadata (correct)"},
	{Name: "fresh-id-per-start", writers: freshID, replicas: 1, Breaks: []string{"exactly-once"},
		about: "a fresh transactional.id at every start: a stalled old writer is never fenced (seed 000)"},
	{Name: "shared-id", writers: sharedID, replicas: 8, Breaks: []string{"progress"},
		about: "8 replicas share one transactional.id and fence each other (seed 000)"},
	{Name: "idempotent-restart", writers: idempotent, replicas: 1, Breaks: []string{"exactly-once"},
		about: "an idempotent-only producer resends after a restart under a new producer id (seed 001)"},
	{Name: adversaryScenario, writers: stableID, replicas: 1, workers: true, groupMeta: true,
		about: "the correct configuration, plus an adversary sending stale and forged producer ids, epochs, sequences, generations and timeouts (correct)"},
	{Name: AtLeastOnceScenario, workers: true, groupMeta: true, auditors: true,
		about: "KIP-447 workers, and beside them at-least-once consumers of the same input that commit with a plain OffsetCommit, their member id and generation (correct)"},
	{Name: StaticScenario, workers: true, groupMeta: true, instances: instancePerSlot,
		about: "KIP-447 workers that are static members (KIP-345): each worker the orchestrator keeps has its own group.instance.id, so a restarted worker takes its member's place without a rebalance, and the process it replaced is fenced by its instance id (correct)"},
	{Name: KIP848Scenario, workers: true, groupMeta: true, kip848: true,
		about: "consume-transform-produce workers on KIP-848's consumer group protocol: they join, heartbeat and reconcile with ConsumerGroupHeartbeat, and commit offsets in their transactions under their member id and member epoch (correct)"},
	{Name: "shared-instance-id", workers: true, groupMeta: true, instances: sharedInstance, Breaks: []string{"progress"},
		about: "every worker is given one group.instance.id: each live process's join takes the instance from the other, which is then fenced (FENCED_INSTANCE_ID)"},
	{Name: "groupid-string-offsets", workers: true, Breaks: []string{"offsets-monotonic", "exactly-once"},
		about: "workers commit offsets with the groupId-string overload: no generation fencing (seed 002)"},
	{Name: "kip848-groupid-string-offsets", workers: true, kip848: true, Breaks: []string{"offsets-monotonic", "exactly-once", "progress"},
		about: "KIP-848 workers commit offsets with the groupId-string overload, without member id and member epoch: Kafka 4.x takes such a commit unchecked, so a zombie's lands (no member epoch fencing); 3.9 refuses it (UNKNOWN_MEMBER_ID), so no trip is ever committed"},
}

// KIP848Scenario is the correct scenario whose workers are members of a
// KIP-848 consumer group: the one that sends ConsumerGroupHeartbeat.
const KIP848Scenario = "kip848-consumers"

// StaticScenario is the correct scenario whose workers are static
// members of their group (KIP-345).
const StaticScenario = "static-members"

// AtLeastOnceScenario is the correct scenario whose consumers include
// at-least-once ones: the one that sends plain OffsetCommits.
const AtLeastOnceScenario = "at-least-once-beside"

// Correct reports whether the scenario is a correct configuration.
func (s Scenario) Correct() bool { return len(s.Breaks) == 0 }

// SpeaksKIP848 reports whether the scenario's workers speak KIP-848's
// consumer group protocol: only a model.ConsumerGroupHeartbeater can run
// it.
func (s Scenario) SpeaksKIP848() bool { return s.kip848 }

// About says what the scenario runs.
func (s Scenario) About() string { return s.about }

// ScenarioNamed finds a scenario by name.
func ScenarioNamed(name string) (Scenario, error) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(ScenarioNames(), ", "))
}

// ScenarioNames lists the scenario names.
func ScenarioNames() []string {
	var names []string
	for _, s := range Scenarios {
		names = append(names, s.Name)
	}
	return slices.Clip(names)
}
