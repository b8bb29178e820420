package impl

import (
	"slices"
	"sync"

	"github.com/fencecheck/fencecheck/model"
)

// registry is the broker's partitions by name. A partition comes into being
// with its first write (a batch or a marker); its pointer never changes, so
// a request may hold it after letting go of the registry.
type registry struct {
	mu     sync.RWMutex
	byName map[model.Partition]*partition
}

func (r *registry) reset() { r.byName = map[model.Partition]*partition{} }

// lookup is the partition named p, or nil when nothing was ever written there.
func (r *registry) lookup(p model.Partition) *partition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[p]
}

// open is the partition named p, created empty when it does not exist yet.
func (r *registry) open(p model.Partition) *partition {
	if part := r.lookup(p); part != nil {
		return part
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	part := r.byName[p]
	if part == nil {
		part = newPartition()
		r.byName[p] = part
	}
	return part
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
	names := make([]model.Partition, 0, len(r.byName))
	for name := range r.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]*partition, len(names))
	for i, name := range names {
		parts[i] = r.byName[name]
	}
	return parts
}
