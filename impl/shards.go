package impl

import (
	"hash/fnv"
	"slices"
)

// shardOf is the coordinator shard that owns id: its transactional.id or
// group name, hashed as Kafka picks a partition of __transaction_state or
// __consumer_offsets.
func shardOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % shardCount)
}

func (b *Broker) txnShard(id string) *txnShard       { return &b.txns[shardOf(id)] }
func (b *Broker) groupShard(name string) *groupShard { return &b.groups[shardOf(name)] }

// lockGroupShards locks the shards of the named groups, each once, in index
// order (the lock order of broker.go).
func (b *Broker) lockGroupShards(names []string) (unlock func()) {
	shards := make([]int, 0, len(names))
	for _, name := range names {
		shards = append(shards, shardOf(name))
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
	for _, i := range shards {
		b.groups[i].mu.Lock()
	}
	return func() {
		for _, i := range shards {
			b.groups[i].mu.Unlock()
		}
	}
}
