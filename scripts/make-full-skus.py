#!/usr/bin/env python3
"""Writes a full-size `az vm list-skus --all -o json` output for benchmarks.

No real all-regions output is public, so this builds one from real entries: the 292
SKUs Azure returned for eastus2 (the Java SDK session record in
../shared/corpus/azure-context/, SOURCES.tsv), of which 243 are virtual machine sizes,
repeated for every region in policies/catalog/regions.yaml with that region's name in
`locations`, `locationInfo` and the restrictions, and printed as `az` prints them: a bare
JSON array, two-space indented. With the catalog's regions that is about 18,000 entries and 35 MB,
the order of magnitude of a real `--all` output.

    scripts/make-full-skus.py OUT.json
"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root.parent / "shared/corpus/azure-context"
record = json.loads((corpus / "skus-recording-java-eastus2-2020-canListSkusByRegion.json").read_text())
entries = json.loads(record["networkCallRecords"][0]["Response"]["Body"])["value"]

regions = []
for line in (root / "policies/catalog/regions.yaml").read_text().splitlines():
    line = line.strip()
    if line.startswith("programmatic_name:") or line.startswith("- programmatic_name:"):
        name = line.split(":", 1)[1].strip().strip("'\"")
        if name.isalnum() and name.islower() and name not in regions:
            regions.append(name)

def moved(entry, region):
    e = json.loads(json.dumps(entry).replace('"eastus2"', json.dumps(region)).replace('"eastus2', json.dumps(region)[:-1]))
    e["locations"] = [region]
    return e

out = [moved(e, r) for r in regions for e in entries]
pathlib.Path(sys.argv[1]).write_text(json.dumps(out, indent=2) + "\n")
vms = sum(1 for e in out if e.get("resourceType") == "virtualMachines")
print(f"{sys.argv[1]}: {len(out)} entries ({vms} virtual machine sizes x regions) for {len(regions)} regions", file=sys.stderr)
