//! `--format policyreport`: the report as Kubernetes `PolicyReport` and `ClusterPolicyReport`
//! objects (`wgpolicyk8s.io/v1alpha2`, what Kyverno and Kubewarden write and Policy Reporter
//! shows), in a `v1` `List` that `kubectl apply -f -` takes.
//!
//! - One `PolicyReport` per namespace of the Kubernetes objects with findings, named
//!   `computeguard`; one `ClusterPolicyReport` named `computeguard` for everything else:
//!   objects without a namespace, Azure resources (the id in `properties.resourceId`),
//!   files that could not be checked (`result: error`) and blind spots (`result: skip`):
//!   what was not checked, each unresolved fact, and each rule that was not evaluated
//!   (no `azure:` facts; the rule's own id, `properties.needs` the missing key).
//! - Each finding is one result: `source: computeguard`, `policy` (the policy's name),
//!   `rule`, `result` (`fail` for errors, `warn` for warnings and infos), `severity`
//!   (`high`, `medium`, `info`), the message, the object in `resources`, and where it was
//!   found in `properties` (`file`, `line`, `path`, `resourceKind`, `resourceName`).
//! - What the change costs (`azure.prices`, docs/cost.md) is in the cluster report, as
//!   results of the rules `cost` and `cost-unknown` (properties are string maps, amounts
//!   plain decimals per month in `currency`): one `cost` result with the totals (and what
//!   the change adds to its base with `--compare-to` or `--baseline`), one `cost` result per
//!   priced resource, both `pass` and not `scored`, and one `cost-unknown` result, `skip`,
//!   per resource whose price or count is not known: its amounts are `unknown`, never 0.

use super::{Finding, RenderOptions, Report, Severity, SkipKind};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const API_VERSION: &str = "wgpolicyk8s.io/v1alpha2";
const NAME: &str = "computeguard";
const SOURCE: &str = "computeguard";
const CATEGORY: &str = "AI/GPU compute";

/// The reports, as one `v1` `List`.
pub(super) fn list(report: &Report, opts: &RenderOptions) -> Value {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let timestamp = json!({"seconds": seconds, "nanos": 0});
    // Namespace (None: the cluster report) -> results.
    let mut reports: BTreeMap<Option<String>, Vec<Value>> = BTreeMap::new();
    for f in report.visible(opts.show_suppressed) {
        let namespace = f.object.as_ref().and_then(|o| o.namespace.clone());
        reports
            .entry(namespace)
            .or_default()
            .push(finding(f, &timestamp));
    }
    let mut cluster = Vec::new();
    for e in &report.errors {
        cluster.push(json!({
            "source": SOURCE,
            "policy": NAME,
            "rule": "input-error",
            "result": "error",
            "category": CATEGORY,
            "message": e.message,
            "properties": {"file": e.file, "line": e.line.to_string()},
            "timestamp": timestamp,
        }));
    }
    for s in report
        .skipped
        .iter()
        .filter(|s| s.kind == SkipKind::Unchecked)
    {
        let mut properties = Map::new();
        properties.insert("file".into(), Value::from(s.file.clone()));
        if let Some(line) = s.line {
            properties.insert("line".into(), Value::from(line.to_string()));
        }
        cluster.push(json!({
            "source": SOURCE,
            "policy": NAME,
            "rule": "not-checked",
            "result": "skip",
            "category": CATEGORY,
            "message": s.reason,
            "properties": properties,
            "timestamp": timestamp,
        }));
    }
    for u in &report.unresolved {
        let mut properties = Map::new();
        for (k, v) in [
            ("file", u.file.clone()),
            ("line", u.line.to_string()),
            ("path", u.path.clone()),
            ("resourceKind", u.resource.kind.clone()),
            ("resourceName", u.resource.name.clone()),
            ("field", u.field.clone()),
        ] {
            properties.insert(k.into(), Value::from(v));
        }
        if let Some(e) = &u.expression {
            properties.insert("expression".into(), Value::from(e.clone()));
        }
        cluster.push(json!({
            "source": SOURCE,
            "policy": NAME,
            "rule": "unresolved",
            "result": "skip",
            "category": CATEGORY,
            "message": u.message(),
            "properties": properties,
            "timestamp": timestamp,
        }));
    }
    for n in &report.not_evaluated {
        cluster.push(json!({
            "source": SOURCE,
            "policy": NAME,
            "rule": n.rule,
            "result": "skip",
            "category": CATEGORY,
            "message": n.message,
            "properties": {"needs": n.needs, "notEvaluated": "true"},
            "timestamp": timestamp,
        }));
    }
    if let Some(cost) = &report.cost {
        cluster.extend(cost_results(cost, report.cost_diff.as_ref(), &timestamp));
    }
    if !cluster.is_empty() {
        reports.entry(None).or_default().extend(cluster);
    }
    let items: Vec<Value> = reports
        .into_iter()
        .map(|(namespace, results)| object(namespace, results))
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn object(namespace: Option<String>, results: Vec<Value>) -> Value {
    let count = |r: &str| results.iter().filter(|x| x["result"] == r).count();
    let summary = json!({
        "pass": count("pass"),
        "fail": count("fail"),
        "warn": count("warn"),
        "error": count("error"),
        "skip": count("skip"),
    });
    let mut metadata = json!({
        "name": NAME,
        "labels": {"app.kubernetes.io/managed-by": NAME},
    });
    let kind = match namespace {
        Some(ns) => {
            metadata["namespace"] = Value::from(ns);
            "PolicyReport"
        }
        None => "ClusterPolicyReport",
    };
    json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "summary": summary,
        "results": results,
    })
}

