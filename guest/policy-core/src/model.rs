//! The compute model: one normalised view of "where does this GPU work run" for
//! every input format. [`normalize`] turns a raw document into zero or more
//! [`Resource`]s; each remembers where its fields came from (JSON pointers into
//! the document) so hosts can point findings at the right line.

use crate::{arm, catalog, cuda, region, terraform};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Annotation/label/tag that states workload intent explicitly.
pub const WORKLOAD_LABEL: &str = "computeguard.io/workload";
/// Annotation/label/tag that declares the CUDA version explicitly.
pub const CUDA_LABEL: &str = "computeguard.io/cuda";
/// Annotation/label/tag that marks a resource as needing an isolated SKU (`required`).
pub const ISOLATION_LABEL: &str = "computeguard.io/isolation";
/// Label/tag that says the pool runs the NVIDIA GPU Operator with the cluster autoscaler
/// (`true`), the documented exception to `min-nodes-zero` (keep min 1).
pub const GPU_OPERATOR_LABEL: &str = "computeguard.io/gpu-operator";

/// What a document declares about compute. Missing facts are `None` (`null` in CEL).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Compute-model kind: `aml-compute-cluster`, `aml-compute-instance`,
    /// `aml-online-deployment`, `aml-batch-deployment`, `aml-job`, `k8s-workload`,
    /// `kaito-workspace`.
    pub kind: String,
    /// The document's own kind (`Deployment`, `amlcompute`, `command`, ...).
    pub source_kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// How messages name the resource: `Deployment serving/triton`, `Azure ML compute cluster gpu`.
    pub display: String,
    /// VM size in its canonical catalog spelling when known, else as written.
    pub sku: Option<String>,
    /// Region as a programmatic name (`eastus2`), normalised from display names.
    pub region: Option<String>,
    pub min_nodes: Option<i64>,
    pub max_nodes: Option<i64>,
    pub autoscale: Option<bool>,
    /// `dedicated`, `spot` or `low-priority`.
    pub priority: Option<String>,
    /// `training`, `inference`, `batch`, `interactive` or `unknown`.
    pub workload: String,
    /// Nodes / instances / replicas the workload asks for.
    pub instance_count: Option<i64>,
    /// Distributed over more than one node (instance count > 1 or several replicas).
    pub distributed: bool,
    /// Container images and environment references.
    pub images: Vec<String>,
    /// GPUs requested per pod/instance (`nvidia.com/gpu`, `amd.com/gpu`, `nvidia.com/mig-*`).
    pub gpu_requests: f64,
    /// RDMA devices requested (`rdma/*`, `mellanox.com/*`).
    pub rdma_requests: f64,
    /// Labels, tags and annotations merged.
    pub labels: BTreeMap<String, String>,
    pub os_type: Option<String>,
    pub kubernetes_version: Option<String>,
    pub gpu_instance_profile: Option<String>,
    pub tolerations: Vec<Value>,
    /// Node taints of a node pool, as `key=value:Effect` strings.
    pub taints: Vec<String>,
    /// nodeSelector entries plus single-valued required node-affinity terms.
    pub node_selection: BTreeMap<String, String>,
    /// CUDA version the workload needs: declared label, else environment, else inferred from an image.
    pub cuda: Option<String>,
    /// Where `cuda` came from, for messages (`image nvidia/cuda:12.4.1-...`, `label computeguard.io/cuda`).
    pub cuda_source: Option<String>,
    /// Needs an isolated SKU (`computeguard.io/isolation: required`).
    pub isolation_required: bool,
    /// Runs the NVIDIA GPU Operator with the cluster autoscaler (see [`GPU_OPERATOR_LABEL`]).
    pub gpu_operator: bool,
    /// Region (programmatic name) of the workspace or cluster this compute belongs to, when
    /// the same document declares both (ARM/Bicep: a compute under a workspace, a pool
    /// under a cluster; Terraform: the referenced cluster or workspace).
    pub parent_region: Option<String>,
    /// The parent, for messages: `workspace ml-prod in westeurope`.
    pub parent: Option<String>,
    /// Model fields whose value the document computes at deploy time (an ARM expression
    /// such as `[resourceGroup().location]`, a parameter without a default) and that are
    /// therefore left `null` rather than guessed, e.g. `["sku", "region"]`.
    pub unresolved: Vec<String>,
    /// JSON pointer of the resource within the document.
    #[serde(skip)]
    pub pointer: String,
    /// Model field -> JSON pointer of the field it was read from.
    #[serde(skip)]
    pub fields: BTreeMap<String, String>,
}

