// Prints the canonical line of docs/embedding.md for each case, evaluated through the
// installed @computeguard/policy package (its wrapper, not the raw bindings), so that
// scripts/test-packages.sh can compare it with examples/embed-cases/expected.jsonl.
//   node npm-agree.mjs SETTINGS.json AS-OF CASE...
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { load, DocumentError, SettingsError, RuleError } from "@computeguard/policy";

const [settingsFile, asOf, ...cases] = process.argv.slice(2);
const settings = JSON.parse(await readFile(settingsFile, "utf8"));
const policy = await load();
await policy.validateSettings(settings);
const kinds = new Map([
  [DocumentError, "invalid-document"],
  [SettingsError, "invalid-settings"],
  [RuleError, "rule-failed"],
]);
const utf8 = (s) => Buffer.from(s, "utf8");
const fields = (v) => [v.rule, v.severity, v.message, v.path, v.remediation, v.resource.kind, v.resource.name];
const order = (a, b) => {
  const [fa, fb] = [fields(a), fields(b)];
  for (let i = 0; i < fa.length; i++) {
    const c = Buffer.compare(utf8(fa[i]), utf8(fb[i]));
    if (c !== 0) return c;
  }
  return 0;
};
let out = "";
for (const path of cases) {
  const document = await readFile(path, "utf8");
  let line;
  try {
    const { violations } = await policy.evaluate(document, { settings, asOf });
    line = {
      case: basename(path),
      violations: violations
        .map((v) => ({
          rule: v.rule, severity: v.severity, message: v.message, path: v.path,
          remediation: v.remediation, resource: { kind: v.resource.kind, name: v.resource.name },
        }))
        .sort(order),
    };
  } catch (e) {
    const kind = kinds.get(e.constructor);
    if (!kind) throw e;
    line = { case: basename(path), error: { kind, message: e.message } };
  }
  out += JSON.stringify(line) + "\n";
}
process.stdout.write(out);
