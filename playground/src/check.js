// One file through the policy component as `computeguard check` does it (scan.rs
// `Scan::document`): each document decoded with positions, a document that is not a
// mapping listed as not checked, the document evaluated with source kind `unknown`, each
// violation's JSON pointer located at its line and column, the configured rule levels
// applied (`off` drops a finding), and a document with no compute resource reported as
// skipped. Not done here (the page says so): inline `computeguard:ignore` comments,
// `ignore:` entries, baselines, unresolved facts, Bicep and Terraform.

import { decode, syntaxOf, UNSUPPORTED, DecodeError } from "./decode.js";

const ORDER = { error: 0, warning: 1, info: 2 };

/** The JSON type of a value, as scan.rs names it. */
function what(value) {
  if (Array.isArray(value)) return "a sequence";
  if (value === null) return "null";
  switch (typeof value) {
    case "string": return "a string";
    case "number": return "a number";
    case "boolean": return "a boolean";
    default: return null;
  }
}

/**
 * Checks `text` (named `name`) with `policy` and `settings` ({ text, asOf, rules }).
 * Returns { syntax, findings, errors, skipped, documents, resources } or
 * { unsupported: message }.
 */
export async function checkText(policy, text, name, settings) {
  const syntax = syntaxOf(name, text);
  if (UNSUPPORTED[syntax]) return { syntax, unsupported: UNSUPPORTED[syntax] };
  const out = { syntax, findings: [], errors: [], skipped: [], documents: 0, resources: 0 };
  let decoded;
  try {
    decoded = decode(text, syntax);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    if (syntax === "yaml" && text.includes("{{")) {
      out.skipped.push({ line: null, reason: `template (Helm/Go) that is not YAML until rendered: ${e.message}; render it first (\`helm template ... | computeguard check -\`)` });
      return out;
    }
    out.errors.push({ line: e.line, column: e.column, message: `invalid ${syntax === "json" ? "JSON" : "YAML"} at line ${e.line}, column ${e.column}: ${e.message.replace(/^invalid (JSON|YAML): /, "")}` });
    return out;
  }
  for (const doc of decoded.documents) {
    out.documents++;
    const start = doc.line;
    const kind = what(doc.value);
    if (kind && !Array.isArray(doc.value)) {
      out.skipped.push({ line: start, reason: `document ${doc.index + 1} is ${kind}, not a mapping: computeguard checks mappings (Kubernetes objects, Azure ML, ARM and Terraform files)` });
      continue;
    }
    const answer = await policy.evaluate({
      document: doc.json,
      sourceKind: "unknown",
      operation: "none",
      settings: settings.text,
      asOf: settings.asOf,
    });
    if (answer.err) {
      // An array that is not an export of Azure resources is not a mapping (scan.rs checks
      // the shape natively before evaluating; the policy answers the same question).
      if (Array.isArray(doc.value) && answer.err.tag === "invalid-document") {
        out.skipped.push({ line: start, reason: `document ${doc.index + 1} is a sequence, not a mapping: computeguard checks mappings (Kubernetes objects, Azure ML, ARM and Terraform files)` });
        continue;
      }
      out.errors.push({ line: start, column: 1, message: `${answer.err.tag}: ${answer.err.val}` });
      continue;
    }
    const response = answer.ok;
    out.resources += response.resources.length;
    for (const v of response.violations) {
      const level = settings.rules[v.rule];
      if (level === "off") continue;
      const severity = level && level !== "default" ? level : v.severity;
      const { line, column } = doc.locate(v.path);
      out.findings.push({
        rule: v.rule,
        severity,
        message: v.message,
        remediation: v.remediation,
        path: v.path,
        resource: v.resource,
        document: doc.index,
        line,
        column,
        source: decoded.lines.line(line),
      });
    }
    if (response.resources.length === 0) {
      const k = doc.value && typeof doc.value.kind === "string" ? ` (kind ${doc.value.kind})` : "";
      out.skipped.push({ line: start, reason: `document ${doc.index + 1}${k}: no compute resources recognised` });
    }
  }
  out.findings.sort((a, b) => a.line - b.line || a.column - b.column ||
    (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0) || ORDER[a.severity] - ORDER[b.severity]);
  return out;
}
