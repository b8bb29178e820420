package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/histories"
	"github.com/fencecheck/fencecheck/model"
)

// progressFold checks progress: every trip the workload had to process is
// committed by the end, carried by a committed write or seen by a
// read_committed reader. A config that can never commit (replicas sharing
// one transactional.id) ends here as "no progress" rather than as a hang.
// The fold holds the trips, which of them are committed, and the trips
// that each open transaction's produces carry, until the transaction ends.
//
// Bounded, it holds only the trips not yet committed, and no set of the
// committed ones (bound).
type progressFold struct {
	header    histories.History
	trips     *tripSet // nil when the history lists none
	committed map[string]bool
	pending   map[*txn][]string
	last      int // the id of the operation called last
	// bounded: trips holds the trips not yet committed, and committed
	// stays empty.
	bounded bool
	// rebuiltAt is how many trips were left when trips was last made
	// anew, because a map keeps its room when its keys are deleted.
	rebuiltAt int
}

// tripSet is a set of the trips a history lists, which the collector
// never scans. A long history lists millions of trips. A map keyed by the
// trips' strings holds a pointer for each, so the collector would scan it
// all at each of its cycles through a long check. So tripSet maps a
// fingerprint of each trip to the trip's place in the history's list, and
// neither holds a pointer. A trip whose fingerprint another trip already
// has goes into clashes, keyed by the string, so that the set never takes
// one trip for another.
type tripSet struct {
	list    []string       // the history's trips
	byPrint map[uint64]int // a fingerprint: the place of its trip in list
	clashes map[string]bool
}

// tripFingerprint is the fingerprint a tripSet keys a trip by. The tests
// set it to one that makes every trip clash.
var tripFingerprint = func(trip string) uint64 { return tripPrint("", trip) }

// newTripSet is the set of the trips in list.
func newTripSet(list []string) *tripSet {
	s := &tripSet{list: list, byPrint: make(map[uint64]int, len(list))}
	for i := range list {
		s.add(i)
	}
	return s
}

// add puts list[i] in the set.
func (s *tripSet) add(i int) {
	trip := s.list[i]
	if s.has(trip) {
		return
	}
	print := tripFingerprint(trip)
	if _, taken := s.byPrint[print]; !taken {
		s.byPrint[print] = i
		return
	}
	if s.clashes == nil {
		s.clashes = map[string]bool{}
	}
	s.clashes[trip] = true
}

func (s *tripSet) has(trip string) bool {
	if i, ok := s.byPrint[tripFingerprint(trip)]; ok && s.list[i] == trip {
		return true
	}
	return s.clashes[trip]
}

func (s *tripSet) remove(trip string) {
	print := tripFingerprint(trip)
	if i, ok := s.byPrint[print]; ok && s.list[i] == trip {
		delete(s.byPrint, print)
		return
	}
	delete(s.clashes, trip)
}

func (s *tripSet) len() int { return len(s.byPrint) + len(s.clashes) }

// compact is the same set in maps made anew, because a map keeps its
// room when its keys are deleted.
func (s *tripSet) compact() *tripSet {
	left := &tripSet{list: s.list, byPrint: make(map[uint64]int, len(s.byPrint))}
	maps.Copy(left.byPrint, s.byPrint)
	if len(s.clashes) > 0 {
		left.clashes = maps.Clone(s.clashes)
	}
	return left
}

// bound makes the fold forget each trip once it is committed
// (boundedFold): a trip is judged only by whether it was, so the verdict
// is the same, and it never needs what it dropped.
func (f *progressFold) bound() {
	f.bounded = true
	if f.trips != nil {
		f.rebuiltAt = f.trips.len()
	}
}

func (f *progressFold) forgotten() string { return "" }

func newProgressFold(header histories.History) invariantFold {
	f := &progressFold{header: header, last: -1}
	if header.Trips != nil {
		f.trips, f.committed, f.pending = newTripSet(header.Trips), map[string]bool{}, map[*txn][]string{}
	}
	return f
}

func (f *progressFold) add(op *histories.Op) {
	f.last = op.ID
	if f.trips == nil || !isOutput(f.header, op.Req.Partition) {
		return
	}
	if op.Kind == model.Produce && op.Result.Succeeded() && op.Req.TransactionalID == "" {
		for _, rec := range op.Req.Records {
			f.commit(rec.Key)
		}
	}
	if isReadCommitted(*op) {
		for _, rec := range op.Result.Resp.Records {
			f.commit(rec.Key)
		}
	}
}

func (f *progressFold) commit(key string) {
	if !f.trips.has(key) {
		return
	}
	if !f.bounded {
		f.committed[key] = true
		return
	}
	f.trips.remove(key)
	if f.trips.len() < f.rebuiltAt/4 {
		f.trips = f.trips.compact()
		f.rebuiltAt = f.trips.len()
	}
}

// done reports whether trip is committed.
func (f *progressFold) done(trip string) bool {
	if f.bounded {
		return !f.trips.has(trip)
	}
	return f.committed[trip]
}

// joined keeps the trips a transactional produce carries until its
// transaction ends.
func (f *progressFold) joined(op *histories.Op, t *txn) {
	if f.trips == nil || op.Kind != model.Produce || !op.Result.Succeeded() || !isOutput(f.header, op.Req.Partition) {
		return
	}
	for _, rec := range op.Req.Records {
		if f.trips.has(rec.Key) && !f.done(rec.Key) {
			f.pending[t] = append(f.pending[t], rec.Key)
		}
	}
}

func (f *progressFold) closed(t *txn) {
	if t.fate == fateCommitted {
		for _, key := range f.pending[t] {
			if f.bounded {
				f.commit(key)
				continue
			}
			f.committed[key] = true
		}
	}
	delete(f.pending, t)
}

func (f *progressFold) verdict() Verdict {
	if f.trips == nil {
		return Verdict{Check: Progress, Status: Skipped, Reason: "the history lists no trips"}
	}
	var missing []string
	for _, trip := range distinct(f.header.Trips) {
		if !f.done(trip) {
			missing = append(missing, trip)
		}
	}
	if len(missing) == 0 {
		return foldedVerdict(Progress, nil)
	}
	return foldedVerdict(Progress, []foldedViolation{{Violation: Violation{Op: f.last,
		Reason: fmt.Sprintf("no progress: %d of %d trips never committed (%s)", len(missing), len(distinct(f.header.Trips)), listSome(missing, 3))}}})
}

// isOutput reports whether p belongs to one of h's output topics (every
// topic is one when the history does not say).
func isOutput(h histories.History, p model.Partition) bool {
	return h.OutputTopics == nil || slices.Contains(h.OutputTopics, topicOf(p))
}

func distinct(keys []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// listSome is the first n items, then "..." when there are more.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + ", ..."
}
