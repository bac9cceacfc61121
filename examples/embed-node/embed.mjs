// Evaluate JSON documents with a computeguard policy component from Node.
//
// Uses only the WIT contract (wit/policy.wit), the JavaScript that jco generates
// from the component, and the WASI preview2 shim: no computeguard code.
//
//   npm run transpile -- POLICY.wasm          # jco transpile -> gen/policy.js + core modules
//   node embed.mjs gen/policy.js --as-of YYYY-MM-DD [--settings FILE] [--context FILE] [--timings] DOCUMENT.json...
//   node embed.mjs gen/policy.js --as-of YYYY-MM-DD [--context FILE] --contract TABLE.jsonl [--reuse]
//
// --context gives every fresh instance the JSON text of FILE through the contract's
// `context` interface (configure: catalog overlays and Azure facts) before its first
// call; a context the policy refuses is an error (exit 2).
//
// --contract runs a table of calls (docs/embedding.md, "The contract test"), each on a
// fresh instance, or with --reuse all on one instance. A call with a `context` file
// (relative to the table) always gets a fresh instance, configured with it first; when
// the policy refuses it, the line is {"case":…,"configure":"<the policy's error>"} and
// the call is not made.
//
// Prints one line per document in the canonical form of docs/embedding.md (the
// Rust and Python examples print the same bytes). --timings adds one JSON line on
// stderr: compile, instantiate and first-evaluation times.
//
// Exit codes: 0 every document evaluated (a policy error result is printed as a
// line); 2 usage error, unreadable file, a policy that cannot be loaded, refused
// settings, or a trap.

import { readFile } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { WASIShim } from "@bytecodealliance/preview2-shim/instantiation";
import Ajv from "ajv";

const USAGE =
  "usage: node embed.mjs GENERATED/policy.js --as-of YYYY-MM-DD [--settings FILE] [--context FILE] [--timings] DOCUMENT.json...\n" +
  "       node embed.mjs GENERATED/policy.js --as-of YYYY-MM-DD [--context FILE] --contract TABLE.jsonl [--reuse]";

class UsageError extends Error {}

// A fresh sandbox per instance: no preopened directories, no environment, no
// arguments, no network. (The shim still writes the guest's stdout/stderr to the
// process's; computeguard policies print nothing.)
function imports() {
  const wasi = new WASIShim({
    sandbox: { preopens: {}, env: {}, args: [], enableNetwork: false },
  });
  return {
    ...wasi.getImportObject(),
    // Policies import the types-only interface of the contract; it has no
    // functions, so an empty object satisfies it.
    "computeguard:policy/types": {},
  };
}

/** The transpiled policy: core modules compiled once, instantiated per call. */
class Policy {
  static async load(generated) {
    const path = resolve(generated);
    const { instantiate } = await import(pathToFileURL(path).href);
    const dir = dirname(path);
    const modules = new Map();
    // jco splits the component into core modules next to the JS; compile each once.
    const getCoreModule = async (name) => {
      if (!modules.has(name)) {
        modules.set(name, WebAssembly.compile(await readFile(resolve(dir, name))));
      }
      return modules.get(name);
    };
    const policy = new Policy(instantiate, getCoreModule, generated);
    await policy.instantiate(); // compiles every core module
    return policy;
  }

  constructor(instantiate, getCoreModule, origin) {
    this.instantiateComponent = instantiate;
    this.getCoreModule = getCoreModule;
    this.origin = origin;
  }

  /** A fresh instance: no state leaks from one document to the next. */
  async instantiate() {
    const root = await this.instantiateComponent(this.getCoreModule, imports());
    return root.evaluator;
  }

