//! KAITO (`kaito.sh`): `Workspace` (`resource.instanceType`, `resource.count`, intent from
//! `inference` / `tuning`, the preset from `inference.preset.name` / `tuning.preset.name`), `RAGEngine` (`spec.compute.instanceType`), `InferenceSet`
//! (`spec.template.resource.instanceType`) and `MultiRoleInference`
//! (`spec.roles[].instanceType`, one resource per role).

use super::common::{int_of, resolve_cuda, resolve_intent, set_sku, str_at};
use crate::compute::Resource;
use crate::read::common::At;
use serde_json::Value;

/// Reads one `kaito.sh` object; `template` carries its name, namespace and labels.
pub(super) fn normalize(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
    if kind == "Workspace" {
        let mut r = template;
        r.kind = "kaito-workspace".into();
        if let Some(sku) = str_at(doc, "/resource/instanceType") {
            set_sku(&mut r, sku, format!("{base}/resource/instanceType"));
        }
        if let Some(count) = doc.at("/resource/count").and_then(int_of) {
            r.instance_count = Some(count);
            r.distributed = count > 1;
            r.fields
                .insert("instanceCount".into(), format!("{base}/resource/count"));
        }
        for ptr in ["/inference/preset/name", "/tuning/preset/name"] {
            if let Some(preset) = str_at(doc, ptr) {
                r.preset = Some(preset.trim().to_string());
                r.fields.insert("preset".into(), format!("{base}{ptr}"));
                break;
            }
        }
        let implied = if doc.get("tuning").is_some() {
            "training"
        } else if doc.get("inference").is_some() {
            "inference"
        } else {
            "unknown"
        };
        resolve_intent(&mut r, implied);
        resolve_cuda(&mut r, &[], &[]);
        return vec![r];
    }
    normalize_other(doc, kind, base, template)
}

/// KAITO kinds other than `Workspace`: `RAGEngine` (`spec.compute.instanceType`),
/// `InferenceSet` (`spec.template.resource.instanceType`), `MultiRoleInference`
/// (`spec.roles[].instanceType`, one resource per role).
fn normalize_other(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
    let mut sites: Vec<(String, String)> = Vec::new();
    match kind {
        "RAGEngine" => sites.push(("/spec/compute/instanceType".into(), template.name.clone())),
        "InferenceSet" => sites.push((
            "/spec/template/resource/instanceType".into(),
            template.name.clone(),
        )),
        "MultiRoleInference" => {
            if let Some(Value::Array(roles)) = doc.at("/spec/roles") {
                for (i, role) in roles.iter().enumerate() {
                    let role_name = role.get("type").and_then(Value::as_str).unwrap_or("role");
                    sites.push((
                        format!("/spec/roles/{i}/instanceType"),
                        format!("{}/{role_name}", template.name),
                    ));
                }
            }
        }
        _ => return Vec::new(),
    }
    let mut out = Vec::new();
    for (ptr, name) in sites {
        let mut r = template.clone();
        r.kind = "kaito-workspace".into();
        r.name = name;
        if let Some(sku) = str_at(doc, &ptr) {
            set_sku(&mut r, sku, format!("{base}{ptr}"));
        }
        if kind == "InferenceSet" {
            let ptr = "/spec/template/inference/preset/name";
            if let Some(preset) = str_at(doc, ptr) {
                r.preset = Some(preset.trim().to_string());
                r.fields.insert("preset".into(), format!("{base}{ptr}"));
            }
        }
        resolve_intent(&mut r, "inference");
        resolve_cuda(&mut r, &[], &[]);
        out.push(r);
    }
    out
}
