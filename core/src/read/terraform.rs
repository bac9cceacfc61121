//! Terraform (the JSON configuration syntax the host decodes `.tf` files into, `.tf.json`
//! files, and `terraform show -json` plans or states) to compute-model resources.
//!
//! Resource types read (azurerm provider 3.x and 4.x spellings):
//! - `azurerm_kubernetes_cluster`: an `aks-cluster` (`location`, `kubernetes_version`, `tags`)
//!   plus an `aks-node-pool` for its `default_node_pool`;
//! - `azurerm_kubernetes_cluster_node_pool`: an `aks-node-pool`; it has no location of its own
//!   and inherits `kubernetes_version` from the cluster named by `kubernetes_cluster_id` when
//!   that cluster is in the same document;
//! - `azurerm_machine_learning_compute_cluster`: an `aml-compute-cluster` (`vm_size`,
//!   `vm_priority`, `scale_settings`, `location`); `parentRegion` is the location of the
//!   `azurerm_machine_learning_workspace` named by `machine_learning_workspace_id`;
//! - `azurerm_machine_learning_compute_instance`: an `aml-compute-instance`
//!   (`virtual_machine_size`);
//! - `azurerm_linux_virtual_machine`, `azurerm_windows_virtual_machine` and the legacy
//!   `azurerm_virtual_machine`: a `vm` (`size` / `vm_size`, `location`, `zone` / `zones`,
//!   `priority`, `tags`; one instance);
//! - `azurerm_linux_virtual_machine_scale_set`, `azurerm_windows_virtual_machine_scale_set`
//!   and `azurerm_orchestrated_virtual_machine_scale_set`: a `vm-scale-set` (`sku` /
//!   `sku_name`, `instances`, `location`, `zones`, `priority`, `tags`).
//!
//! An AKS pool has no location of its own: its `parentRegion` is its cluster's literal
//! location when the cluster is in the same document, and its `zones` are the pool's
//! `zones` (`availability_zones` in azurerm 2.x).
//!
//! A value still written `${...}` is an expression the host could not resolve (a `local.`, a
//! resource attribute, a function call, a variable without a default): the model field stays
//! `null`, is listed in [`Resource::unresolved`] and keeps its provenance, so no rule guesses.
//! The one reference followed here is `${TYPE.NAME.location}` (and `.id` for parents) to a
//! resource declared in the same document, since its literal location is known.

use super::common::{escape, int_of, merge_labels, resolve_intent, set_region, set_sku, set_zones};
use crate::compute::Resource;
use crate::read::common::At;
use serde_json::Value;

const CLUSTER: &str = "azurerm_kubernetes_cluster";
const POOL: &str = "azurerm_kubernetes_cluster_node_pool";
const AML_CLUSTER: &str = "azurerm_machine_learning_compute_cluster";
const AML_INSTANCE: &str = "azurerm_machine_learning_compute_instance";
/// Virtual machines and scale sets: (type, whether it is a scale set).
const VMS: &[(&str, bool)] = &[
    ("azurerm_linux_virtual_machine", false),
    ("azurerm_windows_virtual_machine", false),
    ("azurerm_virtual_machine", false),
    ("azurerm_linux_virtual_machine_scale_set", true),
    ("azurerm_windows_virtual_machine_scale_set", true),
    ("azurerm_orchestrated_virtual_machine_scale_set", true),
];
const WORKSPACE: &str = "azurerm_machine_learning_workspace";

/// Deepest chain of `${x.y.location}` references followed.
const MAX_HOPS: usize = 8;

/// Whether `doc` is a Terraform configuration with `azurerm_` resources, or a plan / state
/// from `terraform show -json`.
pub fn recognise(doc: &Value) -> bool {
    let config = doc.get("resource").is_some_and(|r| match r {
        Value::Object(types) => types.keys().any(|t| t.starts_with("azurerm_")),
        Value::Array(sections) => sections.iter().any(|s| {
            s.as_object()
                .is_some_and(|t| t.keys().any(|t| t.starts_with("azurerm_")))
        }),
        _ => false,
    });
    config || (doc.get("format_version").is_some() && root_module(doc).is_some())
}

/// Compute-model resources of a Terraform configuration, plan or state.
pub fn normalize(doc: &Value) -> Vec<Resource> {
    let declared = if doc.get("format_version").is_some() {
        plan_resources(doc)
    } else {
        config_resources(doc)
    };
    let module = Module { declared };
    let mut out = Vec::new();
    for res in &module.declared {
        match res.ty.as_str() {
            CLUSTER => module.cluster(res, &mut out),
            POOL => out.push(module.node_pool(res)),
            AML_CLUSTER | AML_INSTANCE => out.push(module.aml_compute(res)),
            ty if VMS.iter().any(|(t, _)| *t == ty) => out.push(module.virtual_machine(res)),
            _ => {}
        }
    }
    out
}

