#!/usr/bin/env bash
# Issue 25: what the subscription's facts cost the webhook per request. The same GPU Pod
# review, closed loop at CONNECTIONS over TLS, against `computeguard serve` with the default
# configuration and with a full-size `az vm list-skus --all` output as context (the real
# eastus2 response repeated for every region, scripts/make-full-skus.py; ~18,000 entries,
# 35 MB) plus the overlay `catalog import` makes of it and a real usage list, and with the
# overlay alone. Interleaved
# rounds; one line per run: requests/s, latency, server CPU per request, RSS, start time.
#
#   scripts/context-load.sh [SECONDS] [ROUNDS] [CONNECTIONS]    (defaults: 10 3 16)
#
# COMPUTEGUARD_BIN / LOADGEN_BIN as for scripts/loadtest.sh. Figures: docs/benchmarks.md,
# section 13.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-3}
conns=${3:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "${COMPUTEGUARD_BIN:-}" ]; then
  cargo build --release -p computeguard >/dev/null 2>&1
  cargo build --release -p computeguard-server --example loadgen >/dev/null 2>&1
fi
bin=${COMPUTEGUARD_BIN:-target/release/computeguard}
export COMPUTEGUARD_BIN=$bin LOADGEN_BIN=${LOADGEN_BIN:-target/release/examples/loadgen}
mkdir -p "$work/full"
python3 scripts/make-full-skus.py "$work/full/skus.json"
"$bin" catalog import "$work/full/skus.json" --date 2026-11-22 -o "$work/full/overlay.yaml" 2>&1 | tail -1
cp examples/azure/eastus-usage.json "$work/full/"
printf 'asOf: 2026-11-22\ncatalog: [overlay.yaml]\nazure:\n  skus: [skus.json]\n  usage:\n    eastus: eastus-usage.json\n' \
  > "$work/full/computeguard.yaml"
# The overlay alone (no SKU or usage lists): what a bigger catalog costs by itself.
mkdir -p "$work/overlay"
cp "$work/full/overlay.yaml" "$work/overlay/"
printf 'asOf: 2026-11-22\ncatalog: [overlay.yaml]\n' > "$work/overlay/computeguard.yaml"
body=examples/embed-cases/contract/admission-review-gpu-pod.json
printf '%-8s %5s %9s %9s %9s %12s %8s %10s\n' context round "req/s" "p50 ms" "p99 ms" "CPU µs/req" "faults" "RSS"
for round in $(seq 1 "$rounds"); do
  for ctx in none overlay full; do
    dir=""
    [ "$ctx" != none ] && dir=$work/$ctx
    # A warm artifact cache per context, as a deployed replica starts: the first round
    # compiles and pre-initialises, the later ones load the snapshot.
    out=$(LOADTEST_CONFIG_DIR=$dir LOADTEST_CACHE=$work/cache-$ctx LOADTEST_BODY=$body \
      LOADGEN_ARGS=--check scripts/loadtest.sh 0 "$secs" "$conns" 2>&1 || true)
    rps=$(sed -n 's/.*achieved \([0-9]*\) req\/s.*/\1/p' <<<"$out")
    read -r p50 p99 < <(sed -n 's/.*p50 \([0-9.]*\)  p90 [0-9.]*  p99 \([0-9.]*\).*/\1 \2/p' <<<"$out")
    cpu=$(sed -n 's/server CPU per request: \([0-9]*\) us.*/\1/p' <<<"$out")
    rss=$(sed -n 's/server RSS: \([0-9]* kB\).*/\1/p' <<<"$out")
    faults=$(sed -n 's/server minor page faults per request: \([0-9]*\).*/\1/p' <<<"$out")
    wrong=$(sed -n 's/.*wrong verdicts \([0-9]*\).*/\1/p' <<<"$out")
    printf '%-8s %5s %9s %9s %9s %12s %8s %10s%s\n' "$ctx" "$round" "$rps" "$p50" "$p99" "$cpu" "$faults" "$rss" \
      "$([ "${wrong:-0}" = 0 ] || echo "  ($wrong wrong verdicts)")"
  done
done
