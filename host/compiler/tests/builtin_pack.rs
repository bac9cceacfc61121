//! The built-in pack compiles and its own test cases pass when evaluated natively
//! (the CLI's `computeguard test` runs the same cases through the component).

use computeguard_compiler::{TestDocument, compile};
use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::Source;
use std::collections::BTreeSet;

#[test]
fn builtin_pack_cases_pass_natively() -> Result<(), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/builtin.yaml");
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let compiled = compile("policies/builtin.yaml", &text).map_err(|d| {
        d.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    assert!(compiled.tests.len() >= 10);
    let evaluator = Evaluator::new(compiled.pack.clone());
    let mut failures = Vec::new();
    for t in &compiled.tests {
        let TestDocument::Inline(doc) = &t.document else {
            continue;
        };
        let settings = t.settings.clone().unwrap_or_else(|| serde_json::json!({}));
        let out = evaluator
            .evaluate(&Input {
                document: doc,
                source: Source::Unknown,
                settings: &settings,
                as_of: t.as_of.as_deref().unwrap_or("2026-11-22"),
            })
            .map_err(|e| format!("{}: {e}", t.name))?;
        let got: BTreeSet<&str> = out.violations.iter().map(|v| v.rule.as_str()).collect();
        let want: BTreeSet<&str> = t.expect.iter().map(String::as_str).collect();
        if got != want {
            failures.push(format!(
                "{}: expected {want:?}, got {got:?}\n{:#?}",
                t.name, out.violations
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Issue 14 item 8: a GPU pod that selects its pool by a custom label is told what is really
/// missing (the toleration), not that it selects nothing.
#[test]
fn gpu_scheduling_names_what_is_missing() -> Result<(), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/builtin.yaml");
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let compiled = compile("policies/builtin.yaml", &text).map_err(|d| format!("{d:?}"))?;
    let evaluator = Evaluator::new(compiled.pack);
    let message = |doc: serde_json::Value| -> Result<String, String> {
        let out = evaluator
            .evaluate(&Input {
                document: &doc,
                source: Source::Unknown,
                settings: &serde_json::json!({}),
                as_of: "2026-11-22",
            })
            .map_err(|e| e.to_string())?;
        out.violations
            .iter()
            .find(|v| v.rule == "gpu-workload-scheduling")
            .map(|v| v.message.clone())
            .ok_or_else(|| "no gpu-workload-scheduling finding".to_string())
    };
    let container = serde_json::json!([{"name": "w", "image": "busybox",
        "resources": {"limits": {"nvidia.com/gpu": 1}}}]);
    let selecting = message(
        serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "whisper", "namespace": "speech"},
        "spec": {"template": {"spec": {"containers": container,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "nodepool", "operator": "In", "values": ["azure-gpu-nodepool"]}]}]}}}}}}}),
    )?;
    assert!(
        selecting.contains("selects nodes by nodepool=azure-gpu-nodepool")
            && selecting.contains("has no toleration for a GPU node taint")
            && !selecting.contains("neither selects"),
        "{selecting}"
    );
    let bare = message(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"}, "spec": {"containers": container}}))?;
    assert!(bare.contains("neither selects GPU nodes"), "{bare}");
    Ok(())
}

#[test]
fn settings_schema_keywords_outside_the_subset_are_refused_with_their_line() {
    let text = "apiVersion: computeguard.io/v1
kind: RulePack
metadata: {name: t, version: 0.1.0}
settings:
  schema:
    type: object
    properties:
      team:
        type: string
        format: email
    anyOf: []
rules:
  - id: r
    severity: warning
    description: d
    rationale: r
    remediation: f
    assert: 'true'
";
    let diags = compile("p.yaml", text).expect_err("refused");
    let mut found: Vec<(u32, String)> = diags.iter().map(|d| (d.line, d.to_string())).collect();
    found.sort();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, 10, "{}", found[0].1);
    assert!(
        found[0]
            .1
            .contains("JSON Schema keyword `format` is not supported")
            && found[0].1.contains("--> p.yaml:10:9"),
        "{}",
        found[0].1
    );
    assert_eq!(found[1].0, 11, "{}", found[1].1);
    assert!(found[1].1.contains("`anyOf`"), "{}", found[1].1);
}
