package impl

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mutants names every seeded bug the broker carries, each a real way to get
// fencing wrong, with what it does. All are off unless Config.Mutants names
// them; the checker must catch each one (mutants_test.go).
var Mutants = map[string]string{
	"no-epoch-check":                        "partition leaders accept a produce of any epoch: neither their producer table nor the coordinator's verification compares epochs",
	"init-keeps-txn-open":                   "InitProducerId bumps the epoch but leaves the open transaction open: no ABORT markers",
	"leader-ignores-marker-epoch":           "partition leaders do not learn the epoch a COMMIT or ABORT marker carries",
	"dedup-ignores-epoch":                   "duplicate detection matches a batch by its sequences alone, across epochs",
	"offsets-ignore-generation":             "TxnOffsetCommit skips the group's generation and member check",
	"read-committed-ignores-aborts":         "read_committed fetches return records of aborted transactions",
	"lso-ignores-open-txn":                  "the last stable offset is the high watermark: open transactions do not hold it back",
	"timeout-abort-keeps-epoch":             "the coordinator aborts an expired transaction without bumping the epoch",
	"restart-loses-producer-state":          "a broker restart keeps the partition logs but not the producer state rebuilt from them",
	"reinit-keeps-epoch":                    "InitProducerId of a known transactional.id hands back the epoch it already had",
	"late-endtxn-hits-next-txn":             "under transactions v2 an EndTxn carrying the previous epoch ends the ongoing transaction (KAFKA-17754)",
	"marker-matches-pid-only":               "an EndTxn(abort) of an older epoch is matched by producer id alone: its ABORT markers, carrying the old epoch, close the current transaction",
	"hanging-txn":                           "partition leaders accept a transactional write for a partition the coordinator does not have in the transaction (KAFKA-14402)",
	"next-txn-before-markers":               "with markers in flight, a producer's next transaction begins and writes before the markers of its last one are written",
	"plain-commit-ignores-generation":       "the group coordinator takes a plain OffsetCommit from a member of the group under any generation, a stale one included",
	"replaced-instance-commits":             "the group coordinator takes a commit from a static member's old member id, after a restart took its instance over, as the new member's",
	"assign-before-revoke":                  "a KIP-848 consumer group's coordinator gives a member a partition of its target while another member still holds it, assigned or pending revocation",
	"txn-commit-accepts-stale-member-epoch": "the group coordinator takes a TxnOffsetCommit to a KIP-848 consumer group from a member under any member epoch, a stale one included",
}

// mutant is one seeded bug, as the code paths test for it.
type mutant int

const (
	noEpochCheck mutant = iota
	initKeepsTxnOpen
	leaderIgnoresMarkerEpoch
	dedupIgnoresEpoch
	offsetsIgnoreGeneration
	readCommittedIgnoresAborts
	lsoIgnoresOpenTxn
	timeoutAbortKeepsEpoch
	restartLosesProducerState
	reinitKeepsEpoch
	lateEndTxnHitsNextTxn
	markerMatchesPIDOnly
	hangingTxn
	nextTxnBeforeMarkers
	plainCommitIgnoresGeneration
	replacedInstanceCommits
	assignBeforeRevoke
	txnCommitAcceptsStaleMemberEpoch
	mutantCount
)

var mutantNames = [mutantCount]string{
	noEpochCheck:                     "no-epoch-check",
	initKeepsTxnOpen:                 "init-keeps-txn-open",
	leaderIgnoresMarkerEpoch:         "leader-ignores-marker-epoch",
	dedupIgnoresEpoch:                "dedup-ignores-epoch",
	offsetsIgnoreGeneration:          "offsets-ignore-generation",
	readCommittedIgnoresAborts:       "read-committed-ignores-aborts",
	lsoIgnoresOpenTxn:                "lso-ignores-open-txn",
	timeoutAbortKeepsEpoch:           "timeout-abort-keeps-epoch",
	restartLosesProducerState:        "restart-loses-producer-state",
	reinitKeepsEpoch:                 "reinit-keeps-epoch",
	lateEndTxnHitsNextTxn:            "late-endtxn-hits-next-txn",
	nextTxnBeforeMarkers:             "next-txn-before-markers",
	markerMatchesPIDOnly:             "marker-matches-pid-only",
	hangingTxn:                       "hanging-txn",
	plainCommitIgnoresGeneration:     "plain-commit-ignores-generation",
	replacedInstanceCommits:          "replaced-instance-commits",
	assignBeforeRevoke:               "assign-before-revoke",
	txnCommitAcceptsStaleMemberEpoch: "txn-commit-accepts-stale-member-epoch",
}

// mutantSet is the switched-on bugs, one bit each, so that the hot paths
// test them without a map lookup.
type mutantSet uint32

func (s mutantSet) has(m mutant) bool { return s&(1<<m) != 0 }

// ParseMutants reads a comma-separated list of mutant names ("all" for
// every one; "" for none) into a set for Config.Mutants.
func ParseMutants(names string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case name == "all":
			for known := range Mutants {
				set[known] = true
			}
		case Mutants[name] != "":
			set[name] = true
		default:
			return nil, fmt.Errorf("unknown mutant %q; known mutants: %s", name, strings.Join(knownMutants(), ", "))
		}
	}
	return set, nil
}

func knownMutants() []string { return slices.Sorted(maps.Keys(Mutants)) }

// mutantsOf turns Config.Mutants into bits; a name it does not know is a
// mistake of the caller, who should have used ParseMutants.
func mutantsOf(names map[string]bool) mutantSet {
	var set mutantSet
	for name, on := range names {
		i := slices.Index(mutantNames[:], name)
		if i < 0 {
			panic(fmt.Sprintf("impl: unknown mutant %q; known mutants: %s", name, strings.Join(knownMutants(), ", ")))
		}
		if on {
			set |= 1 << mutant(i)
		}
	}
	return set
}
