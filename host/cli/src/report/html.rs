//! `--format html`: the report as one self-contained page (inline CSS and script, no
//! external asset, a Content-Security-Policy that forbids loading any): the summary,
//! charts of the findings by rule and severity (and by subscription and resource group for
//! Azure exports, by namespace for cluster dumps), a sortable, filterable table of the
//! findings with their source excerpt, what could not be checked, and the skipped files.
//!
//! Every text from a file, a policy or a file name is escaped for HTML (and cleaned of
//! control characters like the text format); the script reads the table's cells and data
//! attributes, never parses markup from them. The rows are rendered here, so the page is
//! readable without the script too; the script sorts, filters and pages them (a page of
//! [`PAGE`] rows at a time keeps a 5,000-finding report quick to lay out).

use super::escape::{clean, clean_source};
use super::text::excerpt;
use super::{Finding, RenderOptions, Report, Severity, SkipKind, SuppressionKind};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

/// Rows shown at a time; "Show more" adds as many.
const PAGE: usize = 250;
/// Bars shown per chart; the rest are counted under the chart.
const BARS: usize = 25;

/// Escapes text for HTML content and double-quoted attribute values, after cleaning
/// control characters as the text format does.
fn esc(s: &str) -> String {
    escape_markup(&clean(s))
}

fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Counts per severity (error, warning, info) of one bar.
type Split = [usize; 3];

fn rank(s: Severity) -> usize {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    }
}

/// The groups a finding belongs to, for the charts and the filters.
struct Groups {
    namespace: Option<String>,
    subscription: Option<String>,
    resource_group: Option<String>,
}

fn groups(f: &Finding) -> Groups {
    let namespace = f.object.as_ref().and_then(|o| o.namespace.clone());
    let (mut subscription, mut resource_group) = (None, None);
    if let Some(id) = f.azure_id() {
        let (sub, rg) = computeguard_policy_core::read::export::scope_of(id);
        let sub = sub.unwrap_or("(none)").to_ascii_lowercase();
        resource_group = rg.map(|rg| format!("{sub}/{}", rg.to_ascii_lowercase()));
        subscription = Some(sub);
    }
    Groups {
        namespace,
        subscription,
        resource_group,
    }
}

/// One chart: a stacked bar per key (errors, warnings, infos), the largest first; a click on
/// a bar filters the table by `filter` (the id of a `<select>`).
fn chart(out: &mut String, title: &str, filter: &str, counts: &BTreeMap<String, Split>) {
    if counts.is_empty() {
        return;
    }
    let mut bars: Vec<(&String, &Split)> = counts.iter().collect();
    bars.sort_by(|a, b| {
        let total = |s: &Split| s.iter().sum::<usize>();
        total(b.1).cmp(&total(a.1)).then(a.0.cmp(b.0))
    });
    let max = bars
        .first()
        .map(|b| b.1.iter().sum::<usize>())
        .unwrap_or(1)
        .max(1);
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"{filter}\"><figcaption>{}</figcaption><ol>",
        escape_markup(title)
    );
    for (key, split) in bars.iter().take(BARS) {
        let total: usize = split.iter().sum();
        let key = esc(key);
        let _ = write!(
            out,
            "<li><button type=\"button\" class=\"bar\" data-filter=\"{filter}\" data-value=\"{key}\" title=\"{key}: {} errors, {} warnings, {} infos\"><span class=\"k\">{key}</span><span class=\"track\">",
            split[0], split[1], split[2]
        );
        for (i, class) in ["e", "w", "i"].iter().enumerate() {
            if split[i] > 0 {
                let width = split[i] as f64 * 100.0 / max as f64;
                let _ = write!(
                    out,
                    "<span class=\"seg {class}\" style=\"width:{width:.2}%\"></span>"
                );
            }
        }
        let _ = write!(out, "</span><span class=\"n\">{total}</span></button></li>");
    }
    out.push_str("</ol>");
    if bars.len() > BARS {
        let _ = write!(
            out,
            "<p class=\"note\">{} more not drawn; the filter above the table lists every one.</p>",
            bars.len() - BARS
        );
    }
    out.push_str("</figure>");
}

fn select(out: &mut String, id: &str, label: &str, values: &BTreeMap<String, Split>) {
    if values.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<label>{label} <select id=\"{id}\"><option value=\"\">all</option>"
    );
    for (v, split) in values {
        let v = esc(v);
        let _ = write!(
            out,
            "<option value=\"{v}\">{v} ({})</option>",
            split.iter().sum::<usize>()
        );
    }
    out.push_str("</select></label>");
}

