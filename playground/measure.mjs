// The playground's load budget (docs/benchmarks.md, "The playground"): RUNS cold loads of
// the built site in headless Chromium (a new incognito context each, so nothing is cached),
// each timed from navigation start to the first verdict (`data-first-verdict-ms` on the
// results panel: page, script and component fetched, core modules compiled, the first
// example evaluated and shown).
//
//   node measure.mjs SITE_DIR [RUNS]

import { createServer } from "node:http";
import { readFileSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import puppeteer from "puppeteer-core";

const site = resolve(process.argv[2] || "../target/playground");
const runs = Number(process.argv[3] || 5);
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".wasm": "application/wasm" };
const server = createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  const file = resolve(join(site, path === "/" ? "index.html" : path));
  try {
    if (!file.startsWith(site) || !statSync(file).isFile()) throw new Error();
    res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream" });
    res.end(readFileSync(file));
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const times = [];
for (let i = 0; i < runs; i++) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForSelector("#results[data-state=done]", { timeout: 60000 });
  times.push(Number(await page.$eval("#results", (r) => r.dataset.firstVerdictMs)));
  await context.close();
}
await browser.close();
server.close();
const sorted = [...times].sort((a, b) => a - b);
const sizes = JSON.parse(readFileSync(join(site, "sizes.json"), "utf8"));
console.log(JSON.stringify({ firstVerdictMs: times, median: sorted[Math.floor(sorted.length / 2)], sizes }));
