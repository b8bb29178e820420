package impl

// segmented is an append-only sequence stored in fixed-size segments, as a
// Kafka log is: appending never copies what is already written, and a
// segment, once full, is never touched again.
type segmented[T any] struct {
	full [][]T
	tail []T
	// size is how many entries a segment holds (Config.SegmentSize).
	size int
}

// segmentSize is how many entries a segment holds unless the broker is
// configured otherwise.
const segmentSize = 4096

// ExploringSegmentSize is the segment size of a broker under exploration:
// three entries, so that the few dozen entries of an explored run's logs
// fill several segments and every read crosses their edges (a size of one
// or two would let some wrong index arithmetic agree with the right one).
const ExploringSegmentSize = 3

// newSegmented is an empty sequence of segments of size entries.
func newSegmented[T any](size int) segmented[T] { return segmented[T]{size: size} }

// firstSegmentCap is the capacity a tail starts with.
const firstSegmentCap = 16

func (s *segmented[T]) Len() int { return len(s.full)*s.size + len(s.tail) }

func (s *segmented[T]) At(i int) T {
	if seg := i / s.size; seg < len(s.full) {
		return s.full[seg][i%s.size]
	}
	return s.tail[i-len(s.full)*s.size]
}

// Last is the last entry; the sequence must not be empty.
func (s *segmented[T]) Last() T { return s.At(s.Len() - 1) }

func (s *segmented[T]) Append(xs ...T) {
	for len(xs) > 0 {
		if len(s.tail) == s.size {
			s.full = append(s.full, s.tail)
			s.tail = nil
		}
		if s.tail == nil {
			// The first tail grows as a slice does, up to a segment: most
			// logs of a short-lived broker stay far smaller than one. A
			// log that filled a segment will fill the next.
			capacity := min(firstSegmentCap, s.size)
			if len(s.full) > 0 {
				capacity = s.size
			}
			s.tail = make([]T, 0, capacity)
		}
		n := min(len(xs), s.size-len(s.tail))
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
