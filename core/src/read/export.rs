//! Exports of what already runs in Azure, recognised by their shape (never by file name):
//! - Azure Resource Graph results (`az graph query -q … -o json`): `{"data": [rows], …}`, or
//!   a bare array of rows (`--query data`);
//! - ARM list responses (`{"value": [resources]}`) and GET responses (one resource);
//! - `az` CLI output: `az ml compute list|show`, `az aks show`, `az aks nodepool list|show`,
//!   `az vm list|show`, `az vmss list|show`.
//!
//! A row is an object with an Azure resource id (`/subscriptions/…`); a list is an export when
//! at least one of its items is a row, and then every object in it is read. Rows in the ARM
//! shape (`type` + `properties`, as Resource Graph and the REST API return them) are read by
//! [`super::arm`]; rows the `az` CLI flattened (the properties at the top level, next to
//! `type`, `name`, `location`) are read as the same ARM body, with every pointer mapped back
//! to the row; rows in the Azure ML CLI v2 shape (`az ml compute`) are read by `azureml`.
//! Every resource remembers its Azure resource id ([`Resource::azure_id`]), which hosts
//! show as the resource's name.

use super::{arm, azureml};
use crate::compute::Resource;
use crate::read::common::At;
use serde_json::{Map, Value};

/// Keys a flattened `az` row keeps at the top level of the ARM body; the rest are properties.
const TOP_LEVEL: [&str; 10] = [
    "id", "name", "type", "location", "tags", "sku", "kind", "identity", "zones", "plan",
];

/// Whether `s` is an Azure resource id (`/subscriptions/…`, any case).
pub fn is_resource_id(s: &str) -> bool {
    s.get(..15)
        .is_some_and(|p| p.eq_ignore_ascii_case("/subscriptions/"))
}

fn is_row(v: &Value) -> bool {
    v.get("id")
        .and_then(Value::as_str)
        .is_some_and(is_resource_id)
}

/// The rows of an export, with their JSON pointers, or `None` when `doc` is not an export.
pub(super) fn rows(doc: &Value) -> Option<Vec<(String, &Value)>> {
    // An Azure REST API specification example of a GET or list (no request body; a PUT
    // example is read from its request body by `arm`): the response body is the export.
    if doc.at("/parameters/api-version").is_some()
        && doc.at("/parameters/parameters").is_none()
        && let Some(Value::Object(responses)) = doc.get("responses")
        && let Some((code, body)) = responses
            .iter()
            .find(|(code, r)| code.starts_with('2') && r.get("body").is_some_and(Value::is_object))
            .and_then(|(code, r)| Some((code, r.get("body")?)))
    {
        let base = format!("/responses/{}/body", super::common::escape(code));
        let found = rows(body)?;
        return Some(
            found
                .into_iter()
                .map(|(p, v)| (format!("{base}{p}"), v))
                .collect(),
        );
    }
    match doc {
        Value::Array(items) => list(items, ""),
        Value::Object(o) => {
            for key in ["data", "value"] {
                if let Some(Value::Array(items)) = o.get(key) {
                    return list(items, &format!("/{key}"));
                }
            }
            is_row(doc).then(|| vec![(String::new(), doc)])
        }
        _ => None,
    }
}

/// Every item of a list with at least one row, objects or not: a host that evaluates the
/// rows one by one then refuses an item it cannot judge, at its line, instead of dropping it.
fn list<'a>(items: &'a [Value], base: &str) -> Option<Vec<(String, &'a Value)>> {
    items.iter().any(is_row).then(|| {
        items
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("{base}/{i}"), r))
            .collect()
    })
}

/// Compute-model resources of the rows, each with its row's resource id.
pub(super) fn normalize(rows: &[(String, &Value)]) -> Vec<Resource> {
    let mut out = Vec::new();
    for (base, row) in rows {
        let id = row.get("id").and_then(Value::as_str);
        for mut r in read_row(row) {
            rebase(&mut r, |p| format!("{base}{p}"));
            if let Some(id) = id {
                let (id, name) = identify(id, &r);
                r.azure_id = Some(id);
                r.name = name;
            }
            out.push(r);
        }
    }
    out
}