/// One `resource` block (or one plan resource).
struct Declared<'d> {
    ty: String,
    /// The Terraform name (`gpu`), with the module path and index in a plan.
    name: String,
    /// `TYPE.NAME` as other resources of the same module reference it.
    address: String,
    values: &'d Value,
    /// JSON pointer of `values`.
    ptr: String,
    /// Plans only: what each attribute's expression references (`configuration` section).
    references: Option<&'d Value>,
}

/// `resource.TYPE.NAME`, written once (an object) or repeated (an array of objects); the
/// `resource` section itself may also be an array in the JSON syntax.
fn config_resources(doc: &Value) -> Vec<Declared<'_>> {
    let mut out = Vec::new();
    let sections: Vec<(&Value, String)> = match doc.get("resource") {
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, s)| (s, format!("/resource/{i}")))
            .collect(),
        Some(section) => vec![(section, "/resource".to_string())],
        None => Vec::new(),
    };
    for (section, base) in sections {
        let Value::Object(types) = section else {
            continue;
        };
        for (ty, named) in types {
            let Value::Object(named) = named else {
                continue;
            };
            for (name, body) in named {
                let ptr = format!("{base}/{}/{}", escape(ty), escape(name));
                for (values, ptr) in blocks(body, &ptr) {
                    out.push(Declared {
                        ty: ty.clone(),
                        name: name.clone(),
                        address: format!("{ty}.{name}"),
                        values,
                        ptr,
                        references: None,
                    });
                }
            }
        }
    }
    out
}

/// The root module of a plan (`planned_values`) or a state (`values`).
fn root_module(doc: &Value) -> Option<(&Value, &'static str)> {
    [
        ("/planned_values/root_module", "/planned_values/root_module"),
        ("/values/root_module", "/values/root_module"),
    ]
    .into_iter()
    .find_map(|(p, ptr)| doc.at(p).filter(|v| v.is_object()).map(|v| (v, ptr)))
}

fn plan_resources(doc: &Value) -> Vec<Declared<'_>> {
    let mut out = Vec::new();
    let Some((root, ptr)) = root_module(doc) else {
        return out;
    };
    let mut stack = vec![(root, ptr.to_string(), 0usize)];
    while let Some((module, ptr, depth)) = stack.pop() {
        if let Some(Value::Array(resources)) = module.get("resources") {
            for (i, r) in resources.iter().enumerate() {
                let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                if text("mode") == "data" {
                    continue;
                }
                let Some(values) = r.get("values").filter(|v| v.is_object()) else {
                    continue;
                };
                let address = text("address");
                let ty = text("type");
                // `module.a.azurerm_x.name[0]` -> `module.a.name[0]`.
                let name = address.replacen(&format!("{ty}."), "", 1);
                let local = address
                    .rsplit_once(&format!("{ty}."))
                    .map_or(address.to_string(), |(_, n)| {
                        format!("{ty}.{}", n.split('[').next().unwrap_or(n))
                    });
                out.push(Declared {
                    ty: ty.to_string(),
                    name: if name.is_empty() {
                        text("name").to_string()
                    } else {
                        name
                    },
                    address: local,
                    values,
                    ptr: format!("{ptr}/resources/{i}/values"),
                    references: (depth == 0)
                        .then(|| config_expressions(doc, text("type"), text("name")))
                        .flatten(),
                });
            }
        }
        if depth < MAX_HOPS
            && let Some(Value::Array(children)) = module.get("child_modules")
        {
            for (i, child) in children.iter().enumerate().rev() {
                stack.push((child, format!("{ptr}/child_modules/{i}"), depth + 1));
            }
        }
    }
    // The stack visits modules depth-first; keep the plan's own order within each.
    out
}

/// `configuration.root_module.resources[].expressions` of the resource `ty.name`.
fn config_expressions<'d>(doc: &'d Value, ty: &str, name: &str) -> Option<&'d Value> {
    doc.at("/configuration/root_module/resources")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("type").and_then(Value::as_str) == Some(ty)
                && r.get("name").and_then(Value::as_str) == Some(name)
        })?
        .get("expressions")
}

/// A nested block written once (an object) or repeated (an array), with pointers.
fn blocks<'v>(value: &'v Value, ptr: &str) -> Vec<(&'v Value, String)> {
    match value {
        Value::Object(_) => vec![(value, ptr.to_string())],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_object())
            .map(|(i, v)| (v, format!("{ptr}/{i}")))
            .collect(),
        _ => Vec::new(),
    }
}

/// A JSON-syntax string that still holds an expression (`${...}`, `%{...}`).
fn is_expression(text: &str) -> bool {
    let unescaped = text.replace("$${", "").replace("%%{", "");
    unescaped.contains("${") || unescaped.contains("%{")
}

