package impl

import (
	"hash/fnv"
	"slices"
	"sync"
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

// lockTxnShard locks and returns the shard of a transactional.id.
func (b *Broker) lockTxnShard(id string) *txnShard {
	sh := b.txnShard(id)
	sh.mu.Lock()
	return sh
}

// lockGroupShard locks and returns the shard of a group.
func (b *Broker) lockGroupShard(name string) *groupShard {
	sh := b.groupShard(name)
	sh.mu.Lock()
	return sh
}

// lockGroupShards locks the shards of the named groups, each once, in index
// order (the lock order of broker.go).
func (b *Broker) lockGroupShards(names []string) (unlock func()) {
	shards := make([]int, 0, len(names))
	for _, name := range names {
		shards = append(shards, shardOf(name))
	}
	slices.Sort(shards)
	locks := make([]sync.Locker, 0, len(shards))
	for _, i := range slices.Compact(shards) {
		locks = append(locks, &b.groups[i].mu)
	}
	return lockInOrder(locks)
}