/// The resource type an id names: `…/providers/Microsoft.ContainerService/managedClusters/
/// aks/agentPools/gpu` is `Microsoft.ContainerService/managedClusters/agentPools`.
fn type_of_id(id: &str) -> Option<String> {
    let segments: Vec<&str> = id.split('/').collect();
    let at = segments
        .iter()
        .rposition(|s| s.eq_ignore_ascii_case("providers"))?;
    let namespace = segments.get(at + 1)?;
    let types: Vec<&str> = segments[at + 2..].iter().step_by(2).copied().collect();
    (!types.is_empty()).then(|| format!("{namespace}/{}", types.join("/")))
}

fn read_row(row: &Value) -> Vec<Resource> {
    // Some GET bodies leave `type` out (an AKS agent pool); the id names it.
    if row.get("type").is_none()
        && let Some(ty) = row.get("id").and_then(Value::as_str).and_then(type_of_id)
        && let Some(fields) = row.as_object()
    {
        let mut typed = fields.clone();
        typed.insert("type".into(), Value::String(ty));
        return read_row(&Value::Object(typed));
    }
    let ty = row.get("type").and_then(Value::as_str).unwrap_or_default();
    let azure_type = ty.contains('/')
        && ty
            .get(..10)
            .is_some_and(|p| p.eq_ignore_ascii_case("microsoft."));
    if !azure_type {
        // `az ml compute list|show` prints the Azure ML CLI v2 shape (`type: amlcompute`).
        return azureml::normalize(row);
    }
    if row.get("properties").is_some_and(Value::is_object) {
        return arm::normalize(row);
    }
    // Flattened by the `az` CLI: put the properties back where ARM has them, read the body,
    // then map `/properties/x` back to `/x`.
    let Some(fields) = row.as_object() else {
        return Vec::new();
    };
    let mut body = Map::new();
    let mut properties = Map::new();
    for (k, v) in fields {
        if TOP_LEVEL.contains(&k.as_str()) {
            body.insert(k.clone(), v.clone());
        } else {
            properties.insert(k.clone(), v.clone());
        }
    }
    body.insert("properties".into(), Value::Object(properties));
    let mut found = arm::normalize(&Value::Object(body));
    for r in &mut found {
        rebase(r, |p| match p.strip_prefix("/properties") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.to_string(),
            _ => p.to_string(),
        });
    }
    found
}

/// Rewrites every pointer a resource carries.
fn rebase(r: &mut Resource, f: impl Fn(&str) -> String) {
    r.pointer = f(&r.pointer);
    for p in r.fields.values_mut() {
        *p = f(p);
    }
}

/// The resource id and name of a resource read from a row with id `id`. A pool read from a
/// cluster's `agentPoolProfiles` is the cluster's child `…/agentPools/<pool>`; a pool or an
/// Azure ML compute is named after its parent as well (`cluster/pool`, `workspace/compute`).
fn identify(id: &str, r: &Resource) -> (String, String) {
    let segments: Vec<&str> = id.trim_end_matches('/').split('/').collect();
    let own = segments.last().copied().unwrap_or_default();
    let is_cluster_id = segments
        .iter()
        .rev()
        .nth(1)
        .is_some_and(|s| s.eq_ignore_ascii_case("managedClusters"));
    match r.kind.as_str() {
        "aks-node-pool" if is_cluster_id => {
            let pool = r.name.rsplit('/').next().unwrap_or(&r.name);
            (format!("{id}/agentPools/{pool}"), format!("{own}/{pool}"))
        }
        "aks-node-pool" => match segment_after(id, "managedClusters") {
            Some(cluster) if !r.name.contains('/') => (id.to_string(), format!("{cluster}/{own}")),
            _ => (id.to_string(), r.name.clone()),
        },
        "aml-compute-cluster" | "aml-compute-instance" | "aml-kubernetes-compute" => {
            match segment_after(id, "workspaces") {
                Some(ws) if !r.name.contains('/') && !ws.eq_ignore_ascii_case(own) => {
                    (id.to_string(), format!("{ws}/{}", r.name))
                }
                _ => (id.to_string(), r.name.clone()),
            }
        }
        _ => (id.to_string(), r.name.clone()),
    }
}

