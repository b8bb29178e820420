package model

import (
	"fmt"
	"reflect"
	"sort"
)

// EqualByReflection is the relation Equal must have, said another way:
// reflect.DeepEqual on the states as a reader sees them, their logs built
// again item by item (so that how vecs share chunks does not count), each
// marker only a marker, and the aborted ranges sorted, each ending where
// its run of markers begins.
func EqualByReflection(a, b State) bool {
	return reflect.DeepEqual(asRead(a), asRead(b))
}

func asRead(s State) State {
	if s.parts == nil {
		return s
	}
	parts := make(map[Partition]partState, len(s.parts))
	for p, ps := range s.parts {
		log := partLog{counted: ps.log.counted, floor: ps.log.floor}
		for i := int(ps.log.counted); i < ps.log.Len(); i++ {
			e := ps.log.At(i)
			if e.control {
				e = entry{control: true}
			}
			log.kept = log.kept.Append(e)
		}
		var ranges []abortedTxn
		for i := range ps.aborted.Len() {
			a := ps.aborted.At(i)
			for a.marker > ps.log.counted && ps.log.At(int(a.marker-1)).control {
				a.marker--
			}
			ranges = append(ranges, a)
		}
		sort.Slice(ranges, func(i, j int) bool {
			x, y := ranges[i], ranges[j]
			return x.marker < y.marker || x.marker == y.marker && (x.pid < y.pid || x.pid == y.pid && x.first < y.first)
		})
		var aborted vec[abortedTxn]
		for _, a := range ranges {
			aborted = aborted.Append(a)
		}
		ps.log, ps.aborted = log, aborted
		parts[p] = ps
	}
	s.parts = parts
	return s
}

// Rebuilt is s with its logs built again item by item: the same broker,
// sharing no chunk with s.
func Rebuilt(s State) State {
	parts := make(map[Partition]partState, len(s.parts))
	for p, ps := range s.parts {
		ps.log.kept, ps.aborted = rebuiltVec(ps.log.kept), rebuiltVec(ps.aborted)
		parts[p] = ps
	}
	if s.parts != nil {
		s.parts = parts
	}
	return s
}

func rebuiltVec[T any](v vec[T]) vec[T] {
	var fresh vec[T]
	for i := range v.Len() {
		fresh = fresh.Append(v.At(i))
	}
	return fresh
}

// SetEpoch is s with the coordinator holding id at epoch, its producer id
// kept and its last bump forgotten, as a fresh InitProducerId leaves it.
// It stands for the metadata a Kafka test builds at a given epoch with
// mocks, so that a transcript need not send thousands of bumps. Such
// metadata has no markers in flight, so the ones in flight land first.
// Only an id a request made known, with no transaction open, can be set,
// and only forward: epochs only grow.
func SetEpoch(s State, id string, epoch int) (State, error) {
	s = LandMarkers(s)
	t, known := s.txns[id]
	switch {
	case !known || t.pid == unknownPID:
		return s, fmt.Errorf("set-epoch: %s has no producer id yet; an init must come first", id)
	case t.phase == Ongoing:
		return s, fmt.Errorf("set-epoch: %s has a transaction open", id)
	case epoch <= int(t.epoch) || epoch > int(epochExhausted):
		return s, fmt.Errorf("set-epoch: epoch %d is outside %d..%d (epochs only grow)", epoch, t.epoch+1, epochExhausted)
	}
	t.epoch = int16(epoch)
	t.prevPID, t.prevEpoch, t.endedEpoch, t.abortedOnItsOwn = NoProducerID, NoEpoch, NoEpoch, false
	s.setTxn(id, t)
	return s, nil
}

// SetKeptEpoch is s with the client epoch of id's kept transaction (a
// KIP-939 InitProducerId that kept it) moved forward to epoch, as a
// Kafka test loops over InitProducerId until the epoch runs out. Only a
// kept transaction can be set, and only forward.
func SetKeptEpoch(s State, id string, epoch int) (State, error) {
	t, known := s.txns[id]
	switch {
	case !known || t.kept == nil:
		return s, fmt.Errorf("set-epoch kept: %s has no kept transaction", id)
	case epoch <= int(t.kept.epoch) || epoch > int(epochExhausted):
		return s, fmt.Errorf("set-epoch kept: epoch %d is outside %d..%d (epochs only grow)", epoch, t.kept.epoch+1, epochExhausted)
	}
	t.kept = &keptTxn{t.kept.pid, int16(epoch)}
	s.setTxn(id, t)
	return s, nil
}
