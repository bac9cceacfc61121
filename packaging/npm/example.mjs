// Evaluates JSON documents with @computeguard/policy and prints one line per document:
//   node example.mjs --as-of 2026-11-22 [--settings settings.json] doc.json...
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { load, DocumentError, SettingsError } from "@computeguard/policy";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { "as-of": { type: "string" }, settings: { type: "string" } },
});
const settings = values.settings ? JSON.parse(await readFile(values.settings, "utf8")) : {};
const policy = await load();
try {
  await policy.validateSettings(settings);
} catch (e) {
  if (e instanceof SettingsError) {
    console.error(`settings refused: ${e.message}`);
    process.exit(2);
  }
  throw e;
}
for (const path of positionals) {
  const document = await readFile(path, "utf8");
  try {
    const { violations } = await policy.evaluate(document, { settings, asOf: values["as-of"] });
    const found = violations.map((v) => `${v.severity}[${v.rule}] ${v.message}`);
    console.log(`${basename(path)}: ${found.length ? found.join("; ") : "ok"}`);
  } catch (e) {
    if (!(e instanceof DocumentError)) throw e;
    console.log(`${basename(path)}: ${e.name}: ${e.message}`);
  }
}
