#!/usr/bin/env bash
# How many of REPLAYS replays (10 by default) reproduce each client loop's
# catch. A loop that is not fenced is run once to find an interleaving
# that breaks it; its seed (RAPID_SEED) then replays the same drawn
# actions against the real library REPLAYS times, one interleaving each,
# and a replay reproduces the catch when it breaks the same check (the
# last column counts the replays caught by either check). The
# sarama shipped example's wedge is a scripted test, run REPLAYS times.
# Real clients have their own threads and timers, so a replay is the same
# faults at the same points of the script, not the same history.
#
#   scripts/replay-clients.sh [OUT]   # about 15 minutes on 2 cores; OUT is a TSV
#
# The confluent rows need cgo and gcc (the confluent build tag).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-replays.tsv}"
replays="${REPLAYS:-10}"
: > "$out"

# replay TAGS TEST: find a catch of TEST, then replay its seed.
replay() {
  local tags="$1" test="$2" log seed check replayed same=0 caught=0
  log=$(CGO_ENABLED=1 go test -count=1 -tags "$tags" ./kafka/ -run "^$test\$" -v 2>&1 || true)
  seed=$(echo "$log" | sed -n 's/.*replay the interleaving with RAPID_SEED=\([0-9]*\).*/\1/p' | head -1)
  check=$(echo "$log" | sed -n 's/.*: \([a-z-]*\): replay the interleaving.*/\1/p' | head -1)
  if [ -z "$seed" ]; then
    printf '%s\t-\t-\tnot caught\t-\n' "$test" | tee -a "$out"
    return
  fi
  for _ in $(seq "$replays"); do
    replayed=$(RAPID_SEED="$seed" FENCECHECK_SESSION_CHECKS=1 CGO_ENABLED=1 go test -count=1 -tags "$tags" ./kafka/ -run "^$test\$" -v 2>&1 || true)
    if echo "$replayed" | grep -q "breaks $check in"; then same=$((same + 1)); fi
    if echo "$replayed" | grep -q "breaks [a-z-]* in"; then caught=$((caught + 1)); fi
  done
  printf '%s\t%s\t%s\t%d/%d\t%d/%d\n' "$test" "$seed" "$check" "$same" "$replays" "$caught" "$replays" | tee -a "$out"
}

for protocol in txn-v1 txn-v2; do
  replay "" "TestPropertyClientLoopsSarama/group-id-only/$protocol"
  replay confluent "TestPropertyClientLoopsConfluent/group-id-only/$protocol"
done

wedged=0
for _ in $(seq "$replays"); do
  if go test -count=1 ./kafka/ -run '^TestSaramaShippedExampleWedgesAfterAFencedProduce$' >/dev/null 2>&1; then
    wedged=$((wedged + 1))
  fi
done
printf '%s\t-\tprogress\t%d/%d\t%d/%d\n' "TestSaramaShippedExampleWedgesAfterAFencedProduce" "$wedged" "$replays" "$wedged" "$replays" | tee -a "$out"
