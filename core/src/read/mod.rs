//! The readers: one raw document (JSON) in, compute-model [`Resource`]s out.
//!
//! One file per source family, each depending only on `common` and the model type
//! ([`crate::compute`]); this module recognises the family and dispatches:
//! - `kubernetes`: Kubernetes workloads (a table of known kinds plus a generic walk for pod
//!   specs in any kind), Karpenter `NodeClaim`s, and `List` / `*List` objects item by item;
//! - `kaito`: KAITO `Workspace`, `RAGEngine`, `InferenceSet`, `MultiRoleInference`;
//! - `aso`: Azure Service Operator AKS and Azure ML objects (uses [`arm`]'s body readers);
//! - `azureml`: Azure ML CLI v2 YAML (compute, deployments, jobs, pipeline steps);
//! - [`arm`]: ARM templates, ARM REST bodies, REST specification examples, Bicep;
//! - [`terraform`]: Terraform configurations, plans and states;
//! - [`export`]: exports of what already runs in Azure (Resource Graph results, `az` CLI
//!   output, ARM GET and list responses), row by row through the readers above.
//!
//! Every field a reader sets records the JSON pointer it came from, so findings land at the
//! right line; readers never panic on malformed input.

pub mod arm;
pub(crate) mod aso;
pub(crate) mod azureml;
pub(crate) mod common;
pub mod export;
pub(crate) mod kaito;
pub(crate) mod kubernetes;
pub mod terraform;

pub use common::escape;
pub use kubernetes::pod_specs;

use crate::compute::{Resource, Source};
use crate::read::common::At;
use common::str_at;
use serde_json::Value;
use std::borrow::Cow;

/// Deepest nesting of `List` objects that is followed.
const MAX_LIST_DEPTH: usize = 8;

/// Normalises one document. Documents the model does not understand give no resources.
pub fn normalize(doc: &Value, source: Source) -> Vec<Resource> {
    let mut out = normalize_inner(doc, source);
    for r in &mut out {
        r.display = display(r);
    }
    out
}

/// `r` as read from the same document with the object named `name` instead: the
/// name, and the display that shows it. A host that evaluates an object's template (the
/// object with its name replaced, `computeguard_policyset::template`) gets the
/// template's model from the object's this way.
pub fn rename(r: &mut Resource, name: &str) {
    r.name = name.to_string();
    r.display = display(r);
}

/// How messages name a resource: what it is, its namespace and name, and its role.
fn display(r: &Resource) -> String {
    let what = match r.kind.as_str() {
        "aml-compute-cluster" => "Azure ML compute cluster",
        "aml-compute-instance" => "Azure ML compute instance",
        "aml-online-deployment" => "Azure ML online deployment",
        "aml-batch-deployment" => "Azure ML batch deployment",
        "aml-job" if r.source_kind != "aml-job" => {
            return with_name(r, &format!("Azure ML {} job", r.source_kind));
        }
        "aml-job" => "Azure ML job",
        "aks-node-pool" if r.source_kind == "agentPool" => "AKS node pool",
        "aks-cluster" => "AKS cluster",
        "kaito-workspace" => "KAITO workspace",
        "aml-workspace" => "Azure ML workspace",
        "aml-kubernetes-compute" => "Azure ML Kubernetes compute",
        "vm" => "virtual machine",
        "vm-scale-set" => "VM scale set",
        _ => r.source_kind.as_str(),
    };
    with_name(r, what)
}

fn with_name(r: &Resource, what: &str) -> String {
    let role = r
        .role
        .as_ref()
        .map_or_else(String::new, |x| format!(" ({x})"));
    match &r.namespace {
        Some(ns) => format!("{what} {ns}/{}{role}", r.name),
        None => format!("{what} {}{role}", r.name),
    }
}

/// Whether `doc` is a document a policy reads as a whole: an object, or an array that is an
/// export of Azure resources (`az ... list`, a Resource Graph result printed as an array).
/// An export with a row that is not an object is not: that row could not be judged.
pub fn readable(doc: &Value) -> bool {
    match export::rows(doc) {
        Some(rows) => rows.iter().all(|(_, row)| row.is_object()),
        None => doc.is_object(),
    }
}

