package checker

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// pointerFree reports whether a value of type t holds no pointer, so that
// the collector never scans it.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface,
		reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// TestTripSetIsNotScanned: the map that holds a history's trips holds no
// pointer, and every trip of a long list lands in it, not in clashes. A
// map keyed by the trips' strings made the collector scan every trip left
// at each of its cycles, so that a long check's time per operation grew
// with the number of trips.
func TestTripSetIsNotScanned(t *testing.T) {
	typ := reflect.TypeOf(tripSet{}.byPrint)
	require.True(t, pointerFree(typ.Key()) && pointerFree(typ.Elem()), "%v holds a pointer", typ)
	var list []string
	for i := range 100_000 {
		list = append(list, fmt.Sprintf("trip-%d", i))
	}
	s := newTripSet(list)
	require.Equal(t, len(list), s.len())
	require.Equal(t, len(list), len(s.byPrint), "each trip is held by its fingerprint")
	require.Empty(t, s.clashes)
	for _, trip := range list {
		require.True(t, s.has(trip))
	}
	require.False(t, s.has("trip-100000"))
	s.remove("trip-7")
	require.False(t, s.has("trip-7"))
	require.Equal(t, len(list)-1, s.compact().len())
}

// TestBoundedProgressWhenEveryTripClashes: with one fingerprint for every
// trip, all but the first are held in clashes, and progress still judges
// each trip apart. Two trips are never committed: the first, held by its
// fingerprint, and one held in clashes. The bounded fold is rebuilt on
// the way, when three quarters of its trips are committed.
func TestBoundedProgressWhenEveryTripClashes(t *testing.T) {
	saved := tripFingerprint
	tripFingerprint = func(string) uint64 { return 7 }
	defer func() { tripFingerprint = saved }()
	b := &historyBuilder{}
	idempotent := session{"", 5, 0}
	for i := range 300 {
		b.h.Trips = append(b.h.Trips, fmt.Sprintf("trip-%d", i))
		if i != 0 && i != 123 {
			b.produce("S", int64(i)*2, int64(i)*2+1, idempotent, "fares-0", int64(i), fmt.Sprintf("trip-%d", i))
		}
	}
	b.h.Trips = append(b.h.Trips, "trip-5") // listed twice: still one trip
	s := newTripSet(b.h.Trips)
	require.Equal(t, 300, s.len())
	require.Len(t, s.byPrint, 1)
	require.Len(t, s.clashes, 299)
	bounded, whole := boundedStream(b.h, true), boundedStream(b.h, false)
	var f *progressFold
	for i, name := range Checks[1 : len(Checks)-1] {
		if name == Progress {
			f = bounded.folds[i].(*progressFold)
		}
	}
	require.Equal(t, 2, f.trips.len())
	require.True(t, f.trips.has("trip-0") && f.trips.has("trip-123"))
	require.Less(t, f.rebuiltAt, 300, "the fold was rebuilt")
	require.Equal(t, whole.verdicts(), bounded.verdicts())
	v := Check(b.h, Options{}).Verdict(Progress)
	require.Equal(t, Violated, v.Status)
	require.Contains(t, v.Violations[0].Reason, "no progress: 2 of 300 trips never committed (trip-0, trip-123)")
}
