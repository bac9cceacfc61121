// The playground and the HTML report in a real browser (headless Chromium driven by
// puppeteer-core), served by a local static server. scripts/test-playground.sh runs it.
//
//   node test.mjs --site DIR --cli COMPUTEGUARD --report AUDIT.html --report-json AUDIT.json --out DIR
//
// - every example of the gallery through the gallery: the findings (rule, severity, line)
//   equal those of `computeguard check --format json` on the same file with the same
//   configuration, and a file the CLI cannot read is invalid input in the page too;
// - a plain `#doc=BASE64URL&name=FILE` link gives the CLI's findings with its defaults;
// - the share link (compressed state in the fragment) reproduces document, settings and
//   findings in a new page;
// - invalid input and invalid settings give a clear message;
// - no request after the page and the component have loaded (every request is intercepted);
// - the HTML report of the 5,000-object audit: its filters, search, sort and paging;
// - screenshots of both, and the measured sizes and time to first verdict, in --out.

import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { inflateRawSync } from "node:zlib";
import puppeteer from "puppeteer-core";

const { values: args } = parseArgs({
  options: {
    site: { type: "string" },
    cli: { type: "string" },
    report: { type: "string" },
    "report-json": { type: "string" },
    // More reports to open the same way: HTML,JSON pairs (the 5,000-finding one).
    "more-report": { type: "string", multiple: true, default: [] },
    out: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM || "/usr/bin/chromium" },
  },
});
for (const k of ["site", "cli", "report", "report-json", "out"]) {
  if (!args[k]) {
    console.error(`missing --${k}`);
    process.exit(2);
  }
}
const root = resolve(new URL("..", import.meta.url).pathname);
const site = resolve(args.site);
const out = resolve(args.out);
mkdirSync(out, { recursive: true });

let failures = 0;
let passed = 0;
function check(ok, what, detail) {
  if (ok) {
    passed++;
  } else {
    failures++;
    console.error(`FAIL ${what}${detail === undefined ? "" : `\n${detail}`}`);
  }
}

// ---- A static server: the built site at /, the report at /report.html -----------------

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css",
  ".wasm": "application/wasm", ".json": "application/json" };
const reports = [[args.report, args["report-json"]], ...args["more-report"].map((r) => r.split(","))]
  .map(([html, json]) => [resolve(html), resolve(json)]);
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
  const n = /^\/report-(\d+)\.html$/.exec(path);
  const file = n ? reports[Number(n[1])]?.[0] ?? "/nonexistent"
    : resolve(join(site, path === "/" ? "index.html" : path));
  if (!file.startsWith(site) && !reports.some(([html]) => html === file)) {
    res.writeHead(403).end();
    return;
  }
  try {
    const body = readFileSync(file);
    res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

// ---- What the CLI says ------------------------------------------------------------------

/** (rule, severity, line) of every finding per file, and the files with errors. */
function cli(files, config, cwd = root, asOf = null) {
  const argv = ["check", "--format", "json"];
  if (config) argv.push("--config", config);
  if (asOf) argv.push("--as-of", asOf);
  const r = spawnSync(resolve(args.cli), [...argv, ...files], { cwd, encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0 && r.status !== 1 && r.status !== 2) throw new Error(`computeguard check: ${r.stderr}`);
  const report = JSON.parse(r.stdout);
  const by = new Map(files.map((f) => [f, { findings: [], error: false }]));
  const key = (f) => files.find((x) => resolve(cwd, x) === resolve(cwd, f)) ?? f;
  for (const f of report.findings) by.get(key(f.file))?.findings.push(`${f.rule} ${f.severity} ${f.line}`);
  for (const e of report.errors) if (by.has(key(e.file))) by.get(key(e.file)).error = true;
  for (const v of by.values()) v.findings.sort();
  return by;
}

// ---- The page ---------------------------------------------------------------------------

const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const figures = {};

async function done(page, timeout = 60000) {
  await page.waitForSelector("#results[data-state=done]", { timeout });
}

async function shown(page) {
  return page.evaluate(() => ({
    verdict: document.getElementById("results").dataset.verdict,
    text: document.getElementById("verdict").textContent,
    problems: [...document.querySelectorAll("#problems li")].map((l) => l.textContent),
    findings: [...document.querySelectorAll("#findings li")]
      .map((l) => `${l.dataset.rule} ${l.dataset.severity} ${l.dataset.line}`).sort(),
  }));
}

async function openPage(url) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(url, { waitUntil: "load" });
  await done(page);
  return { page, errors };
}

/** Every request from now on is recorded and refused. */
async function forbidRequests(page) {
  const seen = [];
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    if (req.url().startsWith("data:")) return req.continue();
    seen.push(`${req.method()} ${req.url()}`);
    req.abort();
  });
  return seen;
}

