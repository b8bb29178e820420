#!/usr/bin/env bash
# Mutation testing of the checks that judge a history without the model:
# the invariants (checker/invariants*.go) and the transaction analysis
# they share (txns*.go), each mutant judged by the checker package's own
# tests. linearizable and error-codes judge by the model (its rules have
# their transcripts, model/testdata) through porcupine, so the search's
# plumbing, the reports' wording and the known-findings list are left out.
# Writes gremlins' output to OUT (default docs/measurements/gremlins-checker.txt).
#
#   go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
#   scripts/mutate-checker.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/measurements/gremlins-checker.txt}"
go clean -testcache # gremlins times each mutant from one uncached run
gremlins unleash --workers 2 --timeout-coefficient 20 \
  -E 'check\.go' -E 'describe\.go' -E 'known\.go' -E 'linearizable\.go' \
  -E 'logs\.go' -E 'minimize\.go' -E 'timeline\.go' -E 'verdict\.go' -E 'windows\.go' \
  ./checker | tee "$out"
