#!/usr/bin/env bash
# Builds the playground (docs/playground.md) into OUT_DIR (default target/playground): a
# static folder any static server or GitHub Pages can serve, with no server-side code.
#
#   scripts/build-playground.sh [OUT_DIR]
#
# It exports the built-in policy component with `computeguard policies --export` (the
# binary in $COMPUTEGUARD_BIN, else `cargo run`), installs the page's npm packages from
# playground/package-lock.json (`npm ci`) unless they are installed already, transpiles
# the component with jco and bundles the page with esbuild.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/playground}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${COMPUTEGUARD_BIN:-}" ]; then
  "$COMPUTEGUARD_BIN" policies --export "$work/components" > /dev/null
else
  cargo run --quiet -p computeguard -- policies --export "$work/components" > /dev/null
fi

if ! (cd playground && npm ls --depth=0 > /dev/null 2>&1); then
  (cd playground && npm ci --no-audit --no-fund --loglevel=error > /dev/null)
fi
node playground/build.mjs "$work/components/computeguard-builtin.wasm" "$out"
