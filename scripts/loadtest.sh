#!/usr/bin/env bash
# Load test of the admission webhook on this machine: builds release binaries, starts
# `computeguard serve` with a fresh certificate and every built-in rule, drives it with
# the open-loop load generator, prints throughput and latency, and stops the server.
#
#   scripts/loadtest.sh [RATE] [SECONDS] [CONNECTIONS]     (defaults: 2000 20 8)
#
# RATE 0 is closed loop: every connection sends its next request when the last is
# answered (the server's throughput at that concurrency). LOADTEST_BODY=FILE sends that
# AdmissionReview every time instead of the mix. scripts/loadtest-sweep.sh runs both
# bodies of issue 16 at 1, 4, 16 and 64 connections.
#
# The server starts with an empty artifact cache, so it compiles (and pre-initialises)
# the built-in policy itself; LOADTEST_CACHE=DIR uses DIR instead, so a second run
# measures a server that starts from a warm cache, as a deployed replica does.
#
# COMPUTEGUARD_BIN=PATH serves with another build of the binary (A/B comparisons);
# LOADGEN_BIN=PATH uses another load generator. LOADTEST_PERF=FILE records a CPU profile
# of the server during the measured run (`perf record -g`; read it with `perf report -i FILE`).
#
# Figures and how to read them: docs/benchmarks.md, "Webhook under load".
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-2000}
SECONDS_=${2:-20}
CONNS=${3:-8}
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

. scripts/serve-lib.sh
prepare_binaries
start_server 18443
# Warm-up (connections, caches), then the measured run.
"$LOADGEN" run --addr 127.0.0.1:18443 --ca "$WORK/ca.pem" --rate 500 --seconds 2 --connections "$CONNS" >/dev/null
cpu() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }   # utime + stime, clock ticks
faults() { awk '{print $10}' "/proc/$SERVER/stat"; }       # minor page faults
before=$(cpu)
faults_before=$(faults)
body=()
[ -n "${LOADTEST_BODY:-}" ] && body=(--body "$LOADTEST_BODY")
# LOADGEN_ARGS: more load generator flags (e.g. --check).
read -r -a extra <<<"${LOADGEN_ARGS:-}"
if [ -n "${LOADTEST_PERF:-}" ]; then
  perf record -q -F 999 -g -p "$SERVER" -o "$LOADTEST_PERF" -- sleep "$SECONDS_" 2> /dev/null &
  PERF=$!
fi
"$LOADGEN" run --addr 127.0.0.1:18443 --ca "$WORK/ca.pem" --rate "$RATE" --seconds "$SECONDS_" --connections "$CONNS" "${body[@]}" "${extra[@]}" | tee "$WORK/run.txt"
[ -z "${PERF:-}" ] || wait "$PERF" || true
after=$(cpu)
faults_after=$(faults)
sent=$(awk '/^sent/ {print $2}' "$WORK/run.txt")
echo "server CPU per request: $(( (after - before) * 1000000 / $(getconf CLK_TCK) / sent )) us (utime+stime over $sent requests)"
echo "server minor page faults per request: $(( (faults_after - faults_before) / sent ))"
echo "server RSS: $(awk '/VmRSS/ {print $2, $3}' /proc/$SERVER/status) (peak $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status))"