fn summary(out: &mut String, report: &Report) {
    let s = &report.summary;
    let verdict = if s.errors > 0 || s.failed_files > 0 {
        "fail"
    } else if s.warnings > 0
        || s.unchecked > 0
        || s.unresolved > 0
        || s.files == 0
        || !report.not_evaluated.is_empty()
    {
        "warn"
    } else {
        "pass"
    };
    let _ = write!(out, "<section id=\"summary\" class=\"{verdict}\"><dl>");
    let mut card = |class: &str, n: usize, label: &str| {
        let _ = write!(
            out,
            "<div class=\"card {class}\"><dt>{label}</dt><dd>{n}</dd></div>"
        );
    };
    card("e", s.errors, "errors");
    card("w", s.warnings, "warnings");
    card("i", s.infos, "infos");
    card("", s.files, "files");
    card("", s.documents, "documents");
    card("", s.resources, "resources");
    if s.suppressed > 0 {
        card("", s.suppressed, "suppressed");
    }
    if s.baselined > 0 {
        card("", s.baselined, "in the baseline");
    }
    if s.failed_files > 0 {
        card("e", s.failed_files, "files not checked (errors)");
    }
    if s.unchecked > 0 {
        card("w", s.unchecked, "not checked");
    }
    if s.unresolved > 0 {
        card("w", s.unresolved, "unresolved facts");
    }
    if !report.not_evaluated.is_empty() {
        card("w", report.not_evaluated.len(), "rules not evaluated");
    }
    card("", report.skipped_whole_files(), "other files skipped");
    out.push_str("</dl><p>");
    let _ = write!(out, "As of <b>{}</b>; ", esc(&s.as_of));
    match &s.config_file {
        Some(file) => {
            let _ = write!(out, "config <code>{}</code>.", esc(file));
        }
        None => out.push_str("no computeguard.yaml found, defaults apply."),
    }
    if s.files == 0 {
        out.push_str(" Nothing was checked: the paths hold no file computeguard reads (Kubernetes, Azure ML, ARM, Bicep or Terraform).");
    }
    out.push_str("</p></section>");
}

fn finding_row(out: &mut String, f: &Finding, g: &Groups) {
    let sev = f.severity.as_str();
    let _ = write!(
        out,
        "<tr class=\"f {sev}{}\" data-sev=\"{}\" data-rule=\"{}\" data-file=\"{}\" data-line=\"{}\" data-col=\"{}\"",
        if f.suppressed { " sup" } else { "" },
        rank(f.severity),
        esc(&f.rule),
        esc(&f.file),
        f.line,
        f.column.max(1)
    );
    for (attr, value) in [
        ("ns", &g.namespace),
        ("sub", &g.subscription),
        ("rg", &g.resource_group),
    ] {
        if let Some(v) = value {
            let _ = write!(out, " data-{attr}=\"{}\"", esc(v));
        }
    }
    let _ = write!(
        out,
        "><td class=\"sev\"><span class=\"badge {sev}\">{sev}</span>{}</td><td class=\"rule\"><code>{}</code></td><td class=\"loc\"><code>{}:{}:{}</code></td><td class=\"res\">{}",
        if f.suppressed {
            "<br><span class=\"badge sup\">suppressed</span>"
        } else {
            ""
        },
        esc(&f.rule),
        esc(&f.file),
        f.line,
        f.column.max(1),
        esc(&f.resource.kind),
    );
    if !f.resource.name.is_empty() {
        let _ = write!(out, " <code>{}</code>", esc(&f.resource.name));
    }
    if let Some(o) = &f.object
        && let Some(ns) = &o.namespace
    {
        let _ = write!(out, "<br><small>namespace {}</small>", esc(ns));
    }
    let _ = write!(out, "</td><td class=\"msg\"><p>{}</p>", esc(&f.message));
    if let Some(raw) = &f.source_line {
        let col = f.column.max(1) as usize - 1;
        let (head, tail, cut) = excerpt(raw, col);
        let _ = write!(
            out,
            "<pre class=\"src\"><span class=\"ln\">{}</span>{}<mark>{}</mark>{}</pre>",
            f.line,
            escape_markup(&clean_source(&head)),
            escape_markup(&clean_source(&tail)),
            if cut { "…" } else { "" }
        );
    }
    let _ = write!(out, "<p class=\"fix\">fix: {}</p>", esc(&f.remediation));
    if let Some(s) = &f.suppression {
        let how = match s.kind {
            SuppressionKind::Inline => "by an inline comment",
            SuppressionKind::Config => "by the configuration",
            SuppressionKind::Baseline => "by the baseline",
        };
        let _ = write!(
            out,
            "<p class=\"fix\">suppressed {how}: {}</p>",
            esc(&s.reason)
        );
    }
    out.push_str("</td></tr>\n");
}

