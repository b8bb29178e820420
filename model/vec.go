package model

// vec is a persistent append-only vector. States are values that porcupine
// keeps many of at once, so a partition log must be cheap to share between
// them: full chunks are immutable and shared, only the tail is copied.
type vec[T any] struct {
	chunks []*[chunkSize]T
	tail   []T
}

const chunkSize = 64

func (v vec[T]) Len() int { return len(v.chunks)*chunkSize + len(v.tail) }

func (v vec[T]) At(i int) T {
	if c := i / chunkSize; c < len(v.chunks) {
		return v.chunks[c][i%chunkSize]
	}
	return v.tail[i-len(v.chunks)*chunkSize]
}

// Append returns v with x at its end; v itself is unchanged.
func (v vec[T]) Append(x T) vec[T] {
	tail := make([]T, len(v.tail)+1, chunkSize)
	copy(tail, v.tail)
	tail[len(v.tail)] = x
	if len(tail) < chunkSize {
		return vec[T]{chunks: v.chunks, tail: tail}
	}
	full := new([chunkSize]T)
	copy(full[:], tail)
	chunks := append(v.chunks[:len(v.chunks):len(v.chunks)], full)
	return vec[T]{chunks: chunks}
}