/// The independent parts of a large document, each with the JSON pointer it sits at, when
/// the document is a collection: the items of a Kubernetes `List` / `*List` (what `kubectl
/// get -o yaml|json` prints; a typed list's items get the list's item kind), or the rows of
/// an Azure export. Evaluating each part on its own gives the same resources, with pointers
/// relative to the part, as evaluating the whole; hosts use it to evaluate a dump of
/// thousands of objects item by item (in parallel, each within the sandbox's memory).
/// `None` for any other document.
pub fn parts(doc: &Value) -> Option<Vec<(String, Cow<'_, Value>)>> {
    if let Some(rows) = export::rows(doc) {
        return Some(
            rows.into_iter()
                .map(|(p, v)| (p, Cow::Borrowed(v)))
                .collect(),
        );
    }
    // A Kubernetes list: `apiVersion` as well as a `*List` kind.
    str_at(doc, "/apiVersion")?;
    let items = list_items(doc)?;
    Some(
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| (format!("/items/{i}"), item))
            .collect(),
    )
}

/// The items of a `List` or typed `*List` (what `kubectl get -o yaml|json` prints). A typed
/// list may leave the kind off its items (`kind: PodList`): they get the list's item kind
/// and apiVersion. `None` when `doc` is not a list.
fn list_items(doc: &Value) -> Option<Vec<Cow<'_, Value>>> {
    let kind = str_at(doc, "/kind")?;
    if !kind.ends_with("List") {
        return None;
    }
    let Some(Value::Array(items)) = doc.get("items") else {
        return None;
    };
    let api = str_at(doc, "/apiVersion").unwrap_or_default();
    let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
    Some(
        items
            .iter()
            .map(|item| match (item.as_object(), item_kind) {
                (Some(o), Some(k)) if !o.contains_key("kind") => {
                    let mut o = o.clone();
                    o.insert("kind".into(), Value::from(k));
                    o.entry("apiVersion").or_insert_with(|| Value::from(api));
                    Cow::Owned(Value::Object(o))
                }
                _ => Cow::Borrowed(item),
            })
            .collect(),
    )
}

fn normalize_inner(doc: &Value, source: Source) -> Vec<Resource> {
    if matches!(source, Source::Unknown | Source::Arm | Source::AzureMl)
        && let Some(rows) = export::rows(doc)
    {
        return export::normalize(&rows);
    }
    let Some(obj) = doc.as_object() else {
        return Vec::new();
    };
    if obj.get("kind").and_then(Value::as_str) == Some("AdmissionReview")
        || source == Source::AdmissionReview
    {
        return match doc.at("/request/object") {
            Some(inner) => kubernetes_object(inner, "/request/object", 0),
            None => Vec::new(),
        };
    }
    // A bare AdmissionRequest. Test data often trims the object to metadata and spec: its
    // kind then comes from the request's group/version/kind.
    if is_admission_request(doc)
        && let Some(Value::Object(gvk)) = obj.get("kind")
        && let Some(Value::Object(inner)) = obj.get("object")
    {
        let mut inner = inner.clone();
        for (key, value) in [
            ("kind", gvk.get("kind").cloned()),
            (
                "apiVersion",
                gvk.get("version").and_then(Value::as_str).map(|v| {
                    match gvk.get("group").and_then(Value::as_str).unwrap_or("") {
                        "" => Value::from(v),
                        g => Value::from(format!("{g}/{v}")),
                    }
                }),
            ),
        ] {
            if let Some(value) = value {
                inner.entry(key).or_insert(value);
            }
        }
        return kubernetes_object(&Value::Object(inner), "/object", 0);
    }
    if matches!(source, Source::Arm | Source::Bicep) || arm::recognise(doc) {
        return arm::normalize(doc);
    }
    if source == Source::Terraform || terraform::recognise(doc) {
        return terraform::normalize(doc);
    }
    if obj.contains_key("apiVersion") && obj.contains_key("kind") {
        return kubernetes_object(doc, "", 0);
    }
    if source == Source::Kubernetes {
        return Vec::new();
    }
    azureml::normalize(doc)
}

