#!/usr/bin/env bash
# A long exploration of one session property against kfake: CHECKS
# interleavings (200 by default, about an hour for a client library's
# loop) of TEST, with rapid's log, then a summary: the interleavings run,
# the faults drawn (how many times each action was), and the verdict.
#
#   scripts/explore-clients.sh TEST [LOG]
#   scripts/explore-clients.sh 'TestPropertyClientLoopsSarama/kip447/txn-v1'
#   TAGS=confluent scripts/explore-clients.sh 'TestPropertyClientLoopsConfluent/kip447/txn-v2'
#   scripts/explore-clients.sh 'TestPropertyKafkaGroupTransactSession/txn-v1'
#
# LOG (default explore-<test>.log) keeps the whole run; the summary goes
# to stdout and to LOG.summary, and each counterexample's history to
# LOG.histories/ (FENCECHECK_SESSION_OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
test="${1:?usage: explore-clients.sh TEST [LOG]}"
log="${2:-explore-$(echo "$test" | tr '/' '-').log}"
checks="${CHECKS:-200}"

start=$(date +%s)
status=0
FENCECHECK_SESSION_CHECKS="$checks" FENCECHECK_SESSION_OUT="$log.histories" RAPID_V=1 CGO_ENABLED=1 \
  go test -count=1 -tags "${TAGS:-}" -timeout 12h ./kafka/ -run "^$test\$" -v >"$log" 2>&1 || status=$?
elapsed=$(($(date +%s) - start))

{
  # rapid numbers its interleavings; after a failure it replays and
  # shrinks, which are not interleavings explored
  failed_at=$(grep -m1 -oE '\[rapid\] test #[0-9]+ failed' "$log" | grep -oE '[0-9]+' || true)
  explored=${failed_at:-$(grep -c '\[rapid\] test #[0-9]* start' "$log")}
  echo "== $test: $checks interleavings asked, $explored run${failed_at:+ (the last failed)}, ${elapsed} s"
  echo "verdict: $(grep -E '^(ok|FAIL|--- )' "$log" | head -3 | paste -sd' ' -)"
  echo "known kfake findings met: $(grep -c 'known finding' "$log" || true)"
  echo "actions drawn (action: count; one that cannot apply, a third join in a full group, is skipped):"
  sed -n 's/.*\[rapid\] draw action: "\([A-Za-z]*\)".*/\1/p' "$log" | sort | uniq -c | sort -rn | awk '{print "  " $2 ": " $1}'
  echo "pauses drawn at: $(sed -n 's/.*\[rapid\] draw pause at: "\([a-z_]*\)".*/\1/p' "$log" | sort | uniq -c | awk '{print $2 " " $1}' | paste -sd, -)"
} | tee "$log.summary"
exit "$status"
