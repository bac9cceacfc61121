#!/usr/bin/env bash
# Tests embedding through the WIT contract (docs/embedding.md): the built-in policy
# component, exported by `computeguard policies --export`, evaluated by three hosts
# that share no computeguard code (Rust with wasmtime's bindgen!, Node with jco,
# Python with wasmtime-py) and by the computeguard CLI, on the cases in
# examples/embed-cases/cases/. Every host prints the canonical form (one JSON line
# per case); the outputs must be byte-identical to each other and to the reviewed
# examples/embed-cases/expected.jsonl.
#
# Installs what it needs: the npm packages pinned by examples/embed-node/package-lock.json
# and the pinned Python packages into a virtualenv under the target dir.
# Re-bless the expected file after a deliberate change with BLESS=1 (review the diff).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
work="$target/embed"
cases_dir=examples/embed-cases
expected="$cases_dir/expected.jsonl"
as_of=2026-11-22 # must match asOf in $cases_dir/computeguard.yaml
mkdir -p "$work/out"

# The same command as scripts/test.sh runs, so that after it this is a no-op and
# wasmtime is not compiled a second time with another feature set. It builds the
# computeguard binary and the Rust example (both have integration tests).
echo "== build (computeguard, examples/embed-rust)"
cargo test --quiet --workspace --exclude computeguard-runtime --no-run
computeguard="$target/debug/computeguard"
embed_rust="$target/debug/embed-rust"
for bin in "$computeguard" "$embed_rust"; do
  [ -x "$bin" ] || { echo "missing $bin after the build" >&2; exit 1; }
done

echo "== export the built-in components"
rm -rf "$work/components"
"$computeguard" policies --export "$work/components"
policy="$work/components/computeguard-builtin.wasm"
[ -f "$work/components/wit/policy.wit" ] || { echo "export wrote no WIT" >&2; exit 1; }

mapfile -t cases < <(find "$cases_dir/cases" -type f | LC_ALL=C sort)
common=(--as-of "$as_of" --settings "$cases_dir/settings.json")

echo "== rust (wasmtime bindgen!)"
"$embed_rust" "$policy" "${common[@]}" --timings "${cases[@]}" > "$work/out/rust.jsonl"

echo "== node (jco $(node --version))"
# Not `npm ci`: the registry reachable here lacks some of the optional per-platform
# packages that jco's dependencies list (e.g. @rolldown/binding-darwin-arm64@1.3.2),
# so the lock file has no entry for them and `npm ci` refuses it as out of sync.
# `npm install` skips the missing optional packages; with the committed lock file
# it installs the same versions, which the check below makes sure of. When the
# registry starts serving one of those optional packages, npm adds its entry to the
# lock file: an added entry is fine, a changed or removed version is not.
(cd examples/embed-node && npm install --no-audit --no-fund --loglevel=error > /dev/null)
if ! git diff --quiet -- examples/embed-node/package-lock.json; then
  git show HEAD:examples/embed-node/package-lock.json > "$work/lock.committed.json"
  python3 - "$work/lock.committed.json" examples/embed-node/package-lock.json <<'PY'
import json, sys
old = json.load(open(sys.argv[1]))["packages"]
new = json.load(open(sys.argv[2]))["packages"]
changed = [k for k, v in old.items() if new.get(k, {}).get("version") != v.get("version")]
if changed:
    sys.exit("npm install changed pinned versions in package-lock.json: " + ", ".join(changed[:10]))
print("npm install only added optional packages to the lock file; pinned versions unchanged")
PY
  git checkout -- examples/embed-node/package-lock.json
fi
rm -rf examples/embed-node/gen
(cd examples/embed-node && npx --no-install jco transpile --instantiation async --name policy \
  --no-typescript --quiet -o gen "$policy")
node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js "${common[@]}" --timings \
  "${cases[@]}" > "$work/out/node.jsonl"

echo "== python (wasmtime-py)"
venv="$work/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r examples/embed-python/requirements.txt
"$venv/bin/python" examples/embed-python/embed.py "$policy" "${common[@]}" --timings \
  "${cases[@]}" > "$work/out/python.jsonl"

echo "== computeguard check (the same cases through the CLI and its engine)"
set +e
"$computeguard" check --format json --config "$cases_dir/computeguard.yaml" --as-of "$as_of" \
  "$cases_dir/cases" > "$work/out/cli-report.json"
code=$?
set -e
if [ "$code" -ne 1 ]; then
  echo "expected exit code 1 (findings) from computeguard check, got $code" >&2
  exit 1
fi
# The CLI reads only .json/.yaml files; compare it on those cases. It skips documents
# that are not JSON objects before calling a policy (docs/embedding.md), so a case whose
# expected answer is an error is compared between the hosts only.
json_cases=()
for c in "${cases[@]}"; do
  [[ $c == *.json ]] || continue
  grep -qF "{\"case\":\"$(basename "$c")\",\"error\":" "$expected" && continue
  json_cases+=("$c")
done
# The report's findings, grouped by file, in the canonical form (see docs/embedding.md).
python3 - "$work/out/cli-report.json" "${json_cases[@]}" > "$work/out/cli.jsonl" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
if report.get("errors"):
    sys.exit(f"computeguard check reported errors: {report['errors']}")
by_file = {}
for f in report["findings"]:
    by_file.setdefault(os.path.basename(f["file"]), []).append({
        "rule": f["rule"], "severity": f["severity"], "message": f["message"],
        "path": f["path"], "remediation": f["remediation"],
        "resource": {"kind": f["resource"]["kind"], "name": f["resource"]["name"]},
    })