/// `${TYPE.NAME.ATTR}` exactly: the referenced `TYPE.NAME` and `ATTR`.
fn reference(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?.trim();
    let (target, attr) = inner.rsplit_once('.')?;
    let simple = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let (ty, name) = target.split_once('.')?;
    (simple(ty) && simple(name) && simple(attr) && ty != "var" && ty != "local")
        .then_some((target, attr))
}

/// Reads attributes of one block, recording provenance and what stays unresolved.
struct Block<'a, 'd> {
    values: &'d Value,
    ptr: &'a str,
}

impl<'d> Block<'_, 'd> {
    fn ptr(&self, key: &str) -> String {
        format!("{}/{}", self.ptr, escape(key))
    }

    /// The value of `key` if it is known; an expression marks `field` unresolved (with its
    /// provenance) and gives `None`.
    fn known(&self, r: &mut Resource, key: &str, field: &str) -> Option<&'d Value> {
        let value = self.values.get(key).filter(|v| !v.is_null())?;
        if value.as_str().is_some_and(is_expression) {
            if !r.unresolved.iter().any(|f| f == field) {
                r.unresolved.push(field.to_string());
            }
            r.fields.entry(field.to_string()).or_insert(self.ptr(key));
            return None;
        }
        Some(value)
    }

    fn text(&self, r: &mut Resource, key: &str, field: &str) -> Option<&'d str> {
        self.known(r, key, field).and_then(Value::as_str)
    }

    fn int(&self, r: &mut Resource, key: &str, field: &str) -> Option<i64> {
        let n = self.known(r, key, field).and_then(int_of)?;
        r.fields.insert(field.to_string(), self.ptr(key));
        Some(n)
    }

    fn bool(&self, r: &mut Resource, key: &str, field: &str) -> Option<bool> {
        match self.known(r, key, field)? {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }

    fn sku(&self, r: &mut Resource, key: &str) {
        if let Some(size) = self.text(r, key, "sku") {
            set_sku(r, size, self.ptr(key));
        }
    }

    /// `tags`, `node_labels`: literal entries become labels; a computed map is unresolved.
    fn labels(&self, r: &mut Resource, key: &str) {
        if let Some(map) = self.known(r, key, "labels") {
            merge_labels(r, Some(map), &self.ptr(key));
        }
    }
}

struct Module<'d> {
    declared: Vec<Declared<'d>>,
}

