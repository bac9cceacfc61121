//! SARIF 2.1.0, as GitHub code scanning reads it: one run whose `tool.driver.rules`
//! describes every loaded rule (help text and a help URI into `docs/rules/`), and
//! one result per finding with a relative, forward-slash artifact URI and a start
//! line. Suppressed findings (with `--show-suppressed`) carry `suppressions[]`, so
//! code scanning shows them as dismissed instead of open. Files that could not be
//! checked, skipped files and rules that were not evaluated (no `azure:` facts, with
//! the rule as `associatedRule`) are `invocations[0].toolExecutionNotifications`.

use super::fingerprint::{fingerprint, normalize_path};
use super::{Finding, RenderOptions, Report, RuleDoc, Severity, SkipKind, SuppressionKind};
use serde_json::{Value, json};

/// The schema URI GitHub and the SARIF tooling recognise.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Where the rule documentation lives: the repository URL of the workspace manifest.
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The documentation page of a built-in rule.
pub fn help_uri(id: &str) -> String {
    format!("{REPOSITORY}/blob/main/docs/rules/{id}.md")
}

fn rule(r: &RuleDoc) -> Value {
    let mut v = json!({
        "id": r.id,
        "name": r.id,
        "shortDescription": {"text": r.description},
        "fullDescription": {"text": format!("{} {}", r.description, r.rationale).trim().to_string()},
        "help": {
            "text": format!("{}\n\nWhy: {}", r.remediation, r.rationale),
            "markdown": format!("**Fix:** {}\n\n**Why:** {}", r.remediation, r.rationale),
        },
        "defaultConfiguration": {"level": level(r.severity)},
        "properties": {"tags": [r.policy]},
    });
    if r.documented {
        v["helpUri"] = Value::String(help_uri(&r.id));
    }
    v
}

/// A relative URI reference for `file`: forward slashes, percent-encoded where needed.
pub fn uri(file: &str) -> String {
    let mut out = String::new();
    for b in normalize_path(file).bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn location(file: &str, line: u32, column: u32) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": uri(file), "uriBaseId": "%SRCROOT%"}});
    if line > 0 {
        let mut region = json!({"startLine": line});
        if column > 0 {
            region["startColumn"] = json!(column);
        }
        physical["region"] = region;
    }
    json!({"physicalLocation": physical})
}

fn result(f: &Finding, rules: &[RuleDoc]) -> Value {
    let mut v = json!({
        "ruleId": f.rule,
        "level": level(f.severity),
        "message": {"text": f.message},
        "locations": [location(&f.file, f.line, f.column)],
        "partialFingerprints": {"computeguard/v1": fingerprint(f)},
        "properties": {
            "resource": {"kind": f.resource.kind, "name": f.resource.name},
            "path": f.path,
            "policy": f.policy,
            "remediation": f.remediation,
        },
    });
    if let Some(i) = rules.iter().position(|r| r.id == f.rule) {
        v["ruleIndex"] = json!(i);
    }
    if let Some(s) = &f.suppression {
        let kind = match s.kind {
            SuppressionKind::Inline => "inSource",
            SuppressionKind::Config | SuppressionKind::Baseline => "external",
        };
        v["suppressions"] =
            json!([{"kind": kind, "status": "accepted", "justification": s.reason}]);
    }
    v
}

/// The SARIF log of `report`.
pub fn log(report: &Report, opts: &RenderOptions) -> Value {
    let mut rules: Vec<RuleDoc> = Vec::new();
    for r in report
        .rules
        .iter()
        .cloned()
        .chain([RuleDoc::missing_reason(), RuleDoc::unresolved()])
    {
        if !rules.iter().any(|x| x.id == r.id) {
            rules.push(r);
        }
    }
    let mut results: Vec<Value> = report
        .visible(opts.show_suppressed)
        .into_iter()
        .map(|f| result(f, &rules))
        .collect();
    // Unresolved facts: notes, so code scanning shows the blind spot at its line.
    let unresolved_index = rules.iter().position(|r| r.id == RuleDoc::UNRESOLVED);
    results.extend(report.unresolved.iter().map(|u| {
        let mut v = json!({
            "ruleId": RuleDoc::UNRESOLVED,
            "level": "note",
            "message": {"text": u.message()},
            "locations": [location(&u.file, u.line, 0)],
            "properties": {
                "resource": {"kind": u.resource.kind, "name": u.resource.name},
                "field": u.field,
                "expression": u.expression,
                "path": u.path,
            },
        });
        if let Some(i) = unresolved_index {
            v["ruleIndex"] = json!(i);
        }
        v
    }));
    let mut notifications: Vec<Value> = report
        .errors
        .iter()
        .map(|e| {
            json!({
                "level": "error",
                "message": {"text": e.message},
                "locations": [location(&e.file, e.line, 0)],
            })
        })
        .collect();
    // Every skipped file (and unchecked document): `warning` for what could not be judged,
    // `note` for what was read and held nothing to check or is not computeguard's input.
    notifications.extend(report.skipped.iter().map(|s| {
        let level = if s.kind == SkipKind::Unchecked {
            "warning"
        } else {
            "note"
        };
        json!({
            "level": level,
            "message": {"text": format!("skipped: {}", s.reason)},
            "locations": [location(&s.file, s.line.unwrap_or(0), 0)],
            "properties": {"kind": s.kind},
        })
    }));
    notifications.extend(report.not_evaluated.iter().map(|n| {
        let mut v = json!({
            "level": "warning",
            "message": {"text": n.message},
            "properties": {"kind": "not-evaluated", "needs": n.needs},
        });
        if let Some(i) = rules.iter().position(|r| r.id == n.rule) {
            v["associatedRule"] = json!({"id": n.rule, "index": i});
        }
        v
    }));
    // What the change costs (`azure.prices`): a note with the totals, and one at each
    // resource whose price or count is unknown (never taken as $0).
    if let Some(cost) = &report.cost {
        notifications.push(json!({
            "level": "note",
            "message": {"text": format!("cost: {}", crate::cost::totals_line(cost).replace(" (listed above)", ""))},
            "properties": {"kind": "cost", "floorMonthly": cost.total.floor_monthly, "ceilingMonthly": cost.total.ceiling_monthly, "currency": cost.currency},
        }));
        notifications.extend(cost.unknown.iter().map(|u| {
            json!({
                "level": "note",
                "message": {"text": format!("cost unknown: {}: {}", u.resource, u.reason)},
                "locations": [location(&u.file, u.line, 0)],
                "properties": {"kind": "cost-unknown"},
            })
        }));
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "computeguard",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": REPOSITORY,
                "rules": rules.iter().map(rule).collect::<Vec<_>>(),
            }},
            "invocations": [{
                "executionSuccessful": report.errors.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_with_forward_slashes_and_encoded() {
        assert_eq!(uri("./infra/gpu pool.yml"), "infra/gpu%20pool.yml");
        assert_eq!(uri("infra\\a.yml"), "infra/a.yml");
        assert!(help_uri("sku-retired").ends_with("/docs/rules/sku-retired.md"));
    }
}