/// Which input format a document is in, as far as the caller knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Kubernetes,
    AdmissionReview,
    AzureMl,
    /// An ARM template, ARM REST body or REST specification example (JSON).
    Arm,
    /// A Bicep file, translated by the host into the ARM template shape.
    Bicep,
    /// Terraform: a configuration in the JSON syntax (`.tf` decoded by the host, `.tf.json`)
    /// or a `terraform show -json` plan or state.
    Terraform,
    Unknown,
}

/// Normalises one document. Documents the model does not understand give no resources.
pub fn normalize(doc: &Value, source: Source) -> Vec<Resource> {
    let mut out = normalize_inner(doc, source);
    for r in &mut out {
        let what = match r.kind.as_str() {
            "aml-compute-cluster" => "Azure ML compute cluster".to_string(),
            "aml-compute-instance" => "Azure ML compute instance".to_string(),
            "aml-online-deployment" => "Azure ML online deployment".to_string(),
            "aml-batch-deployment" => "Azure ML batch deployment".to_string(),
            "aml-job" if r.source_kind != "aml-job" => format!("Azure ML {} job", r.source_kind),
            "aml-job" => "Azure ML job".to_string(),
            "aks-node-pool" if r.source_kind == "agentPool" => "AKS node pool".to_string(),
            "aks-cluster" => "AKS cluster".to_string(),
            "kaito-workspace" => "KAITO workspace".to_string(),
            "aml-workspace" => "Azure ML workspace".to_string(),
            "aml-kubernetes-compute" => "Azure ML Kubernetes compute".to_string(),
            _ => r.source_kind.clone(),
        };
        r.display = match &r.namespace {
            Some(ns) => format!("{what} {ns}/{}", r.name),
            None => format!("{what} {}", r.name),
        };
    }
    out
}

fn normalize_inner(doc: &Value, source: Source) -> Vec<Resource> {
    let Some(obj) = doc.as_object() else {
        return Vec::new();
    };
    if obj.get("kind").and_then(Value::as_str) == Some("AdmissionReview")
        || source == Source::AdmissionReview
    {
        return match doc.pointer("/request/object") {
            Some(inner) => normalize_kubernetes(inner, "/request/object"),
            None => Vec::new(),
        };
    }
    // A bare AdmissionRequest (the `request` of a review, as webhook test data stores it):
    // `uid`, `kind` as a group/version/kind mapping, and the `object`.
    // Test data often trims the object to metadata and spec: its kind then comes from
    // the request's group/version/kind.
    if obj.contains_key("uid")
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
        return normalize_kubernetes(&Value::Object(inner), "/object");
    }
    if matches!(source, Source::Arm | Source::Bicep) || arm::recognise(doc) {
        return arm::normalize(doc);
    }
    if source == Source::Terraform || terraform::recognise(doc) {
        return terraform::normalize(doc);
    }
    if obj.contains_key("apiVersion") && obj.contains_key("kind") {
        return normalize_kubernetes(doc, "");
    }
    if source == Source::Kubernetes {
        return Vec::new();
    }
    normalize_azure_ml(doc).into_iter().collect()
}

/// JSON pointer escaping (RFC 6901).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn join(base: &str, token: &str) -> String {
    format!("{base}/{}", escape(token))
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

pub(crate) fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn num_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Sets `sku` (canonical spelling when the catalog knows it) and remembers where it came from.
pub(crate) fn set_sku(r: &mut Resource, raw: &str, ptr: String) {
    let raw = raw.trim();
    if raw.is_empty() {
        return;
    }
    r.sku = Some(catalog::sku(raw).map_or_else(|| raw.to_string(), |f| f.name.to_string()));
    r.fields.insert("sku".into(), ptr);
}

pub(crate) fn set_region(r: &mut Resource, raw: &str, ptr: String) {
    if raw.trim().is_empty() {
        return;
    }
    r.region = Some(region::normalize(raw));
    r.fields.insert("region".into(), ptr);
}