fn skip_kind(k: SkipKind) -> &'static str {
    match k {
        SkipKind::Unchecked => "not checked",
        SkipKind::NoResources => "no compute resources",
        SkipKind::Variables => "variable or parameter values",
        SkipKind::Module => "module checked through its callers",
        SkipKind::OtherFile => "not an input",
    }
}

/// What the change costs (`azure.prices`, docs/cost.md): the totals, the difference with
/// the base (`--compare-to`), one row per priced resource and every unknown price named.
fn cost(out: &mut String, report: &Report) {
    use computeguard_cost::{money, signed};
    let Some(c) = &report.cost else {
        return;
    };
    let cur = c.currency.as_str();
    let amount = |x: Option<f64>| x.map_or_else(|| "unknown".to_string(), |v| money(v, cur));
    let _ = write!(
        out,
        "<section id=\"cost\"><h2>Cost</h2><p><strong>{}/month idle, {}/month at full scale</strong> ({} priced resources, {} retail prices, {} h/month{})</p>",
        esc(&amount(c.total.known_floor())),
        esc(&amount(c.total.known_ceiling())),
        c.total.priced(),
        esc(cur),
        c.hours_per_month,
        if c.total.unknown > 0 {
            format!(
                "; not in the sums: {} with an unknown price or count",
                c.total.unknown
            )
        } else {
            String::new()
        }
    );
    if let Some(d) = &report.cost_diff {
        let _ = write!(
            out,
            "<p>Against <code>{}</code>: <strong>{}/month idle, {}/month at full scale</strong></p>",
            esc(&d.base),
            esc(&signed(d.floor_delta, cur)),
            esc(&signed(d.ceiling_delta, cur))
        );
    }
    out.push_str("<table><thead><tr><th>resource</th><th>location</th><th>size</th><th>meter</th><th>per hour</th><th>nodes</th><th>idle</th><th>at full scale</th></tr></thead><tbody>");
    for r in &c.resources {
        let nodes = |n: Option<i64>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{}:{}</code></td><td>{} {}</td><td>{} {}</td><td>{}</td><td>{}-{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.resource),
            esc(&r.file),
            r.line,
            esc(r.sku.as_deref().unwrap_or("?")),
            esc(r.region.as_deref().unwrap_or("?")),
            r.os.as_str(),
            r.priority.as_str(),
            esc(&r.hourly.map_or_else(
                || "unknown".to_string(),
                |h| crate::cost::format_rate(h, cur)
            )),
            nodes(r.floor.nodes),
            nodes(r.ceiling.nodes),
            esc(&amount(r.floor_monthly)),
            esc(&amount(r.ceiling_monthly))
        );
    }
    out.push_str("</tbody></table>");
    if !c.unknown.is_empty() {
        out.push_str("<ul>");
        for u in &c.unknown {
            let _ = write!(
                out,
                "<li>cost unknown: <code>{}:{}</code> {}: {}</li>",
                esc(&u.file),
                u.line,
                esc(&u.resource),
                esc(&u.reason)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

fn blind_spots(out: &mut String, report: &Report) {
    if !report.errors.is_empty() {
        let _ = write!(
            out,
            "<section id=\"errors\"><h2>Could not be checked ({})</h2><table><thead><tr><th>file</th><th>error</th></tr></thead><tbody>",
            report.errors.len()
        );
        for e in &report.errors {
            let place = if e.line > 0 {
                format!("{}:{}", e.file, e.line)
            } else {
                e.file.clone()
            };
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(&place),
                esc(&e.message)
            );
        }
        out.push_str("</tbody></table></section>");
    }
    let unchecked: Vec<_> = report.unchecked().collect();
    if !unchecked.is_empty() || !report.unresolved.is_empty() || !report.not_evaluated.is_empty() {
        let _ = write!(
            out,
            "<section id=\"blind\"><h2>Blind spots ({})</h2><p>What no rule judged: input computeguard could not read, facts known only at deploy time, and rules that had no facts of the subscription to judge with.</p><table><thead><tr><th>where</th><th>what</th></tr></thead><tbody>",
            unchecked.len() + report.unresolved.len() + report.not_evaluated.len()
        );
        for n in &report.not_evaluated {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>not evaluated: {}</td></tr>",
                esc(&n.rule),
                esc(&n.message)
            );
        }
        for s in unchecked {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>not checked: {}</td></tr>",
                esc(&s.place()),
                esc(&s.reason)
            );
        }
        for u in &report.unresolved {
            let _ = write!(
                out,
                "<tr><td><code>{}:{}</code></td><td>unresolved: {}</td></tr>",
                esc(&u.file),
                u.line,
                esc(&u.message())
            );
        }
        out.push_str("</tbody></table></section>");
    }
    let others: Vec<(String, &str, &str)> = report
        .skipped
        .iter()
        .filter(|s| s.kind != SkipKind::Unchecked)
        .map(|s| (s.place(), skip_kind(s.kind), s.reason.as_str()))
        .chain(
            report
                .skipped_documents
                .iter()
                .map(|(place, why)| (place.clone(), "document", why.as_str())),
        )
        .collect();
    let _ = write!(
        out,
        "<section id=\"skipped\"><h2>Skipped ({})</h2>",
        others.len()
    );
    if others.is_empty() {
        out.push_str("<p>Nothing was skipped.</p>");
    } else {
        out.push_str("<details><summary>Files and documents that hold nothing to judge, and why</summary><table><thead><tr><th>where</th><th>kind</th><th>why</th></tr></thead><tbody>");
        for (place, kind, why) in others {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{kind}</td><td>{}</td></tr>",
                esc(&place),
                esc(why)
            );
        }
        out.push_str("</tbody></table></details>");
    }
    out.push_str("</section>");
}

