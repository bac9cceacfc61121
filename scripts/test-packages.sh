#!/usr/bin/env bash
# Tests the install paths of docs/install.md that do not need a Rust toolchain:
#  1. the PyPI wheel (packaging/pypi, maturin bindings = "bin"): built, installed into a
#     fresh virtualenv with no package index, `computeguard check` run from there;
#  2. the wheel as a pre-commit hook (`language: python`, the wheel in
#     `additional_dependencies`), with the real pre-commit framework, install timed;
#  3. the npm package (packaging/npm): packed, installed from the tarball into a fresh
#     project, its example run, its answers compared with the CLI's on the embedding cases,
#     its TypeScript types compiled.
# The test suite builds the wheel from the debug build (PROFILE=dev) so nothing is compiled
# twice; the release wheel is the same recipe with --release.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
cases_dir=examples/embed-cases
as_of=2026-11-22
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test-packages: $*" >&2; exit 1; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

echo "== the wheel (maturin, bindings = bin)"
wheel=$(PROFILE=${PROFILE:-dev} scripts/build-wheel.sh | tail -1)
[ -f "$wheel" ] || fail "no wheel built"
python3 - "$wheel" <<'PY' || fail "the wheel does not carry the binary as a script"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "computeguard-0.1.0.data/scripts/computeguard" in names, names
PY
echo "built $(basename "$wheel") ($(( $(stat -c %s "$wheel") / 1024 / 1024 )) MiB)"

echo "== pip install of the wheel into a fresh virtualenv, offline"
python3 -m venv "$work/venv"
start=$(date +%s%N)
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
echo "pip install: $(ms "$start") ms"
[ -x "$work/venv/bin/computeguard" ] || fail "computeguard is not on the venv's PATH"
set +e
PATH="$work/venv/bin:$PATH" computeguard check --format json --as-of "$as_of" \
  "$cases_dir/cases/aml-job-cuda12-on-k80.json" > "$work/wheel.json"
code=$?
set -e
[ "$code" -eq 1 ] || fail "computeguard from the wheel: expected exit 1, got $code"
python3 - "$work/wheel.json" <<'PY' || fail "computeguard from the wheel: wrong findings"
import json, sys
rules = sorted(f["rule"] for f in json.load(open(sys.argv[1]))["findings"])
assert rules == ["cuda-arch-compat", "sku-retired"], rules
PY
echo "computeguard from the wheel: findings as expected"

echo "== pre-commit with the wheel (language: python, additional_dependencies)"
. scripts/tool-venv.sh
pre_commit=$(tool_venv "$target/pre-commit-venv" pre-commit 'pre-commit>=3,<5')
# pre-commit installs each hook environment with pip, from a placeholder package
# (`language: python` with `repo: local`) or the hook repository: their builds need
# setuptools. Offline, pip finds it and the computeguard wheel in local directories.
pip_wheels="$target/pip-wheels"
if ! ls "$pip_wheels"/setuptools-*.whl > /dev/null 2>&1; then
  python3 -m pip download --quiet --disable-pip-version-check --only-binary :all: \
    -d "$pip_wheels" 'setuptools>=61' wheel
fi
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$(dirname "$wheel") $pip_wheels"
project="$work/project"
mkdir -p "$project/infra"
cp "$cases_dir/cases/aml-cluster-idle-gpu-nodes.json" "$project/infra/cluster.json"
cat > "$project/.pre-commit-config.yaml" <<YAML
repos:
  - repo: local
    hooks:
      - id: computeguard
        name: computeguard
        entry: computeguard check
        language: python
        additional_dependencies: ["$wheel"]
        files: \.(ya?ml|json|tf|tfvars|bicep)$
YAML
git -C "$project" init --quiet
git -C "$project" -c user.name=t -c user.email=t@example.invalid add .
git -C "$project" -c user.name=t -c user.email=t@example.invalid commit --quiet -m project
export PRE_COMMIT_HOME="$work/pre-commit-cache"
start=$(date +%s%N)
# Offline: the hook's environment gets the wheel and nothing from an index.
(cd "$project" && "$pre_commit" install-hooks > /dev/null) \
  || fail "pre-commit install-hooks failed: $(tail -30 "$PRE_COMMIT_HOME/pre-commit.log")"