/// The segment after the last `key` segment of a resource id (any case).
fn segment_after<'a>(id: &'a str, key: &str) -> Option<&'a str> {
    let segments: Vec<&str> = id.split('/').collect();
    segments
        .windows(2)
        .rev()
        .find(|w| w[0].eq_ignore_ascii_case(key))
        .map(|w| w[1])
}

/// The subscription and resource group named by a resource id.
pub fn scope_of(id: &str) -> (Option<&str>, Option<&str>) {
    (
        segment_after(id, "subscriptions"),
        segment_after(id, "resourceGroups"),
    )
}

#[cfg(test)]
mod tests {
    use super::super::normalize as read;
    use crate::compute::Source;
    use serde_json::json;

    const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";

    #[test]
    fn resource_graph_rows_are_read_with_ids_and_pointers() {
        let vm = format!(
            "{SUB}/resourceGroups/ml-rg/providers/Microsoft.Compute/virtualMachines/train-1"
        );
        let vmss = format!(
            "{SUB}/resourceGroups/ml-rg/providers/Microsoft.Compute/virtualMachineScaleSets/infer"
        );
        let doc = json!({"count": 3, "data": [
            {"id": vm, "name": "train-1", "type": "microsoft.compute/virtualmachines", "location": "eastus",
             "resourceGroup": "ml-rg", "properties": {"hardwareProfile": {"vmSize": "Standard_NC6"}, "priority": "Spot"}},
            {"id": "/subscriptions/x/resourceGroups/web/providers/Microsoft.Web/sites/app", "type": "microsoft.web/sites",
             "name": "app", "properties": {}},
            {"id": vmss, "name": "infer", "type": "microsoft.compute/virtualmachinescalesets", "location": "westeurope",
             "sku": {"name": "Standard_NC24ads_A100_v4", "capacity": 3}, "properties": {}}
        ], "skip_token": null, "total_records": 3});
        let out = read(&doc, Source::Unknown);
        assert_eq!(out.len(), 2, "{out:#?}");
        assert_eq!(out[0].kind, "vm");
        assert_eq!(out[0].azure_id.as_deref(), Some(vm.as_str()));
        assert_eq!(out[0].sku.as_deref(), Some("Standard_NC6"));
        assert_eq!(out[0].priority.as_deref(), Some("spot"));
        assert_eq!(out[0].region.as_deref(), Some("eastus"));
        assert_eq!(
            out[0].fields["sku"],
            "/data/0/properties/hardwareProfile/vmSize"
        );
        assert_eq!(out[0].pointer, "/data/0");
        assert_eq!(out[1].kind, "vm-scale-set");
        assert_eq!(out[1].instance_count, Some(3));
        assert_eq!(out[1].fields["sku"], "/data/2/sku/name");
        assert_eq!(out[1].display, "VM scale set infer");
    }

