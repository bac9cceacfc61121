#!/usr/bin/env bash
# Tests embedding through the WIT contract (docs/embedding.md): the built-in policy
# component, exported by `computeguard policies --export`, evaluated by three hosts
# that share no computeguard code (Rust with wasmtime's bindgen!, Node with jco,
# Python with wasmtime-py) and by the computeguard CLI, on the cases in
# examples/embed-cases/cases/. Every host prints the canonical form (one JSON line
# per case); the outputs must be byte-identical to each other and to the reviewed
# examples/embed-cases/expected.jsonl. Then the contract tables (every call, error and
# context, on fresh and reused instances), and the context (catalog overlays and Azure
# facts) given to the hosts with --context and to the CLI through computeguard.yaml.
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

# scripts/test.sh names the binaries its `cargo test` built (COMPUTEGUARD_BIN,
# EMBED_RUST_BIN) and has removed the test harnesses by then: nothing to build here.
# On its own, the script runs the same command as scripts/test.sh (so wasmtime is not
# compiled a second time with another feature set), which builds both binaries.
if [ -n "${COMPUTEGUARD_BIN:-}" ] && [ -n "${EMBED_RUST_BIN:-}" ]; then
  computeguard=$COMPUTEGUARD_BIN
  embed_rust=$EMBED_RUST_BIN
else
  echo "== build (computeguard, examples/embed-rust)"
  cargo test --quiet --workspace --exclude computeguard-runtime --no-run
  computeguard="$target/debug/computeguard"
  embed_rust="$target/debug/embed-rust"
fi
for bin in "$computeguard" "$embed_rust"; do
  [ -x "$bin" ] || { echo "missing $bin after the build" >&2; exit 1; }
done

echo "== export the built-in components"
rm -rf "$work/components"
"$computeguard" policies --export "$work/components"
policy="$work/components/computeguard-builtin.wasm"
[ -f "$work/components/wit/policy.wit" ] || { echo "export wrote no WIT" >&2; exit 1; }

# The documented cases, and cases of checks added later kept out of examples/ (whose
# counts the README and the docs show): tests/fixtures/embed-cases.
extra_cases=tests/fixtures/embed-cases
mapfile -t cases < <(find "$cases_dir/cases" "$extra_cases" -type f | LC_ALL=C sort)
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
  "$cases_dir/cases" "$extra_cases" > "$work/out/cli-report.json"
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
# The report's findings, grouped by file, in the canonical form (see docs/embedding.md):
# cli_canonical REPORT.json CASE... prints one line per case.
cli_canonical() {
  python3 - "$@" <<'PY'
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
}
cli_canonical "$work/out/cli-report.json" "${json_cases[@]}" > "$work/out/cli.jsonl"

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
check_refused() { # host "what is refused" command...
  local host=$1 what=$2
  shift 2
  set +e
  "$@" > "$work/out/$host-bad.out" 2> "$work/out/$host-bad.err"
  local code=$?
  set -e
  if [ "$code" -ne 2 ] || ! grep -q "refuses $what" "$work/out/$host-bad.err" \
    || [ -s "$work/out/$host-bad.out" ]; then
    echo "$host: expected exit 2, no output and \"refuses $what\", got exit $code:" >&2
    cat "$work/out/$host-bad.err" >&2
    failed=1
  fi
}
check_refused rust "the settings" "$embed_rust" "$policy" "${bad[@]}"
check_refused node "the settings" node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js "${bad[@]}"
check_refused python "the settings" "$venv/bin/python" examples/embed-python/embed.py "$policy" "${bad[@]}"

echo "== every host refuses a context the policy refuses (--context), before evaluating"
# An overlay entry without `source`: the policy's own error text, in every host.
bad=(--as-of "$as_of" --settings "$cases_dir/settings.json"
  --context "$cases_dir/contract/context/overlay-missing-source.json" "${cases[0]}")
check_refused rust "the context" "$embed_rust" "$policy" "${bad[@]}"
check_refused node "the context" node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js "${bad[@]}"
check_refused python "the context" "$venv/bin/python" examples/embed-python/embed.py "$policy" "${bad[@]}"
for host in rust node python; do
  if ! grep -qF 'catalog[0]: at `/skus/0/source`: required field is missing' "$work/out/$host-bad.err"; then
    echo "$host: the refusal does not carry the policy's error text:" >&2
    cat "$work/out/$host-bad.err" >&2
    failed=1
  fi
done

echo "== the contract tables: every call, source kind, error variant, raw format and context, in every host"
# examples/embed-cases/contract.jsonl runs against the built-in policy,
# contract-rule-failed.jsonl against a pack whose rule fails at run time, and
# contract-context.jsonl against the built-in policy with a context per call (catalog
# overlays, Azure SKU lists, contexts the policy refuses: docs/embedding.md). Each host
# runs each table twice: a fresh instance per call, and one instance for every call
# (--reuse; a call with a context still gets a fresh instance, configured first); all
# six outputs must equal the reviewed expected file.
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
for table in contract contract-rule-failed contract-context; do
  if [ "$table" = contract-rule-failed ]; then
    component=$work/components/rule-failed.wasm generated=$work/gen-rule-failed/policy.js
  else
    component=$policy generated=examples/embed-node/gen/policy.js
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