impl<'d> Module<'d> {
    fn find(&self, address: &str) -> Option<&Declared<'d>> {
        self.declared.iter().find(|d| d.address == address)
    }

    /// The resource an attribute references (`${TYPE.NAME.id}` in a configuration, the
    /// `configuration` section's references in a plan), if declared here with type `ty`.
    fn referenced(&self, res: &Declared<'d>, key: &str, ty: &str) -> Option<&Declared<'d>> {
        let target = match res.references {
            Some(expressions) => expressions
                .at(&format!("/{}/references", escape(key)))?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .find(|r| r.starts_with(&format!("{ty}.")))
                .map(|r| {
                    let mut parts = r.splitn(3, '.');
                    format!(
                        "{}.{}",
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default()
                    )
                })?,
            None => {
                let text = res.values.get(key)?.as_str()?;
                reference(text)?.0.to_string()
            }
        };
        self.find(&target).filter(|d| d.ty == ty)
    }

    /// The literal location of a resource, following `${TYPE.NAME.location}` to resources of
    /// this document: `(region text, pointer)`, or `Err(pointer)` when it is unresolved.
    fn location(&self, res: &Declared<'d>) -> Option<Result<(&'d str, String), String>> {
        let mut current = res;
        for _ in 0..MAX_HOPS {
            let value = current.values.get("location")?.as_str()?;
            let ptr = format!("{}/location", current.ptr);
            if !is_expression(value) {
                return Some(Ok((value, ptr)));
            }
            match reference(value) {
                Some((target, "location")) => match self.find(target) {
                    Some(next) => current = next,
                    None => return Some(Err(ptr)),
                },
                _ => return Some(Err(ptr)),
            }
        }
        None
    }

    fn set_location(&self, r: &mut Resource, res: &Declared<'d>) {
        match self.location(res) {
            // The finding lands on this resource's own `location` line, even when the value
            // came from the resource group it references.
            Some(Ok((text, _))) => set_region(r, text, format!("{}/location", res.ptr)),
            Some(Err(_)) => {
                r.unresolved.push("region".into());
                r.fields
                    .insert("region".into(), format!("{}/location", res.ptr));
            }
            None => {}
        }
    }

    fn base(&self, res: &Declared<'d>, kind: &str) -> Resource {
        Resource {
            kind: kind.into(),
            source_kind: res.ty.clone(),
            name: res.name.clone(),
            pointer: res.ptr.clone(),
            ..Resource::default()
        }
    }

    fn cluster(&self, res: &Declared<'d>, out: &mut Vec<Resource>) {
        let block = Block {
            values: res.values,
            ptr: &res.ptr,
        };
        let mut cluster = self.base(res, "aks-cluster");
        self.set_location(&mut cluster, res);
        let version = block
            .text(&mut cluster, "kubernetes_version", "kubernetesVersion")
            .map(str::to_string);
        if version.is_some() {
            cluster.kubernetes_version.clone_from(&version);
            cluster
                .fields
                .insert("kubernetesVersion".into(), block.ptr("kubernetes_version"));
        }
        block.labels(&mut cluster, "tags");
        resolve_intent(&mut cluster, "unknown");
        out.push(cluster);
        let Some(pools) = res.values.get("default_node_pool") else {
            return;
        };
        let location = self.location(res);
        for (values, ptr) in blocks(pools, &block.ptr("default_node_pool")) {
            let mut pool = self.base(res, "aks-node-pool");
            pool.source_kind = format!("{CLUSTER}.default_node_pool");
            let pool_name = values
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !is_expression(n))
                .unwrap_or("default");
            pool.name = format!("{}/{pool_name}", res.name);
            pool.pointer.clone_from(&ptr);
            if let Some(v) = &version {
                pool.kubernetes_version = Some(v.clone());
                pool.fields
                    .insert("kubernetesVersion".into(), block.ptr("kubernetes_version"));
            }
            if let Some(Ok((text, loc))) = &location {
                pool.parent_region = Some(crate::region::normalize(text));
                pool.fields.insert("parentRegion".into(), loc.clone());
            }
            read_pool(&mut pool, &Block { values, ptr: &ptr });
            // The default node pool is the cluster's system pool (azurerm has no `mode` for it).
            pool.pool_mode = Some("system".into());
            out.push(pool);
        }
    }

    fn node_pool(&self, res: &Declared<'d>) -> Resource {
        let mut pool = self.base(res, "aks-node-pool");
        // A pool runs where its cluster runs (it has no location of its own): the
        // cluster's literal location is its `parentRegion` (for the availability and quota
        // rules; nothing to compare, so a location known only at deploy time is not
        // reported again here). It inherits the cluster's Kubernetes version.
        if let Some(cluster) = self.referenced(res, "kubernetes_cluster_id", CLUSTER) {
            if let Some(Ok((text, loc))) = self.location(cluster) {
                pool.parent_region = Some(crate::region::normalize(text));
                pool.fields.insert("parentRegion".into(), loc);
            }
            let cluster_block = Block {
                values: cluster.values,
                ptr: &cluster.ptr,
            };
            let mut scratch = Resource::default();
            if let Some(v) = cluster_block.text(&mut scratch, "kubernetes_version", "v") {
                pool.kubernetes_version = Some(v.to_string());
                pool.fields.insert(
                    "kubernetesVersion".into(),
                    cluster_block.ptr("kubernetes_version"),
                );
            }
            pool.parent = Some(format!("cluster {}", cluster.name));
        }
        let block = Block {
            values: res.values,
            ptr: &res.ptr,
        };
        read_pool(&mut pool, &block);
        // azurerm_kubernetes_cluster_node_pool's `mode` defaults to User.
        let mode = block.text(&mut pool, "mode", "poolMode");
        if mode.is_some() {
            pool.fields.insert("poolMode".into(), block.ptr("mode"));
        }
        if !pool.unresolved.iter().any(|f| f == "poolMode") {
            pool.pool_mode = Some(mode.unwrap_or("User").to_ascii_lowercase());
        }
        pool
    }

    /// A virtual machine (`vm`, one instance) or scale set (`vm-scale-set`, `instances`).
    fn virtual_machine(&self, res: &Declared<'d>) -> Resource {
        let scale_set = VMS.iter().any(|(t, s)| *t == res.ty && *s);
        let block = Block {
            values: res.values,
            ptr: &res.ptr,
        };
        let mut r = self.base(res, if scale_set { "vm-scale-set" } else { "vm" });
        let size_key = ["size", "vm_size", "sku", "sku_name"]
            .into_iter()
            .find(|k| res.values.get(*k).is_some_and(Value::is_string))
            .unwrap_or("size");
        block.sku(&mut r, size_key);
        self.set_location(&mut r, res);
        read_zones(&mut r, &block, &["zones", "zone"]);
        if scale_set {
            r.instance_count = block.int(&mut r, "instances", "instanceCount");
        } else {
            r.instance_count = Some(1);
        }
        if let Some(p) = block.text(&mut r, "priority", "priority") {
            r.priority = Some(
                match p.to_ascii_lowercase().as_str() {
                    "spot" => "spot",
                    "low" => "low-priority",
                    _ => "dedicated",
                }
                .into(),
            );
            r.fields.insert("priority".into(), block.ptr("priority"));
        }
        if res.ty.starts_with("azurerm_linux_") {
            r.os_type = Some("linux".into());
        } else if res.ty.starts_with("azurerm_windows_") {
            r.os_type = Some("windows".into());
        }
        block.labels(&mut r, "tags");
        resolve_intent(&mut r, "unknown");
        r
    }

    fn aml_compute(&self, res: &Declared<'d>) -> Resource {
        let block = Block {
            values: res.values,
            ptr: &res.ptr,
        };
        let cluster = res.ty == AML_CLUSTER;
        let mut r = self.base(
            res,
            if cluster {
                "aml-compute-cluster"
            } else {
                "aml-compute-instance"
            },
        );
        block.sku(
            &mut r,
            if cluster {
                "vm_size"
            } else {
                "virtual_machine_size"
            },
        );
        self.set_location(&mut r, res);
        if cluster {
            if let Some(p) = block.text(&mut r, "vm_priority", "priority") {
                r.priority = Some(
                    match p.to_ascii_lowercase().as_str() {
                        "lowpriority" | "low_priority" | "low-priority" => "low-priority",
                        "spot" => "spot",
                        _ => "dedicated",
                    }
                    .into(),
                );
                r.fields.insert("priority".into(), block.ptr("vm_priority"));
            }
            if let Some(scale) = res.values.get("scale_settings") {
                for (values, ptr) in blocks(scale, &block.ptr("scale_settings"))
                    .into_iter()
                    .take(1)
                {
                    let s = Block { values, ptr: &ptr };
                    r.min_nodes = s.int(&mut r, "min_node_count", "minNodes");
                    r.max_nodes = s.int(&mut r, "max_node_count", "maxNodes");
                }
            }
            if let (Some(min), Some(max)) = (r.min_nodes, r.max_nodes) {
                r.autoscale = Some(max > min);
            }
            r.instance_count = r.max_nodes;
        }
        block.labels(&mut r, "tags");
        if let Some(ws) = self.referenced(res, "machine_learning_workspace_id", WORKSPACE) {
            match self.location(ws) {
                Some(Ok((text, ptr))) => {
                    let region = crate::region::normalize(text);
                    r.parent = Some(format!("workspace {} in {region}", ws.name));
                    r.parent_region = Some(region);
                    r.fields.insert("parentRegion".into(), ptr);
                }
                Some(Err(ptr)) => {
                    r.parent = Some(format!("workspace {}", ws.name));
                    r.unresolved.push("parentRegion".into());
                    r.fields.insert("parentRegion".into(), ptr);
                }
                None => r.parent = Some(format!("workspace {}", ws.name)),
            }
        }
        resolve_intent(&mut r, if cluster { "unknown" } else { "interactive" });
        r
    }
}

