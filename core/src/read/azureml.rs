//! Azure ML CLI v2 YAML: compute (`amlcompute`, `computeinstance`, attached `kubernetes`),
//! online and batch deployments, and jobs (`command`, `sweep`, `pipeline`, `parallel`).
//!
//! A pipeline job gives one resource for itself and one per step under `jobs.<step>`, named
//! `<pipeline>/<step>`: each step has its own `resources.instance_type` / `instance_count`,
//! `distribution`, `environment` (or that of its inline `component`, or its sweep `trial`) and
//! `compute`, which defaults to the pipeline's `settings.default_compute` (then its top-level
//! `compute`), as the CLI v2 pipeline job schema defines it.

use super::common::{
    device_requests, int_of, join, merge_labels, resolve_cuda, resolve_intent, scalar_text,
    set_region, set_sku, str_at,
};
use crate::catalog;
use crate::compute::Resource;
use crate::read::common::At;
use serde_json::Value;

/// Images with the pointer they were read from.
type Images = Vec<(String, String)>;
/// Environment variables: name, value, pointer.
type EnvVars = Vec<(String, String, String)>;

/// Job types that run code on compute (the `type` of a job or a pipeline step).
const JOB_TYPES: [&str; 5] = ["command", "sweep", "pipeline", "parallel", "spark"];

pub(super) fn normalize(doc: &Value) -> Vec<Resource> {
    let Some(mut r) = normalize_one(doc) else {
        return Vec::new();
    };
    let steps = pipeline_steps(doc, &r);
    if r.kind == "aml-job"
        && r.source_kind == "pipeline"
        && let Some((c, p)) = compute_of(doc, "")
    {
        r.parent = Some(format!("compute {c}"));
        r.fields.insert("parent".into(), p);
    }
    let mut out = vec![r];
    out.extend(steps);
    out
}

fn normalize_one(doc: &Value) -> Option<Resource> {
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
    } else if schema.contains("/workspace.schema") {
        // A workspace (`az ml workspace create --file`): its `location` is the region of
        // the deployments and jobs that do not name one.
        ("aml-workspace", "unknown")
    } else if schema.contains("component.schema") {
        // Components declare code and environment but not where they run.
        return None;
    } else if ty == "parallel" {
        ("aml-job", "batch")
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
            .or_else(|| str_at(doc, "/experiment_name"))
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
        "aml-kubernetes-compute" | "aml-workspace" => {}
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
        _ => read_job_resources(&mut r, doc, ""),
    }
    if let Some(loc) = str_at(doc, "/location") {
        set_region(&mut r, loc, "/location".into());
    }
    let (images, env) = job_environment(doc, "");
    for (image, ptr) in &images {
        r.images.push(image.clone());
        r.fields
            .entry("images".into())
            .or_insert_with(|| ptr.clone());
    }
    resolve_intent(&mut r, implied);
    resolve_cuda(&mut r, &env, &images);
    Some(r)
}

/// Jobs, steps and batch deployments: `resources.instance_type` / `instance_count`,
/// `distribution` and `queue_settings.job_tier`, at `ptr` in the document.
fn read_job_resources(r: &mut Resource, node: &Value, ptr: &str) {
    if let Some(t) = str_at(node, "/resources/instance_type")
        && catalog::sku_well_formed(t)
    {
        set_sku(r, t, format!("{ptr}/resources/instance_type"));
    }
    if let Some(n) = node.at("/resources/instance_count").and_then(int_of) {
        r.instance_count = Some(n);
        r.distributed = n > 1;
        r.fields.insert(
            "instanceCount".into(),
            format!("{ptr}/resources/instance_count"),
        );
    }
    if let Some(tier) = str_at(node, "/queue_settings/job_tier")
        && tier.eq_ignore_ascii_case("spot")
    {
        r.priority = Some("spot".into());
        r.fields
            .insert("priority".into(), format!("{ptr}/queue_settings/job_tier"));
    }
}

