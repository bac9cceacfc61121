//! `--format markdown`: the body of a pull-request comment. The verdict first, then what
//! the change costs (and what it adds to its base with `--compare-to` or `--baseline`), the findings, and
//! the blind spots (what was not checked, not resolved, not evaluated, not priced), so that
//! a reviewer sees in one comment what was judged and what was not.

use super::{RenderOptions, Report, Severity, clean};
use computeguard_cost::{BaseKind, Estimate, money, signed};
use std::io::Write;

/// Text from files or policies made safe for a Markdown table cell or list item: no
/// terminal or CI control text, no line breaks, no HTML, no cell separators.
fn cell(text: &str) -> String {
    clean(text)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

/// `` `text` `` with backticks in the text doubled as Markdown allows.
fn code(text: &str) -> String {
    let t = cell(text);
    if t.contains('`') {
        format!("`` {t} ``")
    } else {
        format!("`{t}`")
    }
}

fn amount(x: Option<f64>, currency: &str) -> String {
    x.map_or_else(|| "unknown".to_string(), |v| money(v, currency))
}

pub(super) fn render(
    report: &Report,
    opts: &RenderOptions,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let s = &report.summary;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mark = if s.errors > 0 || s.failed_files > 0 {
        ":x:"
    } else if s.warnings > 0 || s.unchecked > 0 || s.unresolved > 0 {
        ":warning:"
    } else {
        ":white_check_mark:"
    };
    writeln!(out, "## computeguard")?;
    writeln!(out)?;
    writeln!(
        out,
        "{mark} **{}, {}, {}** in {} ({}); as of {}",
        plural(s.errors, "error", "errors"),
        plural(s.warnings, "warning", "warnings"),
        plural(s.infos, "info", "infos"),
        plural(s.files, "file", "files"),
        plural(s.resources, "resource", "resources"),
        cell(&s.as_of),
    )?;
    writeln!(out)?;
    if let Some(cost) = &report.cost {
        render_cost(report, cost, out)?;
    }
    let findings = report.visible(opts.show_suppressed);
    if !findings.is_empty() {
        writeln!(out, "### Findings")?;
        writeln!(out)?;
        writeln!(out, "| | rule | where | message |")?;
        writeln!(out, "|---|---|---|---|")?;
        for f in findings {
            let icon = match f.severity {
                Severity::Error => ":x: error",
                Severity::Warning => ":warning: warning",
                Severity::Info => ":information_source: info",
            };
            let suppressed = f.suppression.as_ref().map_or_else(String::new, |x| {
                format!(" (suppressed: {})", cell(&x.reason))
            });
            writeln!(
                out,
                "| {icon} | {} | {} | {}{suppressed} |",
                code(&f.rule),
                code(&format!("{}:{}", f.file, f.line)),
                cell(&f.message)
            )?;
        }
        writeln!(out)?;
    }
    let unchecked: Vec<_> = report.unchecked().collect();
    let blind = !report.errors.is_empty()
        || !unchecked.is_empty()
        || !report.unresolved.is_empty()
        || !report.not_evaluated.is_empty()
        || report.cost.as_ref().is_some_and(|c| !c.unknown.is_empty());
    if blind {
        writeln!(out, "### Blind spots")?;
        writeln!(out)?;
        writeln!(
            out,
            "What computeguard could not judge; none of it is a pass."
        )?;
        writeln!(out)?;
        for e in &report.errors {
            writeln!(
                out,
                "- could not be checked: {} {}",
                code(&format!("{}:{}", e.file, e.line)),
                cell(&e.message)
            )?;
        }
        for u in &unchecked {
            writeln!(
                out,
                "- not checked: {} {}",
                code(&u.place()),
                cell(&u.reason)
            )?;
        }
        for u in &report.unresolved {
            writeln!(
                out,
                "- unresolved: {} {}",
                code(&format!("{}:{}", u.file, u.line)),
                cell(&u.message())
            )?;
        }
        for n in &report.not_evaluated {
            writeln!(out, "- not evaluated: {}", cell(&n.message))?;
        }
        for u in report.cost.iter().flat_map(|c| &c.unknown) {
            writeln!(
                out,
                "- cost unknown: {} {}: {}",
                code(&format!("{}:{}", u.file, u.line)),
                cell(&u.resource),
                cell(&u.reason)
            )?;
        }
        writeln!(out)?;
    }
    if findings_are_none(report, opts) && !blind {
        writeln!(out, "No findings and no blind spots.")?;
        writeln!(out)?;
    }
    Ok(())
}

fn findings_are_none(report: &Report, opts: &RenderOptions) -> bool {
    report.visible(opts.show_suppressed).is_empty()
}

fn render_cost(report: &Report, cost: &Estimate, out: &mut dyn Write) -> std::io::Result<()> {
    let cur = cost.currency.as_str();
    writeln!(out, "### Cost")?;
    writeln!(out)?;
    if let Some(diff) = &report.cost_diff {
        let (base, base_row) = match diff.base_kind {
            BaseKind::Checkout => (code(&diff.base), "base"),
            BaseKind::Baseline => (format!("the baseline {}", code(&diff.base)), "baseline"),
        };
        match diff.unknown_note() {
            Some(note) => writeln!(
                out,
                "**{}** against {base} ({})",
                diff.summary(),
                cell(&note)
            )?,
            None => writeln!(out, "**{}** against {base}", diff.summary())?,
        }
        writeln!(out)?;
        writeln!(out, "| | idle | at full scale |")?;
        writeln!(out, "|---|--:|--:|")?;
        writeln!(
            out,
            "| {base_row} | {}/month | {}/month |",
            money(diff.base_total.floor_monthly, cur),
            money(diff.base_total.ceiling_monthly, cur)
        )?;
        writeln!(
            out,
            "| this change | {}/month | {}/month |",
            money(cost.total.floor_monthly, cur),
            money(cost.total.ceiling_monthly, cur)
        )?;
        writeln!(
            out,
            "| difference | {}/month | {}/month |",
            signed(diff.floor_delta, cur),
            signed(diff.ceiling_delta, cur)
        )?;
        writeln!(out)?;
        if !diff.changes.is_empty() {
            writeln!(out, "| | resource | file | idle | at full scale |")?;
            writeln!(out, "|---|---|---|--:|--:|")?;
            for c in &diff.changes {
                let side = |x: Option<f64>, absent: bool| {
                    if absent {
                        "-".to_string()
                    } else {
                        amount(x, cur)
                    }
                };
                let (added, removed) = (c.what == "added", c.what == "removed");
                writeln!(
                    out,
                    "| {} | {} | {} | {} → {} | {} → {} |",
                    c.what,
                    cell(&c.resource),
                    code(&c.file),
                    side(c.base_floor, added),
                    side(c.floor, removed),
                    side(c.base_ceiling, added),
                    side(c.ceiling, removed)
                )?;
            }
            writeln!(out)?;
        }
    } else {
        writeln!(
            out,
            "**{}/month idle, {}/month at full scale**",
            cost.total
                .known_floor()
                .map_or_else(|| "unknown".to_string(), |v| money(v, cur)),
            cost.total
                .known_ceiling()
                .map_or_else(|| "unknown".to_string(), |v| money(v, cur))
        )?;
        writeln!(out)?;
    }
    writeln!(
        out,
        "<details><summary>{} priced resource{} ({} retail prices, {} h/month{})</summary>",
        cost.total.priced(),
        if cost.total.priced() == 1 { "" } else { "s" },
        cell(cur),
        cost.hours_per_month,
        if cost.total.unknown > 0 {
            format!(
                "; {} not in the sums, under blind spots",
                cost.total.unknown
            )
        } else {
            String::new()
        }
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| resource | where | size | meter | per hour | nodes | idle | at full scale |"
    )?;
    writeln!(out, "|---|---|---|---|--:|--:|--:|--:|")?;
    for r in &cost.resources {
        let nodes = |n: Option<i64>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {}-{} | {} | {} |",
            cell(&r.resource),
            code(&format!("{}:{}", r.file, r.line)),
            cell(&format!(
                "{} {}",
                r.sku.as_deref().unwrap_or("?"),
                r.region.as_deref().unwrap_or("?")
            )),
            cell(&format!("{} {}", r.os.as_str(), r.priority.as_str())),
            r.hourly.map_or_else(
                || "unknown".to_string(),
                |h| crate::cost::format_rate(h, cur)
            ),
            nodes(r.floor.nodes),
            nodes(r.ceiling.nodes),
            amount(r.floor_monthly, cur),
            amount(r.ceiling_monthly, cur)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "</details>")?;
    writeln!(out)?;
    Ok(())
}