pub(crate) fn merge_labels(r: &mut Resource, map: Option<&Value>, ptr: &str) {
    if let Some(Value::Object(m)) = map {
        for (k, v) in m {
            if let Some(t) = scalar_text(v) {
                r.fields
                    .entry(format!("labels.{k}"))
                    .or_insert_with(|| join(ptr, k));
                r.labels.insert(k.clone(), t);
            }
        }
    }
}

/// Workload intent: explicit label first, else what the kind implies.
pub(crate) fn resolve_intent(r: &mut Resource, implied: &str) {
    let explicit = r
        .labels
        .get(WORKLOAD_LABEL)
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| ["training", "inference", "batch", "interactive"].contains(&s.as_str()));
    r.workload = explicit.unwrap_or_else(|| implied.to_string());
    if let Some(iso) = r.labels.get(ISOLATION_LABEL) {
        r.isolation_required = iso.trim().eq_ignore_ascii_case("required");
    }
    if let Some(op) = r.labels.get(GPU_OPERATOR_LABEL) {
        r.gpu_operator = op.trim().eq_ignore_ascii_case("true");
    }
}

/// CUDA: a declared label wins; then environment variables; then the newest version
/// inferred from an image.
fn resolve_cuda(r: &mut Resource, env: &[(String, String, String)], images: &[(String, String)]) {
    if let Some(declared) = r.labels.get(CUDA_LABEL).cloned() {
        if let Some(ptr) = r.fields.get(&format!("labels.{CUDA_LABEL}")).cloned() {
            r.fields.insert("cuda".into(), ptr);
        }
        r.cuda = Some(declared.trim().to_string());
        r.cuda_source = Some(format!("label {CUDA_LABEL}"));
        return;
    }
    for (name, value, ptr) in env {
        if let Some(v) = cuda::cuda_of_env(name, value) {
            r.cuda = Some(v);
            r.cuda_source = Some(format!("environment variable {name}"));
            r.fields.insert("cuda".into(), ptr.clone());
            return;
        }
    }
    let mut best: Option<(crate::version::Version, String, &str, &str)> = None;
    for (image, ptr) in images {
        if let Some(v) = cuda::cuda_of_image(image)
            && let Some(parsed) = crate::version::Version::parse(&v)
            && best.as_ref().is_none_or(|(b, ..)| parsed > *b)
        {
            best = Some((parsed, v, image, ptr));
        }
    }
    if let Some((_, v, image, ptr)) = best {
        r.cuda = Some(v);
        r.cuda_source = Some(format!("image {image}"));
        r.fields.insert("cuda".into(), ptr.to_string());
    }
}

// ---------------------------------------------------------------------------
// Kubernetes

/// Where the pod specs of a Kubernetes kind live, with the replica count pointer.
/// Public for hosts that patch pod specs (the webhook's opt-in mutations).
pub fn pod_specs(doc: &Value, kind: &str, base: &str) -> Vec<(String, Option<String>)> {
    let one = |spec: &str, replicas: Option<&str>| {
        vec![(
            format!("{base}{spec}"),
            replicas.map(|r| format!("{base}{r}")),
        )]
    };
    match kind {
        "Pod" => one("/spec", None),
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            one("/spec/template/spec", Some("/spec/replicas"))
        }
        "DaemonSet" => one("/spec/template/spec", None),
        "Job" => one("/spec/template/spec", Some("/spec/parallelism")),
        "CronJob" => one("/spec/jobTemplate/spec/template/spec", None),
        "PyTorchJob" | "TFJob" | "MPIJob" | "XGBoostJob" | "PaddleJob" => {
            let field = match kind {
                "PyTorchJob" => "pytorchReplicaSpecs",
                "TFJob" => "tfReplicaSpecs",
                "MPIJob" => "mpiReplicaSpecs",
                "XGBoostJob" => "xgbReplicaSpecs",
                _ => "paddleReplicaSpecs",
            };
            let roles = format!("{base}/spec/{field}");
            match doc.pointer(&roles) {
                Some(Value::Object(m)) => m
                    .keys()
                    .map(|role| {
                        let r = join(&roles, role);
                        (format!("{r}/template/spec"), Some(format!("{r}/replicas")))
                    })
                    .collect(),
                _ => Vec::new(),
            }
        }
        "InferenceService" => one("/spec/predictor", Some("/spec/predictor/minReplicas")),
        _ => Vec::new(),
    }
}

