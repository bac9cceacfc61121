//! What a change holds besides compute that rules about a node pool need: what installs an
//! NVIDIA GPU driver in the cluster (the GPU Operator with its driver enabled, a driver
//! DaemonSet) and which workloads request MIG slices (`nvidia.com/mig-*`).
//!
//! [`change_facts`] reads one document; a host that checks a change of several documents
//! adds them up ([`ChangeFacts::extend`]) and gives them to the built-in policy as
//! `settings.change` with `complete: true` (`computeguard check` does). The evaluator adds
//! the facts of the document it evaluates to those before the rules of a document with an
//! AKS node pool run, so a pool and a GPU Operator in one file (a Terraform module, a
//! Kubernetes `List`) are judged together by every host, the webhook included.
//!
//! The GPU Operator is recognised as NVIDIA ships it: a `ClusterPolicy` or `NVIDIADriver`
//! object (`nvidia.com/*`), or its Helm chart `gpu-operator` deployed by Terraform
//! (`helm_release`), Flux (`HelmRelease`), Argo CD (`Application`) or the k3s/RKE2 Helm
//! controller (`HelmChart`); its driver is on unless `driver.enabled` is false (the chart's
//! default is true). The Flux, Argo CD, k3s and driver `DaemonSet` forms are compiled for the
//! host only (`check` reads them in every file), not into the policy component, whose size
//! is budgeted. Values that cannot be read (an expression, a values file) leave the
//! driver's state unknown (`driverEnabled: null`), never off.

use crate::compute::Resource;
use crate::read::common::At;
use serde_json::{Value, json};

/// Something in the change that installs an NVIDIA GPU driver.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverInstaller {
    /// What it is, for messages: `helm_release gpu_operator (chart gpu-operator)`.
    pub by: String,
    /// The NVIDIA GPU Operator (or its driver CR), as opposed to a driver DaemonSet.
    pub operator: bool,
    /// Whether its driver is enabled; none when the values cannot be read.
    pub driver_enabled: Option<bool>,
}

/// A workload that requests a MIG slice.
#[derive(Clone, Debug, PartialEq)]
pub struct MigWorkload {
    /// How messages name it: `Deployment serving/triton`.
    pub workload: String,
    /// The MIG profile of its request (`1g.10gb`).
    pub profile: String,
    /// The AKS pool it selects by `kubernetes.azure.com/agentpool` (or `agentpool`), if any.
    pub pool: Option<String>,
    /// The VM size it selects by `node.kubernetes.io/instance-type`, if any.
    pub sku: Option<String>,
}

/// What one document, or a whole change, holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeFacts {
    /// What installs a GPU driver.
    pub gpu_drivers: Vec<DriverInstaller>,
    /// Workloads requesting MIG slices.
    pub mig_workloads: Vec<MigWorkload>,
}

impl ChangeFacts {
    /// Adds `other`'s facts, each once.
    pub fn extend(&mut self, other: ChangeFacts) {
        for d in other.gpu_drivers {
            if !self.gpu_drivers.iter().any(|x| x.by == d.by) {
                self.gpu_drivers.push(d);
            }
        }
        for w in other.mig_workloads {
            if !self.mig_workloads.contains(&w) {
                self.mig_workloads.push(w);
            }
        }
    }

    /// Whether there is nothing.
    pub fn is_empty(&self) -> bool {
        self.gpu_drivers.is_empty() && self.mig_workloads.is_empty()
    }

    /// `settings.change` as the built-in policy reads it: these facts, and `complete`
    /// when they are those of the whole change.
    pub fn to_settings(&self, complete: bool) -> Value {
        // Written by hand (no serde derive): it costs the policy component less.
        let drivers: Vec<Value> = self
            .gpu_drivers
            .iter()
            .map(|d| json!({"by": d.by, "operator": d.operator, "driverEnabled": d.driver_enabled}))
            .collect();
        let workloads: Vec<Value> = self
            .mig_workloads
            .iter()
            .map(|w| json!({"workload": w.workload, "profile": w.profile, "pool": w.pool, "sku": w.sku}))
            .collect();
        json!({"complete": complete, "gpuDrivers": drivers, "migWorkloads": workloads})
    }

