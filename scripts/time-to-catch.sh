#!/usr/bin/env bash
# Time to catch each seeded bug with fencecheck run's defaults: for each
# mutant, SEEDS random seeds (10 by default), `fencecheck run --mutant M
# --seed S` and nothing else; the seconds until the first VIOLATION line
# (exploring and shrinking), the shrunk length, the scenario, and the
# seconds until the run said it found the counterexample it then shrank.
# Writes the runs to OUT (a TSV, default time-to-catch.tsv) and prints the
# table of docs/testing-fencecheck.md: caught, median and worst seconds,
# the median time to find, median and worst length, which scenarios
# caught it first. The table's own runs are docs/measurements/time-to-catch.tsv.
#
#   scripts/time-to-catch.sh [OUT]          # the seconds to catch, summed: under half an hour on 2 cores
#   scripts/time-to-catch.sh --table OUT    # the table of runs measured before
#
# SEEDS and MUTANTS (space-separated names) narrow a run. SEEDS_FROM=TSV
# takes each mutant's seeds from the runs of an earlier TSV instead of
# drawing them, so that two builds are compared on the same seeds: the
# same seed meets the same first counterexample, and only what follows
# (shrinking) differs.
set -euo pipefail
cd "$(dirname "$0")/.."

table() {
  local out="$1" mutants
  mutants=$(cut -f1 "$out" | uniq)
  echo "| mutant | caught | median | worst | found by (median) | shrunk to (median, worst) | first caught by |"
  echo "|---|---|---|---|---|---|---|"
  for m in $mutants; do
    runs=$(awk -F'\t' -v m="$m" '$1==m' "$out")
    n=$(echo "$runs" | grep -c . || true)
    hits=$(echo "$runs" | awk -F'\t' '$3!="missed"')
    k=$(echo "$hits" | grep -c . || true)
    t_med=$(echo "$hits" | cut -f4 | median); t_max=$(echo "$hits" | cut -f4 | sort -n | tail -1)
    l_med=$(echo "$hits" | cut -f5 | median); l_max=$(echo "$hits" | cut -f5 | sort -n | tail -1)
    f_med=$(echo "$hits" | cut -f6 | grep . | median || true)
    found="not recorded"; [ -z "$f_med" ] || found="$f_med s"
    by=$(echo "$hits" | cut -f3 | sort -u | paste -sd, - | sed 's/,/, /g')
    echo "| \`$m\` | $k/$n | $t_med s | $t_max s | $found | $l_med, $l_max ops | $by |"
  done
}

# found_at writes to FILE when the run first says it found a
# counterexample (it then shrinks it), reading its stderr to the end.
found_at() {
  while IFS= read -r line; do
    case "$line" in
      *"found a counterexample"*) [ -e "$1" ] || date +%s.%N > "$1" ;;
    esac
  done
}

median() { sort -n | awk '{a[NR]=$1} END{if (NR==0) exit; if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

if [ "${1:-}" = "--table" ]; then
  table "$2"
  exit
fi
out="${1:-time-to-catch.tsv}"
seeds="${SEEDS:-10}"
bin="$(mktemp -d)/fencecheck"
go build -o "$bin" ./cmd/fencecheck
work="$(mktemp -d)"
: > "$out"
mutants="${MUTANTS:-$("$bin" run --help 2>&1 | grep -o 'each explored on its own: .*' | sed 's/each explored on its own: //; s/,//g')}"
for m in $mutants; do
  if [ -n "${SEEDS_FROM:-}" ]; then
    seedlist=$(awk -F'\t' -v m="$m" '$1==m {print $2}' "$SEEDS_FROM")
  else
    seedlist=$(for _ in $(seq 1 "$seeds"); do od -An -N8 -tu8 /dev/urandom | tr -d ' '; done)
  fi
  i=0
  for seed in $seedlist; do
    i=$((i + 1))
    start=$(date +%s.%N)
    caught=""
    # Only the first counterexample is timed: the run (and its worker
    # processes, its process group) is stopped there.
    rm -f "$work/out" "$work/found"; mkfifo "$work/out"
    setsid "$bin" run --mutant "$m" --seed "$seed" --out "$work/$m-$i" > "$work/out" 2> >(found_at "$work/found") &
    pid=$!
    while IFS= read -r line; do
      case "$line" in
        "== "*) scenario=$(echo "$line" | awk '{print $2}') ;;
        VIOLATION*)
          caught=$(echo "$(date +%s.%N) - $start" | bc)
          length=$(echo "$line" | grep -o 'shrunk to [0-9]*' | grep -o '[0-9]*$')
          found=""
          [ -s "$work/found" ] && found=$(printf '%.1f' "$(echo "$(cat "$work/found") - $start" | bc)")
          printf '%s\t%s\t%s\t%.1f\t%s\t%s\n' "$m" "$seed" "$scenario" "$caught" "$length" "$found" >> "$out"
          break ;;
      esac
    done < "$work/out"
    kill -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -n "$caught" ] || printf '%s\t%s\tmissed\t\t\n' "$m" "$seed" >> "$out"
  done
done
rm -rf "$work"
table "$out"