fn normalize_kubernetes(doc: &Value, base: &str) -> Vec<Resource> {
    let kind = str_at(doc, "/kind").unwrap_or_default();
    let api = str_at(doc, "/apiVersion").unwrap_or_default();
    let mut r = Resource {
        source_kind: kind.to_string(),
        name: str_at(doc, "/metadata/name")
            .or_else(|| str_at(doc, "/metadata/generateName"))
            .unwrap_or("<unnamed>")
            .to_string(),
        namespace: str_at(doc, "/metadata/namespace").map(str::to_string),
        pointer: base.to_string(),
        ..Resource::default()
    };
    merge_labels(
        &mut r,
        doc.pointer("/metadata/labels"),
        &format!("{base}/metadata/labels"),
    );
    merge_labels(
        &mut r,
        doc.pointer("/metadata/annotations"),
        &format!("{base}/metadata/annotations"),
    );

    if api.starts_with("kaito.sh/") && kind == "Workspace" {
        r.kind = "kaito-workspace".into();
        if let Some(sku) = str_at(doc, "/resource/instanceType") {
            set_sku(&mut r, sku, format!("{base}/resource/instanceType"));
        }
        if let Some(count) = doc.pointer("/resource/count").and_then(int_of) {
            r.instance_count = Some(count);
            r.distributed = count > 1;
            r.fields
                .insert("instanceCount".into(), format!("{base}/resource/count"));
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

    if api.starts_with("containerservice.azure.com/") {
        return normalize_aso_aks(doc, kind, base, r);
    }
    if api.starts_with("machinelearningservices.azure.com/") {
        return arm::normalize_aso_ml(doc, kind, base, r);
    }

    if api.starts_with("kaito.sh/") {
        return normalize_kaito_other(doc, kind, base, r);
    }
    if api.starts_with("karpenter.sh/") && kind == "NodeClaim" {
        // A node request (gpu-provisioner / Karpenter): its instance type requirement.
        let reqs = "/spec/requirements";
        if let Some(Value::Array(list)) = doc.pointer(reqs) {
            for (i, q) in list.iter().enumerate() {
                let key = q.get("key").and_then(Value::as_str).unwrap_or_default();
                if (INSTANCE_TYPE_LABELS.contains(&key) || key == "karpenter.azure.com/sku-name")
                    && let Some(v) = q.pointer("/values/0").and_then(Value::as_str)
                {
                    set_sku(&mut r, v, format!("{base}{reqs}/{i}/values/0"));
                    break;
                }
            }
        }
        r.kind = "aks-node-pool".into();
        if let Some(Value::Array(t)) = doc.pointer("/spec/taints") {
            r.taints = t
                .iter()
                .map(|t| {
                    let f = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                    format!("{}={}:{}", f("key"), f("value"), f("effect"))
                })
                .collect();
        }
        resolve_intent(&mut r, "unknown");
        return vec![r];
    }

    let specs = pod_specs(doc, kind, "");
    if specs.is_empty() {
        return Vec::new();
    }
    r.kind = "k8s-workload".into();
    let mut env = Vec::new();
    let mut images = Vec::new();
    let mut total_replicas: i64 = 0;
    for (spec_ptr, replicas_ptr) in &specs {
        let replicas = replicas_ptr
            .as_deref()
            .and_then(|p| doc.pointer(p))
            .and_then(int_of)
            .unwrap_or(1);
        total_replicas += replicas;
        let Some(spec) = doc.pointer(spec_ptr) else {
            continue;
        };
        // Template labels count as the workload's labels too.
        if let Some(tpl) = spec_ptr.strip_suffix("/spec") {
            merge_labels(
                &mut r,
                doc.pointer(&format!("{tpl}/metadata/labels")),
                &format!("{base}{tpl}/metadata/labels"),
            );
            merge_labels(
                &mut r,
                doc.pointer(&format!("{tpl}/metadata/annotations")),
                &format!("{base}{tpl}/metadata/annotations"),
            );
        }
        read_pod_spec(
            &mut r,
            spec,
            &format!("{base}{spec_ptr}"),
            &mut env,
            &mut images,
        );
    }
    r.instance_count = Some(total_replicas);
    r.distributed = specs.len() > 1 && total_replicas > 1;
    let implied = match kind {
        "InferenceService" => "inference",
        "PyTorchJob" | "TFJob" | "MPIJob" | "XGBoostJob" | "PaddleJob" => "training",
        _ => "unknown",
    };
    resolve_intent(&mut r, implied);
    resolve_cuda(&mut r, &env, &images);
    vec![r]
}

/// KAITO kinds other than `Workspace`: `RAGEngine` (`spec.compute.instanceType`),
/// `InferenceSet` (`spec.template.resource.instanceType`), `MultiRoleInference`
/// (`spec.roles[].instanceType`, one resource per role).
fn normalize_kaito_other(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
    let mut sites: Vec<(String, String)> = Vec::new();
    match kind {
        "RAGEngine" => sites.push(("/spec/compute/instanceType".into(), template.name.clone())),
        "InferenceSet" => sites.push((
            "/spec/template/resource/instanceType".into(),
            template.name.clone(),
        )),
        "MultiRoleInference" => {
            if let Some(Value::Array(roles)) = doc.pointer("/spec/roles") {
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
        resolve_intent(&mut r, "inference");
        resolve_cuda(&mut r, &[], &[]);
        out.push(r);
    }
    out
}

/// Azure Service Operator v2 AKS objects: `ManagedCluster` (cluster + inline
/// `agentPoolProfiles`) and `ManagedClustersAgentPool`.
fn normalize_aso_aks(doc: &Value, kind: &str, base: &str, template: Resource) -> Vec<Resource> {
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
                doc.pointer("/spec/tags"),
                &format!("{base}/spec/tags"),
            );
            let version = str_at(doc, "/spec/kubernetesVersion").map(str::to_string);
            cluster.kubernetes_version = version.clone();
            resolve_intent(&mut cluster, "unknown");
            if let Some(Value::Array(pools)) = doc.pointer("/spec/agentPoolProfiles") {
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

pub(crate) fn read_agent_pool(r: &mut Resource, p: &Value, ptr: &str) {
    r.kind = "aks-node-pool".into();
    r.source_kind = "agentPool".into();
    if let Some(size) = p.get("vmSize").and_then(Value::as_str) {
        set_sku(r, size, format!("{ptr}/vmSize"));
    }
    let int = |k: &str| p.get(k).and_then(int_of);
    r.autoscale = p.get("enableAutoScaling").and_then(Value::as_bool);
    if let Some(min) = int("minCount") {
        r.min_nodes = Some(min);
        r.fields
            .insert("minNodes".into(), format!("{ptr}/minCount"));
    }
    if let Some(max) = int("maxCount") {
        r.max_nodes = Some(max);
        r.fields
            .insert("maxNodes".into(), format!("{ptr}/maxCount"));
    }
    r.instance_count = int("count");
    if let Some(os) = p.get("osType").and_then(Value::as_str) {
        r.os_type = Some(os.to_ascii_lowercase());
        r.fields.insert("osType".into(), format!("{ptr}/osType"));
    }
    if let Some(v) = p.get("orchestratorVersion").and_then(Value::as_str) {
        r.kubernetes_version = Some(v.to_string());
        r.fields.insert(
            "kubernetesVersion".into(),
            format!("{ptr}/orchestratorVersion"),
        );
    }
    if let Some(g) = p.get("gpuInstanceProfile").and_then(Value::as_str) {
        r.gpu_instance_profile = Some(g.to_string());
        r.fields.insert(
            "gpuInstanceProfile".into(),
            format!("{ptr}/gpuInstanceProfile"),
        );
    }
    if let Some(pr) = p.get("scaleSetPriority").and_then(Value::as_str) {
        r.priority = Some(if pr.eq_ignore_ascii_case("spot") {
            "spot".into()
        } else {
            "dedicated".into()
        });
        r.fields
            .insert("priority".into(), format!("{ptr}/scaleSetPriority"));
    }
    if let Some(Value::Array(t)) = p.get("nodeTaints") {
        r.taints = t
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        r.fields
            .insert("taints".into(), format!("{ptr}/nodeTaints"));
    }
    merge_labels(r, p.get("nodeLabels"), &format!("{ptr}/nodeLabels"));
    merge_labels(r, p.get("tags"), &format!("{ptr}/tags"));
    resolve_intent(r, "unknown");
}

const INSTANCE_TYPE_LABELS: [&str; 3] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "kubernetes.azure.com/vm-size",
];

fn read_pod_spec(
    r: &mut Resource,
    spec: &Value,
    ptr: &str,
    env: &mut Vec<(String, String, String)>,
    images: &mut Vec<(String, String)>,
) {
    if let Some(Value::Object(sel)) = spec.get("nodeSelector") {
        for (k, v) in sel {
            if let Some(t) = scalar_text(v) {
                r.node_selection.insert(k.clone(), t);
                r.fields
                    .entry(format!("nodeSelection.{k}"))
                    .or_insert_with(|| join(&format!("{ptr}/nodeSelector"), k));
            }
        }
    }
    let terms_ptr =
        "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    if let Some(Value::Array(terms)) = spec.pointer(terms_ptr) {
        for (ti, term) in terms.iter().enumerate() {
            if let Some(Value::Array(exprs)) = term.get("matchExpressions") {
                for (ei, e) in exprs.iter().enumerate() {
                    let key = e.get("key").and_then(Value::as_str);
                    let op = e.get("operator").and_then(Value::as_str);
                    let first = e.pointer("/values/0").and_then(scalar_text);
                    if let (Some(key), Some("In"), Some(value)) = (key, op, first) {
                        r.node_selection.entry(key.to_string()).or_insert(value);
                        r.fields
                            .entry(format!("nodeSelection.{key}"))
                            .or_insert_with(|| {
                                format!("{ptr}{terms_ptr}/{ti}/matchExpressions/{ei}/values/0")
                            });
                    }
                }
            }
        }
    }
    if r.sku.is_none() {
        for label in INSTANCE_TYPE_LABELS {
            if let Some(v) = r.node_selection.get(label).cloned() {
                let p = r
                    .fields
                    .get(&format!("nodeSelection.{label}"))
                    .cloned()
                    .unwrap_or_default();
                set_sku(r, &v, p);
                break;
            }
        }
    }
    if r.region.is_none()
        && let Some(v) = r
            .node_selection
            .get("topology.kubernetes.io/region")
            .cloned()
    {
        let p = r
            .fields
            .get("nodeSelection.topology.kubernetes.io/region")
            .cloned()
            .unwrap_or_default();
        set_region(r, &v, p);
    }
    if r.os_type.is_none() {
        r.os_type = r.node_selection.get("kubernetes.io/os").cloned();
    }
    if r.priority.is_none()
        && r.node_selection
            .get("karpenter.sh/capacity-type")
            .is_some_and(|v| v == "spot")
    {
        r.priority = Some("spot".into());
        if let Some(ptr) = r
            .fields
            .get("nodeSelection.karpenter.sh/capacity-type")
            .cloned()
        {
            r.fields.insert("priority".into(), ptr);
        }
    }
    if r.priority.is_none()
        && let Some(p) = r
            .node_selection
            .get("kubernetes.azure.com/scalesetpriority")
            .cloned()
    {
        let ptr = r
            .fields
            .get("nodeSelection.kubernetes.azure.com/scalesetpriority")
            .cloned()
            .unwrap_or_default();
        r.priority = Some(p.to_ascii_lowercase());
        r.fields.insert("priority".into(), ptr);
    }
    if let Some(Value::Array(tols)) = spec.get("tolerations") {
        if r.tolerations.is_empty() {
            r.fields
                .insert("tolerations".into(), format!("{ptr}/tolerations"));
        }
        r.tolerations.extend(tols.iter().cloned());
    }
    // Init containers run one at a time before the others: a pod needs the larger of
    // the biggest init container and the sum of the regular containers.
    let (mut init_gpus, mut init_rdma, mut pod_gpus, mut pod_rdma) = (0.0, 0.0, 0.0, 0.0);
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get(list) else {
            continue;
        };
        for (ci, c) in containers.iter().enumerate() {
            let cptr = format!("{ptr}/{list}/{ci}");
            if let Some(image) = c.get("image").and_then(Value::as_str) {
                images.push((image.to_string(), format!("{cptr}/image")));
                r.images.push(image.to_string());
                r.fields
                    .entry("images".into())
                    .or_insert_with(|| format!("{cptr}/image"));
            }
            if let Some(Value::Array(vars)) = c.get("env") {
                for (vi, var) in vars.iter().enumerate() {
                    if let (Some(n), Some(v)) = (
                        var.get("name").and_then(Value::as_str),
                        var.get("value").and_then(Value::as_str),
                    ) {
                        env.push((
                            n.to_string(),
                            v.to_string(),
                            format!("{cptr}/env/{vi}/value"),
                        ));
                    }
                }
            }
            let (g, d) = device_requests(r, c.get("resources"), &format!("{cptr}/resources"));
            if list == "initContainers" {
                init_gpus = f64::max(init_gpus, g);
                init_rdma = f64::max(init_rdma, d);
            } else {
                pod_gpus += g;
                pod_rdma += d;
            }
        }
    }
    r.gpu_requests = r.gpu_requests.max(pod_gpus.max(init_gpus));
    r.rdma_requests = r.rdma_requests.max(pod_rdma.max(init_rdma));
}

/// GPU and RDMA device counts of one container's `resources` (limits win over requests).
fn device_requests(r: &mut Resource, res: Option<&Value>, ptr: &str) -> (f64, f64) {
    let mut gpus = 0.0;
    let mut rdma = 0.0;
    for section in ["limits", "requests"] {
        let Some(Value::Object(m)) = res.and_then(|v| v.get(section)) else {
            continue;
        };
        let (mut g, mut d) = (0.0, 0.0);
        for (k, v) in m {
            let n = num_of(v).unwrap_or(0.0);
            let p = join(&format!("{ptr}/{section}"), k);
            if k == "nvidia.com/gpu" || k == "amd.com/gpu" || k.starts_with("nvidia.com/mig-") {
                g += n;
                r.fields.entry("gpuRequests".into()).or_insert(p.clone());
                if let Some(profile) = k.strip_prefix("nvidia.com/mig-")
                    && r.gpu_instance_profile.is_none()
                {
                    r.gpu_instance_profile = Some(profile.to_string());
                    r.fields.insert("gpuInstanceProfile".into(), p.clone());
                }
            } else if k.starts_with("rdma/") || k.starts_with("mellanox.com/") {
                d += n;
                r.fields.entry("rdmaRequests".into()).or_insert(p);
            }
        }
        if g > 0.0 || d > 0.0 {
            gpus = g;
            rdma = d;
            break;
        }
    }
    (gpus, rdma)
}

// ---------------------------------------------------------------------------
// Azure ML CLI v2 YAML

fn normalize_azure_ml(doc: &Value) -> Option<Resource> {
    let schema = str_at(doc, "/$schema")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let ty = str_at(doc, "/type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let has = |k: &str| doc.get(k).is_some();
    let (kind, implied) = if ty == "amlcompute" || schema.contains("amlcompute.schema") {
        ("aml-compute-cluster", "unknown")
    } else if ty == "computeinstance" || schema.contains("computeinstance.schema") {
        ("aml-compute-instance", "interactive")
    } else if schema.contains("onlinedeployment.schema")
        || (has("endpoint_name") && has("instance_type"))
    {
        ("aml-online-deployment", "inference")
    } else if ty == "kubernetes"
        && (has("resource_id") || schema.contains("kubernetescompute.schema"))
    {
        // Attached Kubernetes compute: a cluster that Azure ML schedules on; no VM size.
        ("aml-kubernetes-compute", "unknown")
    } else if schema.contains("batchdeployment.schema")
        || (has("endpoint_name") && (has("compute") || has("mini_batch_size")))
    {
        ("aml-batch-deployment", "batch")
    } else if schema.contains("component.schema") {
        // Components declare code and environment but not where they run.
        return None;
    } else if ["command", "sweep", "pipeline"].contains(&ty.as_str())
        || schema.contains("job.schema")
    {
        ("aml-job", "training")
    } else {
        return None;
    };
    let mut r = Resource {
        kind: kind.into(),
        source_kind: if ty.is_empty() {
            kind.to_string()
        } else {
            ty.clone()
        },
        name: str_at(doc, "/name")
            .or_else(|| str_at(doc, "/display_name"))
            .unwrap_or("<unnamed>")
            .to_string(),
        ..Resource::default()
    };
    merge_labels(&mut r, doc.get("tags"), "/tags");
    match kind {
        "aml-compute-cluster" | "aml-compute-instance" => {
            if let Some(size) = str_at(doc, "/size") {
                set_sku(&mut r, size, "/size".into());
            }
            if let Some(min) = doc.get("min_instances").and_then(int_of) {
                r.min_nodes = Some(min);
                r.fields.insert("minNodes".into(), "/min_instances".into());
            }
            if let Some(max) = doc.get("max_instances").and_then(int_of) {
                r.max_nodes = Some(max);
                r.fields.insert("maxNodes".into(), "/max_instances".into());
            }
            if kind == "aml-compute-cluster" {
                // The CLI's defaults: min_instances 0, max_instances 1.
                let (min, max) = (r.min_nodes.unwrap_or(0), r.max_nodes.unwrap_or(1));
                r.autoscale = Some(max > min);
                r.instance_count = Some(max);
            }
            if let Some(tier) = str_at(doc, "/tier") {
                r.priority = Some(match tier.to_ascii_lowercase().replace('_', "-").as_str() {
                    "low-priority" | "lowpriority" => "low-priority".into(),
                    "spot" => "spot".into(),
                    other => other.to_string(),
                });
                r.fields.insert("priority".into(), "/tier".into());
            }
        }
        "aml-kubernetes-compute" => {}
        "aml-online-deployment" => {
            if let Some(t) = str_at(doc, "/instance_type") {
                // Kubernetes online deployments name a cluster instance type, not a VM size.
                if ty != "kubernetes" || catalog::sku_well_formed(t) {
                    set_sku(&mut r, t, "/instance_type".into());
                }
            }
            if let Some(n) = doc.get("instance_count").and_then(int_of) {
                r.instance_count = Some(n);
                r.fields
                    .insert("instanceCount".into(), "/instance_count".into());
            }
            if let Some(Value::Object(scale)) = doc.get("scale_settings") {
                if let Some(min) = scale.get("min_instances").and_then(int_of) {
                    r.min_nodes = Some(min);
                    r.fields
                        .insert("minNodes".into(), "/scale_settings/min_instances".into());
                }
                if let Some(max) = scale.get("max_instances").and_then(int_of) {
                    r.max_nodes = Some(max);
                }
                r.autoscale = scale
                    .get("type")
                    .and_then(Value::as_str)
                    .map(|t| t.eq_ignore_ascii_case("target_utilization"));
            }
            let (g, d) = device_requests(&mut r, doc.get("resources"), "/resources");
            r.gpu_requests = g;
            r.rdma_requests = d;
        }
        _ => {
            // Jobs and batch deployments: `resources.instance_type` / `instance_count`.
            if let Some(t) = str_at(doc, "/resources/instance_type")
                && catalog::sku_well_formed(t)
            {
                set_sku(&mut r, t, "/resources/instance_type".into());
            }
            if let Some(n) = doc.pointer("/resources/instance_count").and_then(int_of) {
                r.instance_count = Some(n);
                r.distributed = n > 1;
                r.fields
                    .insert("instanceCount".into(), "/resources/instance_count".into());
            }
            if let Some(tier) = str_at(doc, "/queue_settings/job_tier")
                && tier.eq_ignore_ascii_case("spot")
            {
                r.priority = Some("spot".into());
                r.fields
                    .insert("priority".into(), "/queue_settings/job_tier".into());
            }
        }
    }
    if let Some(loc) = str_at(doc, "/location") {
        set_region(&mut r, loc, "/location".into());
    }
    // Environments: an inline image, or a reference whose name carries the CUDA version.
    let mut images = Vec::new();
    match doc.get("environment") {
        Some(Value::String(s)) if !s.starts_with("file:") => {
            images.push((s.clone(), "/environment".to_string()))
        }
        Some(Value::Object(env)) => {
            if let Some(i) = env.get("image").and_then(Value::as_str) {
                images.push((i.to_string(), "/environment/image".to_string()));
            }
        }
        _ => {}
    }
    for (image, ptr) in &images {
        r.images.push(image.clone());
        r.fields
            .entry("images".into())
            .or_insert_with(|| ptr.clone());
    }
    let mut env = Vec::new();
    if let Some(Value::Object(vars)) = doc.get("environment_variables") {
        for (k, v) in vars {
            if let Some(t) = scalar_text(v) {
                env.push((k.clone(), t, join("/environment_variables", k)));
            }
        }
    }
    resolve_intent(&mut r, implied);
    resolve_cuda(&mut r, &env, &images);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let r = normalize(&job, Source::Unknown).remove(0);
        assert_eq!(
            (r.workload.as_str(), r.instance_count, r.distributed),
            ("training", Some(4), true)
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
mod bare_request_tests {
    use super::*;
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
