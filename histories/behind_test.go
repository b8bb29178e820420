package histories

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// walkOf is a walk of n operations, each one's raw value its place, that
// fails at failAt (none when negative) and reuses its buffer, as the
// fast reading does.
func walkOf(n, failAt int) func(func(int, int64, []byte) error) error {
	return func(each func(int, int64, []byte) error) error {
		buf := make([]byte, 0, 16)
		for i := range n {
			if i == failAt {
				return fmt.Errorf("walk broke at %d", i)
			}
			buf = fmt.Appendf(buf[:0], "%d", i)
			if err := each(i, 0, buf); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestReadBehindGivesEachOperationInOrder: every operation reaches each
// once, in order, with its own bytes, although the walk reuses its
// buffer; on one processor and on several.
func TestReadBehindGivesEachOperationInOrder(t *testing.T) {
	for _, procs := range []int{1, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var got []string
			err := readBehind(walkOf(3*behindBatch+7, -1), func(i int, raw []byte) error {
				require.Equal(t, fmt.Sprint(len(got)), string(raw), "op %d on %d processors", i, procs)
				got = append(got, string(raw))
				return nil
			})
			require.NoError(t, err)
			require.Len(t, got, 3*behindBatch+7)
		}()
	}
}

// TestReadBehindNamesTheFirstError: the error of the operation read
// first wins, whether each's or the walk's, and no operation after a
// failed one reaches each.
func TestReadBehindNamesTheFirstError(t *testing.T) {
	failEach := errors.New("each failed")
	for _, procs := range []int{1, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			last := -1
			err := readBehind(walkOf(5*behindBatch, 4*behindBatch), func(i int, _ []byte) error {
				last = i
				if i == behindBatch+3 {
					return failEach
				}
				return nil
			})
			require.ErrorIs(t, err, failEach, "%d processors", procs)
			require.Equal(t, behindBatch+3, last, "nothing after the failed operation")
			err = readBehind(walkOf(5*behindBatch, behindBatch+3), func(i int, _ []byte) error {
				if i == 4*behindBatch {
					return failEach
				}
				return nil
			})
			require.EqualError(t, err, fmt.Sprintf("walk broke at %d", behindBatch+3), "%d processors", procs)
		}()
	}
}
