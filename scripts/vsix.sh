#!/usr/bin/env bash
# Builds the VS Code extension (editors/vscode) into a .vsix with @vscode/vsce and checks
# the manifest inside it: the extension's name, its VS Code engine, what activates it and
# the settings it contributes (docs/editors.md). Needs Node.js and npm (Debian: nodejs, npm).
#
#   scripts/vsix.sh [OUT]      # default target/computeguard.vsix
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-target/computeguard.vsix}")
mkdir -p "$(dirname "$out")"

cd editors/vscode
# The lock file pins every package; `npm ci` installs exactly it (again only when it changed).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent compile
# No LICENSE file in the repository (the license is named in package.json): say so, or
# vsce asks on the terminal.
npx --no-install vsce package --skip-license --out "$out" < /dev/null
cd ../..

python3 - "$out" << 'PY'
import json, sys, zipfile
vsix = zipfile.ZipFile(sys.argv[1])
names = set(vsix.namelist())
m = json.load(vsix.open("extension/package.json"))
problems = []
def want(cond, what):
    if not cond:
        problems.append(what)
want(m.get("name") == "computeguard", "name is computeguard")
want(m.get("engines", {}).get("vscode", "").startswith("^1."), "engines.vscode is set")
want(m.get("main") == "./out/extension.js" and "extension/out/extension.js" in names, "the compiled entry point is inside")
want(any(e.startswith("onLanguage:") for e in m.get("activationEvents", [])), "activates on the languages check reads")
props = m.get("contributes", {}).get("configuration", {}).get("properties", {})
want("computeguard.path" in props, "contributes the setting computeguard.path")
want(any(n.startswith("extension/node_modules/vscode-languageclient/") for n in names), "vscode-languageclient is packaged")
want(not any(n.startswith("extension/src/") or "node_modules/typescript/" in n for n in names), "no sources or build tools inside")
if problems:
    sys.exit(f"{sys.argv[1]}: not as expected: " + "; ".join(problems))
print(f"{sys.argv[1]}: {m['name']} {m['version']}, engine {m['engines']['vscode']}, "
      f"{len(m['activationEvents'])} activation events, settings {', '.join(sorted(props))}, {len(names)} files")
PY