/// Writes the page.
pub(super) fn render(
    report: &Report,
    opts: &RenderOptions,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let findings = report.visible(opts.show_suppressed);
    let grouped: Vec<Groups> = findings.iter().map(|f| groups(f)).collect();
    let mut by_rule: BTreeMap<String, Split> = BTreeMap::new();
    let mut by_ns: BTreeMap<String, Split> = BTreeMap::new();
    let mut by_sub: BTreeMap<String, Split> = BTreeMap::new();
    let mut by_rg: BTreeMap<String, Split> = BTreeMap::new();
    for (f, g) in findings.iter().zip(&grouped) {
        let r = rank(f.severity);
        by_rule.entry(f.rule.clone()).or_default()[r] += 1;
        for (map, key) in [
            (&mut by_ns, &g.namespace),
            (&mut by_sub, &g.subscription),
            (&mut by_rg, &g.resource_group),
        ] {
            if let Some(k) = key {
                map.entry(k.clone()).or_default()[r] += 1;
            }
        }
    }

    let mut body = String::with_capacity(4096 + findings.len() * 900);
    body.push_str("<header><h1>computeguard report</h1></header><main>");
    summary(&mut body, report);
    cost(&mut body, report);
    if !findings.is_empty() {
        body.push_str("<section id=\"charts\"><h2>Where the findings are</h2><div class=\"legend\"><span class=\"seg e\"></span>error <span class=\"seg w\"></span>warning <span class=\"seg i\"></span>info</div>");
        chart(&mut body, "By rule and severity", "f-rule", &by_rule);
        chart(&mut body, "By namespace", "f-ns", &by_ns);
        chart(&mut body, "By subscription", "f-sub", &by_sub);
        chart(&mut body, "By resource group", "f-rg", &by_rg);
        body.push_str("</section>");
    }
    let _ = write!(
        body,
        "<section id=\"findings\"><h2>Findings ({})</h2>",
        findings.len()
    );
    if findings.is_empty() {
        body.push_str("<p>No findings.</p>");
    } else {
        body.push_str("<form id=\"filters\" class=\"filters\" onsubmit=\"return false\"><label>Search <input id=\"f-q\" type=\"search\" placeholder=\"text in any column\"></label><label>Severity <select id=\"f-sev\"><option value=\"\">all</option><option value=\"0\">error</option><option value=\"1\">warning</option><option value=\"2\">info</option></select></label>");
        select(&mut body, "f-rule", "Rule", &by_rule);
        select(&mut body, "f-ns", "Namespace", &by_ns);
        select(&mut body, "f-sub", "Subscription", &by_sub);
        select(&mut body, "f-rg", "Resource group", &by_rg);
        body.push_str("<button type=\"button\" id=\"f-reset\">Clear</button></form><p id=\"count\" aria-live=\"polite\"></p>");
        body.push_str("<table id=\"table\"><thead><tr><th data-sort=\"sev\" aria-sort=\"ascending\"><button type=\"button\">severity</button></th><th data-sort=\"rule\"><button type=\"button\">rule</button></th><th data-sort=\"loc\"><button type=\"button\">location</button></th><th data-sort=\"res\"><button type=\"button\">resource</button></th><th data-sort=\"msg\"><button type=\"button\">message</button></th></tr></thead><tbody>\n");
        for (f, g) in findings.iter().zip(&grouped) {
            finding_row(&mut body, f, g);
        }
        body.push_str("</tbody></table><p><button type=\"button\" id=\"more\" hidden>Show more</button> <button type=\"button\" id=\"all\" hidden>Show all</button></p>");
    }
    body.push_str("</section>");
    blind_spots(&mut body, report);
    body.push_str("</main>");

    let script = SCRIPT.replace("__PAGE__", &PAGE.to_string());
    let hash = base64(&Sha256::digest(script.as_bytes()));
    let s = &report.summary;
    let title = format!(
        "computeguard: {}, {}, {}",
        plural(s.errors, "error", "errors"),
        plural(s.warnings, "warning", "warnings"),
        plural(s.infos, "info", "infos")
    );
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'\">\
<meta name=\"generator\" content=\"computeguard {}\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}\n<script>{script}</script></body></html>\n",
        env!("CARGO_PKG_VERSION"),
        escape_markup(&title)
    )
}

