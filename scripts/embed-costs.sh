#!/usr/bin/env bash
# Measures what an evaluation costs in each embedding host (docs/embedding.md, "Cost per
# host"): the same table of N evaluate calls through each host's --contract mode, once with
# a fresh instance per call and once with one instance reused for every call. The
# difference per call is the price of a fresh instance; the reused run per call is the
# evaluation itself. Run scripts/test-embedding.sh first (it builds the Node and Python
# hosts and exports the component) and `cargo build --release -p computeguard-embed-rust`.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
work="$target/embed"
small=${SMALL:-20}
large=${LARGE:-220}
rust=${EMBED_RUST:-$target/release/embed-rust}
settings=$(python3 -c 'import json; print(json.dumps(open("examples/embed-cases/settings.json").read().strip()))')
table() { # n -> file
  local file="$work/costs-$1.jsonl"
  for i in $(seq "$1"); do
    echo "{\"case\":\"c$i\",\"call\":\"evaluate\",\"document\":\"$PWD/examples/embed-cases/cases/aml-job-cuda12-on-k80.json\",\"source-kind\":\"unknown\",\"settings\":$settings}"
  done > "$file"
  echo "$file"
}
tables=("$(table "$small")" "$(table "$large")")
policy="$work/components/computeguard-builtin.wasm"
run() { # host mode table
  local extra=()
  [ "$2" = reuse ] && extra=(--reuse)
  case $1 in
    rust) "$rust" "$policy" --as-of 2026-11-22 --contract "$3" "${extra[@]}" ;;
    node) node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js --as-of 2026-11-22 --contract "$3" "${extra[@]}" ;;
    python) "$work/venv/bin/python" examples/embed-python/embed.py "$policy" --as-of 2026-11-22 --contract "$3" "${extra[@]}" ;;
  esac > /dev/null
}
ns() { local t0; t0=$(date +%s%N); "$@"; echo $(( $(date +%s%N) - t0 )); }
# Per call = the slope between the small and the large table, so loading and compiling
# (paid once per process) drop out.
printf '%-8s %22s %22s %16s\n' host "fresh instance+call µs" "reused instance µs" "instance µs"
for host in rust node python; do
  run "$host" fresh "${tables[0]}" # warm caches
  per() { echo $(( ($(ns run "$host" "$1" "${tables[1]}") - $(ns run "$host" "$1" "${tables[0]}")) / 1000 / (large - small) )); }
  fresh=$(per fresh)
  reused=$(per reuse)
  printf '%-8s %22d %22d %16d\n' "$host" "$fresh" "$reused" $(( fresh - reused ))
done