/** Runs `action`, then waits for the verdict of the new document. */
async function after(page, action) {
  await page.evaluate(() => { document.getElementById("results").dataset.state = "stale"; });
  await action();
  await done(page);
}

// 1. First load: sizes and the time to the first verdict.
const started = Date.now();
const { page, errors } = await openPage(`${origin}/`);
figures.firstVerdictWallMs = Date.now() - started;
figures.firstVerdictMs = Number(await page.$eval("#results", (r) => r.dataset.firstVerdictMs));
figures.policyLoad = await page.$eval("#policy-name", (e) => e.textContent);
figures.sizes = JSON.parse(readFileSync(join(site, "sizes.json"), "utf8"));
const requests = await forbidRequests(page);
check(await page.$eval("#privacy", (e) => e.offsetParent !== null && /Nothing leaves your browser/.test(e.textContent)),
  "the privacy note is visible");

// 2. Every example of the gallery, through the gallery, against the CLI.
const gallery = JSON.parse(readFileSync(join(root, "playground/gen/gallery.json"), "utf8"));
const configs = new Map();
for (const [i, g] of gallery.entries()) {
  const config = g.group.startsWith("examples") ? "examples/computeguard.yaml" : "examples/embed-cases/computeguard.yaml";
  if (!configs.has(config)) configs.set(config, []);
  configs.get(config).push({ i, g });
}
let compared = 0;
for (const [config, entries] of configs) {
  const expected = cli(entries.map((e) => e.g.path), config);
  for (const { i, g } of entries) {
    await after(page, () => page.select("#gallery", String(i)));
    const got = await shown(page);
    const want = expected.get(g.path);
    if (want.error) {
      check(got.verdict === "invalid-input", `${g.path}: invalid input, as the CLI says`, JSON.stringify(got));
    } else {
      check(JSON.stringify(got.findings) === JSON.stringify(want.findings), `${g.path}: findings equal the CLI's`,
        `page: ${JSON.stringify(got.findings)}\ncli:  ${JSON.stringify(want.findings)}\n${got.text}\n${got.problems.join("\n")}`);
    }
    compared++;
  }
}
await page.screenshot({ path: join(out, "playground.png"), fullPage: false });

// 3. A plain #doc= link (the document's UTF-8 bytes, unpadded base64url, and its name),
//    against the CLI with no configuration and today's date (the page's defaults).
const today = new Date().toISOString().slice(0, 10);
const scratch = mkdtempSync(join(tmpdir(), "cg-playground-"));
for (const path of ["examples/azureml/cuda12-on-k80-job.yml", "examples/kubernetes/inference-on-infiniband.yaml",
  "examples/embed-cases/cases/aml-cluster-outside-allowed-regions.json"]) {
  const text = readFileSync(join(root, path));
  const name = path.split("/").pop();
  const doc = text.toString("base64url");
  check(!doc.includes("="), "the #doc= value is unpadded");
  await after(page, () => page.evaluate((h) => { location.hash = h; }, `#doc=${doc}&name=${encodeURIComponent(name)}`));
  const got = await shown(page);
  const want = cli([resolve(root, path)], null, scratch, today).get(resolve(root, path));
  check(JSON.stringify(got.findings) === JSON.stringify(want.findings), `#doc=${name}: findings equal the CLI's defaults`,
    `page: ${JSON.stringify(got.findings)}\ncli:  ${JSON.stringify(want.findings)}`);
  check(await page.$eval("#file-name", (e) => e.value) === name, `#doc=...&name=${name} sets the name`);
}

