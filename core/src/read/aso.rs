//! Azure Service Operator v2 objects: AKS (`containerservice.azure.com`: `ManagedCluster`
//! with inline `agentPoolProfiles`, `ManagedClustersAgentPool`) and Azure ML
//! (`machinelearningservices.azure.com`: `Workspace`, `WorkspacesCompute`). Their `spec` is
//! the ARM resource body, so the ARM reader's pool and compute readers do the work.

use super::arm::{Resolved, base_resource, compute, read_agent_pool, read_location};
use super::common::{merge_labels, resolve_intent, set_region, str_at};
use crate::compute::Resource;
use crate::read::common::At;
use serde_json::Value;

/// Reads one ASO object; `template` carries its name, namespace and labels.
pub(super) fn normalize(
    doc: &Value,
    api: &str,
    kind: &str,
    base: &str,
    template: Resource,
) -> Vec<Resource> {
    if api.starts_with("containerservice.azure.com/") {
        normalize_aks(doc, kind, base, template)
    } else {
        normalize_ml(doc, kind, base, template)
    }
}

/// Azure Service Operator v2 AKS objects: `ManagedCluster` (cluster + inline
/// `agentPoolProfiles`) and `ManagedClustersAgentPool`.
fn normalize_aks(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
    let mut out = Vec::new();
    match kind {
        "ManagedCluster" => {
            let mut cluster = template.clone();
            cluster.kind = "aks-cluster".into();
            if let Some(loc) = str_at(doc, "/spec/location") {
                set_region(&mut cluster, loc, format!("{base}/spec/location"));
            }
            merge_labels(
                &mut cluster,
                doc.at("/spec/tags"),
                &format!("{base}/spec/tags"),
            );
            let version = str_at(doc, "/spec/kubernetesVersion").map(str::to_string);
            cluster.kubernetes_version = version.clone();
            resolve_intent(&mut cluster, "unknown");
            if let Some(Value::Array(pools)) = doc.at("/spec/agentPoolProfiles") {
                for (i, p) in pools.iter().enumerate() {
                    let mut pool = template.clone();
                    pool.name = format!(
                        "{}/{}",
                        template.name,
                        p.get("name").and_then(Value::as_str).unwrap_or("<unnamed>")
                    );
                    // The pool runs in the cluster's region (reported once, on the cluster)
                    // and inherits its Kubernetes version unless it sets its own.
                    pool.kubernetes_version = version.clone();
                    pool.fields.insert(
                        "kubernetesVersion".into(),
                        format!("{base}/spec/kubernetesVersion"),
                    );
                    // Its region, for the rules that need one (availability, quota).
                    if let Some(reg) = &cluster.region {
                        pool.parent_region = Some(reg.clone());
                        pool.fields
                            .insert("parentRegion".into(), format!("{base}/spec/location"));
                    }
                    read_agent_pool(&mut pool, p, &format!("{base}/spec/agentPoolProfiles/{i}"));
                    out.push(pool);
                }
            }
            out.insert(0, cluster);
        }
        "ManagedClustersAgentPool" => {
            let mut pool = template;
            if let Some(n) = str_at(doc, "/spec/azureName") {
                pool.name = n.to_string();
            }
            if let Some(spec) = doc.get("spec") {
                read_agent_pool(&mut pool, spec, &format!("{base}/spec"));
            }
            out.push(pool);
        }
        _ => {}
    }
    out
}

/// Azure Service Operator v2 `machinelearningservices.azure.com` objects: `Workspace` (an
/// `aml-workspace` with its location) and `WorkspacesCompute`, whose `spec` is the ARM
/// resource body. ASO writes the compute's properties either ARM-style
/// (`spec.properties.computeType` + `spec.properties.properties`) or as the one-of union
/// (`spec.properties.amlCompute.properties`, `computeInstance`, `kubernetes`, `aks`); both are
/// read. The owner workspace is another object, so `parentRegion` stays unknown.
fn normalize_ml(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
    let Some(spec) = doc.get("spec") else {
        return Vec::new();
    };
    let spec_ptr = format!("{base}/spec");
    let name = spec
        .get("azureName")
        .and_then(Value::as_str)
        .map_or_else(|| template.name.clone(), str::to_string);
    let labels_of = |r: &mut Resource| {
        for (k, v) in &template.labels {
            r.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &template.fields {
            r.fields.entry(k.clone()).or_insert_with(|| v.clone());
        }
    };
    let resolved = |value: Value| Resolved {
        value,
        ..Resolved::default()
    };
    match kind {
        "Workspace" => {
            let res = resolved(spec.clone());
            let mut ws = base_resource(&res, &spec_ptr, "aml-workspace", "Workspace", &name);
            labels_of(&mut ws);
            read_location(&mut ws, &res, &spec_ptr, "/location");
            resolve_intent(&mut ws, "unknown");
            vec![ws]
        }
        "WorkspacesCompute" => {
            let props = spec.get("properties");
            let union = ["amlCompute", "computeInstance", "kubernetes", "aks"]
                .into_iter()
                .find(|k| props.and_then(|p| p.get(*k)).is_some_and(Value::is_object));
            let mut body = spec.clone();
            if let (Some(key), Some(m)) = (union, body.as_object_mut()) {
                let mut inner = props
                    .and_then(|p| p.get(key))
                    .cloned()
                    .unwrap_or(Value::Null);
                if let Some(o) = inner.as_object_mut() {
                    let ty = match key {
                        "amlCompute" => "AmlCompute",
                        "computeInstance" => "ComputeInstance",
                        "kubernetes" => "Kubernetes",
                        _ => "AKS",
                    };
                    o.entry("computeType")
                        .or_insert_with(|| Value::String(ty.into()));
                }
                m.insert("properties".into(), inner);
            }
            let Some(mut c) = compute(&resolved(body), &spec_ptr, &name) else {
                return Vec::new();
            };
            if let Some(key) = union {
                let from = format!("{spec_ptr}/properties");
                for p in c.fields.values_mut() {
                    if let Some(rest) = p.strip_prefix(&from) {
                        *p = format!("{from}/{key}{rest}");
                    }
                }
            }
            labels_of(&mut c);
            let workload = c.workload.clone();
            resolve_intent(&mut c, &workload);
            vec![c]
        }
        _ => Vec::new(),
    }
}
