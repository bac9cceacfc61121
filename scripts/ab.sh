#!/usr/bin/env bash
# Interleaved A/B of two builds of the webhook on this machine (docs/benchmarks.md): in
# each round, for each body, each way of varying it, each connection count and each
# build, one closed-loop run of scripts/loadtest.sh (every built-in rule, answers checked
# with --check); prints throughput, client-side latency (p50, p99) and the server's CPU per request.
#
#   scripts/ab.sh BEFORE_BIN AFTER_BIN [ROUNDS] [SECONDS]     (defaults: 3 rounds of 10 s)
#
# Bodies: the GPU Pod (examples/embed-cases/contract/admission-review-gpu-pod.json), sent
#   as it is ("same"), as the Pods of one ReplicaSet are (its own name each time, one
#   length: "name"), and with a label of its own each time, so that no two requests share
#   a template ("label"); and the plain Pod (a Kubewarden fixture, no compute fact).
# AB_CONNECTIONS (default "4 16"), AB_VARY (default "same name label"), LOADGEN_BIN (else
# the release load generator is built). AB_CONFIG_BEFORE / AB_CONFIG_AFTER: a folder with a
# computeguard.yaml (and the files it names) that side serves with (LOADTEST_CONFIG_DIR of
# scripts/loadtest.sh), so one binary can be compared with itself under two configurations:
#   AB_CONFIG_AFTER=/tmp/with-prices scripts/ab.sh BIN BIN
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,14p "$0" >&2; exit 2; }
before=$1
after=$2
rounds=${3:-3}
seconds=${4:-10}
if [ -z "${LOADGEN_BIN:-}" ]; then
  cargo build --quiet --release -p computeguard-server --example loadgen
  export LOADGEN_BIN=target/release/examples/loadgen
fi
gpu=examples/embed-cases/contract/admission-review-gpu-pod.json
plain=tests/fixtures/admission-review/kubewarden-kwctl-unprivileged-pod-admissionreview-v1.json
caches=$(mktemp -d)
trap 'rm -rf "$caches"' EXIT
printf '%-6s %-16s %5s %5s %9s %9s %9s %12s\n' build body conns round "req/s" "p50 ms" "p99 ms" "CPU µs/req"
for round in $(seq "$rounds"); do
  runs=()
  for vary in ${AB_VARY:-same name label}; do runs+=("gpu-pod/$vary:$gpu:$vary"); done
  runs+=("plain-pod:$plain:same")
  for run in "${runs[@]}"; do
    IFS=: read -r name body vary <<<"$run"
    for conns in ${AB_CONNECTIONS:-4 16}; do
      for build in "before:$before" "after:$after"; do
        args=--check
        [ "$vary" = same ] || args="--check --vary $vary"
        side=${build%%:*}
        config=$([ "$side" = before ] && echo "${AB_CONFIG_BEFORE:-}" || echo "${AB_CONFIG_AFTER:-}")
        out=$(LOADTEST_CONFIG_DIR=$config COMPUTEGUARD_BIN=${build#*:} LOADTEST_CACHE="$caches/${build%%:*}" LOADTEST_BODY=$body \
          LOADGEN_ARGS=$args scripts/loadtest.sh 0 "$seconds" "$conns" 2>&1 || true)
        rps=$(sed -n 's/.*achieved \([0-9]*\) req\/s.*/\1/p' <<<"$out")
        read -r p50 p99 < <(sed -n 's/.*p50 \([0-9.]*\)  p90 [0-9.]*  p99 \([0-9.]*\).*/\1 \2/p' <<<"$out" | tail -1)
        cpu=$(sed -n 's/server CPU per request: \([0-9]*\) us.*/\1/p' <<<"$out")
        wrong=$(sed -n 's/.*wrong verdicts \([0-9]*\).*/\1/p' <<<"$out")
        printf '%-6s %-16s %5s %5s %9s %9s %9s %12s%s\n' "${build%%:*}" "$name" "$conns" "$round" \
          "${rps:-?}" "${p50:-?}" "${p99:-?}" "${cpu:-?}" "$([ "${wrong:-0}" = 0 ] || echo "  ($wrong wrong)")"
        [ -n "$cpu" ] || { echo "$out" | tail -5 >&2; }
      done
    done
  done
done