/// Whether `doc` can be read as `source` says. `None` when it can (or the source is
/// `unknown`); otherwise what the document is and what the source kind expects, for the
/// `invalid-document` error. A declared source kind is a promise about the document: one
/// it contradicts is refused, never read as something else or passed with no resources.
/// - `kubernetes`: an object with string `apiVersion` and `kind`;
/// - `admission-review`: an `AdmissionReview` with a `request`, or a bare AdmissionRequest;
/// - `azure-ml`: not a Kubernetes object, an ARM document or a Terraform document;
/// - `arm` and `bicep`: not a Kubernetes object or a Terraform document;
/// - `terraform`: not a Kubernetes object or an ARM document.
pub fn source_mismatch(doc: &Value, source: Source) -> Option<String> {
    // Each shape is only tested where a source kind needs it: this runs on every
    // evaluation, the webhook's included (`kubernetes`, which needs only the first).
    let kubernetes = || str_at(doc, "/apiVersion").is_some() && str_at(doc, "/kind").is_some();
    let review = || {
        (str_at(doc, "/kind") == Some("AdmissionReview")
            && doc.get("request").is_some_and(Value::is_object))
            || is_admission_request(doc)
    };
    let (name, found) = match source {
        Source::Unknown => return None,
        Source::Kubernetes if kubernetes() => return None,
        Source::Kubernetes => (
            "kubernetes",
            "an object without string `apiVersion` and `kind`",
        ),
        Source::AdmissionReview if review() => return None,
        Source::AdmissionReview => (
            "admission-review",
            "neither an `AdmissionReview` with a `request` nor an AdmissionRequest",
        ),
        Source::AzureMl | Source::Arm | Source::Bicep | Source::Terraform => {
            let name = match source {
                Source::AzureMl => "azure-ml",
                Source::Arm => "arm",
                Source::Bicep => "bicep",
                _ => "terraform",
            };
            let arm = arm::recognise(doc);
            let terraform = terraform::recognise(doc);
            let found = if terraform && source != Source::Terraform {
                "a Terraform configuration, plan or state"
            } else if arm && matches!(source, Source::AzureMl | Source::Terraform) {
                "an ARM template or resource body"
            } else if kubernetes() && !arm && !terraform {
                "a Kubernetes object (it has `apiVersion` and `kind`)"
            } else {
                return None;
            };
            (name, found)
        }
    };
    Some(format!(
        "source-kind `{name}` does not match the document: it is {found}; pass the matching source kind, or `unknown` to detect the format from the document"
    ))
}

/// A bare AdmissionRequest (the `request` of a review, as webhook test data stores it):
/// `uid`, `kind` as a group/version/kind mapping, and the `object`.
fn is_admission_request(doc: &Value) -> bool {
    doc.get("uid").is_some()
        && doc.get("kind").is_some_and(Value::is_object)
        && doc.get("object").is_some_and(Value::is_object)
}