echo "== context through --context in every host, and through computeguard.yaml in the CLI"
# The context files of contract-context.jsonl, joined into one context: the new GPU
# size, the announced retirement and the real eastus SKU list. The hosts get it with
# --context (every fresh instance is configured with it); the CLI gets the same
# overlays and SKU list as files named by computeguard.yaml (catalog:, azure.skus).
# All four must print the reviewed examples/embed-cases/context.expected.jsonl.
context_dir=$cases_dir/contract/context
context_expected=$cases_dir/context.expected.jsonl
# The SKU list inside azure-skus-eastus.json is the Azure/skewer sample byte for byte
# (contract/SOURCES.tsv): its git blob id must be the one recorded there.
python3 - "$context_dir/azure-skus-eastus.json" <<'PY'
import hashlib, sys
data = open(sys.argv[1], "rb").read()
head, tail = b'{"azure": {"skus": [\n', b'\n]}}\n'
if not (data.startswith(head) and data.endswith(tail)):
    sys.exit(f"{sys.argv[1]}: not the wrapper the SOURCES note describes")
sample = data[len(head):-len(tail)]
blob = hashlib.sha1(b"blob %d\0" % len(sample) + sample).hexdigest()
if blob != "c666294fc44127a61b0eb05e706b2e2694593c8c":
    sys.exit(f"{sys.argv[1]}: the SKU list is not the Azure/skewer sample byte for byte (blob {blob})")
PY
rm -rf "$work/context" && mkdir -p "$work/context"
python3 - "$work/context" "$cases_dir/settings.json" "$as_of" "$context_dir/new-gpu-size.json" \
  "$context_dir/retirement-announced.json" "$context_dir/azure-skus-eastus.json" <<'PY'
import json, os, sys
out, settings, as_of, *files = sys.argv[1:]
joined, config = {"catalog": [], "azure": {"skus": []}}, {"catalog": [], "skus": []}
for f in files:
    context = json.load(open(f, encoding="utf-8"))
    for key, items in (("catalog", context.get("catalog", [])),
                       ("skus", context.get("azure", {}).get("skus", []))):
        for item in items:
            name = f"{key}-{len(config[key])}.json"
            json.dump(item, open(os.path.join(out, name), "w", encoding="utf-8"), ensure_ascii=False)
            config[key].append(name)
            (joined[key] if key == "catalog" else joined["azure"]["skus"]).append(item)
json.dump(joined, open(os.path.join(out, "context.json"), "w", encoding="utf-8"), ensure_ascii=False)
regions = json.load(open(settings, encoding="utf-8"))["regions"]["allowed"]
with open(os.path.join(out, "computeguard.yaml"), "w", encoding="utf-8") as y:
    y.write(f"asOf: {as_of}\nregions:\n  allowed: {json.dumps(regions)}\n")
    y.write(f"catalog: {json.dumps(config['catalog'])}\nazure:\n  skus: {json.dumps(config['skus'])}\n")
PY
context_cases=("$cases_dir/contract/aks-gpu-pool-nc48ads-h200-v6.json" "$cases_dir/cases/aml-cluster-compliant.json"
  "$cases_dir/contract/vm-d13-v2-promo-eastus.json" "$cases_dir/contract/vm-nv6-zone-1-eastus.json")
with_context=(--as-of "$as_of" --settings "$cases_dir/settings.json" --context "$work/context/context.json")
"$embed_rust" "$policy" "${with_context[@]}" "${context_cases[@]}" > "$work/out/context-rust.jsonl"
node examples/embed-node/embed.mjs examples/embed-node/gen/policy.js "${with_context[@]}" \
  "${context_cases[@]}" > "$work/out/context-node.jsonl"
"$venv/bin/python" examples/embed-python/embed.py "$policy" "${with_context[@]}" \
  "${context_cases[@]}" > "$work/out/context-python.jsonl"
set +e
"$computeguard" check --format json --config "$work/context/computeguard.yaml" --as-of "$as_of" \
  "${context_cases[@]}" > "$work/out/context-cli-report.json"
code=$?
set -e
if [ "$code" -gt 1 ]; then
  echo "computeguard check with the context failed (exit $code)" >&2
  exit 1
fi
cli_canonical "$work/out/context-cli-report.json" "${context_cases[@]}" > "$work/out/context-cli.jsonl"
if [ "${BLESS:-}" = 1 ]; then
  cp "$work/out/context-rust.jsonl" "$context_expected"
  echo "blessed $context_expected; review it with git diff"
fi
for host in rust node python cli; do
  if ! cmp -s "$context_expected" "$work/out/context-$host.jsonl"; then
    echo "$host with the context differs from $context_expected:" >&2
    diff "$context_expected" "$work/out/context-$host.jsonl" >&2 || true
    failed=1
  fi
done

n=$(wc -l < "$expected")
if [ "$failed" -ne 0 ]; then
  echo "embedding: 0 passed, 1 failed" >&2
  exit 1
fi
echo "embedding: $n cases identical across rust, node, python and the CLI"
echo "contract: $contract_calls calls identical across rust, node and python, fresh and reused instances"
echo "context: $(wc -l < "$context_expected") cases identical across rust, node, python (--context) and the CLI (computeguard.yaml)"