    #[test]
    fn az_flattened_output_maps_pointers_back_to_the_row() {
        let cluster = format!(
            "{SUB}/resourcegroups/ml-rg/providers/Microsoft.ContainerService/managedClusters/aks-prod"
        );
        let show = json!({"id": cluster, "name": "aks-prod", "type": "Microsoft.ContainerService/ManagedClusters",
            "location": "eastus2", "kubernetesVersion": "1.30.3", "resourceGroup": "ml-rg",
            "agentPoolProfiles": [
                {"name": "system", "vmSize": "Standard_D4s_v5", "count": 2},
                {"name": "gpunp", "vmSize": "Standard_NC6s_v3", "count": 1, "enableAutoScaling": true,
                 "minCount": 1, "maxCount": 3}]});
        let out = read(&show, Source::Unknown);
        assert_eq!(out.len(), 3);
        let gpu = &out[2];
        assert_eq!(gpu.kind, "aks-node-pool");
        assert_eq!(gpu.name, "aks-prod/gpunp");
        assert_eq!(
            gpu.azure_id.as_deref(),
            Some(format!("{cluster}/agentPools/gpunp").as_str())
        );
        assert_eq!(gpu.fields["sku"], "/agentPoolProfiles/1/vmSize");
        assert_eq!(gpu.fields["minNodes"], "/agentPoolProfiles/1/minCount");
        assert_eq!(gpu.kubernetes_version.as_deref(), Some("1.30.3"));

        let pools = json!([{"id": format!("{cluster}/agentPools/gpunp"), "name": "gpunp",
            "type": "Microsoft.ContainerService/managedClusters/agentPools", "vmSize": "Standard_NC6s_v3",
            "count": 2, "minCount": 2, "maxCount": 4, "enableAutoScaling": true, "resourceGroup": "ml-rg"}]);
        let out = read(&pools, Source::Unknown);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "aks-prod/gpunp");
        assert_eq!(out[0].fields["minNodes"], "/0/minCount");
        assert_eq!(out[0].min_nodes, Some(2));
    }

    #[test]
    fn az_ml_compute_list_is_read_as_azure_ml() {
        let id = format!(
            "{SUB}/resourceGroups/ml-rg/providers/Microsoft.MachineLearningServices/workspaces/ws/computes/gpu"
        );
        let doc = json!([{"id": id, "name": "gpu", "type": "amlcompute", "size": "STANDARD_NC6",
            "min_instances": 1, "max_instances": 4, "location": "eastus", "resourceGroup": "ml-rg"},
            {"id": format!("{id}-ci"), "name": "gpu-ci", "type": "computeinstance", "size": "Standard_DS3_v2"}]);
        let out = read(&doc, Source::Unknown);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].kind, "aml-compute-cluster");
        assert_eq!(out[0].name, "ws/gpu");
        assert_eq!(out[0].sku.as_deref(), Some("Standard_NC6"));
        assert_eq!(out[0].fields["minNodes"], "/0/min_instances");
        assert_eq!(out[0].azure_id.as_deref(), Some(id.as_str()));
    }

    #[test]
    fn an_export_with_a_row_that_is_not_an_object_is_not_readable_whole() {
        let vm = json!({"id": format!("{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/v"),
            "type": "Microsoft.Compute/virtualMachines", "properties": {}});
        assert!(super::super::readable(&json!([vm.clone()])));
        assert!(!super::super::readable(&json!([vm.clone(), "v2"])));
        assert!(!super::super::readable(&json!({"data": [vm.clone(), 7]})));
        // Row by row, the item is still there to be refused.
        assert_eq!(super::rows(&json!([vm, "v2"])).map(|r| r.len()), Some(2));
    }

    #[test]
    fn lists_without_resource_ids_are_not_exports() {
        assert!(super::rows(&json!([{"name": "x"}])).is_none());
        assert!(super::rows(&json!({"data": []})).is_none());
        assert!(super::rows(&json!({"id": "/x/y"})).is_none());
        assert_eq!(
            super::type_of_id("/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks/agentPools/gpu")
                .as_deref(),
            Some("Microsoft.ContainerService/managedClusters/agentPools")
        );
        assert_eq!(
            super::scope_of("/subscriptions/s1/resourceGroups/rg-a/providers/X/y/z"),
            (Some("s1"), Some("rg-a"))
        );
    }
}
