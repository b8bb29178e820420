package kafka

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// update rewrites the histories of known divergences from this run.
var update = flag.Bool("update", false, "rewrite histories/kfake/*.json from this run")

// findingsDir holds the history of every known divergence.
const findingsDir = "../histories/kfake"

// divergence is a scenario whose history the checker flags because kfake
// answers differently from Apache Kafka, or because the model does (its
// write-up in FINDINGS.md says which). The scenario's test expects the
// violations, so the suite stays green while the finding is re-checked on
// every run: once kfake (or the model) changes, the test fails and asks
// for the entry to go.
type divergence struct {
	violated []string // the checks the history violates
	about    string   // one line; FINDINGS.md has the rest
}

// knownDivergences lists every finding, by the file its history is saved
// as (histories/kfake/NAME.json).
var knownDivergences = map[string]divergence{
	"zombie-produce-invalid-txn-state-txn-v1": {
		violated: []string{"linearizable"},
		about:    "kfake answers a fenced producer's produce to a partition outside the current transaction INVALID_TXN_STATE; Kafka answers INVALID_PRODUCER_EPOCH",
	},
	"seed-000-zombie-fenced-txn-v1": {
		violated: []string{"linearizable"},
		about:    "seed 000 meets zombie-produce-invalid-txn-state under transactions v1",
	},
	"empty-abort-accepted-txn-v1": {
		violated: []string{"linearizable"},
		about:    "kfake accepts EndTxn(abort) with no transaction open under transactions v1; Kafka answers INVALID_TXN_STATE",
	},
	"empty-abort-accepted-txn-v2": {
		violated: []string{"linearizable"},
		about:    "the model refuses EndTxn(abort) with no transaction open under transactions v2; Kafka 4 accepts it and bumps the epoch (KAFKA-18464), as kfake does",
	},
	"fenced-produce-starts-nothing-txn-v2": {
		violated: []string{"linearizable"},
		about:    "under transactions v2 kfake adds a fenced producer's partition to the owner's transaction before the epoch check, so the owner's empty commit commits (epoch bumped, COMMIT marker written)",
	},
	"transaction-timeout-txn-v2": {
		violated: []string{"linearizable"},
		about:    "under transactions v2 kfake answers a timed-out producer's commit INVALID_TXN_STATE, as Kafka did before KAFKA-20785; Kafka now answers PRODUCER_FENCED",
	},
	"dropped-member-rejoins-txn-v1": {
		violated: []string{"linearizable"},
		about:    "the model keeps a member that did not rejoin a rebalance; Kafka (and kfake) drop it when the rebalance times out, so its rejoin is UNKNOWN_MEMBER_ID",
	},
	"dropped-member-rejoins-txn-v2": {
		violated: []string{"linearizable"},
		about:    "as under v1 (groups do not depend on the transaction protocol)",
	},
	"workers-livelock-txn-v2": {
		violated: []string{"linearizable", "progress"},
		about:    "TestPropertyKafkaStableID, with an earlier target: serial joins dropped the other worker, which rejoined and dropped the first (progress); a broker restart's real time expired a transaction the model keeps open (linearizable); both fixed in the target, not kfake's",
	},
	"zombie-wins-id-back-txn-v1": {
		violated: []string{"linearizable", "one-live-producer"},
		about:    "kfake lets a producer bump any epoch not above the current one (KIP-360 InitProducerId); Kafka fences all but the current and the previous epoch",
	},
	"zombie-wins-id-back-txn-v2": {
		violated: []string{"linearizable", "one-live-producer"},
		about:    "as under v1: a zombie wins its transactional id back",
	},
}

// historyName is the name of the scenario's history under its protocol.
func (s *scenario) historyName(name string) string {
	return fmt.Sprintf("%s-txn-v%d", name, s.target.TransactionsVersion())
}

// check runs every check on the recorded history. want names the checks
// that must be violated; every other must hold, except where a known
// divergence says otherwise.
func (s *scenario) check(name string, want ...string) checker.Report {
	s.t.Helper()
	full := s.historyName(name)
	h := s.history(full)
	if d, known := knownDivergences[full]; known {
		want = append(slices.Clone(want), d.violated...)
		s.t.Logf("known divergence %s: %s (kafka/FINDINGS.md)", full, d.about)
		s.saveFinding(full, h)
	}
	report := checker.Check(h, checker.Options{})
	requireVerdicts(s.t, report, want, full)
	return report
}

func requireVerdicts(t *testing.T, report checker.Report, violated []string, name string) {
	t.Helper()
	for _, v := range report.Verdicts {
		if slices.Contains(violated, v.Check) {
			require.Equal(t, checker.Violated, v.Status, "%s: expected %s violated, got %s; if kfake or the model changed, update knownDivergences and FINDINGS.md", name, v.Check, v)
			continue
		}
		require.True(t, v.Held(), "%s: %s", name, v)
	}
}

// saveFinding writes the history of a known divergence when asked to, or
// when it has none yet.
func (s *scenario) saveFinding(name string, h histories.History) {
	path := filepath.Join(findingsDir, name+".json")
	if _, err := os.Stat(path); err == nil && !*update {
		return
	}
	require.NoError(s.t, os.MkdirAll(findingsDir, 0o755))
	require.NoError(s.t, histories.SaveFile(path, h))
}

// TestFindingsReplay holds every saved finding to the violations its
// write-up describes, as `fencecheck check` reports them.
func TestFindingsReplay(t *testing.T) {
	for name, d := range knownDivergences {
		t.Run(name, func(t *testing.T) {
			h, err := histories.LoadFile(filepath.Join(findingsDir, name+".json"))
			require.NoError(t, err, "run the test that records %s first", name)
			requireVerdicts(t, checker.Check(h, checker.Options{}), d.violated, name)
		})
	}
}
