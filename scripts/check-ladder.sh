#!/usr/bin/env bash
# The ladder of docs/performance.md, "Checking a long recording": for each
# size, a correct history of one shape (scripts/longhistory), checked by
# `fencecheck check` under /usr/bin/time -v. SHAPE picks the shape:
#   soak      (the default) one transactional client committing one record
#             at a time;
#   pipeline  the exploration's consume-transform-produce pipeline, with
#             workers in a KIP-848 group, restarts that fence a stalled
#             worker, aborts and a read_committed reader (seed 1).
# It prints a row per size: operations, wall time, CPU time (user and
# system), peak resident memory, and the CPU time per operation against
# the first size's. On shared cores the CPU time is the steadier figure,
# so it prints the load average too. The histories are written to DIR
# (default /tmp) once and kept, named by shape and size (DIR/SHAPE-N.json):
# 5M operations of the soak's shape is 1.3 GB of JSON.
#
#   scripts/check-ladder.sh [DIR] [SIZES...]   # default sizes: 1000000 5000000
#   SHAPE=pipeline scripts/check-ladder.sh /tmp/ladder 100000 1000000
#
# It takes minutes to hours and gigabytes of memory, so CI never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-/tmp}"
shift || true
sizes=("${@:-1000000 5000000}")
read -r -a sizes <<<"${sizes[*]}"

shape="${SHAPE:-soak}"
case "$shape" in
soak | pipeline) ;;
*)
  echo "check-ladder.sh: SHAPE=$shape is not soak or pipeline" >&2
  exit 2
  ;;
esac

go build -o "$dir/fencecheck-ladder" ./cmd/fencecheck
echo "shape: $shape"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| operations | wall time | CPU time | peak RSS | CPU µs per operation | per operation / the first size's |"
echo "|---|---|---|---|---|---|"
first=""
for n in "${sizes[@]}"; do
  file="$dir/$shape-$n.json"
  [ -s "$file" ] || go run ./scripts/longhistory -shape "$shape" -ops "$n" -out "$file"
  log="$dir/$shape-$n.time"
  status=0
  /usr/bin/time -v "$dir/fencecheck-ladder" check "$file" >"$dir/$shape-$n.verdicts" 2>"$log" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "| $n | exit status $status: see $log | | | | |"
    continue
  fi
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" |
    awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
  cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.1f", s }' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  # The pipeline shape writes a few operations more than asked, to
  # drain: the check's last progress line counts them.
  ops=$(grep -o '[0-9]* operations read' "$log" | tail -n 1 | cut -d' ' -f1 || true)
  ops="${ops:-$n}"
  per=$(awk -v c="$cpu" -v n="$ops" 'BEGIN { printf "%.1f", c * 1e6 / n }')
  first="${first:-$per}"
  ratio=$(awk -v p="$per" -v f="$first" 'BEGIN { printf "%.2fx", p / f }')
  echo "| $ops | ${wall} s | ${cpu} s | $((rss / 1024)) MB | $per | $ratio |"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
