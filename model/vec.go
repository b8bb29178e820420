package model

import "sync/atomic"

// vec is a persistent append-only vector. States are values that porcupine
// keeps many of at once, so a partition log must be cheap to share between
// them, and cheap to compare: full chunks are immutable and shared, and so
// are the list of chunks and the tail being filled, which a vec appends to
// in place when no other vec has appended past its end (the common case: a
// state goes on in one way), and copies otherwise. Two vecs that share
// their list of chunks share every chunk of it, so comparing them costs
// nothing per chunk.
type vec[T any] struct {
	chunks  *shared[*[chunkSize]T]
	nchunks int
	tail    *shared[T]
	n       int // how many of tail's items are this vec's
}

const chunkSize = 64

// shared is an array that vecs hold a prefix of each, so that items below
// used never change.
type shared[T any] struct {
	items []T
	// used is how many items some vec holds: a vec whose end is used
	// may write the next item; the others copy. Atomic, as states may be
	// shared across goroutines.
	used atomic.Int32
}

// appended is a holding n items of s with x after them, in s when no one
// has appended past n and s has room, else in a copy with room for size.
func appended[T any](s *shared[T], n int, x T, size int) *shared[T] {
	if s == nil || n == len(s.items) || !s.used.CompareAndSwap(int32(n), int32(n+1)) {
		fresh := &shared[T]{items: make([]T, size)}
		if s != nil {
			copy(fresh.items, s.items[:n])
		}
		fresh.used.Store(int32(n + 1))
		s = fresh
	}
	s.items[n] = x
	return s
}

func (v vec[T]) Len() int { return v.nchunks*chunkSize + v.n }

func (v vec[T]) At(i int) T {
	if c := i / chunkSize; c < v.nchunks {
		return v.chunks.items[c][i%chunkSize]
	}
	return v.tail.items[i-v.nchunks*chunkSize]
}

// Append returns v with x at its end; v itself is unchanged.
func (v vec[T]) Append(x T) vec[T] {
	v.tail = appended(v.tail, v.n, x, chunkSize)
	if v.n++; v.n < chunkSize {
		return v
	}
	// Full, the tail is a chunk: used is chunkSize, so no vec writes it again.
	full := (*[chunkSize]T)(v.tail.items)
	v.chunks = appended(v.chunks, v.nchunks, full, max(4, 2*v.nchunks))
	v.nchunks++
	v.tail, v.n = nil, 0
	return v
}

// equal reports whether v and o hold the same items, by eq; shared chunks
// are not read.
func (v vec[T]) equal(o vec[T], eq func(T, T) bool) bool {
	return v.Len() == o.Len() && v.firstDiff(o, eq) == v.Len()
}

// firstDiff is the first index below both lengths where v and o hold items
// eq tells apart, or the shorter length; shared chunks are skipped.
func (v vec[T]) firstDiff(o vec[T], eq func(T, T) bool) int {
	chunks := min(v.nchunks, o.nchunks)
	if v.chunks != o.chunks {
		for c := range chunks {
			if x, y := v.chunks.items[c], o.chunks.items[c]; x != y {
				if i := firstDiffIn(x[:], y[:], eq); i < chunkSize {
					return c*chunkSize + i
				}
			}
		}
	}
	from, n := chunks*chunkSize, min(v.Len(), o.Len())
	if v.tail == o.tail && v.nchunks == o.nchunks {
		return n
	}
	for i := from; i < n; i++ {
		if !eq(v.At(i), o.At(i)) {
			return i
		}
	}
	return n
}

func firstDiffIn[T any](a, b []T, eq func(T, T) bool) int {
	for i := range a {
		if !eq(a[i], b[i]) {
			return i
		}
	}
	return len(a)
}
