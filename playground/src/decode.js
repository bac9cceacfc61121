// Decoding in the browser the way `computeguard check` decodes (host/decode): YAML 1.2 core
// schema (only true/false are booleans, `.inf` and `.nan` stay strings, a numeral out of
// range is an error), `<<` merge keys and aliases expanded, duplicate keys refused, one
// document per non-empty `---` section; JSON is read with the same parser (JSON is YAML
// 1.2) after JSON.parse has checked it is JSON. Every node keeps its place, and a JSON
// pointer is located as host/decode's Positions::locate does:
//
// - a mapping entry at its key, a sequence item at the item, the root at the document's
//   first node;
// - a node copied by an alias or a merge key at the alias (or the `<<` key): its
//   descendants resolve to it;
// - a pointer to a node that does not exist at its nearest existing ancestor.
//
// Lines are 1-based; columns count characters (code points), a byte order mark is not a
// column.

import { parseAllDocuments, isAlias, isMap, isScalar, isSeq, isPair } from "yaml";

/** What the file name says about its syntax, as `check` reads it (scan.rs `Syntax::of`). */
export function syntaxOf(name, text) {
  const lower = (name || "").toLowerCase();
  if (lower.endsWith(".tf") || lower.endsWith(".tf.json") || lower.endsWith(".tfvars") ||
      lower.endsWith(".tfvars.json")) {
    return "terraform";
  }
  if (lower.endsWith(".bicep")) return "bicep";
  if (lower.endsWith(".json")) return "json";
  if (lower.endsWith(".yaml") || lower.endsWith(".yml")) return "yaml";
  // No telling name: JSON if the text starts with `{` or `[`, else YAML (scan.rs `sniff`).
  const first = text.replace(/^\uFEFF/, "").trimStart()[0];
  return first === "{" || first === "[" ? "json" : "yaml";
}

/** Why the page does not read a syntax (the CLI does, natively). */
export const UNSUPPORTED = {
  bicep:
    "Bicep is not read in the browser: computeguard check parses it on the host with the tree-sitter Bicep grammar and translates it to an ARM template with Bicep positions (host/decode), which is not part of the policy component. Run `computeguard check FILE.bicep`, or paste the ARM JSON that `az bicep build --file FILE.bicep --stdout` prints.",
  terraform:
    "Terraform is not read in the browser: computeguard check converts HCL to Terraform's JSON syntax on the host and resolves var.x from the other files of the module folder and .tfvars files (host/decode, scan/terraform.rs), which a single pasted file cannot give. Run `computeguard check` on the folder, or paste `terraform show -json` output as a .json document.",
};

export class DecodeError extends Error {
  constructor(message, line, column) {
    super(message);
    this.line = line;
    this.column = column;
  }
}

/** Line starts (UTF-16 offsets) of `text`, for offset -> line and column. */
class Lines {
  constructor(text) {
    this.text = text;
    this.starts = [0];
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.starts.push(i + 1);
  }
  /** 1-based line and column (code points) of a UTF-16 offset. */
  at(offset) {
    let lo = 0, hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= offset) lo = mid; else hi = mid - 1;
    }
    let from = this.starts[lo];
    if (lo === 0 && this.text.charCodeAt(0) === 0xfeff) from = 1;
    let column = 1;
    for (let i = from; i < offset && i < this.text.length; i++) {
      const c = this.text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff) i++;
      column++;
    }
    return { line: lo + 1, column };
  }
  /** The text of a 1-based line, without its line break. */
  line(n) {
    const start = this.starts[n - 1];
    if (start === undefined) return undefined;
    const end = n < this.starts.length ? this.starts[n] - 1 : this.text.length;
    return this.text.slice(start, end).replace(/\r$/, "");
  }
}

const MAX_DEPTH = 256;
const MAX_NODES = 1_000_000;

function isMergeKey(pair) {
  return isScalar(pair.key) && pair.key.value === "<<" && pair.key.type === "PLAIN";
}

function keyText(key, lines) {
  if (key === null || key === undefined) return "null";
  if (isScalar(key)) {
    const v = key.value;
    if (v === null) return "null";
    if (typeof v === "number" && isScalar(key) && key.source !== undefined) return key.source;
    return String(v);
  }
  const { line, column } = lines.at(key.range ? key.range[0] : 0);
  throw new DecodeError("a mapping key must be a scalar", line, column);
}

/** A number as serde_json prints it: integers as integers, floats with a fraction. */
function numberText(node, lines) {
  const v = node.value;
  const src = node.source ?? String(v);
  if (!Number.isFinite(v)) {
    if (/^[-+]?(\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN)$/.test(src)) return JSON.stringify(src);
    const { line, column } = lines.at(node.range[0]);
    throw new DecodeError(`number out of range: ${src}`, line, column);
  }
  const isInt = /^[-+]?(0|[1-9][0-9]*|0o[0-7]+|0x[0-9a-fA-F]+|[0-9]+)$/.test(src);
  if (isInt) {
    if (Number.isSafeInteger(v)) return String(v);
    if (/^[-+]?[0-9]+$/.test(src)) return BigInt(src).toString();
    return String(v);
  }
  const s = String(v);
  return /[.eE]/.test(s) ? s.replace("e+", "e") : s + ".0";
}

/**
 * The JSON text of a node, with aliases and merge keys expanded (host/decode's value).
 */
