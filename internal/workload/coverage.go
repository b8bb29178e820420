package workload

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Coverage counts what an exploration did: how often each action ran, and
// how often a fault struck a process in the middle of a transaction. A
// generator that never stalls anyone mid-transaction proves nothing.
//
// It also keeps the distinct sequences of actions the runs took (by name,
// whoever they struck): how much of the space of interleavings an
// exploration covered, which the number of runs alone does not say.
type Coverage struct {
	mu        sync.Mutex
	ran       map[string]int
	midTxn    map[string]int
	sequences map[uint64]bool
}

// NewCoverage is an empty count.
func NewCoverage() *Coverage {
	return &Coverage{ran: map[string]int{}, midTxn: map[string]int{}, sequences: map[uint64]bool{}}
}

// took counts one run's sequence of actions.
func (c *Coverage) took(actions []string) {
	h := fnv.New64a()
	for _, a := range actions {
		name, _, _ := strings.Cut(a, " ")
		h.Write([]byte(name))
		h.Write([]byte{0})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sequences[h.Sum64()] = true
}

// sequenceHashes lists the distinct sequences taken, as hashes.
func (c *Coverage) sequenceHashes() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.sequences))
}

func (c *Coverage) count(action string, midTxn bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran[action]++
	if midTxn {
		c.midTxn[action]++
	}
}

// Ran is how many times action ran.
func (c *Coverage) Ran(action string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ran[action]
}

// MidTxn is how many times action struck a process with a transaction open.
func (c *Coverage) MidTxn(action string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.midTxn[action]
}

// String is a table of the counts, for test output.
func (c *Coverage) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, a := range slices.Sorted(maps.Keys(c.ran)) {
		fmt.Fprintf(&b, "%-22s ran %5d, mid-transaction %5d\n", a, c.ran[a], c.midTxn[a])
	}
	return b.String()
}

// Faults are the actions that strike a process.
var Faults = []string{"StallProcess", "CrashProcess", "ReplaceStalledProcess", "LoseResponse"}