/// Environment images and variables of a job or step at `ptr`: its own `environment`, else
/// that of its sweep `trial`, its parallel `task` or its inline `component`.
fn job_environment(node: &Value, ptr: &str) -> (Images, EnvVars) {
    let mut images = Vec::new();
    for holder in ["", "/trial", "/task", "/component"] {
        // Environments: an inline image, or a reference whose name carries the CUDA version.
        match node.at(&format!("{holder}/environment")) {
            Some(Value::String(s)) if !s.starts_with("file:") && !s.starts_with("./") => {
                images.push((s.clone(), format!("{ptr}{holder}/environment")));
            }
            Some(Value::Object(env)) => {
                if let Some(i) = env.get("image").and_then(Value::as_str) {
                    images.push((i.to_string(), format!("{ptr}{holder}/environment/image")));
                }
            }
            _ => {}
        }
        if !images.is_empty() {
            break;
        }
    }
    let mut env = Vec::new();
    for holder in ["", "/trial", "/task", "/component"] {
        let at = format!("{holder}/environment_variables");
        if let Some(Value::Object(vars)) = node.at(&at) {
            for (k, v) in vars {
                if let Some(t) = scalar_text(v) {
                    env.push((k.clone(), t, join(&format!("{ptr}{at}"), k)));
                }
            }
        }
    }
    (images, env)
}

/// The compute a job or step runs on (`compute`), or for the pipeline itself its
/// `settings.default_compute`, with its pointer.
fn compute_of<'a>(node: &'a Value, ptr: &str) -> Option<(&'a str, String)> {
    for at in ["/compute", "/settings/default_compute"] {
        if let Some(c) = str_at(node, at).filter(|c| !c.trim().is_empty()) {
            return Some((c, format!("{ptr}{at}")));
        }
    }
    None
}

