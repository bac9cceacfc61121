#!/usr/bin/env bash
# The playground and the HTML report in a real browser (docs/playground.md): headless
# Chromium (Debian's chromium package) driven by puppeteer-core (playground/package-lock.json)
# loads the built playground from a local static server, runs every example and the embedding
# cases and compares the findings with `computeguard check`, round-trips the share link,
# refuses every request after the load, and opens the HTML report of the 5,000-object audit
# (and of a dump with more than 5,000 findings) and uses its filters. Screenshots and the
# measured figures go to target/playground-test/ (not committed).
#
#   scripts/test-playground.sh         (scripts/test.sh runs it after the build)
#
# Uses $COMPUTEGUARD_BIN, else target/debug/computeguard (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
out="$target/playground-test"
site="$target/playground"
mkdir -p "$out"

echo "== chromium (Debian packages chromium, chromium-driver)"
if ! command -v chromium > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq > /dev/null
  apt-get install -y -qq chromium chromium-driver > /dev/null
fi
chromium --version 2> /dev/null

echo "== npm ci (playground/package-lock.json)"
(cd playground && npm ci --no-audit --no-fund --loglevel=error > /dev/null)

computeguard=${COMPUTEGUARD_BIN:-$target/debug/computeguard}
if [ ! -x "$computeguard" ]; then
  cargo build --quiet -p computeguard
fi
computeguard=$(realpath "$computeguard")

echo "== build the playground"
COMPUTEGUARD_BIN=$computeguard scripts/build-playground.sh "$site"

echo "== HTML reports: the 5,000-object audit (docs/benchmarks.md section 8) and one of 5,000+ findings"
# The dump generator reads YAML with PyYAML: the system's, else PyPI's in a virtualenv.
python=python3
if ! python3 -c "import yaml" 2> /dev/null; then
  . scripts/tool-venv.sh
  python=$(tool_venv "$target/pyyaml-venv" python pyyaml==6.0.3)
fi
report() { # objects name
  "$python" scripts/make-kubectl-dump.py --objects "$1" > "$out/$2.yaml"
  for format in html json; do
    set +e
    "$computeguard" check --format "$format" --as-of 2026-11-22 "$out/$2.yaml" > "$out/$2.$format" 2> /dev/null
    local code=$?
    set -e
    if [ "$code" -ne 1 ]; then
      echo "expected exit code 1 (findings) from the audit of $1 objects, got $code" >&2
      exit 1
    fi
  done
  rm "$out/$2.yaml"
}
report 5000 audit-5000
# 19,000 objects give 5,070 findings: the size the report must stay usable at.
report 19000 audit-19000

echo "== the browser"
(cd playground && node test.mjs --site "../$site" --cli "$computeguard" \
  --report "../$out/audit-5000.html" --report-json "../$out/audit-5000.json" \
  --more-report "../$out/audit-19000.html,../$out/audit-19000.json" --out "../$out")