// 4. The share link round-trips: document, settings (regions, asOf, a rule level) and findings.
await after(page, () => page.select("#gallery", String(gallery.findIndex((g) => g.name === "gpu-cluster.yml"))));
await after(page, () => page.select("select[data-rule=min-nodes-zero]", "error"));
await after(page, async () => {
  await page.$eval("#regions", (e) => { e.value = "westeurope"; e.dispatchEvent(new Event("input")); });
});
const before = await shown(page);
const link = await page.$eval("#share", (e) => e.value);
check(/#s=[A-Za-z0-9_-]+$/.test(link), "the share link holds the compressed state in the fragment", link);
check(before.findings.some((f) => f.startsWith("min-nodes-zero error")), "a rule level applies", JSON.stringify(before));
const second = await openPage(link);
const again = await shown(second.page);
check(JSON.stringify(again) === JSON.stringify(before), "the share link reproduces the findings",
  `${JSON.stringify(before)}\n${JSON.stringify(again)}`);
check(await second.page.$eval("#regions", (e) => e.value) === "westeurope", "the share link reproduces the settings");
check(await second.page.$eval("select[data-rule=min-nodes-zero]", (e) => e.value) === "error",
  "the share link reproduces the rule levels");
// The state decodes in Node too: deflate-raw JSON, base64url.
const state = JSON.parse(inflateRawSync(Buffer.from(link.split("#s=")[1], "base64url")).toString("utf8"));
check(state.name === "gpu-cluster.yml" && state.doc === readFileSync(join(root, "examples/azureml/gpu-cluster.yml"), "utf8"),
  "the fragment holds the document and its name");
await second.page.close();

// 5. Invalid input and invalid settings.
await after(page, () => page.evaluate((h) => { location.hash = h; },
  "#doc=" + Buffer.from("apiVersion: v1\nkind: Pod\nspec: [unclosed\n").toString("base64url") + "&name=bad.yaml"));
let got = await shown(page);
check(got.verdict === "invalid-input" && /invalid YAML at line \d+, column \d+/.test(got.text), "invalid YAML is a clear message", got.text);
await after(page, () => page.evaluate((h) => { location.hash = h; },
  "#doc=" + Buffer.from('{"a": 1,}').toString("base64url") + "&name=bad.json"));
got = await shown(page);
check(got.verdict === "invalid-input" && /invalid JSON at line 1/.test(got.text), "invalid JSON is a clear message", got.text);
await after(page, async () => {
  await page.$eval("#as-of", (e) => { e.value = "tomorrow"; e.dispatchEvent(new Event("input")); });
});
got = await shown(page);
check(got.verdict === "invalid-settings" && /not a date/.test(got.text + got.problems), "a bad asOf is refused", JSON.stringify(got));
await after(page, async () => {
  await page.$eval("#as-of", (e) => { e.value = "2026-11-22"; e.dispatchEvent(new Event("input")); });
  await page.$eval("#geographies", (e) => { e.value = "EU, "; e.dispatchEvent(new Event("input")); });
});
got = await shown(page);
const settingsError = await page.$eval("#settings-error", (e) => e.textContent);
check(got.verdict === "invalid-settings" &&
  settingsError.includes("The policy refuses these settings: at `/regions/allowedGeographies/1`: expected at least 1 character, got 0"),
  "settings the policy refuses are shown with its message", `${JSON.stringify(got)}\n${settingsError}`);
await after(page, () => page.evaluate((h) => { location.hash = h; },
  "#doc=" + Buffer.from("resource \"x\" \"y\" {}\n").toString("base64url") + "&name=main.tf"));
got = await shown(page);
check(got.verdict === "unsupported" && /Terraform/.test(got.problems.join()), "Terraform HCL is named as unsupported", JSON.stringify(got));

// 6. Nothing was requested after the load.
check(requests.length === 0, "no request after the page and the component loaded", requests.join("\n"));
check(errors.length === 0, "no script error in the page", errors.join("\n"));

// 7. The HTML reports (the 5,000-object audit, and one of at least 5,000 findings), in the
//    same browser.
figures.reports = [];
for (const [index, [html, json]] of reports.entries()) {
const audit = JSON.parse(readFileSync(json, "utf8"));
const total = audit.findings.length;
const reportPage = await browser.newPage();
await reportPage.setViewport({ width: 1400, height: 1000 });
const reportErrors = [];
reportPage.on("pageerror", (e) => reportErrors.push(String(e)));
const t0 = Date.now();
let t1;
await reportPage.goto(`${origin}/report-${index}.html`, { waitUntil: "load" });
await reportPage.waitForSelector("body[data-ready=true]", { timeout: 60000 });
const reportFigures = { findings: total, bytes: readFileSync(html).length, readyMs: Date.now() - t0 };
figures.reports.push(reportFigures);
const reportRequests = await forbidRequests(reportPage);
const counts = () => reportPage.$eval("#count", (c) => ({ shown: +c.dataset.shown, matched: +c.dataset.matched }));
const visibleRows = () => reportPage.$$eval("#table tbody tr", (rows) => rows.filter((r) => !r.hidden).length);
let c = await counts();
check(c.matched === total && c.shown === Math.min(250, total), "the report shows a page of every finding", JSON.stringify(c));
check(await visibleRows() === c.shown, "as many rows are visible as the count says");
const errorsCount = audit.findings.filter((f) => f.severity === "error").length;
await reportPage.select("#f-sev", "0");
c = await counts();
check(c.matched === errorsCount, "the severity filter keeps the errors", `${c.matched} vs ${errorsCount}`);
await reportPage.select("#f-sev", "");
const ns = audit.findings.find((f) => f.object && f.object.namespace).object.namespace;
const nsCount = audit.findings.filter((f) => f.object && f.object.namespace === ns).length;
await reportPage.select("#f-ns", ns);
c = await counts();
check(c.matched === nsCount, `the namespace filter keeps ${ns}`, `${c.matched} vs ${nsCount}`);
const ruleOf = audit.findings[0].rule;
const ruleCount = audit.findings.filter((f) => f.rule === ruleOf && f.object && f.object.namespace === ns).length;
await reportPage.select("#f-rule", ruleOf);
c = await counts();
check(c.matched === ruleCount, "filters combine (namespace and rule)", `${c.matched} vs ${ruleCount}`);
await reportPage.click("#f-reset");
const needle = audit.findings[total - 1].resource.name;
await reportPage.type("#f-q", needle);
c = await counts();
check(c.matched >= 1 && c.matched < total, `the search finds ${needle}`, JSON.stringify(c));
await reportPage.click("#f-reset");
await reportPage.click("th[data-sort=loc] button");
await reportPage.click("th[data-sort=loc] button");
const lastLine = Math.max(...audit.findings.map((f) => f.line));
const firstShown = await reportPage.$eval("#table tbody tr:not([hidden])", (r) => +r.dataset.line);
check(firstShown === lastLine, "sorting by location, descending, puts the last line first", `${firstShown} vs ${lastLine}`);
t1 = Date.now();
await reportPage.click("#all");
c = await counts();
reportFigures.showAllMs = Date.now() - t1;
check(c.shown === total && await visibleRows() === total, "Show all shows every finding", JSON.stringify(c));
await reportPage.click("#f-reset");
await reportPage.click("button.bar[data-filter=f-rule]");
c = await counts();
const topRule = await reportPage.$eval("#f-rule", (s) => s.value);
check(c.matched === audit.findings.filter((f) => f.rule === topRule).length && topRule !== "",
  "a click on a bar of the chart filters by its rule", JSON.stringify(c));
await reportPage.click("#f-reset");
await reportPage.evaluate(() => window.scrollTo(0, 0));
await reportPage.screenshot({ path: join(out, index ? `report-${total}.png` : "report.png"), fullPage: false });
check(reportRequests.length === 0, "the report makes no request", reportRequests.join("\n"));
check(reportErrors.length === 0, "no script error in the report", reportErrors.join("\n"));
await reportPage.close();
}

await browser.close();
server.close();
writeFileSync(join(out, "figures.json"), JSON.stringify(figures, null, 2) + "\n");
console.log(`playground: ${compared} examples equal to the CLI; first verdict ${figures.firstVerdictMs} ms after navigation ` +
  `(component ${figures.sizes.component} bytes, app.js ${figures.sizes.js} bytes); ` +
  figures.reports.map((r) => `report of ${r.findings} findings ready in ${r.readyMs} ms`).join(", ") +
  `; screenshots in ${out}`);
if (failures) {
  console.error(`browser: ${passed} passed, ${failures} failed`);
  process.exit(1);
}
console.log(`browser: ${passed} checks passed`);

