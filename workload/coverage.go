package workload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Coverage counts what an exploration did: how often each action ran, and
// how often a fault struck a process in the middle of a transaction. A
// generator that never stalls anyone mid-transaction proves nothing.
type Coverage struct {
	mu     sync.Mutex
	ran    map[string]int
	midTxn map[string]int
}

// NewCoverage is an empty count.
func NewCoverage() *Coverage {
	return &Coverage{ran: map[string]int{}, midTxn: map[string]int{}}
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
