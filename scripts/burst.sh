#!/usr/bin/env bash
# Issue 34, a burst from the API server is not a flood: N clients on 127.0.0.1 each open a
# NEW TLS connection to the webhook at the same moment and send one AdmissionReview (a GPU
# Pod, allowed and on a retired size in turn, each with its own uid and name), as the API
# server does when a Deployment scales from 0 to N replicas over HTTP/1.1 (or past its
# HTTP/2 connection's streams). With the default config (256 connections per address, a
# grace of 2 s for newcomers) every one must get its correct answer: the burst is queued,
# not refused.
#
#   scripts/burst.sh [N...]      (default: 300 1000; each over HTTP/1.1, then HTTP/2)
#
# Every burst gets a server of its own (the artifact cache warm after the first), so its
# counters and connections are its own. For each: the load generator's tally (sent,
# answered correctly, failed, wall time, time per client), /healthz on the probe port asked
# every 100 ms while the burst runs, and the server's computeguard_connections_refused_total,
# _evicted_total and _waited_total, and (with nstat) the kernel's listen overflows, SYN
# retransmits and SYN cookies meanwhile. BURST_BODY=FILE sends that AdmissionReview instead;
# COMPUTEGUARD_BIN and LOADGEN_BIN as in scripts/loadtest.sh.
#
# Figures and how to read them: docs/benchmarks.md, section 16.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(300 1000)
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" "${BURST:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
. scripts/serve-lib.sh
prepare_binaries
export LOADTEST_CACHE=${LOADTEST_CACHE:-$WORK/cache}
body=()
[ -n "${BURST_BODY:-}" ] && body=(--body "$BURST_BODY")
probe() { curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}\n' "http://127.0.0.1:18448$1" || true; }
status=0
for n in "${SIZES[@]}"; do
  for proto in http1 h2; do
    start_server 18447 -- --probe-addr 127.0.0.1:18448
    # The kernel's counters of this machine (nstat, if installed) from here to the end of
    # the burst: a SYN dropped is retried after 1 s, which shows as a 1 s tail.
    if command -v nstat >/dev/null; then nstat -n; fi
    "$LOADGEN" burst --addr 127.0.0.1:18447 --ca "$WORK/ca.pem" --n "$n" --proto "$proto" \
      "${body[@]}" > "$WORK/burst.txt" &
    BURST=$!
    : > "$WORK/probes.txt"
    while kill -0 "$BURST" 2>/dev/null; do probe /healthz >> "$WORK/probes.txt"; sleep 0.1; done
    wait "$BURST" || status=1
    cat "$WORK/burst.txt"
    awk '{ n++; if ($1 == 200) ok++; if ($2 > max) max = $2 }
      END { printf "probes during the burst: %d asked, %d answered 200, slowest %.1f ms\n", n, ok, max * 1000 }' \
      "$WORK/probes.txt"
    if command -v nstat >/dev/null; then
      nstat -z TcpExtListenOverflows TcpExtTCPSynRetrans TcpExtSyncookiesSent \
        | awk 'NR > 1 { printf "%s %s  ", $1, $2 } END { print "(kernel, whole machine)" }'
    fi
    curl -s http://127.0.0.1:18448/metrics \
      | grep -E '^computeguard_connections_(refused|evicted|waited)_total' \
      || echo "no connection refused, evicted or made to wait"
    kill "$SERVER"
    wait "$SERVER" 2>/dev/null || true
    echo
  done
done
exit "$status"
