#!/usr/bin/env bash
# Soak test of the admission webhook: a release server with every built-in rule,
# REQUESTS requests at RATE req/s over 8 connections, 1 % of them malformed (each
# must get HTTP 400), every answer checked against the verdict its body got alone
# (uid and allowed), a policy reload (SIGHUP) every 5 s, and the server's RSS
# sampled every 10 s. Fails on any lost answer or wrong verdict.
#
#   scripts/soak.sh [REQUESTS] [RATE]        (defaults: 100000 1000)
#
# Figures: docs/security.md, "Soak".
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-100000}
RATE=${2:-1000}
SECONDS_=$(( REQUESTS / RATE ))
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" "${HUP:-}" "${RSS:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

. scripts/serve-lib.sh
LOADTEST_CACHE="$WORK/cache"
prepare_binaries
start_server 18444
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER/status"; }
echo "RSS at start: $(rss) kB"
( while sleep 5; do kill -HUP "$SERVER"; done ) &
HUP=$!
( while sleep 10; do echo "RSS: $(rss) kB"; done ) &
RSS=$!
"$LOADGEN" run --addr 127.0.0.1:18444 --ca "$WORK/ca.pem" --rate "$RATE" --seconds "$SECONDS_" \
  --connections 8 --check --malformed-permille 10
kill "$HUP" "$RSS" 2>/dev/null || true
echo "RSS at end: $(rss) kB (peak $(awk '/VmHWM/ {print $2}' /proc/$SERVER/status) kB)"
echo "reloads: $(grep -c 'policies and configuration reloaded' "$WORK/server.log"), failed: $(grep -c 'RELOAD FAILED' "$WORK/server.log" || true)"
