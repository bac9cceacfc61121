// @computeguard/policy: the built-in computeguard policy component, transpiled by jco
// (gen/), behind a small typed wrapper. Only the WIT contract (wit/policy.wit) is used.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { WASIShim } from "@bytecodealliance/preview2-shim/instantiation";
import { instantiate } from "./gen/policy.js";

const GEN = new URL("./gen/", import.meta.url);

/** The policy refused its settings (`validate-settings` or `invalid-settings`). */
export class SettingsError extends Error {
  constructor(message) {
    super(message);
    this.name = "SettingsError";
  }
}

/** The document is not valid JSON, not an object, or contradicts its source kind. */
export class DocumentError extends Error {
  constructor(message) {
    super(message);
    this.name = "DocumentError";
  }
}

/** A rule failed to evaluate; the message names it. */
export class RuleError extends Error {
  constructor(message) {
    super(message);
    this.name = "RuleError";
  }
}

const ERRORS = {
  "invalid-document": DocumentError,
  "invalid-settings": SettingsError,
  "rule-failed": RuleError,
};

function imports() {
  // No preopened directories, environment, arguments or network.
  const wasi = new WASIShim({
    sandbox: { preopens: {}, env: {}, args: [], enableNetwork: false },
  });
  return { ...wasi.getImportObject(), "computeguard:policy/types": {} };
}

/** Today's date, UTC, as the policy expects it. */
function today() {
  return new Date().toISOString().slice(0, 10);
}

class Policy {
  constructor(getCoreModule) {
    this.getCoreModule = getCoreModule;
    this.evaluator = undefined;
  }

  async instance() {
    if (this.evaluator === undefined) {
      const root = await instantiate(this.getCoreModule, imports());
      this.evaluator = root.evaluator;
    }
    return this.evaluator;
  }

  /** Runs `f` on the instance; a trap (any throw that is not a result error) drops it. */
  async call(f) {
    const evaluator = await this.instance();
    try {
      return f(evaluator);
    } catch (e) {
      if (e && e.payload !== undefined) throw e;
      this.evaluator = undefined;
      throw e;
    }
  }

  async metadata() {
    return this.call((e) => e.metadata());
  }

  async validateSettings(settings = {}) {
    const text = typeof settings === "string" ? settings : JSON.stringify(settings);
    try {
      await this.call((e) => e.validateSettings(text));
    } catch (e) {
      if (e && typeof e.payload === "string") throw new SettingsError(e.payload);
      throw e;
    }
  }

  async evaluate(document, options = {}) {
    const {
      settings = {},
      asOf = today(),
      sourceKind = "unknown",
      operation = "none",
    } = options;
    if (!/^\d{4}-\d{2}-\d{2}$/.test(asOf)) {
      throw new TypeError(`asOf must be a date YYYY-MM-DD, got ${JSON.stringify(asOf)}`);
    }
    const request = {
      document: typeof document === "string" ? document : JSON.stringify(document),
      sourceKind,
      operation,
      settings: typeof settings === "string" ? settings : JSON.stringify(settings),
      asOf,
    };
    try {
      return await this.call((e) => e.evaluate(request));
    } catch (e) {
      const payload = e && e.payload;
      if (payload && typeof payload.tag === "string" && ERRORS[payload.tag]) {
        throw new ERRORS[payload.tag](payload.val);
      }
      throw e;
    }
  }
}

/**
 * Compiles the component's core modules (once) and returns the policy. One instance is
 * reused for every call, which is safe for this policy (its answers depend only on the
 * request; computeguard's contract test checks it) and 16x cheaper per document in Node
 * than a fresh instance. After a trap the instance is dropped and the next call makes a
 * new one.
 */
export async function load() {
  const modules = new Map();
  const getCoreModule = (name) => {
    if (!modules.has(name)) {
      modules.set(
        name,
        readFile(fileURLToPath(new URL(name, GEN))).then((bytes) => WebAssembly.compile(bytes)),
      );
    }
    return modules.get(name);
  };
  const policy = new Policy(getCoreModule);
  await policy.instance();
  return policy;
}
