#!/usr/bin/env bash
# Issue 23 under load: a holder keeps HELD connections open to the webhook from
# 127.0.0.2 (idle, or a request every EVERY seconds; HOLD_REOPEN=1 reopens what the
# server closes, as fast as it can) while scripts/loadtest.sh's open-loop run sends RATE req/s from 127.0.0.1. With the
# cap at its default (1,024, 256 per address) the holder keeps at most 256 and the load
# test must lose nothing.
#
#   scripts/held-load.sh [HELD] [EVERY] [RATE] [SECONDS]     (defaults: 2000 0 2000 20)
set -euo pipefail
cd "$(dirname "$0")/.."
HELD=${1:-2000}
EVERY=${2:-0}
RATE=${3:-2000}
SECONDS_=${4:-20}
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" "${HOLDER:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
. scripts/serve-lib.sh
prepare_binaries
start_server 18445 -- --probe-addr 127.0.0.1:18446
"$LOADGEN" hold --addr 127.0.0.1:18445 --ca "$WORK/ca.pem" --connections "$HELD" \
  --from 127.0.0.2 --every "$EVERY" --seconds $((SECONDS_ + 10)) ${HOLD_REOPEN:+--reopen} > "$WORK/hold.txt" &
HOLDER=$!
sleep 5
probe() { curl -s -o /dev/null -w '%{http_code} %{time_total}s' "http://127.0.0.1:18446$1"; }
echo "while held: /healthz $(probe /healthz), /readyz $(probe /readyz)"
"$LOADGEN" run --addr 127.0.0.1:18445 --ca "$WORK/ca.pem" --rate "$RATE" --seconds "$SECONDS_" --connections 8 --check
wait "$HOLDER" || true
cat "$WORK/hold.txt"
curl -s http://127.0.0.1:18446/metrics | grep -E '^computeguard_connections_(open|evicted|refused)' || true
