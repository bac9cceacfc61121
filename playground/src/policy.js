// The built-in policy component in the browser: the JavaScript jco generated from it
// (`jco transpile --instantiation async`) and its core modules, fetched and compiled once
// when the page loads; every evaluation then gets a fresh instance (as `computeguard
// check` gives every document a fresh sandbox), built from the compiled modules with no
// further request. The WASI imports are the preview2 shim's, sandboxed: no preopened
// directories, no environment, no arguments, no network.

import { WASIShim } from "@bytecodealliance/preview2-shim/instantiation";
import { instantiate } from "../gen/policy.js";

export const CORE_MODULES = __CORE_MODULES__;

function imports() {
  const wasi = new WASIShim({ sandbox: { preopens: {}, env: {}, args: [], enableNetwork: false } });
  return { ...wasi.getImportObject(), "computeguard:policy/types": {} };
}

/** result<_, string> and result<response, error>: jco throws the error as `payload`. */
function call(f) {
  try {
    return { ok: f() };
  } catch (e) {
    if (e && e.payload !== undefined) return { err: e.payload };
    throw e;
  }
}

export class Policy {
  /** Fetches and compiles every core module (the only requests the page makes after its own files). */
  static async load(base) {
    const started = performance.now();
    const compiled = new Map();
    await Promise.all(
      CORE_MODULES.map(async (name) => {
        const url = new URL(name, base);
        const response = await fetch(url);
        if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
        compiled.set(name, await WebAssembly.compileStreaming(response));
      }),
    );
    const policy = new Policy(compiled);
    const root = await policy.instance();
    policy.info = root.evaluator.metadata();
    policy.loadMs = performance.now() - started;
    return policy;
  }

  constructor(compiled) {
    this.compiled = compiled;
  }

  async instance() {
    return instantiate(async (name) => {
      const m = this.compiled.get(name);
      if (!m) throw new Error(`no core module ${name}`);
      return m;
    }, imports());
  }

  /** The policy's own check of the settings text: null, or its error text. */
  async validateSettings(text) {
    const root = await this.instance();
    const r = call(() => root.evaluator.validateSettings(text));
    return r.err === undefined ? null : String(r.err);
  }

  /** One evaluation on a fresh instance: { ok: response } or { err: { tag, val } }. */
  async evaluate(request) {
    const root = await this.instance();
    return call(() => root.evaluator.evaluate(request));
  }
}
