#!/usr/bin/env bash
# Tests .pre-commit-hooks.yaml with the real pre-commit tool (installed from PyPI
# into a virtualenv under the target directory).
#
# The published hook uses `language: rust`, for which pre-commit runs
# `cargo install --path .` on a clone of this repository: a release build of
# wasmtime and the policy runtime, 7+ minutes on a 2-core machine. To keep the
# suite fast, `try-repo` runs against a temporary copy of the hook file that says
# `language: system` and finds the already-built debug binary on PATH; everything
# else (the hook's id, `files` filter, `pass_filenames`, the entry's arguments) is
# the published file's. What `language: rust` adds is checked separately: the
# manifest is valid for pre-commit, and the repository root is a Cargo package
# with the binary the entry names (`cargo install --path .` fails on a virtual
# workspace manifest).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

bin="$target/debug/computeguard"
if [ ! -x "$bin" ]; then
  cargo build --quiet -p computeguard
fi

. scripts/tool-venv.sh
pre_commit=$(tool_venv "$target/pre-commit-venv" pre-commit 'pre-commit>=3,<5')
"$pre_commit" --version

fail() { echo "test-pre-commit: $*" >&2; exit 1; }

echo "== the published hook manifest is valid"
"$pre_commit" validate-manifest .pre-commit-hooks.yaml

echo "== the repository root is a package with the entry's binary (for language: rust)"
entry_bin=$(sed -n 's/^ *entry: *\([^ ]*\).*/\1/p' .pre-commit-hooks.yaml | head -1)
cargo metadata --no-deps --format-version 1 --manifest-path Cargo.toml \
  | python3 -c '
import json, os, sys
m = json.load(sys.stdin)
root = os.path.realpath("Cargo.toml")
pkgs = [p for p in m["packages"] if os.path.realpath(p["manifest_path"]) == root]
if not pkgs:
    sys.exit("the root Cargo.toml is a virtual manifest: `cargo install --path .` would fail")
bins = [t["name"] for t in pkgs[0]["targets"] if "bin" in t["kind"]]
if sys.argv[1] not in bins:
    sys.exit(f"root package builds {bins}, not the entry binary {sys.argv[1]}")
' "$entry_bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PRE_COMMIT_HOME="$work/pre-commit-cache"
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
export NO_COLOR=1

echo "== a hook repository: the published hook with language: system"
hooks="$work/hooks"
mkdir -p "$hooks" "$work/bin"
sed -e 's/^\( *language:\) rust$/\1 system/' .pre-commit-hooks.yaml > "$hooks/.pre-commit-hooks.yaml"
grep -q '^  language: system$' "$hooks/.pre-commit-hooks.yaml" || fail "language not replaced"
# The entry's binary is the CLI itself.
ln -s "$bin" "$work/bin/$entry_bin"
export PATH="$work/bin:$PATH"
git -C "$hooks" init --quiet
git -C "$hooks" add .pre-commit-hooks.yaml
git -C "$hooks" commit --quiet -m hooks

echo "== a project with a violating, a clean and an unsupported file"
project="$work/project"
mkdir -p "$project/infra"
cat > "$project/infra/gpu-cluster.yml" <<'YAML'
$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: gpu-cluster
type: amlcompute
size: Standard_NC6
min_instances: 0
YAML
cat > "$project/infra/t4-cluster.yml" <<'YAML'
$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: t4-cluster
type: amlcompute
size: Standard_NC4as_T4_v3
min_instances: 0
YAML
printf 'location = "eastus"\n' > "$project/infra/main.tfvars"
echo "notes" > "$project/README.txt"
git -C "$project" init --quiet
git -C "$project" add .
git -C "$project" commit --quiet -m project

try() {
  (cd "$project" && "$pre_commit" try-repo "$hooks" computeguard --verbose --color never "$@")
}

set +e
out=$(try --files infra/gpu-cluster.yml 2>&1); code=$?
set -e
echo "$out"
[ "$code" -eq 1 ] || fail "violating file: expected exit 1, got $code"
grep -q 'error\[sku-retired\]' <<<"$out" || fail "no sku-retired finding"
grep -q -- '--> infra/gpu-cluster.yml:4:1' <<<"$out" || fail "finding not located"
grep -q '^computeguard\.*Failed' <<<"$out" || fail "hook not reported as failed"

set +e
out=$(try --files infra/t4-cluster.yml infra/main.tfvars README.txt 2>&1); code=$?
set -e
echo "$out"
[ "$code" -eq 0 ] || fail "clean file: expected exit 0, got $code"
grep -q '^computeguard\.*Passed' <<<"$out" || fail "hook not reported as passed"
if grep -q 'README' <<<"$out"; then fail "README.txt was passed to the hook"; fi

set +e
out=$(try --all-files 2>&1); code=$?
set -e
[ "$code" -eq 1 ] || fail "all files: expected exit 1, got $code"
grep -q 'gpu-cluster.yml' <<<"$out" || fail "all files: violation not reported"
echo "pre-commit hook: all checks passed"