const STYLE: &str = r#"
:root{--e:#c62828;--w:#b26a00;--i:#1565c0;--bg:#fff;--fg:#1b1f23;--mute:#5f6b76;--line:#d8dee4;--code:#f3f5f7}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--fg:#e6edf3;--mute:#9aa7b2;--line:#30363d;--code:#161b22;--e:#ff6b6b;--w:#f0b429;--i:#58a6ff}}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg)}
header{padding:12px 24px;border-bottom:1px solid var(--line)}h1{font-size:20px;margin:0}h2{font-size:17px;margin:24px 0 8px}
main{padding:0 24px 48px;max-width:1600px}code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
dl{display:flex;flex-wrap:wrap;gap:8px;margin:16px 0 8px}.card{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:96px}
.card dt{color:var(--mute);font-size:12px}.card dd{margin:0;font-size:22px;font-weight:600}.card.e dd{color:var(--e)}.card.w dd{color:var(--w)}.card.i dd{color:var(--i)}
#summary.fail{border-left:4px solid var(--e);padding-left:12px}#summary.warn{border-left:4px solid var(--w);padding-left:12px}#summary.pass{border-left:4px solid #2e7d32;padding-left:12px}
#charts{display:flex;flex-wrap:wrap;gap:16px 32px;align-items:flex-start}#charts h2,.legend{flex-basis:100%;margin-bottom:0}
.chart{margin:0;flex:1 1 460px;min-width:320px}.chart figcaption{font-weight:600;margin-bottom:4px}.chart ol{list-style:none;margin:0;padding:0}
.bar{display:grid;grid-template-columns:minmax(120px,38%) 1fr 48px;gap:8px;align-items:center;width:100%;padding:2px 4px;border:0;background:none;color:inherit;font:inherit;text-align:left;cursor:pointer;border-radius:4px}
.bar:hover,.bar:focus{background:var(--code)}.bar .k{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
.track{display:flex;height:14px}.seg{display:inline-block;height:14px}.legend .seg{width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}
.seg.e{background:var(--e)}.seg.w{background:var(--w)}.seg.i{background:var(--i)}.bar .n{text-align:right;font-variant-numeric:tabular-nums}
.note{color:var(--mute);font-size:12px}.filters{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:end;margin:8px 0}
.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--mute)}.filters input,.filters select{font:inherit;min-width:160px;max-width:360px;padding:3px 6px;background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);padding:6px 8px;vertical-align:top;text-align:left}
th button{font:inherit;font-weight:600;background:none;border:0;color:inherit;cursor:pointer;padding:0}th[aria-sort=ascending] button::after{content:" \25B2"}th[aria-sort=descending] button::after{content:" \25BC"}
td.msg p{margin:0 0 4px}td.loc code,td.res code{word-break:break-all}.fix{color:var(--mute)}
pre.src{background:var(--code);padding:4px 8px;margin:4px 0;white-space:pre-wrap;word-break:break-all;border-radius:4px}pre.src .ln{color:var(--mute);margin-right:12px;user-select:none}
pre.src mark{background:rgba(240,180,41,.35);color:inherit}.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff}
.badge.error{background:var(--e)}.badge.warning{background:var(--w)}.badge.info{background:var(--i)}.badge.sup{background:var(--mute)}tr.sup{opacity:.65}
details summary{cursor:pointer;color:var(--mute)}
"#;