/// The steps of a pipeline job (`jobs.<step>`), each a resource named `<pipeline>/<step>`.
fn pipeline_steps(doc: &Value, pipeline: &Resource) -> Vec<Resource> {
    if pipeline.kind != "aml-job" || pipeline.source_kind != "pipeline" {
        return Vec::new();
    }
    let Some(Value::Object(jobs)) = doc.get("jobs") else {
        return Vec::new();
    };
    let default_compute = str_at(doc, "/settings/default_compute")
        .map(|c| (c, "/settings/default_compute".to_string()))
        .or_else(|| str_at(doc, "/compute").map(|c| (c, "/compute".to_string())));
    let mut out = Vec::new();
    for (step_name, step) in jobs {
        if !step.is_object() {
            continue;
        }
        let ptr = join("/jobs", step_name);
        let ty = str_at(step, "/type")
            .or_else(|| str_at(step, "/component/type"))
            .unwrap_or("command")
            .to_ascii_lowercase();
        if !JOB_TYPES.contains(&ty.as_str()) {
            // Data transfer, import and other non-compute steps.
            continue;
        }
        let mut r = Resource {
            kind: "aml-job".into(),
            source_kind: ty.clone(),
            name: format!("{}/{step_name}", pipeline.name),
            pointer: ptr.clone(),
            ..Resource::default()
        };
        // A step is tagged like its pipeline unless it says otherwise.
        for (k, v) in &pipeline.labels {
            r.labels.insert(k.clone(), v.clone());
            if let Some(p) = pipeline.fields.get(&format!("labels.{k}")) {
                r.fields.insert(format!("labels.{k}"), p.clone());
            }
        }
        merge_labels(&mut r, step.get("tags"), &format!("{ptr}/tags"));
        read_job_resources(&mut r, step, &ptr);
        let compute = str_at(step, "/compute")
            .filter(|c| !c.trim().is_empty())
            .map(|c| (c, format!("{ptr}/compute")))
            .or_else(|| default_compute.clone());
        if let Some((c, p)) = compute {
            r.parent = Some(format!("compute {c}"));
            r.fields.insert("parent".into(), p);
        }
        let (images, env) = job_environment(step, &ptr);
        for (image, p) in &images {
            r.images.push(image.clone());
            r.fields.entry("images".into()).or_insert_with(|| p.clone());
        }
        let implied = match ty.as_str() {
            "parallel" => "batch",
            _ => "training",
        };
        resolve_intent(&mut r, implied);
        resolve_cuda(&mut r, &env, &images);
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::compute::Source;
    use crate::read::normalize;
    use serde_json::json;

    #[test]
    fn pipeline_steps_are_resources_with_their_own_compute_and_resources() {
        let doc = json!({"$schema": "https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json",
            "type": "pipeline", "display_name": "nlp", "tags": {"team": "a"},
            "settings": {"default_compute": "azureml:cpu-cluster"},
            "jobs": {
                "prep": {"type": "command", "environment": "azureml:sklearn@latest"},
                "train": {"type": "command", "compute": "azureml:gpu-cluster",
                    "resources": {"instance_type": "Standard_NC6s_v3", "instance_count": 2},
                    "distribution": {"type": "mpi", "process_count_per_instance": 1},
                    "environment": {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.8-cudnn8-ubuntu22.04"}},
                "tune": {"type": "sweep", "trial": {"command": "python t.py",
                    "environment": {"image": "nvidia/cuda:12.1.0-devel-ubuntu22.04"}},
                    "resources": {"instance_type": "Standard_NC24ads_A100_v4"}},
                "score": {"type": "parallel", "resources": {"instance_count": 3},
                    "task": {"type": "run_function", "environment": {"image": "nvidia/cuda:12.2.0-runtime-ubuntu22.04"}}},
                "copy": {"type": "data_transfer"}}});
        let out = normalize(&doc, Source::AzureMl);
        let names: Vec<&str> = out.iter().map(|r| r.display.as_str()).collect();
        assert_eq!(
            names,
            [
                "Azure ML pipeline job nlp",
                "Azure ML command job nlp/prep",
                "Azure ML parallel job nlp/score",
                "Azure ML command job nlp/train",
                "Azure ML sweep job nlp/tune"
            ]
        );
        let train = &out[3];
        assert_eq!(train.sku.as_deref(), Some("Standard_NC6s_v3"));
        assert_eq!(train.fields["sku"], "/jobs/train/resources/instance_type");
        assert_eq!((train.instance_count, train.distributed), (Some(2), true));
        assert_eq!(train.parent.as_deref(), Some("compute azureml:gpu-cluster"));
        assert_eq!(train.cuda.as_deref(), Some("11.8"));
        assert_eq!(train.fields["cuda"], "/jobs/train/environment/image");
        assert_eq!(train.labels["team"], "a");
        assert_eq!(train.workload, "training");
        // A step without compute inherits the pipeline's default compute.
        assert_eq!(
            out[1].parent.as_deref(),
            Some("compute azureml:cpu-cluster")
        );
        assert_eq!(out[1].fields["parent"], "/settings/default_compute");
        // Sweep: the trial's environment; parallel: the task's, and intent batch.
        assert_eq!(out[4].fields["cuda"], "/jobs/tune/trial/environment/image");
        assert_eq!(out[4].sku.as_deref(), Some("Standard_NC24ads_A100_v4"));
        assert_eq!(
            (out[2].workload.as_str(), out[2].instance_count),
            ("batch", Some(3))
        );
        assert_eq!(out[2].fields["cuda"], "/jobs/score/task/environment/image");
    }

    #[test]
    fn a_sweep_job_reads_its_trial_environment() {
        let doc = json!({"type": "sweep", "name": "s", "trial": {"environment": {"image": "nvidia/cuda:12.4.1-base"}},
            "resources": {"instance_type": "Standard_NC6"}});
        let out = normalize(&doc, Source::AzureMl);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cuda.as_deref(), Some("12.4.1"));
        assert_eq!(out[0].fields["cuda"], "/trial/environment/image");
    }
}