/// `zones` from the first of `keys` that is set.
fn read_zones(r: &mut Resource, b: &Block<'_, '_>, keys: &[&str]) {
    if let Some(key) = keys
        .iter()
        .find(|k| b.values.get(**k).is_some_and(|v| !v.is_null()))
    {
        set_zones(r, b.values.get(*key), b.ptr(key), |s| !is_expression(s));
    }
}

/// The attributes `default_node_pool` and `azurerm_kubernetes_cluster_node_pool` share.
fn read_pool(r: &mut Resource, b: &Block<'_, '_>) {
    b.sku(r, "vm_size");
    // `enable_auto_scaling` in azurerm 3.x, `auto_scaling_enabled` in 4.x.
    r.autoscale = b
        .bool(r, "auto_scaling_enabled", "autoscale")
        .or_else(|| b.bool(r, "enable_auto_scaling", "autoscale"));
    r.min_nodes = b.int(r, "min_count", "minNodes");
    r.max_nodes = b.int(r, "max_count", "maxNodes");
    r.instance_count = b.int(r, "node_count", "instanceCount");
    read_zones(r, b, &["zones", "availability_zones"]);
    if let Some(os) = b.text(r, "os_type", "osType") {
        r.os_type = Some(os.to_ascii_lowercase());
        r.fields.insert("osType".into(), b.ptr("os_type"));
    }
    if let Some(v) = b.text(r, "orchestrator_version", "kubernetesVersion") {
        r.kubernetes_version = Some(v.to_string());
        r.fields
            .insert("kubernetesVersion".into(), b.ptr("orchestrator_version"));
    }
    if let Some(g) = b.text(r, "gpu_instance", "gpuInstanceProfile") {
        r.gpu_instance_profile = Some(g.to_string());
        r.fields
            .insert("gpuInstanceProfile".into(), b.ptr("gpu_instance"));
    }
    if let Some(os) = b.text(r, "os_sku", "osSku") {
        r.os_sku = Some(os.to_string());
        r.fields.insert("osSku".into(), b.ptr("os_sku"));
    }
    if let Some(d) = b.text(r, "gpu_driver", "gpuDriver") {
        r.gpu_driver = Some(d.to_ascii_lowercase());
        r.fields.insert("gpuDriver".into(), b.ptr("gpu_driver"));
    }
    if let Some(p) = b.text(r, "priority", "priority") {
        r.priority = Some(if p.eq_ignore_ascii_case("spot") {
            "spot".into()
        } else {
            "dedicated".into()
        });
        r.fields.insert("priority".into(), b.ptr("priority"));
    }
    if let Some(Value::Array(taints)) = b.known(r, "node_taints", "taints") {
        r.taints = taints
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| !is_expression(t))
            .map(str::to_string)
            .collect();
        r.fields.insert("taints".into(), b.ptr("node_taints"));
    }
    if b.bool(r, "only_critical_addons_enabled", "taints") == Some(true) {
        r.taints.push("CriticalAddonsOnly=true:NoSchedule".into());
        r.fields
            .entry("taints".into())
            .or_insert(b.ptr("only_critical_addons_enabled"));
    }
    b.labels(r, "node_labels");
    b.labels(r, "tags");
    resolve_intent(r, "unknown");
}

