#!/usr/bin/env bash
# Builds the `computeguard` platform wheel (packaging/pypi, maturin with bindings = "bin")
# into target/wheels. Installs maturin from PyPI into a virtualenv under the target dir.
#
#   scripts/build-wheel.sh            # release build: what would be published (docs/install.md)
#   PROFILE=dev scripts/build-wheel.sh  # the test suite's build: reuses the debug binary's artifacts
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
. scripts/tool-venv.sh
maturin=$(tool_venv "$target/maturin-venv" maturin 'maturin>=1.5,<2')
out="$target/wheels"
mkdir -p "$out"
rm -f "$out"/computeguard-*.whl
profile=${PROFILE:-release}
# `--compatibility linux`: the plain linux tag for a dev build (its glibc symbols are not
# audited); a release build is checked for the manylinux policy its glibc allows.
extra=()
[ "$profile" = dev ] && extra=(--compatibility linux)
(cd packaging/pypi && "$maturin" build --quiet --profile "$profile" --out "$out" "${extra[@]}")
ls "$out"/computeguard-*.whl