    /// Reads `settings.change` back (what a host gave); nothing when absent or malformed.
    pub fn from_settings(settings: &Value) -> (ChangeFacts, bool) {
        let Some(c) = settings.get("change") else {
            return (ChangeFacts::default(), false);
        };
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let list = |k: &str| {
            c.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let facts = ChangeFacts {
            gpu_drivers: list("gpuDrivers")
                .iter()
                .filter_map(|d| {
                    Some(DriverInstaller {
                        by: text(d, "by")?,
                        operator: d.get("operator").and_then(Value::as_bool).unwrap_or(false),
                        driver_enabled: d.get("driverEnabled").and_then(Value::as_bool),
                    })
                })
                .collect(),
            mig_workloads: list("migWorkloads")
                .iter()
                .filter_map(|w| {
                    Some(MigWorkload {
                        workload: text(w, "workload")?,
                        profile: text(w, "profile").unwrap_or_default(),
                        pool: text(w, "pool"),
                        sku: text(w, "sku"),
                    })
                })
                .collect(),
        };
        let complete = c.get("complete").and_then(Value::as_bool).unwrap_or(false);
        (facts, complete)
    }
}

/// Whether a chart reference names NVIDIA's GPU Operator chart (`gpu-operator`,
/// `nvidia/gpu-operator`, an OCI or repository URL ending in it).
fn is_gpu_operator_chart(chart: &str) -> bool {
    let last = chart
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(chart);
    last.eq_ignore_ascii_case("gpu-operator")
}

/// `driver.enabled` in a Helm values text (YAML as written in a heredoc or a
/// `valuesContent`): `Some(false)` for `driver:` followed by a more indented
/// `enabled: false`; `Some(true)` for `enabled: true`; none when the text does not say.
fn driver_enabled_in_values(text: &str) -> Option<bool> {
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("driver.enabled:") {
            return parse_bool(rest);
        }
        if t == "driver:" {
            while let Some(next) = lines.peek() {
                let n_indent = next.len() - next.trim_start().len();
                let n = next.trim();
                if !n.is_empty() && n_indent <= indent {
                    break;
                }
                if let Some(rest) = n.strip_prefix("enabled:")
                    && n_indent > indent
                {
                    return parse_bool(rest);
                }
                lines.next();
            }
        }
    }
    None
}

fn parse_bool(s: &str) -> Option<bool> {
    let s = s
        .split('#')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(['"', '\'']);
    match s.to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn value_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => parse_bool(s),
        _ => None,
    }
}

/// One object or each of an array of objects (Terraform blocks decode as either).
fn each(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().filter(|i| i.is_object()).collect(),
        Value::Object(_) => vec![v],
        _ => Vec::new(),
    }
}

/// A Terraform `helm_release` of the GPU Operator: its driver state from `set` blocks
/// (`driver.enabled`) or `values` texts; the chart's default (on) when neither says;
/// unknown when a values entry is an expression it cannot read.
fn helm_release_driver(body: &Value) -> Option<bool> {
    for set in body.get("set").map(each).unwrap_or_default() {
        if set.get("name").and_then(Value::as_str) == Some("driver.enabled") {
            return set.get("value").and_then(value_bool);
        }
    }
    let mut unreadable = false;
    for v in body
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match v.as_str() {
            Some(t) if t.trim_start().starts_with("${") => unreadable = true,
            Some(t) => {
                if let Some(b) = driver_enabled_in_values(t) {
                    return Some(b);
                }
            }
            None => unreadable = true,
        }
    }
    (!unreadable).then_some(true)
}

