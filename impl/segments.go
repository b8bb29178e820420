package impl

// segmented is an append-only sequence stored in fixed-size segments, as a
// Kafka log is: appending never copies what is already written, and a
// segment, once full, is never touched again.
type segmented[T any] struct {
	full [][]T
	tail []T
}

// segmentSize is how many entries a segment holds.
const segmentSize = 4096

// firstSegmentCap is the capacity a tail starts with.
const firstSegmentCap = 16

func (s *segmented[T]) Len() int { return len(s.full)*segmentSize + len(s.tail) }

func (s *segmented[T]) At(i int) T {
	if seg := i / segmentSize; seg < len(s.full) {
		return s.full[seg][i%segmentSize]
	}
	return s.tail[i-len(s.full)*segmentSize]
}

// Last is the last entry; the sequence must not be empty.
func (s *segmented[T]) Last() T { return s.At(s.Len() - 1) }

func (s *segmented[T]) Append(xs ...T) {
	for len(xs) > 0 {
		if len(s.tail) == segmentSize {
			s.full = append(s.full, s.tail)
			s.tail = nil
		}
		if s.tail == nil {
			// The first tail grows as a slice does, up to a segment: most
			// logs of a short-lived broker stay far smaller than one. A
			// log that filled a segment will fill the next.
			size := min(firstSegmentCap, segmentSize)
			if len(s.full) > 0 {
				size = segmentSize
			}
			s.tail = make([]T, 0, size)
		}
		n := min(len(xs), segmentSize-len(s.tail))
		s.tail = append(s.tail, xs[:n]...)
		xs = xs[n:]
	}
}

// All calls yield with every entry in order, until it returns false.
func (s *segmented[T]) All(yield func(int, T) bool) {
	i := 0
	for _, seg := range append(s.full, s.tail) {
		for _, x := range seg {
			if !yield(i, x) {
				return
			}
			i++
		}
	}
}