#[cfg(test)]
mod tests {
    use super::{normalize, recognise};
    use serde_json::json;

    /// The resource named `name`, or an empty one (whose fields then fail the assertions).
    fn by_name(list: &[crate::compute::Resource], name: &str) -> crate::compute::Resource {
        list.iter()
            .find(|r| r.name == name)
            .cloned()
            .unwrap_or_default()
    }

    /// A pool's mode, OS SKU and GPU driver: the default node pool is the system pool, a
    /// separate pool is `user` unless its `mode` says otherwise (azurerm's default).
    #[test]
    fn pool_mode_os_sku_and_gpu_driver() {
        let doc = json!({"resource": {
            "azurerm_kubernetes_cluster": {"main": {
                "location": "eastus",
                "default_node_pool": {"name": "system", "vm_size": "Standard_D4s_v5", "node_count": 2}
            }},
            "azurerm_kubernetes_cluster_node_pool": {
                "gpu": {"kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
                        "vm_size": "Standard_NC24ads_A100_v4", "node_count": 1,
                        "os_sku": "AzureLinux", "gpu_driver": "None"},
                "sys2": {"kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
                         "vm_size": "Standard_D4s_v5", "node_count": 1, "mode": "System"},
                "varmode": {"kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
                            "vm_size": "Standard_D4s_v5", "node_count": 1, "mode": "${var.mode}"}
            }
        }});
        let out = normalize(&doc);
        let system = by_name(&out, "main/system");
        assert_eq!(system.pool_mode.as_deref(), Some("system"));
        let gpu = by_name(&out, "gpu");
        assert_eq!(gpu.pool_mode.as_deref(), Some("user"), "azurerm's default");
        assert_eq!(gpu.os_sku.as_deref(), Some("AzureLinux"));
        assert_eq!(gpu.gpu_driver.as_deref(), Some("none"));
        assert_eq!(
            gpu.fields.get("gpuDriver").map(String::as_str),
            Some("/resource/azurerm_kubernetes_cluster_node_pool/gpu/gpu_driver")
        );
        assert_eq!(by_name(&out, "sys2").pool_mode.as_deref(), Some("system"));
        let varmode = by_name(&out, "varmode");
        assert_eq!(varmode.pool_mode, None, "an expression is not guessed");
        assert!(varmode.unresolved.iter().any(|f| f == "poolMode"));
    }

