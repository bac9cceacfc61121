// Builds the playground into OUT_DIR: the policy component transpiled by jco, the page's
// script bundled by esbuild (CodeMirror 6, the `yaml` parser, the preview2 shim), the
// example gallery from examples/, index.html and style.css.
//
//   node build.mjs COMPONENT.wasm OUT_DIR        (scripts/build-playground.sh runs it)

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { parse } from "yaml";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const [component, outArg] = process.argv.slice(2);
if (!component || !outArg) {
  console.error("usage: node build.mjs COMPONENT.wasm OUT_DIR");
  process.exit(2);
}
const out = resolve(outArg);
const gen = join(here, "gen");

// 1. The component, transpiled for an async instantiation (the page compiles the core
//    modules once and instantiates them per evaluation).
rmSync(gen, { recursive: true, force: true });
mkdirSync(gen, { recursive: true });
execFileSync(join(here, "node_modules/.bin/jco"),
  ["transpile", "--instantiation", "async", "--name", "policy", "--no-typescript", "--quiet", "-o", gen, resolve(component)],
  { stdio: "inherit" });
const cores = readdirSync(gen).filter((f) => f.endsWith(".wasm")).sort();

// 2. The gallery: every document of the examples, with the settings of the
//    computeguard.yaml beside them (the CLI's configuration for them).
function settingsOf(config) {
  const c = parse(readFileSync(join(root, config), "utf8")) || {};
  const regions = c.regions || {};
  const rules = {};
  for (const [id, level] of Object.entries(c.rules || {})) rules[id] = String(level);
  return {
    allowed: regions.allowed || [],
    geographies: regions.allowedGeographies || [],
    asOf: String(c.asOf),
    rules,
  };
}
const files = (dir, pattern) =>
  readdirSync(join(root, dir))
    .filter((f) => pattern.test(f) && statSync(join(root, dir, f)).isFile())
    .sort()
    .map((f) => join(dir, f));
const groups = [
  {
    group: "examples (settings of examples/computeguard.yaml)",
    config: "examples/computeguard.yaml",
    files: ["examples/azureml", "examples/kubernetes", "examples/kaito", "examples/policies"]
      .flatMap((d) => files(d, /\.(ya?ml|json)$/)),
  },
  {
    group: "embedding cases (settings of examples/embed-cases/computeguard.yaml)",
    config: "examples/embed-cases/computeguard.yaml",
    files: [...files("examples/embed-cases/cases", /./), ...files("examples/embed-cases/contract", /\.json$/)],
  },
];
const gallery = groups.flatMap((g) => {
  const settings = settingsOf(g.config);
  return g.files.map((f) => ({
    group: g.group,
    name: basename(f),
    path: relative(root, join(root, f)),
    settings,
    text: readFileSync(join(root, f), "utf8"),
  }));
});
writeFileSync(join(gen, "gallery.json"), JSON.stringify(gallery));

// 3. The page's script, one bundle.
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src/app.js")],
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  outfile: join(out, "app.js"),
  define: { __CORE_MODULES__: JSON.stringify(cores) },
  legalComments: "none",
  // jco's generated code imports node:fs only when it runs in Node.
  external: ["node:*"],
  logLevel: "warning",
});
for (const f of cores) copyFileSync(join(gen, f), join(out, f));
for (const f of ["index.html", "style.css"]) copyFileSync(join(here, "src", f), join(out, f));
// A static host that runs Jekyll (GitHub Pages) must serve the files as they are.
writeFileSync(join(out, ".nojekyll"), "");

const size = (f) => statSync(join(out, f)).size;
const wasm = cores.reduce((n, f) => n + size(f), 0);
const js = size("app.js");
const gz = (f) => gzipSync(readFileSync(join(out, f)), { level: 9 }).length;
const sizes = {
  component: wasm, js, html: size("index.html"), css: size("style.css"),
  gzip: { component: cores.reduce((n, f) => n + gz(f), 0), js: gz("app.js") },
};
writeFileSync(join(out, "sizes.json"), JSON.stringify(sizes) + "\n");
console.log(`playground: ${out} (core modules ${wasm} bytes, ${sizes.gzip.component} gzipped; app.js ${js} bytes, ${sizes.gzip.js} gzipped; ${gallery.length} examples)`);
