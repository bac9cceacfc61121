#!/usr/bin/env bash
# Builds the npm package @computeguard/policy (packaging/npm): exports the built-in
# component, transpiles it with jco (pinned by examples/embed-node) into packaging/npm/gen,
# and packs it into target/npm/computeguard-policy-<version>.tgz.
#
#   scripts/build-npm.sh [COMPUTEGUARD_BINARY]   # default: target/debug/computeguard
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
bin=${1:-$target/debug/computeguard}
work="$target/npm"
rm -rf "$work" packaging/npm/gen
mkdir -p "$work"
"$bin" policies --export "$work/components" > /dev/null
if [ ! -x examples/embed-node/node_modules/.bin/jco ]; then
  (cd examples/embed-node && npm install --no-audit --no-fund --loglevel=error > /dev/null)
  # npm may add entries for optional packages the registry now serves (see test-embedding.sh).
  git checkout -- examples/embed-node/package-lock.json
fi
(cd examples/embed-node && npx --no-install jco transpile --instantiation async --name policy \
  --quiet -o "$root/packaging/npm/gen" "$work/components/computeguard-builtin.wasm")
(cd packaging/npm && npm pack --quiet --pack-destination "$work") > /dev/null
ls "$work"/computeguard-policy-*.tgz
