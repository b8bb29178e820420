package impl

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fencecheck/fencecheck/model"
)

// registry is the broker's partitions by name. A partition comes into being
// with its first write (a batch or a marker); its pointer never changes, so
// a request may hold it after letting go of the registry. The map is
// replaced, never written, so that lookups share no lock: writers to
// different partitions touch no common memory.
type registry struct {
	mu     sync.Mutex // serialises creation
	byName atomic.Pointer[map[model.Partition]*partition]
	// segmentSize is the segment size of new partitions' logs.
	segmentSize int
	// clock and expiry are the broker's, for new partitions (expiry.go).
	clock  *atomic.Int64
	expiry model.Expiry
}

func (r *registry) reset(segmentSize int) {
	r.segmentSize = segmentSize
	r.byName.Store(&map[model.Partition]*partition{})
}

// lookup is the partition named p, or nil when nothing was ever written there.
func (r *registry) lookup(p model.Partition) *partition { return (*r.byName.Load())[p] }

// open is the partition named p, created empty when it does not exist yet.
func (r *registry) open(p model.Partition) *partition {
	if part := r.lookup(p); part != nil {
		return part
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if part := r.lookup(p); part != nil {
		return part
	}
	byName := maps.Clone(*r.byName.Load())
	byName[p] = newPartition(r.segmentSize).setClock(r.clock, r.expiry)
	r.byName.Store(&byName)
	return byName[p]
}

// lockSorted opens and locks the partitions named by names, which must be
// sorted and distinct: partitions are locked by name, so requests that
// write several never wait on each other in a cycle.
func (r *registry) lockSorted(names []model.Partition) (parts []*partition, unlock func()) {
	parts = make([]*partition, len(names))
	for i, name := range names {
		parts[i] = r.open(name)
	}
	for _, p := range parts {
		p.mu.Lock()
	}
	return parts, func() {
		for _, p := range parts {
			p.mu.Unlock()
		}
	}
}

// lockAll locks the registry, so that no partition comes into being, and
// every partition by name. Restart stops the whole broker this way.
func (r *registry) lockAll() (unlock func()) {
	r.mu.Lock()
	parts := r.all()
	for _, p := range parts {
		p.mu.Lock()
	}
	return func() {
		for _, p := range parts {
			p.mu.Unlock()
		}
		r.mu.Unlock()
	}
}

// all is every partition, by name; the caller holds r.mu.
func (r *registry) all() []*partition {
	byName := *r.byName.Load()
	parts := make([]*partition, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		parts = append(parts, byName[name])
	}
	return parts
}
