#!/usr/bin/env bash
# Runaway policies on one CPU: `computeguard serve` pinned to CPU 0 (the Deployment's
# 1-CPU limit) with the hostile test policy (guest/examples/hostile), four requests
# whose policy spins forever sent at once, and /healthz asked while they run. Prints
# when each answer and the health check came back.
#
#   scripts/runaway.sh [EVALUATION_TIMEOUT_MS]      (default 2000)
#
# Figures: docs/security.md and docs/benchmarks.md, "Fail closed".
set -euo pipefail
cd "$(dirname "$0")/.."
TIMEOUT_MS=${1:-2000}
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

. scripts/serve-lib.sh
prepare_binaries
cargo build -p hostile-policy --target wasm32-wasip2 --profile guest --target-dir target/guest
HOSTILE=target/guest/wasm32-wasip2/guest/hostile_policy.wasm
printf 'asOf: 2026-11-22\nwebhook:\n  limits:\n    evaluationTimeoutMs: %s\n' "$TIMEOUT_MS" > "$WORK/computeguard.yaml"
start_server 18445 taskset -c 0 -- --policy "$HOSTILE"
review() {
  printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"ml","name":"p","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml","annotations":{"hostile.computeguard.io/act":"spin"}},"spec":{"nodeSelector":{"node.kubernetes.io/instance-type":"Standard_NC24ads_A100_v4"},"tolerations":[{"key":"sku","operator":"Exists"}],"containers":[{"name":"c","image":"nvcr.io/nvidia/pytorch:24.05-py3","resources":{"limits":{"nvidia.com/gpu":1}}}]}}}}' "$1"
}
CURL=(curl -sS --cacert "$WORK/ca.pem" --resolve localhost:18445:127.0.0.1)
for i in 1 2 3 4; do
  ( "${CURL[@]}" -o "$WORK/answer$i.json" -w "runaway $i answered in %{time_total} s\n" \
      -H 'Content-Type: application/json' --data-binary "$(review "spin-$i")" \
      https://localhost:18445/validate ) &
done
sleep 0.2
"${CURL[@]}" -o /dev/null -w "/healthz answered in %{time_total} s (while 4 runaways run)\n" https://localhost:18445/healthz
wait $(jobs -p | grep -v "^$SERVER$") 2>/dev/null || true
sleep 0.1
for i in 1 2 3 4; do
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["response"]; print("runaway", sys.argv[2], "allowed:", r["allowed"], "code:", r.get("status",{}).get("code"), "-", r.get("status",{}).get("message","")[:120])' "$WORK/answer$i.json" "$i"
done