    #[test]
    fn cluster_default_pool_and_node_pool_with_provenance() {
        let doc = json!({"resource": {
            "azurerm_resource_group": {"rg": {"location": "West Europe"}},
            "azurerm_kubernetes_cluster": {"main": {
                "location": "${azurerm_resource_group.rg.location}",
                "kubernetes_version": "1.28.3",
                "tags": {"team": "ml"},
                "default_node_pool": {"name": "system", "vm_size": "standard_nc4as_t4_v3", "node_count": 2,
                                      "only_critical_addons_enabled": true}
            }},
            "azurerm_kubernetes_cluster_node_pool": {"gpu": {
                "kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
                "vm_size": "Standard_NC24ads_A100_v4", "auto_scaling_enabled": true,
                "min_count": 1, "max_count": 4, "os_type": "Windows", "priority": "Spot",
                "node_taints": ["sku=gpu:NoSchedule"], "node_labels": {"computeguard.io/gpu-operator": "true"}
            }}
        }});
        assert!(recognise(&doc));
        let out = normalize(&doc);
        assert_eq!(out.len(), 3);
        let cluster = &by_name(&out, "main");
        assert_eq!(cluster.kind, "aks-cluster");
        assert_eq!(cluster.region.as_deref(), Some("westeurope"));
        assert_eq!(
            cluster.fields["region"],
            "/resource/azurerm_kubernetes_cluster/main/location"
        );
        let system = &by_name(&out, "main/system");
        assert_eq!(system.sku.as_deref(), Some("Standard_NC4as_T4_v3"));
        assert_eq!(system.instance_count, Some(2));
        assert_eq!(system.taints, ["CriticalAddonsOnly=true:NoSchedule"]);
        assert_eq!(
            system.fields["sku"],
            "/resource/azurerm_kubernetes_cluster/main/default_node_pool/vm_size"
        );
        let gpu = &by_name(&out, "gpu");
        assert_eq!(
            (gpu.min_nodes, gpu.max_nodes, gpu.autoscale),
            (Some(1), Some(4), Some(true))
        );
        assert_eq!(
            (gpu.os_type.as_deref(), gpu.priority.as_deref()),
            (Some("windows"), Some("spot"))
        );
        assert_eq!(gpu.kubernetes_version.as_deref(), Some("1.28.3"));
        assert!(gpu.gpu_operator);
        assert_eq!(gpu.region, None, "a pool has no location of its own");
        assert_eq!(
            gpu.fields["minNodes"],
            "/resource/azurerm_kubernetes_cluster_node_pool/gpu/min_count"
        );
    }

    #[test]
    fn expressions_stay_unresolved_with_their_provenance() {
        let doc = json!({"resource": {"azurerm_kubernetes_cluster_node_pool": {"gpu": {
            "vm_size": "${var.size}", "min_count": "${local.min}", "enable_auto_scaling": true,
            "tags": "${merge(var.tags, {})}"
        }}}});
        let r = normalize(&doc).remove(0);
        assert_eq!((r.sku.as_deref(), r.min_nodes), (None, None));
        assert_eq!(r.unresolved, ["sku", "minNodes", "labels"]);
        assert_eq!(
            r.fields["sku"],
            "/resource/azurerm_kubernetes_cluster_node_pool/gpu/vm_size"
        );
        assert_eq!(r.autoscale, Some(true), "azurerm 3.x spelling");
    }

    #[test]
    fn aml_compute_reads_scale_settings_priority_and_workspace_region() {
        let doc = json!({"resource": {
            "azurerm_machine_learning_workspace": {"ws": {"location": "eastus"}},
            "azurerm_machine_learning_compute_cluster": {"train": {
                "location": "westus2", "vm_size": "Standard_NC6s_v3", "vm_priority": "LowPriority",
                "machine_learning_workspace_id": "${azurerm_machine_learning_workspace.ws.id}",
                "scale_settings": [{"min_node_count": 1, "max_node_count": 4, "scale_down_nodes_after_idle_duration": "PT30S"}]
            }},
            "azurerm_machine_learning_compute_instance": {"dev": {"virtual_machine_size": "STANDARD_NC6S_V3"}}
        }});
        let out = normalize(&doc);
        let train = &by_name(&out, "train");
        assert_eq!(train.kind, "aml-compute-cluster");
        assert_eq!(
            (train.min_nodes, train.max_nodes, train.autoscale),
            (Some(1), Some(4), Some(true))
        );
        assert_eq!(train.priority.as_deref(), Some("low-priority"));
        assert_eq!(
            (train.region.as_deref(), train.parent_region.as_deref()),
            (Some("westus2"), Some("eastus"))
        );
        assert_eq!(train.parent.as_deref(), Some("workspace ws in eastus"));
        assert_eq!(
            train.fields["minNodes"],
            "/resource/azurerm_machine_learning_compute_cluster/train/scale_settings/0/min_node_count"
        );
        let dev = &by_name(&out, "dev");
        assert_eq!(
            (dev.kind.as_str(), dev.sku.as_deref(), dev.workload.as_str()),
            (
                "aml-compute-instance",
                Some("Standard_NC6s_v3"),
                "interactive"
            )
        );
    }