install_ms=$(ms "$start")
set +e
out=$(cd "$project" && "$pre_commit" run --all-files --color never 2>&1)
code=$?
set -e
echo "$out"
[ "$code" -eq 1 ] || fail "pre-commit run: expected exit 1, got $code"
grep -q 'min-nodes-zero' <<<"$out" || fail "pre-commit run: no min-nodes-zero finding"
echo "pre-commit hook environment from the wheel installed in $install_ms ms"

echo "== the published computeguard-wheel hook (pre-commit try-repo, offline)"
# pre-commit runs `pip install .` on the hook repository: the root pyproject.toml, which
# depends on the computeguard wheel. Offline, pip finds the wheel and setuptools (for the
# build of that empty package) in local directories.
hooks="$work/hooks"
mkdir -p "$hooks"
cp .pre-commit-hooks.yaml pyproject.toml "$hooks/"
git -C "$hooks" init --quiet
git -C "$hooks" add .
git -C "$hooks" -c user.name=t -c user.email=t@example.invalid commit --quiet -m hooks
start=$(date +%s%N)
set +e
out=$(cd "$project" && "$pre_commit" try-repo "$hooks" computeguard-wheel --all-files --color never 2>&1)
code=$?
set -e
echo "$out"
[ "$code" -eq 1 ] || fail "try-repo computeguard-wheel: expected exit 1, got $code"
grep -q 'min-nodes-zero' <<<"$out" || fail "try-repo computeguard-wheel: no finding"
echo "computeguard-wheel hook: installed and run in $(ms "$start") ms"

unset PIP_NO_INDEX PIP_FIND_LINKS

echo "== the npm package"
tarball=$(scripts/build-npm.sh "$target/debug/computeguard" | tail -1)
[ -f "$tarball" ] || fail "no npm tarball"
app="$work/app"
mkdir -p "$app"
(cd "$app" && npm init -y > /dev/null)
start=$(date +%s%N)
(cd "$app" && npm install --no-audit --no-fund --loglevel=error "$tarball" > /dev/null)
echo "npm install of the tarball: $(ms "$start") ms"
out=$(cd "$app" && node node_modules/@computeguard/policy/example.mjs --as-of "$as_of" \
  --settings "$root/$cases_dir/settings.json" "$root/$cases_dir/cases/aml-job-cuda12-on-k80.json")
echo "$out"
grep -q '^aml-job-cuda12-on-k80.json: error\[cuda-arch-compat\]' <<<"$out" \
  || fail "the package's example did not report cuda-arch-compat"
cp tests/packages/npm-agree.mjs "$app/"
# The same cases, in the same order, as scripts/test-embedding.sh (which blesses the file).
mapfile -t cases < <(find "$root/$cases_dir/cases" "$root/tests/fixtures/embed-cases" -type f \
  -name '*.json' | LC_ALL=C sort)
(cd "$app" && node npm-agree.mjs "$root/$cases_dir/settings.json" "$as_of" "${cases[@]}") > "$work/npm.jsonl"
grep -E '^\{"case":"[^"]*\.json",' "$cases_dir/expected.jsonl" > "$work/expected.jsonl"
if ! cmp -s "$work/expected.jsonl" "$work/npm.jsonl"; then
  diff "$work/expected.jsonl" "$work/npm.jsonl" >&2 || true
  fail "the npm package's answers differ from examples/embed-cases/expected.jsonl (the CLI's)"
fi
echo "npm package: $(wc -l < "$work/npm.jsonl") cases identical to the CLI and the other hosts"
cp tests/packages/typed.ts "$app/"
(cd "$app" && npm install --no-audit --no-fund --loglevel=error typescript@5 > /dev/null \
  && npx --no-install tsc --noEmit --strict --module nodenext --moduleResolution nodenext \
     --target es2022 typed.ts) || fail "the package's TypeScript types do not compile"
echo "npm package: TypeScript types compile (tsc --strict)"

echo "packages: all checks passed"
