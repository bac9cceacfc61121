//! The opt-in mutations: JSON Patch operations that fix what a rule flagged, so that
//! the mutated object passes validation.
//!
//! Each mutation is driven by a finding, never by a guess: `gpuToleration` only acts on
//! a `gpu-workload-scheduling` finding, `minNodesZero` only on a `min-nodes-zero`
//! finding, at the field the finding points to.

use crate::config::WebhookConfig;
use crate::decision::Finding;
use computeguard_policy_core::eval::display_name;
use computeguard_policy_core::model::{Resource, pod_specs};
use serde_json::{Value, json};

/// The patch operations for `object` (RFC 6902), in a stable order.
pub fn patch(
    cfg: &WebhookConfig,
    object: &Value,
    resources: &[Resource],
    findings: &[Finding],
) -> Vec<Value> {
    let mut ops = Vec::new();
    if cfg.mutations.min_nodes_zero {
        for f in findings.iter().filter(|f| f.rule == "min-nodes-zero") {
            // Only a written integer is replaced; a default (no field) is left alone.
            let Some(current) = object.pointer(&f.path).and_then(Value::as_i64) else {
                continue;
            };
            let operator = resources
                .iter()
                .find(|r| r.kind == f.kind && display_name(r) == f.resource)
                .is_some_and(|r| r.gpu_operator);
            let target = if operator { 1 } else { 0 };
            if current > target
                && !ops
                    .iter()
                    .any(|o: &Value| o["path"].as_str() == Some(f.path.as_str()))
            {
                ops.push(json!({"op": "replace", "path": f.path, "value": target}));
            }
        }
    }
    if let Some(tol) = &cfg.mutations.gpu_toleration
        && findings
            .iter()
            .any(|f| f.rule == "gpu-workload-scheduling" && f.kind == "k8s-workload")
    {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let tol = Value::Object(tol.0.clone());
        for (spec_ptr, _) in pod_specs(object, kind, "") {
            let Some(spec) = object.pointer(&spec_ptr) else {
                continue;
            };
            if !requests_gpu(spec) {
                continue;
            }
            match spec.get("tolerations") {
                Some(Value::Array(list)) => {
                    if !list.contains(&tol) {
                        ops.push(json!({"op": "add", "path": format!("{spec_ptr}/tolerations/-"), "value": tol}));
                    }
                }
                _ => ops.push(
                    json!({"op": "add", "path": format!("{spec_ptr}/tolerations"), "value": [tol]}),
                ),
            }
        }
    }
    ops
}

/// Whether a pod spec's containers ask for a GPU (`nvidia.com/gpu`, `amd.com/gpu`,
/// `nvidia.com/mig-*`).
fn requests_gpu(spec: &Value) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        spec.get(*list).and_then(Value::as_array).is_some_and(|cs| {
            cs.iter().any(|c| {
                ["limits", "requests"].iter().any(|k| {
                    c.pointer(&format!("/resources/{k}"))
                        .and_then(Value::as_object)
                        .is_some_and(|m| {
                            m.keys().any(|r| {
                                r == "nvidia.com/gpu"
                                    || r == "amd.com/gpu"
                                    || r.starts_with("nvidia.com/mig-")
                            })
                        })
                })
            })
        })
    })
}
