#!/usr/bin/env bash
# Compares two builds' time to catch one seeded bug: each seed of MUTANT in
# docs/measurements/time-to-catch.tsv (the first N, 10 by default) is run with
# `fencecheck run --mutant MUTANT --seed S` and nothing else, by build A
# and then by build B, so that both meet the machine as it is at that
# moment (a shared machine's speed drifts more over minutes than the
# change being measured). Prints, a run a line, the seconds until the
# first VIOLATION line and the shrunk length, then each build's total.
#
#   scripts/compare-catch.sh REV_A REV_B MUTANT [N]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
a="$1" b="$2" mutant="$3" n="${4:-10}"
work="$(mktemp -d)"
trap 'rm -rf "$work"; git worktree prune' EXIT
for rev in "$a" "$b"; do
  git worktree add -q --detach "$work/src-$rev" "$rev"
  (cd "$work/src-$rev" && go build -o "$work/fencecheck-$rev" ./cmd/fencecheck)
  git worktree remove --force "$work/src-$rev"
done
seeds=$(awk -F'\t' -v m="$mutant" '$1==m {print $2}' docs/measurements/time-to-catch.tsv | head -n "$n")
[ -n "$seeds" ] || { echo "no seeds of $mutant in docs/measurements/time-to-catch.tsv" >&2; exit 2; }
printf 'seed\tbuild\tseconds\tops\n'
for seed in $seeds; do
  for rev in "$a" "$b"; do
    rm -f "$work/out"; mkfifo "$work/out"
    start=$(date +%s.%N)
    setsid "$work/fencecheck-$rev" run --mutant "$mutant" --seed "$seed" --out "$work/bundle-$rev" > "$work/out" 2>/dev/null &
    pid=$!
    secs="missed" ops=""
    while IFS= read -r line; do
      case "$line" in
        VIOLATION*)
          secs=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")
          ops=$(echo "$line" | grep -o 'shrunk to [0-9]*' | grep -o '[0-9]*$')
          break ;;
      esac
    done < "$work/out"
    kill -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$work/bundle-$rev"
    printf '%s\t%s\t%s\t%s\n' "$seed" "$rev" "$secs" "$ops"
  done
done | tee "$work/runs"
awk -F'\t' '$3!="missed" {t[$2]+=$3; n[$2]++} END {for (r in t) printf "%s: %.1f s over %d runs\n", r, t[r], n[r]}' "$work/runs"
