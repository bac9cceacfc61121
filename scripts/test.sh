#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the build needs,
# then builds (host + the wasm32-wasip2 policy components) and tests everything.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
rustup target add wasm32-wasip2
rustc --version

echo "== tools the registry tests run: the CNCF distribution registry and skopeo (Debian)"
# tests of computeguard-oci and the CLI's registry tests start a registry on loopback
# and read what computeguard pushed with skopeo (docs/distribution.md).
if ! command -v docker-registry > /dev/null || ! command -v skopeo > /dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq docker-registry skopeo > /dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq docker-registry skopeo > /dev/null
  fi
fi

echo "== Neovim (Debian), the real LSP client of the language server's end-to-end test"
# tests/cli/lsp.rs drives `computeguard lsp` from headless Neovim (docs/editors.md).
if ! command -v nvim > /dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq neovim > /dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq neovim > /dev/null
  fi
fi
nvim --version | head -1

target=${CARGO_TARGET_DIR:-target}
# CI's disk is finite (a run once died with ENOSPC in the packaging step): each stage
# prints what the build holds and what is left.
disk() { echo "disk: target $(du -sh "$target" 2> /dev/null | cut -f1), $(df -h --output=avail . | tail -1 | tr -d ' ') free"; }
disk

echo "== format"
cargo fmt --all -- --check

# No incremental caches in a fresh clone: they only cost disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

echo "== lints: clippy (warnings are errors) and the API docs (broken links are errors)"
# The runtime is a wasm component (built by host/builtins); natively it is not linkable.
cargo clippy --workspace --exclude computeguard-runtime --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --exclude computeguard-runtime --no-deps

echo "== tests"
# The runtime is a wasm component (built by host/builtins); natively it is not linkable.
cargo test --workspace --exclude computeguard-runtime
disk
# The steps below run the computeguard and embed-rust binaries, never a test harness
# again: the harnesses (each links wasmtime; ~1 GB in all) go, and the scripts are told
# the binaries are this run's (they build them only when run on their own).
find "$target/debug/deps" -maxdepth 1 -type f -executable ! -name '*.*' -delete
bin_dir=$(cd "$target/debug" && pwd)
export COMPUTEGUARD_BIN="$bin_dir/computeguard" EMBED_RUST_BIN="$bin_dir/embed-rust"
[ -x "$COMPUTEGUARD_BIN" ] && [ -x "$EMBED_RUST_BIN" ] || { echo "cargo test built no computeguard or embed-rust binary" >&2; exit 1; }
disk

echo "== the pre-commit hook, with the real pre-commit tool (PyPI)"
scripts/test-pre-commit.sh
disk

echo "== the bundled examples check as documented (exit 1: they contain findings)"
set +e
"$COMPUTEGUARD_BIN" check --config examples/computeguard.yaml examples/ > /dev/null
code=$?
set -e
if [ "$code" -ne 1 ]; then
  echo "expected exit code 1 from the examples, got $code" >&2
  exit 1
fi

echo "== embedding: the Rust, Node and Python hosts and the CLI agree (docs/embedding.md)"
scripts/test-embedding.sh
disk

echo "== install without Rust: the PyPI wheel, pre-commit from it, the npm package (docs/install.md)"
scripts/test-packages.sh
disk

echo "== the playground and the HTML report in headless Chromium (docs/playground.md)"
scripts/test-playground.sh
disk

echo "== the VS Code extension: the .vsix built with @vscode/vsce and its manifest checked (docs/editors.md)"
scripts/vsix.sh "$target/computeguard.vsix"
disk

echo "all checks passed"