/// One Kubernetes object at `base` in the document.
fn kubernetes_object(doc: &Value, base: &str, depth: usize) -> Vec<Resource> {
    let kind = str_at(doc, "/kind").unwrap_or_default();
    let api = str_at(doc, "/apiVersion").unwrap_or_default();
    // `kubectl get -o yaml|json` prints a `List` (or a typed `*List`): every item is an object.
    if let Some(items) = list_items(doc) {
        if depth >= MAX_LIST_DEPTH {
            return Vec::new();
        }
        return items
            .iter()
            .enumerate()
            .flat_map(|(i, item)| kubernetes_object(item, &format!("{base}/items/{i}"), depth + 1))
            .collect();
    }
    let template = kubernetes::object_template(doc, base);
    if api.starts_with("kaito.sh/") {
        return kaito::normalize(doc, kind, base, template);
    }
    if api.starts_with("containerservice.azure.com/")
        || api.starts_with("machinelearningservices.azure.com/")
    {
        return aso::normalize(doc, api, kind, base, template);
    }
    if api.starts_with("karpenter.sh/") && kind == "NodeClaim" {
        return kubernetes::node_claim(doc, base, template);
    }
    kubernetes::workloads(doc, base, template)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::Source;
    use serde_json::json;

    #[test]
    fn aml_cluster_reads_size_nodes_and_location() {
        let doc = json!({"$schema": "https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json",
            "name": "gpu", "type": "amlcompute", "size": "standard_nc6s_v3", "min_instances": 2,
            "max_instances": 4, "location": "West Europe"});
        let r = normalize(&doc, Source::Unknown).remove(0);
        assert_eq!(r.kind, "aml-compute-cluster");
        assert_eq!(r.sku.as_deref(), Some("Standard_NC6s_v3"));
        assert_eq!(r.region.as_deref(), Some("westeurope"));
        assert_eq!(
            (r.min_nodes, r.max_nodes, r.autoscale),
            (Some(2), Some(4), Some(true))
        );
        assert_eq!(r.fields["minNodes"], "/min_instances");
    }

    #[test]
    fn deployment_reads_sku_gpus_and_cuda_from_the_pod_template() {
        let doc = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "triton", "namespace": "serving",
                         "labels": {"computeguard.io/workload": "inference"}},
            "spec": {"replicas": 2, "template": {"spec": {
                "nodeSelector": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"},
                "containers": [{"name": "t", "image": "nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04",
                    "resources": {"limits": {"nvidia.com/gpu": 8, "rdma/ib": "1"}}}]}}}});
        let r = normalize(&doc, Source::Kubernetes).remove(0);
        assert_eq!(r.workload, "inference");
        assert_eq!(r.sku.as_deref(), Some("Standard_ND96isr_H100_v5"));
        assert_eq!(r.gpu_requests, 8.0);
        assert_eq!(r.rdma_requests, 1.0);
        assert_eq!(r.cuda.as_deref(), Some("12.4.1"));
        assert_eq!(r.instance_count, Some(2));
        assert_eq!(
            r.fields["sku"],
            "/spec/template/spec/nodeSelector/node.kubernetes.io~1instance-type"
        );
        assert_eq!(r.fields["cuda"], "/spec/template/spec/containers/0/image");
    }

    #[test]
    fn intent_is_unknown_without_label_or_implying_kind() {
        let doc = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}});
        assert_eq!(normalize(&doc, Source::Unknown)[0].workload, "unknown");
        let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": []}}},
                                             "Worker": {"replicas": 3, "template": {"spec": {"containers": []}}}}}});
        // Each replica type is a resource, counting its own replicas; the job is distributed.
        let out = normalize(&job, Source::Unknown);
        let got: Vec<_> = out
            .iter()
            .map(|r| {
                (
                    r.display.as_str(),
                    r.workload.as_str(),
                    r.instance_count,
                    r.distributed,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("PyTorchJob x (Master)", "training", Some(1), true),
                ("PyTorchJob x (Worker)", "training", Some(3), true)
            ]
        );
    }

    #[test]
    fn admission_review_unwraps_the_object_and_prefixes_pointers() {
        let doc = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "1", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeSelector": {"beta.kubernetes.io/instance-type": "Standard_NC6"}, "containers": []}}}});
        let r = normalize(&doc, Source::Unknown).remove(0);
        assert_eq!(r.pointer, "/request/object");
        assert_eq!(
            r.fields["sku"],
            "/request/object/spec/nodeSelector/beta.kubernetes.io~1instance-type"
        );
    }

    #[test]
    fn unrelated_documents_give_no_resources() {
        assert!(
            normalize(
                &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                Source::Unknown
            )
            .is_empty()
        );
        assert!(normalize(&json!({"hello": "world"}), Source::Unknown).is_empty());
        assert!(normalize(&json!([1, 2]), Source::Unknown).is_empty());
    }

    #[test]
    fn kaito_workspace_reads_instance_type_and_intent() {
        let doc = json!({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace", "metadata": {"name": "w"},
            "resource": {"count": 2, "instanceType": "Standard_NC48ads_A100_v4"}, "inference": {}});
        let r = normalize(&doc, Source::Unknown).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.workload.as_str()),
            ("kaito-workspace", "inference")
        );
        assert_eq!(r.fields["sku"], "/resource/instanceType");
    }
}