fn finding(f: &Finding, timestamp: &Value) -> Value {
    let (result, severity) = match f.severity {
        Severity::Error => ("fail", "high"),
        Severity::Warning => ("warn", "medium"),
        Severity::Info => ("warn", "info"),
    };
    let mut properties = Map::new();
    for (k, v) in [
        ("file", f.file.clone()),
        ("line", f.line.to_string()),
        ("path", f.path.clone()),
        ("resourceKind", f.resource.kind.clone()),
        ("resourceName", f.resource.name.clone()),
        ("remediation", f.remediation.clone()),
    ] {
        properties.insert(k.into(), Value::from(v));
    }
    if let Some(id) = f.azure_id() {
        properties.insert("resourceId".into(), Value::from(id));
    }
    if let Some(s) = &f.suppression {
        properties.insert("suppressed".into(), Value::from(s.reason.clone()));
    }
    let mut r = json!({
        "source": SOURCE,
        "policy": f.policy,
        "rule": f.rule,
        "result": if f.suppressed { "skip" } else { result },
        "severity": severity,
        "scored": true,
        "category": CATEGORY,
        "message": f.message,
        "properties": properties,
        "timestamp": timestamp,
    });
    if let Some(o) = &f.object {
        r["resources"] = json!([o]);
    }
    r
}

/// An amount per month in properties: a plain decimal (`2681.29`), `unknown` when not known.
fn amount(x: Option<f64>) -> String {
    x.map_or_else(|| "unknown".to_string(), |x| format!("{x:.2}"))
}

/// A difference in properties: `+17194.42`, `-12.50`.
fn delta(x: f64) -> String {
    if x < 0.0 {
        format!("{x:.2}")
    } else {
        format!("+{x:.2}")
    }
}

