// The playground page: an editor, the settings panel, the example gallery, the results
// panel and the link that reproduces the state (kept in the URL fragment, which browsers
// never send to a server).

import { EditorView, basicSetup } from "codemirror";
import { EditorState, Compartment } from "@codemirror/state";
import { yaml as yamlLanguage } from "@codemirror/lang-yaml";
import { json as jsonLanguage } from "@codemirror/lang-json";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { Policy } from "./policy.js";
import { checkText } from "./check.js";
import { syntaxOf } from "./decode.js";
import gallery from "../gen/gallery.json";

const $ = (id) => document.getElementById(id);
const results = $("results");
const findingsList = $("findings");
const verdict = $("verdict");
const problems = $("problems");

// ---- State in the URL fragment -------------------------------------------------------

const b64url = {
  encode(bytes) {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
  decode(text) {
    const s = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    return Uint8Array.from(s, (c) => c.charCodeAt(0));
  },
};

async function pipe(bytes, stream) {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

/** `#s=`: the state as JSON, deflate-raw compressed, base64url. */
async function encodeState(state) {
  const bytes = new TextEncoder().encode(JSON.stringify(state));
  return "s=" + b64url.encode(await pipe(bytes, new CompressionStream("deflate-raw")));
}

/** The state a fragment holds: `#s=...` or `#doc=BASE64URL[&name=FILE]`; null for none. */
async function decodeFragment(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  if (params.has("s")) {
    const bytes = await pipe(b64url.decode(params.get("s")), new DecompressionStream("deflate-raw"));
    return JSON.parse(new TextDecoder().decode(bytes));
  }
  if (params.has("doc")) {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(b64url.decode(params.get("doc")));
    return { doc: text, name: params.get("name") || "" };
  }
  return null;
}

// ---- Settings --------------------------------------------------------------------------

const today = () => new Date().toISOString().slice(0, 10);
const DEFAULTS = () => ({ allowed: [], geographies: [], asOf: today(), rules: {} });

function readSettings() {
  // An empty field is no list; an empty item ("eastus, ") is kept, for the policy to refuse.
  const list = (id) => ($(id).value.trim() === "" ? [] : $(id).value.split(",").map((s) => s.trim()));
  const rules = {};
  for (const sel of document.querySelectorAll("select[data-rule]")) {
    if (sel.value !== "default") rules[sel.dataset.rule] = sel.value;
  }
  return { allowed: list("regions"), geographies: list("geographies"), asOf: $("as-of").value.trim(), rules };
}

function writeSettings(s) {
  const d = { ...DEFAULTS(), ...(s || {}) };
  $("regions").value = d.allowed.join(", ");
  $("geographies").value = d.geographies.join(", ");
  $("as-of").value = d.asOf;
  for (const sel of document.querySelectorAll("select[data-rule]")) {
    sel.value = d.rules[sel.dataset.rule] || "default";
  }
}

/** The policy's settings JSON, as computeguard.yaml's `regions:` gives it. */
function settingsText(s) {
  const regions = {};
  if (s.allowed.length) regions.allowed = s.allowed;
  if (s.geographies.length) regions.allowedGeographies = s.geographies;
  return JSON.stringify(Object.keys(regions).length ? { regions } : {});
}

/** asOf as the CLI reads it: a real calendar date, YYYY-MM-DD. */
function dateProblem(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (m) {
    const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
    if (d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3]) return null;
  }
  return `asOf \`${text}\` is not a date: expected YYYY-MM-DD (e.g. ${today()})`;
}

// ---- Editor ----------------------------------------------------------------------------

const language = new Compartment();
let docName = "";
const view = new EditorView({
  parent: $("editor"),
  state: EditorState.create({
    doc: "",
    extensions: [
      basicSetup,
      lintGutter(),
      language.of(yamlLanguage()),
      EditorView.updateListener.of((u) => { if (u.docChanged) schedule(); }),
      EditorView.domEventHandlers({
        drop(event) {
          const file = event.dataTransfer && event.dataTransfer.files[0];
          if (!file) return false;
          event.preventDefault();
          file.text().then((text) => load({ doc: text, name: file.name }));
          return true;
        },
      }),
    ],
  }),
});

function setDocument(text, name) {
  docName = name || "";
  $("file-name").value = docName;
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  setLanguage();
}

function setLanguage() {
  const syntax = syntaxOf(docName, view.state.doc.toString());
  view.dispatch({ effects: language.reconfigure(syntax === "json" ? jsonLanguage() : yamlLanguage()) });
}

function load(state) {
  writeSettings(state.settings);
  setDocument(state.doc || "", state.name || "");
  schedule(0);
}

// ---- Evaluation ------------------------------------------------------------------------

let policy = null;
let timer = null;
let generation = 0;

function schedule(delay = 250) {
  clearTimeout(timer);
  results.dataset.state = "pending";
  timer = setTimeout(run, delay);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("data-") || k === "class" || k === "title") e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function show(kind, title, lines) {
  verdict.className = kind;
  verdict.textContent = title;
  problems.replaceChildren(...lines.map((l) => el("li", {}, l)));
}

function lineRange(line, column) {
  const doc = view.state.doc;
  if (line < 1 || line > doc.lines) return { from: 0, to: 0 };
  const l = doc.line(line);
  let from = l.from;
  // The column counts characters; CodeMirror counts UTF-16 units.
  for (let c = 1, i = 0; c < column && from < l.to; c++, i++) {
    const code = doc.sliceString(from, from + 1).charCodeAt(0);
    from += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
  }
  return { from, to: Math.max(l.to, from) };
}

async function run() {
  const mine = ++generation;
  if (!policy) return;
  results.dataset.state = "running";
  const text = view.state.doc.toString();
  const s = readSettings();
  const fragment = await encodeState({ doc: text, name: docName, settings: s });
  if (mine !== generation) return;
  history.replaceState(null, "", "#" + fragment);
  $("share").value = location.href;
  const finish = (state) => {
    if (!results.dataset.firstVerdictMs) results.dataset.firstVerdictMs = String(Math.round(performance.now()));
    results.dataset.state = "done";
    results.dataset.verdict = state;
  };
  const bad = dateProblem(s.asOf);
  const stext = settingsText(s);
  const refused = bad ? null : await policy.validateSettings(stext);
  if (mine !== generation) return;
  $("settings-error").textContent = bad || (refused ? `The policy refuses these settings: ${refused}` : "");
  $("settings").classList.toggle("invalid", Boolean(bad || refused));
  findingsList.replaceChildren();
  view.dispatch(setDiagnostics(view.state, []));
  if (bad || refused) {
    show("invalid", "Invalid settings: nothing was evaluated", [bad || refused]);
    return finish("invalid-settings");
  }
  if (text.trim() === "") {
    show("empty", "Paste or drop a document, or pick an example", []);
    return finish("empty");
  }
  let out;
  try {
    out = await checkText(policy, text, docName, { text: stext, asOf: s.asOf, rules: s.rules });
  } catch (e) {
    if (mine !== generation) return;
    show("invalid", "The policy failed", [String(e && e.message ? e.message : e)]);
    return finish("failed");
  }
  if (mine !== generation) return;
  if (out.unsupported) {
    show("invalid", "Not supported in the browser", [out.unsupported]);
    return finish("unsupported");
  }
  const diagnostics = [];
  for (const f of out.findings) {
    const { from, to } = lineRange(f.line, f.column);
    diagnostics.push({ from, to, severity: f.severity === "info" ? "info" : f.severity, source: f.rule, message: `${f.message}\nfix: ${f.remediation}` });
    const item = el("li", { class: `finding ${f.severity}`, "data-rule": f.rule, "data-severity": f.severity, "data-line": String(f.line), "data-column": String(f.column), "data-path": f.path },
      el("div", { class: "head" }, el("span", { class: `badge ${f.severity}` }, f.severity), " ", el("code", {}, f.rule), " ",
        el("a", { href: "#", class: "loc", title: `JSON pointer ${f.path || "(the document)"}` }, `line ${f.line}:${f.column}`)),
      el("p", { class: "msg" }, f.message),
      f.source !== undefined ? el("pre", { class: "src" }, el("span", { class: "ln" }, String(f.line)), f.source) : null,
      el("p", { class: "fix" }, "fix: " + f.remediation));
    item.querySelector("a.loc").addEventListener("click", (ev) => {
      ev.preventDefault();
      view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
      view.focus();
    });
    findingsList.append(item);
  }
  for (const e of out.errors) {
    const { from, to } = lineRange(e.line, e.column);
    diagnostics.push({ from, to, severity: "error", source: "input", message: e.message });
  }
  view.dispatch(setDiagnostics(view.state, diagnostics));
  const count = (sev) => out.findings.filter((f) => f.severity === sev).length;
  const [errors, warnings, infos] = [count("error"), count("warning"), count("info")];
  const notes = [];
  for (const e of out.errors) notes.push(`line ${e.line}: ${e.message}`);
  for (const k of out.skipped) notes.push(`${k.line ? `line ${k.line}: ` : ""}${k.reason}`);
  const summary = `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}, ${infos} info${infos === 1 ? "" : "s"} (${out.documents} document${out.documents === 1 ? "" : "s"}, ${out.resources} resource${out.resources === 1 ? "" : "s"}; ${out.syntax.toUpperCase()}; as of ${s.asOf})`;
  if (out.errors.length) {
    show("invalid", `Invalid input: ${out.errors[0].message}`, notes);
    return finish("invalid-input");
  }
  show(errors ? "fail" : warnings ? "warn" : "pass", summary, notes);
  finish(errors ? "fail" : warnings ? "warn" : out.resources ? "pass" : "no-resources");
}

// ---- Page ------------------------------------------------------------------------------

function buildGallery() {
  const select = $("gallery");
  const groups = new Map();
  gallery.forEach((g, i) => {
    if (!groups.has(g.group)) {
      groups.set(g.group, el("optgroup", { label: g.group }));
      select.append(groups.get(g.group));
    }
    groups.get(g.group).append(el("option", { value: String(i) }, g.name));
  });
  select.addEventListener("change", () => {
    const g = gallery[Number(select.value)];
    if (g) load({ doc: g.text, name: g.name, settings: g.settings });
  });
}

function buildRules(info) {
  const box = $("rules");
  for (const r of [...info.rules].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const sel = el("select", { "data-rule": r.id, title: r.description },
      ...["default", "error", "warning", "info", "off"].map((v) =>
        el("option", { value: v }, v === "default" ? `default (${r.severity})` : v)));
    sel.addEventListener("change", () => schedule(0));
    box.append(el("label", { class: "rule" }, el("code", {}, r.id), sel));
  }
}

async function main() {
  results.dataset.state = "loading";
  for (const id of ["regions", "geographies", "as-of"]) $(id).addEventListener("input", () => schedule());
  $("file-name").addEventListener("change", () => { docName = $("file-name").value.trim(); setLanguage(); schedule(0); });
  $("open").addEventListener("change", async () => {
    const file = $("open").files[0];
    if (file) load({ doc: await file.text(), name: file.name, settings: readSettings() });
  });
  $("copy").addEventListener("click", async () => {
    $("share").select();
    try { await navigator.clipboard.writeText($("share").value); } catch { document.execCommand("copy"); }
  });
  buildGallery();
  try {
    policy = await Policy.load(document.baseURI);
  } catch (e) {
    show("invalid", "The policy component could not be loaded", [String(e && e.message ? e.message : e)]);
    results.dataset.state = "done";
    results.dataset.verdict = "failed";
    return;
  }
  buildRules(policy.info);
  $("policy-name").textContent = `${policy.info.name} ${policy.info.version} (${policy.info.rules.length} rules), loaded in ${Math.round(policy.loadMs)} ms`;
  let state = null;
  try {
    state = await decodeFragment(location.hash);
  } catch (e) {
    show("invalid", "The link's state cannot be read", [String(e && e.message ? e.message : e)]);
  }
  if (!state) {
    const first = gallery[0];
    state = { doc: first.text, name: first.name, settings: first.settings };
  }
  load(state);
  window.addEventListener("hashchange", async () => {
    const next = await decodeFragment(location.hash).catch(() => null);
    if (next && next.doc !== view.state.doc.toString()) load(next);
  });
}

main();