    #[test]
    fn plan_resources_in_root_and_child_modules() {
        let doc = json!({"format_version": "1.2", "planned_values": {"root_module": {
            "resources": [
                {"address": "azurerm_machine_learning_workspace.ws", "mode": "managed",
                 "type": "azurerm_machine_learning_workspace", "name": "ws", "values": {"location": "eastus"}},
                {"address": "azurerm_machine_learning_compute_cluster.c", "mode": "managed",
                 "type": "azurerm_machine_learning_compute_cluster", "name": "c",
                 "values": {"location": "westeurope", "vm_size": "Standard_NC6s_v3",
                            "machine_learning_workspace_id": null,
                            "scale_settings": [{"min_node_count": 2, "max_node_count": 2}]}}],
            "child_modules": [{"address": "module.aks", "resources": [
                {"address": "module.aks.azurerm_kubernetes_cluster_node_pool.gpu[0]", "mode": "managed",
                 "type": "azurerm_kubernetes_cluster_node_pool", "name": "gpu", "index": 0,
                 "values": {"vm_size": "Standard_NC6s_v3", "min_count": 2, "auto_scaling_enabled": true}}]}]
        }}, "configuration": {"root_module": {"resources": [
            {"address": "azurerm_machine_learning_compute_cluster.c", "type": "azurerm_machine_learning_compute_cluster", "name": "c",
             "expressions": {"machine_learning_workspace_id": {"references": ["azurerm_machine_learning_workspace.ws.id", "azurerm_machine_learning_workspace.ws"]}}}
        ]}}});
        assert!(recognise(&doc));
        let out = normalize(&doc);
        let c = &by_name(&out, "c");
        assert_eq!(c.parent_region.as_deref(), Some("eastus"));
        assert_eq!(
            c.fields["minNodes"],
            "/planned_values/root_module/resources/1/values/scale_settings/0/min_node_count"
        );
        let pool = &by_name(&out, "module.aks.gpu[0]");
        assert_eq!(pool.min_nodes, Some(2));
        assert_eq!(
            pool.fields["sku"],
            "/planned_values/root_module/child_modules/0/resources/0/values/vm_size"
        );
    }

    #[test]
    fn other_documents_are_not_terraform() {
        assert!(!recognise(&json!({"resource": {"aws_instance": {}}})));
        assert!(!recognise(&json!({"format_version": "1.0"})));
        assert!(!recognise(&json!({"kind": "Pod"})));
        assert!(normalize(&json!({"resource": "x"})).is_empty());
    }

    #[test]
    fn virtual_machines_scale_sets_zones_and_the_pools_region() {
        let doc = json!({"resource": {
            "azurerm_kubernetes_cluster": {"main": {
                "location": "West Europe",
                "default_node_pool": {"name": "system", "vm_size": "Standard_D4s_v3", "node_count": 2, "zones": ["1", "2"]}
            }},
            "azurerm_kubernetes_cluster_node_pool": {"gpu": {
                "kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
                "vm_size": "Standard_NC24ads_A100_v4", "node_count": 1, "zones": "${var.zones}"
            }},
            "azurerm_linux_virtual_machine": {"jump": {
                "location": "eastus", "size": "Standard_NV6", "zone": "1", "priority": "Spot"
            }},
            "azurerm_windows_virtual_machine_scale_set": {"farm": {
                "location": "eastus", "sku": "Standard_NC4as_T4_v3", "instances": 3, "zones": [1, 3]
            }},
            "azurerm_orchestrated_virtual_machine_scale_set": {"flex": {
                "location": "eastus", "sku_name": "Standard_NC4as_T4_v3", "instances": "${var.n}"
            }}
        }});
        let out = normalize(&doc);
        let pool = by_name(&out, "main/system");
        assert_eq!(pool.zones, ["1", "2"]);
        assert_eq!(pool.parent_region.as_deref(), Some("westeurope"));
        let gpu = by_name(&out, "gpu");
        assert_eq!(gpu.parent_region.as_deref(), Some("westeurope"));
        assert!(gpu.zones.is_empty());
        assert_eq!(gpu.unresolved, ["zones"]);
        let jump = by_name(&out, "jump");
        assert_eq!(
            (
                jump.kind.as_str(),
                jump.sku.as_deref(),
                jump.region.as_deref(),
                jump.instance_count
            ),
            ("vm", Some("Standard_NV6"), Some("eastus"), Some(1))
        );
        assert_eq!(
            (
                jump.zones.clone(),
                jump.priority.as_deref(),
                jump.os_type.as_deref()
            ),
            (vec!["1".to_string()], Some("spot"), Some("linux"))
        );
        assert_eq!(
            jump.fields["zones"],
            "/resource/azurerm_linux_virtual_machine/jump/zone"
        );
        let farm = by_name(&out, "farm");
        assert_eq!(
            (
                farm.kind.as_str(),
                farm.instance_count,
                farm.zones.clone(),
                farm.os_type.as_deref()
            ),
            (
                "vm-scale-set",
                Some(3),
                vec!["1".to_string(), "3".to_string()],
                Some("windows")
            )
        );
        let flex = by_name(&out, "flex");
        assert_eq!(
            (flex.sku.as_deref(), flex.instance_count),
            (Some("Standard_NC4as_T4_v3"), None)
        );
        assert_eq!(flex.unresolved, ["instanceCount"]);
    }
}