key = lambda v: tuple(x.encode() for x in (v["rule"], v["severity"], v["message"], v["path"],
                                           v["remediation"], v["resource"]["kind"], v["resource"]["name"]))
out = sys.stdout.buffer
for case in map(os.path.basename, sys.argv[2:]):
    line = {"case": case, "violations": sorted(by_file.pop(case, []), key=key)}
    out.write((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
if by_file:
    sys.exit(f"findings for files that are not cases: {sorted(by_file)}")
PY

if [ "${BLESS:-}" = 1 ]; then
  cp "$work/out/rust.jsonl" "$expected"
  echo "blessed $expected; review it with git diff"
fi

echo "== compare"
failed=0
for host in rust node python; do
  if ! cmp -s "$expected" "$work/out/$host.jsonl"; then
    echo "$host output differs from $expected:" >&2
    diff "$expected" "$work/out/$host.jsonl" >&2 || true
    failed=1
  fi
done
grep -E '^\{"case":"[^"]*\.json","violations":' "$expected" > "$work/out/expected-cli.jsonl"
if ! cmp -s "$work/out/expected-cli.jsonl" "$work/out/cli.jsonl"; then
  echo "computeguard check differs from $expected:" >&2
  diff "$work/out/expected-cli.jsonl" "$work/out/cli.jsonl" >&2 || true
  failed=1
fi

echo "== every host refuses bad settings before evaluating"
echo '{"regions": {"allowed": "eastus"}}' > "$work/bad-settings.json"
bad=(--as-of "$as_of" --settings "$work/bad-settings.json" "${cases[0]}")
check_refused() {
  local host=$1
  shift
  set +e
  "$@" > "$work/out/$host-bad.out" 2> "$work/out/$host-bad.err"
  local code=$?
  set -e
  if [ "$code" -ne 2 ] || ! grep -q "refuses the settings" "$work/out/$host-bad.err" \
    || [ -s "$work/out/$host-bad.out" ]; then
    echo "$host: expected exit 2, no output and \"refuses the settings\", got exit $code:" >&2
    cat "$work/out/$host-bad.err" >&2
    failed=1
  fi
}
check_refused rust "$embed_rust" "$policy" "${bad[@]}"
check_refused node node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js "${bad[@]}"
check_refused python "$venv/bin/python" examples/embed-python/embed.py "$policy" "${bad[@]}"

echo "== the contract table: every call, source kind, error variant and raw format, in every host"
# examples/embed-cases/contract.jsonl runs against the built-in policy, and
# contract-rule-failed.jsonl against a pack whose rule fails at run time. Each host
# runs each table twice: a fresh instance per call, and one instance for every call
# (--reuse); all six outputs must equal the reviewed expected file.
"$computeguard" build "$cases_dir/contract/rule-failed-pack.yaml" -o "$work/components/rule-failed.wasm"
rm -rf "$work/gen-rule-failed"
(cd examples/embed-node && npx --no-install jco transpile --instantiation async --name policy \
  --no-typescript --quiet -o "$work/gen-rule-failed" "$work/components/rule-failed.wasm")
contract_host() { # host table component node-generated extra-args...
  local host=$1 table=$2 component=$3 generated=$4
  shift 4
  case $host in
    rust) "$embed_rust" "$component" --as-of "$as_of" --contract "$table" "$@" ;;
    node) node examples/embed-node/embed.mjs "$generated" --as-of "$as_of" --contract "$table" "$@" ;;
    python) "$venv/bin/python" examples/embed-python/embed.py "$component" --as-of "$as_of" \
      --contract "$table" "$@" ;;
  esac
}
for table in contract contract-rule-failed; do
  if [ "$table" = contract ]; then
    component=$policy generated=examples/embed-node/gen/policy.js
  else
    component=$work/components/rule-failed.wasm generated=$work/gen-rule-failed/policy.js
  fi
  table_expected="$cases_dir/$table.expected.jsonl"
  for host in rust node python; do
    for mode in fresh reuse; do
      extra=()
      [ "$mode" = reuse ] && extra=(--reuse)
      out="$work/out/$table-$host-$mode.jsonl"
      if ! contract_host "$host" "$cases_dir/$table.jsonl" "$component" "$generated" "${extra[@]}" \
        > "$out" 2> "$out.err"; then
        echo "$host ($mode) failed on $table.jsonl:" >&2
        cat "$out.err" >&2
        failed=1
        continue
      fi
      if [ "${BLESS:-}" = 1 ] && [ "$host" = rust ] && [ "$mode" = fresh ]; then
        cp "$out" "$table_expected"
        echo "blessed $table_expected; review it with git diff"
      fi
      if ! cmp -s "$table_expected" "$out"; then
        echo "$host ($mode) output differs from $table_expected:" >&2
        diff "$table_expected" "$out" >&2 || true
        failed=1
      fi
    done
  done
done
contract_calls=$(cat "$cases_dir"/contract*.expected.jsonl | wc -l)

n=$(wc -l < "$expected")
if [ "$failed" -ne 0 ]; then
  echo "embedding: 0 passed, 1 failed" >&2
  exit 1
fi
echo "embedding: $n cases identical across rust, node, python and the CLI"
echo "contract: $contract_calls calls identical across rust, node and python, fresh and reused instances"