#[cfg(test)]
mod source_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_parts_of_a_list_or_export_give_the_resources_of_the_whole() {
        let list = json!({"apiVersion": "v1", "kind": "PodList", "items": [
            {"metadata": {"name": "a", "namespace": "ml"}, "spec": {
                "nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
                "containers": [{"name": "c", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b"}, "spec": {"template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}}]});
        let whole = normalize(&list, Source::Unknown);
        let mut from_parts = Vec::new();
        for (prefix, part) in parts(&list).unwrap_or_default() {
            for mut r in normalize(&part, Source::Unknown) {
                r.pointer = format!("{prefix}{}", r.pointer);
                for p in r.fields.values_mut() {
                    *p = format!("{prefix}{p}");
                }
                from_parts.push(r);
            }
        }
        assert_eq!(whole.len(), 2);
        assert_eq!(whole, from_parts);
        assert!(parts(&json!({"apiVersion": "v1", "kind": "Pod"})).is_none());
        assert!(parts(&json!({"kind": "NotAList", "items": []})).is_none());
    }

    #[test]
    fn a_declared_source_kind_the_document_contradicts_is_named() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {}});
        let aml = json!({"type": "amlcompute", "size": "Standard_NC6"});
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}});
        let template = json!({"resources": [{"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2024-03-01"}]});
        let tf = json!({"resource": {"azurerm_kubernetes_cluster": {"k": {}}}});
        for (doc, source) in [
            (&pod, Source::Kubernetes),
            (&pod, Source::Unknown),
            (&aml, Source::AzureMl),
            (&aml, Source::Unknown),
            (&review, Source::AdmissionReview),
            (&review, Source::Kubernetes),
            (&template, Source::Arm),
            (&template, Source::Bicep),
            (&tf, Source::Terraform),
        ] {
            assert_eq!(source_mismatch(doc, source), None, "{doc} as {source:?}");
        }
        for (doc, source, expected) in [
            (
                &aml,
                Source::Kubernetes,
                "source-kind `kubernetes` does not match the document: it is an object without string `apiVersion` and `kind`",
            ),
            (
                &pod,
                Source::AzureMl,
                "source-kind `azure-ml` does not match the document: it is a Kubernetes object",
            ),
            (
                &pod,
                Source::AdmissionReview,
                "source-kind `admission-review` does not match",
            ),
            (
                &template,
                Source::AzureMl,
                "it is an ARM template or resource body",
            ),
            (
                &template,
                Source::Terraform,
                "it is an ARM template or resource body",
            ),
            (
                &tf,
                Source::Arm,
                "it is a Terraform configuration, plan or state",
            ),
            (
                &pod,
                Source::Bicep,
                "source-kind `bicep` does not match the document: it is a Kubernetes object",
            ),
        ] {
            let got = source_mismatch(doc, source).unwrap_or_default();
            assert!(got.contains(expected), "{doc} as {source:?}: {got}");
        }
    }
}

#[cfg(test)]
mod bare_request_tests {
    use super::*;
    use crate::compute::Source;
    use serde_json::json;

    #[test]
    fn a_bare_admission_request_is_read_from_its_object() {
        let doc = json!({
            "uid": "1299d386", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
                    "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
        });
        let r = normalize(&doc, Source::Unknown);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].sku.as_deref(), Some("Standard_NC6"));
        assert_eq!(
            r[0].fields["sku"],
            "/object/spec/nodeSelector/node.kubernetes.io~1instance-type"
        );
        // A trimmed object takes its kind from the request.
        let trimmed = json!({
            "uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "operation": "CREATE",
            "object": {"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
        });
        let r = normalize(&trimmed, Source::Unknown);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].source_kind, "Job");
        // A plain object with a `uid` field and no group/version/kind is not a request.
        assert!(
            normalize(
                &json!({"uid": "x", "object": {"kind": "Pod"}}),
                Source::Unknown
            )
            .is_empty()
        );
    }
}