  /**
   * A fresh instance given `context` (JSON text; none: not configured) before any
   * other call. `refused` is the policy's error text, which leaves the instance as it was.
   */
  async instantiateWith(context) {
    const root = await this.instantiateComponent(this.getCoreModule, imports());
    let refused = null;
    if (context !== undefined) {
      // jco names the export after the interface: `context` (computeguard:policy/context@0.2.0).
      if (root.context === undefined) {
        throw new UsageError(
          `\`${this.origin}\` does not export computeguard:policy/context@0.2.0, so it takes no context`,
        );
      }
      refused = configure(root.context, context);
    }
    return { evaluator: root.evaluator, refused };
  }
}

/** configure: result<_, string>; jco throws the error string as the payload. */
function configure(context, text) {
  try {
    context.configure(text);
    return null;
  } catch (e) {
    if (e && typeof e.payload === "string") return e.payload;
    throw e;
  }
}

/** The error for a --context file the policy refuses (a refused context changes nothing). */
function contextRefused(evaluator, file, problem) {
  let name = "?";
  try {
    name = evaluator.metadata().name;
  } catch {}
  return new UsageError(`policy \`${name}\` refuses the context in \`${file}\`: ${problem}`);
}

/** result<response, error>: jco returns the ok value and throws the error payload. */
function evaluate(evaluator, request) {
  try {
    return { ok: evaluator.evaluate(request) };
  } catch (e) {
    if (e && e.payload && typeof e.payload.tag === "string") {
      return { err: e.payload };
    }
    throw e;
  }
}

const utf8 = (s) => Buffer.from(s, "utf8");

/** Field by field, comparing UTF-8 bytes (as the Rust and Python examples do). */
function compareViolations(a, b) {
  const fields = (v) => [
    v.rule,
    v.severity,
    v.message,
    v.path,
    v.remediation,
    v.resource.kind,
    v.resource.name,
  ];
  const fa = fields(a);
  const fb = fields(b);
  for (let i = 0; i < fa.length; i++) {
    const c = Buffer.compare(utf8(fa[i]), utf8(fb[i]));
    if (c !== 0) return c;
  }
  return 0;
}

/** The canonical line for one evaluation (key order is part of the format). */
function canonical(name, result) {
  if (result.err) {
    return { case: name, error: { kind: result.err.tag, message: result.err.val } };
  }
  const violations = result.ok.violations.map((v) => ({
    rule: v.rule,
    severity: v.severity,
    message: v.message,
    path: v.path,
    remediation: v.remediation,
    resource: { kind: v.resource.kind, name: v.resource.name },
  }));
  violations.sort(compareViolations);
  return { case: name, violations };
}

/** validate-settings: result<_, string>; jco throws the error string as the payload. */
function validateSettings(evaluator, settings) {
  try {
    evaluator.validateSettings(settings);
    return null;
  } catch (e) {
    if (e && typeof e.payload === "string") return e.payload;
    throw e;
  }
}

/** --contract: one canonical line per call of the table. */
async function runContract(policy, table, asOf, reuse, contextFile) {
  const dir = dirname(resolve(table));
  const lines = (await readFile(table, "utf8")).split("\n").filter((l) => l.trim() !== "");
  const context = contextFile === undefined ? undefined : await readFile(contextFile, "utf8");
  let shared;
  let out = "";
  for (const line of lines) {
    const call = JSON.parse(line);
    let evaluator;
    if (call.context !== undefined) {
      // A call with its own context: always a fresh instance, configured first.
      const own = await policy.instantiateWith(await readFile(resolve(dir, call.context), "utf8"));
      if (own.refused !== null) {
        out += JSON.stringify({ case: call.case, configure: own.refused }) + "\n";
        continue;
      }
      evaluator = own.evaluator;
    } else {
      if (shared === undefined || !reuse) {
        const fresh = await policy.instantiateWith(context);
        if (fresh.refused !== null) throw contextRefused(fresh.evaluator, contextFile, fresh.refused);
        shared = fresh.evaluator;
      }
      evaluator = shared;
    }
    let result;
    if (call.call === "validate-settings") {
      result = { case: call.case, "validate-settings": validateSettings(evaluator, call.settings) };
    } else if (call.call === "evaluate") {
      const document = await readFile(resolve(dir, call.document), "utf8");
      const r = evaluate(evaluator, {
        document,
        sourceKind: call["source-kind"] ?? "unknown",
        operation: "none",
        settings: call.settings,
        asOf,
      });
      result = canonical(call.case, r);
    } else {
      throw new UsageError(`unknown call \`${call.call}\``);
    }
    out += JSON.stringify(result) + "\n";
  }
  process.stdout.write(out);
}

