//! The compute model type: one normalised view of "where does this GPU work run" for every
//! input format. The readers in [`crate::read`] fill it; rules read it as `resource`. Each
//! [`Resource`] remembers where its fields came from (JSON pointers into the document) so
//! hosts can point findings at the right line.

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
    /// The name the document gives it (Kubernetes `metadata.name`, the Azure or Terraform
    /// resource name; `cluster/pool` for a pool declared in its cluster, `pipeline/step`
    /// for a pipeline step).
    pub name: String,
    /// Kubernetes namespace (`metadata.namespace`); None for Azure resources and for
    /// objects that do not set one.
    pub namespace: Option<String>,
    /// How messages name the resource: `Deployment serving/triton`, `Azure ML compute cluster gpu`.
    pub display: String,
    /// VM size in its canonical catalog spelling when known, else as written.
    pub sku: Option<String>,
    /// Region as a programmatic name (`eastus2`), normalised from display names.
    pub region: Option<String>,
    /// Availability zones the declaration asks for, as written (`["1", "2"]`): an AKS pool's
    /// `availabilityZones` / Terraform `zones`, a VM's or scale set's `zones` / `zone`. Empty
    /// when it asks for none (the platform places the nodes in the region).
    pub zones: Vec<String>,
    /// Fewest nodes or instances the compute scales down to (Azure ML `min_instances` /
    /// `minNodeCount`, an AKS pool's `minCount`); None when not written (the platform's
    /// default applies).
    pub min_nodes: Option<i64>,
    /// Most nodes or instances it scales up to (`max_instances` / `maxNodeCount`, an AKS
    /// pool's `maxCount`); None when not written.
    pub max_nodes: Option<i64>,
    /// Whether the node count scales: an AKS pool's `enableAutoScaling`, an online
    /// deployment's `target_utilization` scaling, or max > min for an Azure ML cluster;
    /// None when the document does not say.
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
    /// Node operating system: an Azure `osType` lowercased (`linux`, `windows`), or a pod's
    /// `kubernetes.io/os` node selector as written; None when not stated.
    pub os_type: Option<String>,
    /// Kubernetes version as written (`1.29.2`): an AKS cluster's, or a pool's own
    /// `orchestratorVersion`, else its cluster's; None when not stated.
    pub kubernetes_version: Option<String>,
    /// MIG profile: an AKS pool's `gpuInstanceProfile` (`MIG1g`), or the profile of the
    /// first `nvidia.com/mig-<profile>` resource a pod requests (`1g.10gb`).
    pub gpu_instance_profile: Option<String>,
    /// An AKS pool's mode, lowercased: `system` or `user` (ARM/ASO `mode`, Terraform's
    /// `mode` of a separate pool, whose default is `user`; a Terraform `default_node_pool`
    /// is `system`); None when not stated.
    pub pool_mode: Option<String>,
    /// An AKS pool's OS SKU as written (`Ubuntu`, `AzureLinux`, `Windows2022`): ARM/ASO
    /// `osSKU`, `az` output `osSku`, Terraform `os_sku`; None when not stated (Ubuntu for
    /// Linux pools is AKS's default).
    pub os_sku: Option<String>,
    /// Whether AKS installs the GPU driver on an AKS pool, lowercased: `install` or `none`
    /// (ARM/ASO/`az` `gpuProfile.driver`, Terraform `gpu_driver`); None when not stated
    /// (AKS installs it on NVIDIA sizes by default).
    pub gpu_driver: Option<String>,
    /// A KAITO workspace's preset (`inference.preset.name` or `tuning.preset.name`; an
    /// `InferenceSet`'s `spec.template.inference.preset.name`), as written; None otherwise.
    pub preset: Option<String>,
    /// Pod tolerations as written (JSON objects), from every pod spec of the object.
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
    /// The Azure resource id, for a resource read from an export of what already runs
    /// (Resource Graph, `az`, an ARM GET response); hosts show it as the resource's name.
    pub azure_id: Option<String>,
    /// JSON pointer of the resource within the document.
    #[serde(skip)]
    pub pointer: String,
    /// Which part of the object this resource is, when an object has several (a training
    /// job's replica type `Worker`, a Ray group, a KServe `predictor`); shown in `display`.
    #[serde(skip)]
    pub role: Option<String>,
    /// Model field -> JSON pointer of the field it was read from.
    #[serde(skip)]
    pub fields: BTreeMap<String, String>,
}

impl Resource {
    /// Whether the resource states a fact a compute rule judges. Every kind but
    /// `k8s-workload` is compute by what it is (a cluster, a pool, an Azure ML compute, a
    /// VM); a Kubernetes workload is compute when it states a VM size, GPU or RDMA
    /// requests, a CUDA version (image, environment or label), a MIG profile, a region, a
    /// priority (spot), or a `computeguard.io/*` label. The webhook admits a workload that
    /// states none of them without running policies that declare they judge only such
    /// facts (the built-in ones; see `computeguard_server::LoadedPolicy`).
    pub fn declares_compute(&self) -> bool {
        self.kind != "k8s-workload"
            || self.sku.is_some()
            || self.gpu_requests > 0.0
            || self.rdma_requests > 0.0
            || self.cuda.is_some()
            || self.gpu_instance_profile.is_some()
            || self.region.is_some()
            || self.priority.is_some()
            || self.isolation_required
            || self.gpu_operator
            || self
                .labels
                .keys()
                .any(|k| k.starts_with("computeguard.io/"))
    }
}

/// Which input format a document is in, as far as the caller knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A Kubernetes object (string `apiVersion` and `kind`), a `List` of them included.
    Kubernetes,
    /// A Kubernetes `AdmissionReview` with a `request`, or a bare AdmissionRequest; the
    /// object under review is read.
    AdmissionReview,
    /// An Azure ML CLI v2 document (compute, online or batch deployment, job), as JSON.
    AzureMl,
    /// An ARM template, ARM REST body or REST specification example (JSON).
    Arm,
    /// A Bicep file, translated by the host into the ARM template shape.
    Bicep,
    /// Terraform: a configuration in the JSON syntax (`.tf` decoded by the host, `.tf.json`)
    /// or a `terraform show -json` plan or state.
    Terraform,
    /// Not known: the format is recognised from the document.
    Unknown,
}
