package model

import (
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
		var log vec[entry]
		for i := range ps.log.Len() {
			e := ps.log.At(i)
			if e.control {
				e = entry{control: true}
			}
			log = log.Append(e)
		}
		var ranges []abortedTxn
		for i := range ps.aborted.Len() {
			a := ps.aborted.At(i)
			for a.marker > 0 && ps.log.At(int(a.marker-1)).control {
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
		ps.log, ps.aborted = rebuiltVec(ps.log), rebuiltVec(ps.aborted)
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