/// The results that say what the change costs: the totals, each priced resource, and
/// each resource whose price or count is not known.
fn cost_results(
    cost: &computeguard_cost::Estimate,
    diff: Option<&computeguard_cost::Comparison>,
    timestamp: &Value,
) -> Vec<Value> {
    let cur = cost.currency.as_str();
    let result = |rule: &str, result: &str, message: String, properties: Map<String, Value>| {
        json!({
            "source": SOURCE,
            "policy": NAME,
            "rule": rule,
            "result": result,
            "severity": "info",
            "scored": false,
            "category": CATEGORY,
            "message": message,
            "properties": properties,
            "timestamp": timestamp,
        })
    };
    let props = |pairs: Vec<(&str, String)>| -> Map<String, Value> {
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect()
    };
    let t = &cost.total;
    let mut message = format!(
        "cost: {}",
        crate::cost::totals_line(cost).replace(" (listed above)", " (each a cost-unknown result)")
    );
    let mut totals = vec![
        ("currency", cur.to_string()),
        ("hoursPerMonth", cost.hours_per_month.to_string()),
        ("idleMonthly", amount(t.known_floor())),
        ("fullScaleMonthly", amount(t.known_ceiling())),
        ("resources", t.resources.to_string()),
        ("pricedResources", t.priced().to_string()),
        ("unknownResources", t.unknown.to_string()),
        ("priceSources", cost.sources.join(", ")),
    ];
    if let Some(d) = diff {
        message.push_str(&format!("; against {}: {}", d.base_label(), d.summary()));
        if let Some(note) = d.unknown_note() {
            message.push_str(&format!(" ({note})"));
        }
        totals.extend([
            ("base", d.base.clone()),
            (
                "baseKind",
                match d.base_kind {
                    computeguard_cost::BaseKind::Checkout => "checkout",
                    computeguard_cost::BaseKind::Baseline => "baseline",
                }
                .to_string(),
            ),
            ("baseIdleMonthly", amount(Some(d.base_total.floor_monthly))),
            (
                "baseFullScaleMonthly",
                amount(Some(d.base_total.ceiling_monthly)),
            ),
            ("baseUnknownResources", d.base_total.unknown.to_string()),
            ("idleDelta", delta(d.floor_delta)),
            ("fullScaleDelta", delta(d.ceiling_delta)),
        ]);
    }
    let mut out = vec![result("cost", "pass", message, props(totals))];
    for r in &cost.resources {
        let nodes = |n: Option<i64>| n.map_or_else(|| "unknown".to_string(), |n| n.to_string());
        let mut p = vec![
            ("file", r.file.clone()),
            ("line", r.line.to_string()),
            ("resourceKind", r.kind.clone()),
            ("resource", r.resource.clone()),
            ("sku", r.sku.clone().unwrap_or_else(|| "unknown".into())),
            (
                "region",
                r.region.clone().unwrap_or_else(|| "unknown".into()),
            ),
            ("os", r.os.as_str().to_string()),
            ("priority", r.priority.as_str().to_string()),
            (
                "hourly",
                r.hourly
                    .map_or_else(|| "unknown".to_string(), |h| h.to_string()),
            ),
            ("idleNodes", nodes(r.floor.nodes)),
            ("fullScaleNodes", nodes(r.ceiling.nodes)),
            ("idleMonthly", amount(r.floor_monthly)),
            ("fullScaleMonthly", amount(r.ceiling_monthly)),
            ("currency", cur.to_string()),
        ];
        if let Some(m) = &r.meter {
            p.push(("meter", m.meter.clone()));
            p.push(("priceSource", m.source.clone()));
        }
        if let (true, Some(floor), Some(ceiling)) =
            (r.unknown.is_empty(), r.floor_monthly, r.ceiling_monthly)
        {
            let message = format!(
                "{} costs {}/month idle, {}/month at full scale",
                r.resource,
                computeguard_cost::money(floor, cur),
                computeguard_cost::money(ceiling, cur)
            );
            out.push(result("cost", "pass", message, props(p)));
        } else {
            p.push(("unknown", r.unknown.join("; ")));
            out.push(result(
                "cost-unknown",
                "skip",
                format!("cost unknown: {}: {}", r.resource, r.unknown.join("; ")),
                props(p),
            ));
        }
    }
    out
}
