#!/usr/bin/env bash
# Issue 16's table: the webhook's closed-loop throughput, latency and CPU per request for
# one GPU Pod (denied) and one plain Pod (no compute: admitted without a sandbox), at 1, 4,
# 16 and 64 connections over TLS keep-alive, every built-in rule, the load generator on the
# same machine. One line per run; figures in docs/benchmarks.md.
#
#   scripts/loadtest-sweep.sh [SECONDS]     (default 10 per run)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
export LOADTEST_CACHE=${LOADTEST_CACHE:-$(mktemp -d)}
printf '%-10s %5s %9s %9s %9s %9s %12s\n' body conns "req/s" "p50 ms" "p99 ms" "p99.9 ms" "CPU µs/req"
for body in gpu-pod:examples/embed-cases/contract/admission-review-gpu-pod.json \
            plain-pod:tests/fixtures/admission-review/kubewarden-kwctl-unprivileged-pod-admissionreview-v1.json; do
  for conns in 1 4 16 64; do
    # --check: every answer must be the verdict the body gets alone (an "overloaded"
    # answer is a wrong verdict, not throughput).
    out=$(LOADTEST_BODY=${body#*:} LOADGEN_ARGS=--check scripts/loadtest.sh 0 "$secs" "$conns" 2>/dev/null || true)
    rps=$(sed -n 's/.*achieved \([0-9]*\) req\/s.*/\1/p' <<<"$out")
    read -r p50 p99 p999 < <(sed -n 's/.*p50 \([0-9.]*\)  p90 [0-9.]*  p99 \([0-9.]*\)  p99.9 \([0-9.]*\).*/\1 \2 \3/p' <<<"$out")
    cpu=$(sed -n 's/server CPU per request: \([0-9]*\) us.*/\1/p' <<<"$out")
    failed=$(sed -n 's/.*failed (lost) \([0-9]*\).*/\1/p' <<<"$out")
    wrong=$(sed -n 's/.*wrong verdicts \([0-9]*\).*/\1/p' <<<"$out")
    printf '%-10s %5s %9s %9s %9s %9s %12s%s\n' "${body%%:*}" "$conns" "$rps" "$p50" "$p99" "$p999" "$cpu" \
      "$([ "${failed:-0}${wrong:-0}" = 00 ] || echo "  ($failed failed, $wrong wrong verdicts)")"
  done
done