function toJsonText(doc, node, lines, budget, depth) {
  if (depth > MAX_DEPTH) {
    const { line, column } = lines.at(node && node.range ? node.range[0] : 0);
    throw new DecodeError(`nesting deeper than ${MAX_DEPTH} levels`, line, column);
  }
  if (++budget.nodes > MAX_NODES) {
    throw new DecodeError(`more than ${MAX_NODES} nodes (aliases included)`, 1, 1);
  }
  if (node === null || node === undefined) return "null";
  if (isAlias(node)) {
    const target = node.resolve(doc);
    if (target === undefined) {
      const { line, column } = lines.at(node.range[0]);
      throw new DecodeError(`unknown alias *${node.source}`, line, column);
    }
    return toJsonText(doc, target, lines, budget, depth + 1);
  }
  if (isScalar(node)) {
    const v = node.value;
    if (v === null || v === undefined) return "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "number") return numberText(node, lines);
    if (typeof v === "bigint") return v.toString();
    return JSON.stringify(String(v));
  }
  if (isSeq(node)) {
    return "[" + node.items.map((i) => toJsonText(doc, i, lines, budget, depth + 1)).join(",") + "]";
  }
  if (isMap(node)) {
    const entries = new Map();
    const merged = [];
    for (const pair of node.items) {
      if (isMergeKey(pair)) {
        merged.push(pair);
        continue;
      }
      const key = keyText(pair.key, lines);
      if (entries.has(key)) {
        const { line, column } = lines.at(pair.key.range[0]);
        throw new DecodeError(`duplicate key \`${key}\``, line, column);
      }
      entries.set(key, toJsonText(doc, pair.value, lines, budget, depth + 1));
    }
    for (const pair of merged) {
      for (const source of mergeSources(doc, pair)) {
        for (const p of source.items) {
          const key = keyText(p.key, lines);
          if (!entries.has(key)) entries.set(key, toJsonText(doc, p.value, lines, budget, depth + 1));
        }
      }
    }
    let out = "{";
    let first = true;
    for (const [k, v] of entries) {
      out += (first ? "" : ",") + JSON.stringify(k) + ":" + v;
      first = false;
    }
    return out + "}";
  }
  return "null";
}

/** The mappings a `<<` key merges, in order (the first wins). */
function mergeSources(doc, pair) {
  const resolve = (n) => (isAlias(n) ? n.resolve(doc) : n);
  const value = resolve(pair.value);
  const list = isSeq(value) ? value.items.map(resolve) : [value];
  return list.filter((m) => isMap(m));
}

function unescapeSegment(s) {
  return s.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** One decoded document: its JSON text and a locator for pointers. */
class Document {
  constructor(doc, index, lines) {
    this.doc = doc;
    this.index = index;
    this.lines = lines;
    this.json = toJsonText(doc, doc.contents, lines, { nodes: 0 }, 0);
    this.value = JSON.parse(this.json);
  }

  /** Offset of the node at `pointer`, else of its nearest existing ancestor (Positions::locate). */
  offset(pointer) {
    let node = this.doc.contents;
    let at = node && node.range ? node.range[0] : 0;
    if (!pointer.startsWith("/")) return at;
    for (const raw of pointer.slice(1).split("/")) {
      if (isAlias(node)) break; // descendants of an alias are located at the alias
      if (isMap(node)) {
        const key = unescapeSegment(raw);
        const pair = node.items.find((p) => !isMergeKey(p) && safeKey(p.key, this.lines) === key);
        if (pair) {
          at = pair.key && pair.key.range ? pair.key.range[0] : at;
          node = pair.value;
          continue;
        }
        // A key copied by `<<` is located at the `<<` key; its descendants with it.
        const merge = node.items.find(
          (p) => isMergeKey(p) && mergeSources(this.doc, p).some((m) =>
            m.items.some((q) => safeKey(q.key, this.lines) === key)),
        );
        if (merge) at = merge.key.range[0];
        break;
      }
      if (isSeq(node)) {
        if (!/^(0|[1-9][0-9]*)$/.test(raw)) break;
        const item = node.items[Number(raw)];
        if (item === undefined) break;
        if (item === null || !item.range) break;
        at = item.range[0];
        node = item;
        continue;
      }
      break;
    }
    return at;
  }

  /** { line, column } of a pointer. */
  locate(pointer) {
    return this.lines.at(this.offset(pointer));
  }

  /** The first line of the document. */
  get line() {
    return this.locate("").line;
  }
}

function safeKey(key, lines) {
  try {
    return keyText(key, lines);
  } catch {
    return undefined;
  }
}

/**
 * Decodes `text` as `syntax` ("yaml" or "json"): the non-empty documents, or a DecodeError
 * with the line and column of the first problem.
 */
export function decode(text, syntax) {
  const lines = new Lines(text);
  if (syntax === "json") {
    try {
      JSON.parse(text.replace(/^\uFEFF/, ""));
    } catch (e) {
      const m = /position (\d+)/.exec(e.message);
      const where = m ? lines.at(Number(m[1]) + (text.charCodeAt(0) === 0xfeff ? 1 : 0)) : { line: 1, column: 1 };
      throw new DecodeError(`invalid JSON: ${e.message}`, where.line, where.column);
    }
  }
  const docs = parseAllDocuments(text, {
    version: "1.2",
    schema: "core",
    merge: true,
    uniqueKeys: true,
    strict: true,
    prettyErrors: false,
    keepSourceTokens: false,
  });
  const list = Array.isArray(docs) ? docs : [];
  const out = [];
  list.forEach((doc, index) => {
    const problem = doc.errors[0];
    if (problem) {
      const { line, column } = lines.at(problem.pos ? problem.pos[0] : 0);
      const what = syntax === "json" ? "JSON" : "YAML";
      throw new DecodeError(`invalid ${what}: ${problem.message.split("\n")[0]}`, line, column);
    }
    // An empty document (`---` with nothing after it) is skipped but counted.
    if (doc.contents === null || doc.contents === undefined) return;
    out.push(new Document(doc, index, lines));
  });
  return { documents: out, lines };
}

export { Lines };