async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        "as-of": { type: "string" },
        settings: { type: "string" },
        context: { type: "string" },
        timings: { type: "boolean", default: false },
        contract: { type: "string" },
        reuse: { type: "boolean", default: false },
      },
    });
  } catch (e) {
    throw new UsageError(`${e.message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError(USAGE);
  if (!values["as-of"]) throw new UsageError(`\`--as-of\` is required\n${USAGE}`);
  const [generated, ...documents] = positionals;
  if (values.contract) {
    const policy = await Policy.load(generated);
    return runContract(policy, values.contract, values["as-of"], values.reuse, values.context);
  }
  const settings = values.settings ? await readFile(values.settings, "utf8") : "{}";
  const context = values.context === undefined ? undefined : await readFile(values.context, "utf8");

  let start = performance.now();
  const policy = await Policy.load(generated);
  const compiled = performance.now() - start;

  start = performance.now();
  const first = await policy.instantiateWith(context);
  const instantiated = performance.now() - start;
  const evaluator = first.evaluator;
  if (first.refused !== null) throw contextRefused(evaluator, values.context, first.refused);
  const info = evaluator.metadata();
  const where = values.settings ? ` in \`${values.settings}\`` : "";
  const refused = (problem) =>
    new UsageError(`policy \`${info.name}\` refuses the settings${where}: ${problem}`);
  // The host checks settings against the policy's JSON Schema, for its library's
  // wording, then asks the policy, which checks them against the same schema itself.
  if (info.settingsSchema !== undefined) {
    const validate = new Ajv({ allErrors: true, strict: false }).compile(
      JSON.parse(info.settingsSchema),
    );
    let value;
    try {
      value = JSON.parse(settings);
    } catch (e) {
      throw refused(`not valid JSON: ${e.message}`);
    }
    if (!validate(value)) {
      throw refused(validate.errors.map((e) => `at \`${e.instancePath}\`: ${e.message}`).join("; "));
    }
  }
  try {
    evaluator.validateSettings(settings);
  } catch (e) {
    throw refused(e.payload ?? e);
  }

  let firstEvaluation;
  let out = "";
  for (const path of documents) {
    const document = await readFile(path, "utf8");
    start = performance.now();
    const fresh = await policy.instantiateWith(context);
    if (fresh.refused !== null) {
      // The first instance took this context; a policy that answers otherwise now is
      // not deterministic.
      throw new UsageError(
        `policy \`${info.name}\` refused the context it accepted before: ${fresh.refused}`,
      );
    }
    const result = evaluate(fresh.evaluator, {
      document,
      sourceKind: "unknown",
      operation: "none",
      settings,
      asOf: values["as-of"],
    });
    firstEvaluation ??= performance.now() - start;
    out += JSON.stringify(canonical(basename(path), result)) + "\n";
  }
  process.stdout.write(out);
  if (values.timings) {
    const ms = (t) => Math.round(t * 100) / 100;
    process.stderr.write(
      JSON.stringify({
        host: "node",
        compileMs: ms(compiled),
        instantiateMs: ms(instantiated),
        firstEvaluateMs: firstEvaluation === undefined ? null : ms(firstEvaluation),
      }) + "\n",
    );
  }
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`error: ${e instanceof UsageError ? e.message : e.stack ?? e}\n`);
  process.exitCode = 2;
});