const SCRIPT: &str = r#"
"use strict";
(function () {
  var PAGE = __PAGE__;
  var table = document.getElementById("table");
  if (!table) return;
  var tbody = table.tBodies[0];
  var rows = Array.prototype.map.call(tbody.rows, function (tr, i) {
    var d = tr.dataset;
    return { tr: tr, i: i, sev: +d.sev, rule: d.rule, file: d.file, line: +d.line, col: +d.col,
      ns: d.ns || "", sub: d.sub || "", rg: d.rg || "",
      res: tr.cells[3].textContent, msg: tr.cells[4].textContent,
      text: tr.textContent.toLowerCase() };
  });
  var $ = function (id) { return document.getElementById(id); };
  var filters = { sev: $("f-sev"), rule: $("f-rule"), ns: $("f-ns"), sub: $("f-sub"), rg: $("f-rg") };
  var q = $("f-q"), count = $("count"), more = $("more"), all = $("all");
  var limit = PAGE, sortKey = "sev", sortDir = 1, order = rows.slice();
  function cmp(a, b) {
    var r;
    switch (sortKey) {
      case "sev": r = a.sev - b.sev; break;
      case "rule": r = a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0; break;
      case "loc": r = a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line || a.col - b.col; break;
      case "res": r = a.res.localeCompare(b.res); break;
      case "msg": r = a.msg.localeCompare(b.msg); break;
    }
    return sortDir * r || a.i - b.i;
  }
  function sort() {
    order = rows.slice().sort(cmp);
    var frag = document.createDocumentFragment();
    order.forEach(function (r) { frag.appendChild(r.tr); });
    tbody.appendChild(frag);
  }
  function apply() {
    var needle = q.value.trim().toLowerCase(), want = {};
    Object.keys(filters).forEach(function (k) { if (filters[k] && filters[k].value !== "") want[k] = filters[k].value; });
    var matched = 0;
    order.forEach(function (r) {
      var ok = (!needle || r.text.indexOf(needle) >= 0);
      for (var k in want) { if (ok && String(r[k]) !== want[k]) ok = false; }
      if (ok) matched++;
      r.tr.hidden = !ok || matched > limit;
    });
    var shown = Math.min(matched, limit);
    count.textContent = "Showing " + shown + " of " + matched + " matching findings (" + rows.length + " in the report)";
    count.dataset.shown = shown;
    count.dataset.matched = matched;
    more.hidden = all.hidden = matched <= limit;
  }
  function reset() { limit = PAGE; apply(); }
  q.addEventListener("input", reset);
  Object.keys(filters).forEach(function (k) { if (filters[k]) filters[k].addEventListener("change", reset); });
  $("f-reset").addEventListener("click", function () {
    q.value = "";
    Object.keys(filters).forEach(function (k) { if (filters[k]) filters[k].value = ""; });
    reset();
  });
  more.addEventListener("click", function () { limit += PAGE; apply(); });
  all.addEventListener("click", function () { limit = Infinity; apply(); });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.dataset.sort;
      sortDir = key === sortKey ? -sortDir : 1;
      sortKey = key;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      sort();
      apply();
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("button.bar"), function (b) {
    b.addEventListener("click", function () {
      var sel = $(b.dataset.filter);
      if (!sel) return;
      sel.value = sel.value === b.dataset.value ? "" : b.dataset.value;
      reset();
      $("findings").scrollIntoView();
    });
  });
  sort();
  apply();
  document.body.dataset.ready = "true";
})();
"#;

#[cfg(test)]
mod tests {
    use super::{base64, esc};

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\"\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;\\u{1b}[31m"
        );
    }

    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }
}
