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