fn named(doc: &Value) -> String {
    let name = doc
        .at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match doc.at("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// The Kubernetes objects of `doc`: itself, or the items of a `List`.
fn objects(doc: &Value) -> Vec<&Value> {
    match (doc.get("kind").and_then(Value::as_str), doc.get("items")) {
        (Some(k), Some(Value::Array(items))) if k.ends_with("List") => items.iter().collect(),
        _ => vec![doc],
    }
}

fn kubernetes_installers(doc: &Value, out: &mut Vec<DriverInstaller>) {
    for o in objects(doc) {
        let api = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
        let group = api.split('/').next().unwrap_or("");
        let installer = match (group, kind) {
            ("nvidia.com", "ClusterPolicy") => Some((
                format!("ClusterPolicy {} of the NVIDIA GPU Operator", named(o)),
                true,
                // The ClusterPolicy's driver is on unless spec.driver.enabled is false.
                o.at("/spec/driver/enabled").map_or(Some(true), value_bool),
            )),
            ("nvidia.com", "NVIDIADriver") => Some((
                format!("NVIDIADriver {} of the NVIDIA GPU Operator", named(o)),
                true,
                Some(true),
            )),
            // Objects that deploy the chart: read by `check` in the files of a change; the
            // policy component leaves them out (its size), the webhook seldom sees them
            // next to a pool.
            #[cfg(not(target_family = "wasm"))]
            ("helm.toolkit.fluxcd.io", "HelmRelease") => {
                let chart = o
                    .at("/spec/chart/spec/chart")
                    .or_else(|| o.at("/spec/chartRef/name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                is_gpu_operator_chart(chart).then(|| {
                    (
                        format!("HelmRelease {} (chart {chart})", named(o)),
                        true,
                        o.at("/spec/values/driver/enabled").map_or(
                            // valuesFrom (a ConfigMap or Secret) cannot be read here.
                            if o.at("/spec/valuesFrom").is_some() {
                                None
                            } else {
                                Some(true)
                            },
                            value_bool,
                        ),
                    )
                })
            }
            #[cfg(not(target_family = "wasm"))]
            ("argoproj.io", "Application") => {
                let sources: Vec<&Value> = o
                    .at("/spec/source")
                    .into_iter()
                    .chain(
                        o.at("/spec/sources")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten(),
                    )
                    .collect();
                sources.into_iter().find_map(|s| {
                    let chart = s.get("chart").and_then(Value::as_str)?;
                    is_gpu_operator_chart(chart).then(|| {
                        let helm = s.get("helm");
                        let from_params = helm
                            .and_then(|h| h.get("parameters"))
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .find(|p| {
                                p.get("name").and_then(Value::as_str) == Some("driver.enabled")
                            })
                            .and_then(|p| p.get("value").and_then(value_bool));
                        let from_object = helm
                            .and_then(|h| h.at("/valuesObject/driver/enabled"))
                            .and_then(value_bool);
                        let from_text = helm
                            .and_then(|h| h.get("values"))
                            .and_then(Value::as_str)
                            .and_then(driver_enabled_in_values);
                        let files = helm.and_then(|h| h.get("valueFiles")).is_some();
                        (
                            format!("Application {} (chart {chart})", named(o)),
                            true,
                            from_params
                                .or(from_object)
                                .or(from_text)
                                .or((!files).then_some(true)),
                        )
                    })
                })
            }
            #[cfg(not(target_family = "wasm"))]
            ("helm.cattle.io", "HelmChart") => {
                let chart = o.at("/spec/chart").and_then(Value::as_str).unwrap_or("");
                is_gpu_operator_chart(chart).then(|| {
                    let set = o.at("/spec/set/driver.enabled").and_then(value_bool);
                    let text = o
                        .at("/spec/valuesContent")
                        .and_then(Value::as_str)
                        .and_then(driver_enabled_in_values);
                    (
                        format!("HelmChart {} (chart {chart})", named(o)),
                        true,
                        set.or(text).or(Some(true)),
                    )
                })
            }
            _ => None,
        };
        if let Some((by, operator, driver_enabled)) = installer {
            out.push(DriverInstaller {
                by,
                operator,
                driver_enabled,
            });
            continue;
        }
        // A DaemonSet running NVIDIA's driver container installs the driver itself (read by
        // `check`; not in the policy component, for its size).
        #[cfg(not(target_family = "wasm"))]
        if kind == "DaemonSet" {
            let images: Vec<&str> = [
                "/spec/template/spec/containers",
                "/spec/template/spec/initContainers",
            ]
            .iter()
            .filter_map(|p| o.at(p).and_then(Value::as_array))
            .flatten()
            .filter_map(|c| c.get("image").and_then(Value::as_str))
            .collect();
            if let Some(image) = images.iter().find(|i| i.contains("nvidia/driver")) {
                out.push(DriverInstaller {
                    by: format!("DaemonSet {} (image {image})", named(o)),
                    operator: false,
                    driver_enabled: Some(true),
                });
            }
        }
    }
}

fn terraform_installers(doc: &Value, out: &mut Vec<DriverInstaller>) {
    let releases = doc
        .at("/resource/helm_release")
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    for (name, bodies) in releases {
        for body in each(bodies) {
            let chart = body.get("chart").and_then(Value::as_str).unwrap_or("");
            if is_gpu_operator_chart(chart) {
                out.push(DriverInstaller {
                    by: format!("helm_release {name} (chart {chart})"),
                    operator: true,
                    driver_enabled: helm_release_driver(body),
                });
            }
        }
    }
}

/// What one document holds: its driver installers and, from its `resources` (as the
/// readers give them), the workloads requesting MIG slices.
pub fn change_facts(doc: &Value, resources: &[Resource]) -> ChangeFacts {
    let mut facts = ChangeFacts::default();
    kubernetes_installers(doc, &mut facts.gpu_drivers);
    terraform_installers(doc, &mut facts.gpu_drivers);
    for r in resources {
        if r.kind != "k8s-workload" {
            continue;
        }
        let Some(profile) = &r.gpu_instance_profile else {
            continue;
        };
        let pool = ["kubernetes.azure.com/agentpool", "agentpool"]
            .iter()
            .find_map(|k| r.node_selection.get(*k))
            .filter(|v| !v.is_empty())
            .cloned();
        facts.mig_workloads.push(MigWorkload {
            workload: r.display.clone(),
            profile: profile.clone(),
            pool,
            sku: r.sku.clone(),
        });
    }
    facts
}

/// `settings` with the facts of `doc` added to its `change` (created when absent, without
/// `complete`); none when the document adds nothing the settings do not already say.
pub(super) fn with_document(
    settings: &Value,
    doc: &Value,
    resources: &[Resource],
) -> Option<Value> {
    let own = change_facts(doc, resources);
    let (mut facts, complete) = ChangeFacts::from_settings(settings);
    let before = facts.clone();
    facts.extend(own);
    if facts == before && settings.get("change").is_some() {
        return None;
    }
    let mut merged = settings.clone();
    match merged.as_object_mut() {
        Some(o) => {
            o.insert("change".into(), facts.to_settings(complete));
        }
        None => merged = json!({"change": facts.to_settings(complete)}),
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_texts_say_whether_the_driver_is_on() {
        assert_eq!(
            driver_enabled_in_values(
                "driver:\n  enabled: false\n  useHostMounts: true\ntoolkit:\n  enabled: true\n"
            ),
            Some(false)
        );
        assert_eq!(
            driver_enabled_in_values("toolkit:\n  enabled: false\ndriver:\n  version: 550\n"),
            None
        );
        assert_eq!(
            driver_enabled_in_values("driver:\n  enabled: true # default"),
            Some(true)
        );
    }

    #[test]
    fn gpu_operator_objects_and_releases_are_recognised() {
        let cp = json!({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"}, "spec": {"driver": {"enabled": false}}});
        let f = change_facts(&cp, &[]);
        assert_eq!(f.gpu_drivers[0].driver_enabled, Some(false));
        let tf = json!({"resource": {"helm_release": {"gpu_operator": [{
            "chart": "gpu-operator", "repository": "https://helm.ngc.nvidia.com/nvidia"}]}}});
        let f = change_facts(&tf, &[]);
        assert_eq!(
            f.gpu_drivers[0].by,
            "helm_release gpu_operator (chart gpu-operator)"
        );
        assert_eq!(
            f.gpu_drivers[0].driver_enabled,
            Some(true),
            "the chart's default"
        );
        let off = json!({"resource": {"helm_release": {"gpu_operator": {
            "chart": "gpu-operator", "set": [{"name": "driver.enabled", "value": "false"}]}}}});
        assert_eq!(
            change_facts(&off, &[]).gpu_drivers[0].driver_enabled,
            Some(false)
        );
        let file = json!({"resource": {"helm_release": {"g": {
            "chart": "gpu-operator", "values": ["${file(\"values.yaml\")}"]}}}});
        assert_eq!(change_facts(&file, &[]).gpu_drivers[0].driver_enabled, None);
        let other = json!({"resource": {"helm_release": {"x": {"chart": "ingress-nginx"}}}});
        assert!(change_facts(&other, &[]).is_empty());
    }
}
