#!/usr/bin/env bash
# A long exploration of kfake past its known findings: for each seed,
# `fencecheck run --target kfake --scenario correct` (stable-id, then
# adversary, each for MINUTES) under transactions v1, then v2. A
# scenario stops early on a violation that no known finding explains; its
# bug report is in OUT/r<N>-seed<S>-v<V>/bundle. One line per round goes
# to OUT/summary: the exit status (0: nothing new), the seconds, and the
# interleavings explored.
#
#   scripts/explore-kfake.sh [OUT] [SEED...]      # MINUTES=15 by default
#   MINUTES=15 scripts/explore-kfake.sh /tmp/explore 8081 9091
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-explore-kfake}"
shift || true
seeds=("${@:-8081 9091}")
minutes="${MINUTES:-15}"
mkdir -p "$out"
go build -o "$out/fencecheck" ./cmd/fencecheck
round=0
for seed in ${seeds[*]}; do
  for v in 1 2; do
    round=$((round + 1))
    dir="$out/r$round-seed$seed-v$v"
    mkdir -p "$dir"
    start=$(date +%s)
    status=0
    "$out/fencecheck" run --target kfake --scenario correct --txn-version "$v" --time "${minutes}m" \
      --seed "$seed" --out "$dir/bundle" > "$dir/stdout" 2> "$dir/stderr" || status=$?
    explored=$(grep -o '[0-9]* interleavings' "$dir/stderr" | tail -1)
    echo "round $round: seed $seed, transactions v$v: exit $status after $(( $(date +%s) - start )) s, $explored" | tee -a "$out/summary"
  done
done
