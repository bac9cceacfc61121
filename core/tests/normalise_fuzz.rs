//! The normaliser never panics and keeps its promises (provenance is a JSON pointer; an
//! unresolved field has no value) on arbitrary JSON, on documents shaped like each input
//! format with random values, and on the fixtures. Same body as the `normalize` fuzz target.

use computeguard_policy_core::fuzzing::{normalize_json, normalize_value};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-zA-Z0-9_${}. -]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A value for an attribute the normalisers read: a SKU, a count, a template, anything.
fn attribute() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("Standard_NC24ads_A100_v4")),
        Just(json!("standard_nc6")),
        Just(json!("${var.size}")),
        Just(json!("${azurerm_resource_group.rg.location}")),
        Just(json!("${azurerm_machine_learning_workspace.ws.id}")),
        Just(json!("${azurerm_kubernetes_cluster.main.id}")),
        Just(json!("[parameters('x')]")),
        Just(json!("eastus")),
        Just(json!("Windows")),
        Just(json!("Spot")),
        json_value(),
    ]
}

const KEYS: &[&str] = &[
    "vm_size",
    "virtual_machine_size",
    "location",
    "min_count",
    "max_count",
    "node_count",
    "auto_scaling_enabled",
    "enable_auto_scaling",
    "os_type",
    "priority",
    "vm_priority",
    "node_taints",
    "node_labels",
    "tags",
    "kubernetes_version",
    "orchestrator_version",
    "kubernetes_cluster_id",
    "machine_learning_workspace_id",
    "default_node_pool",
    "scale_settings",
    "min_node_count",
    "max_node_count",
    "only_critical_addons_enabled",
    "gpu_instance",
    "name",
];
const TYPES: &[&str] = &[
    "azurerm_kubernetes_cluster",
    "azurerm_kubernetes_cluster_node_pool",
    "azurerm_machine_learning_compute_cluster",
    "azurerm_machine_learning_compute_instance",
    "azurerm_machine_learning_workspace",
    "azurerm_resource_group",
];

/// A block of random known attributes, some holding nested blocks (as objects or arrays).
fn flat_block() -> impl Strategy<Value = Value> {
    prop::collection::vec((0..KEYS.len(), attribute()), 0..10).prop_map(|pairs| {
        Value::Object(
            pairs
                .into_iter()
                .map(|(k, v)| (KEYS[k].to_string(), v))
                .collect(),
        )
    })
}

fn block() -> impl Strategy<Value = Value> {
    (flat_block(), flat_block(), any::<bool>()).prop_map(|(mut outer, inner, as_array)| {
        if let Value::Object(m) = &mut outer {
            let nested = if as_array { json!([inner]) } else { inner };
            m.insert("default_node_pool".into(), nested.clone());
            m.insert("scale_settings".into(), nested);
        }
        outer
    })
}

/// A Terraform configuration (JSON syntax) or plan with random resources of the read types.
fn terraform() -> impl Strategy<Value = Value> {
    let resources = prop::collection::vec((0..TYPES.len(), "[a-z]{1,3}", block()), 0..6);
    (resources, any::<bool>()).prop_map(|(list, plan)| {
        if plan {
            let resources: Vec<Value> = list
                .into_iter()
                .map(|(t, n, values)| {
                    json!({"address": format!("{}.{n}", TYPES[t]), "mode": "managed",
                           "type": TYPES[t], "name": n, "values": values})
                })
                .collect();
            json!({"format_version": "1.2", "planned_values": {"root_module": {
                "resources": resources.clone(),
                "child_modules": [{"address": "module.m", "resources": resources}]}}})
        } else {
            let mut section = Map::new();
            for (t, n, values) in list {
                let by_name = section
                    .entry(TYPES[t].to_string())
                    .or_insert_with(|| json!({}));
                if let Value::Object(m) = by_name {
                    m.insert(n, values);
                }
            }
            json!({"resource": section})
        }
    })
}

proptest! {
    #[test]
    fn normalising_arbitrary_json_never_panics(value in json_value()) {
        normalize_value(&value);
        normalize_json(value.to_string().as_bytes());
    }

    #[test]
    fn normalising_terraform_shaped_documents_never_panics(doc in terraform()) {
        normalize_value(&doc);
    }

    #[test]
    fn normalising_kubernetes_and_arm_shaped_documents_never_panics(
        spec in json_value(),
        kind in prop::sample::select(vec!["Pod", "Deployment", "PyTorchJob", "Workspace",
                                          "ManagedCluster", "AdmissionReview", "InferenceService"]),
        api in prop::sample::select(vec!["v1", "apps/v1", "kubeflow.org/v1", "kaito.sh/v1beta1",
                                         "containerservice.azure.com/v1api20231001"]),
    ) {
        normalize_value(&json!({"apiVersion": api, "kind": kind, "metadata": {"name": "x"},
                                "spec": spec.clone(), "request": {"object": spec.clone()}}));
        normalize_value(&json!({"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
                                "resources": [{"type": "Microsoft.MachineLearningServices/workspaces/computes",
                                               "apiVersion": "2024-04-01", "name": "w/c", "properties": spec}]}));
    }
}
