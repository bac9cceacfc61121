//! The facts of one VM size as the catalog commands show and compare them: named as the
//! overlay format names them (`vcpus`, `gpu.count`, `retirementDate`), `None` when not known.

use computeguard_policy_core::catalog::{self, SkuFacts, overlay};
use serde_json::{Map, Value};

/// The facts an overlay can set, in the format's order.
pub const OVERLAY_FACTS: &[&str] = &[
    "family",
    "series",
    "vcpus",
    "memoryGiB",
    "gpu.vendor",
    "gpu.model",
    "gpu.architecture",
    "gpu.computeCapability",
    "gpu.count",
    "gpu.memoryGiB",
    "infiniband",
    "rdma",
    "isolated",
    "status",
    "retirementDate",
    "azureMlSkipReservation",
];

/// Facts only the built-in catalog records (or derives).
pub const BUILTIN_FACTS: &[&str] = &[
    "category",
    "migCapable",
    "aksSupported",
    "kaitoSupported",
    "requiresApproval",
    "onlineEndpoint",
];

/// Facts computed from others: GPU memory per GPU (`gpu.memoryGiB / gpu.count`).
pub const DERIVED_FACTS: &[&str] = &["gpu.memoryPerGpuGiB"];

/// Every fact, overlay facts first (each derived one after what it derives from).
pub fn all() -> impl Iterator<Item = &'static str> {
    OVERLAY_FACTS
        .iter()
        .flat_map(|f| {
            let derived: &[&'static str] = if *f == "gpu.memoryGiB" {
                DERIVED_FACTS
            } else {
                &[]
            };
            std::iter::once(f).chain(derived)
        })
        .chain(BUILTIN_FACTS)
        .copied()
}

/// GPU memory per GPU in GiB: the VM's GPU memory over its whole GPUs; for a partial GPU
/// (a count below 1) the VM's share of its one GPU. `None` when either is unknown or the
/// count is not a whole number above 1 (nothing says how such memory is split).
fn memory_per_gpu(f: &SkuFacts) -> Option<f64> {
    let total = f.gpu_memory_gib?;
    let count = f.gpu_count?;
    if count > 0.0 && count < 1.0 {
        Some(total)
    } else if count >= 1.0 && count.fract() == 0.0 {
        Some(total / count)
    } else {
        None
    }
}

/// The built-in row of `name` (any spelling or alias), ignoring installed overlays.
pub fn builtin(name: &str) -> Option<&'static SkuFacts> {
    let key = catalog::sku_key(name);
    catalog::SKUS
        .binary_search_by(|(k, _)| (*k).cmp(key.as_str()))
        .ok()
        .and_then(|i| catalog::SKUS.get(i))
        .map(|(_, f)| f)
}

/// Whether the size is one only overlays know (no built-in row, no built-in source).
pub fn added(f: &SkuFacts) -> bool {
    f.sources.is_empty()
}

/// Where an overlay set `fact`, if one did.
pub fn overridden(f: &SkuFacts, fact: &str) -> Option<&'static str> {
    f.overridden
        .iter()
        .rev()
        .find(|(k, _)| *k == fact)
        .map(|(_, s)| *s)
}

/// A number as JSON: an integer when it is whole (`1`, not `1.0`).
pub fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

fn text(s: &str) -> Option<Value> {
    (!s.is_empty()).then(|| Value::from(s))
}

/// The value of `fact`; `None` when not known. A size only overlays add knows only what
/// they said (and what follows from it): its booleans are not "false" by default.
pub fn value(f: &SkuFacts, fact: &str) -> Option<Value> {
    let new = added(f);
    let said = |fact: &str| overridden(f, fact).is_some();
    let flag = |b: bool, fact: &str| (!new || said(fact)).then_some(Value::from(b));
    match fact {
        "family" => f.family.map(Value::from),
        "series" => text(f.series),
        "vcpus" => f.vcpus.map(Value::from),
        "memoryGiB" => f.memory_gib.map(number),
        "gpu.vendor" => f.vendor.map(Value::from),
        "gpu.model" => text(f.gpu_model),
        "gpu.architecture" => f.architecture.map(Value::from),
        "gpu.computeCapability" => f.compute_capability.map(Value::from),
        "gpu.count" => f.gpu_count.map(number),
        "gpu.memoryGiB" => f.gpu_memory_gib.map(number),
        "gpu.memoryPerGpuGiB" => memory_per_gpu(f).map(number),
        "infiniband" => flag(f.infiniband, "infiniband"),
        "rdma" => flag(f.rdma, "rdma"),
        "isolated" => flag(f.isolated, "isolated"),
        "status" => text(f.status),
        "retirementDate" => f.retirement_date.map(Value::from),
        "azureMlSkipReservation" => flag(f.ml_skip_reservation, "azureMlSkipReservation"),
        "category" => text(f.category),
        "migCapable" => (!new
            || f.overridden
                .iter()
                .any(|(k, _)| k.starts_with("gpu.") && *k != "gpu.memoryGiB"))
        .then_some(Value::from(f.mig_capable)),
        "aksSupported" => f.aks_supported.map(Value::from),
        "kaitoSupported" => f.kaito_supported.map(Value::from),
        "requiresApproval" => f.requires_approval.map(Value::from),
        "onlineEndpoint" => f.online_endpoint.map(Value::from),
        _ => None,
    }
}

/// A value as text: strings as they are, whole numbers without `.0`, `unknown` for none.
pub fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "unknown".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Where a shown fact comes from.
pub enum Origin {
    /// The built-in catalog (its row's sources).
    BuiltIn,
    /// An overlay entry: its `source`.
    Overlay(&'static str),
    /// Derived from other facts (`why`).
    Derived(&'static str),
    /// Nobody says.
    Unknown,
}

/// Where the value [`value`] gives for `fact` comes from.
pub fn origin(f: &SkuFacts, fact: &str) -> Origin {
    let v = value(f, fact);
    if fact == "gpu.memoryPerGpuGiB" {
        return match (v, f.gpu_count) {
            (None, _) => Origin::Unknown,
            (Some(_), Some(c)) if c < 1.0 => {
                Origin::Derived("derived: a partial GPU, the VM's share of it is gpu.memoryGiB")
            }
            (Some(_), _) => Origin::Derived("derived: gpu.memoryGiB / gpu.count"),
        };
    }
    match overridden(f, fact) {
        Some(overlay::NOT_N_SERIES) => Origin::Derived(overlay::NOT_N_SERIES),
        Some(source) => Origin::Overlay(source),
        None if v.is_none() => Origin::Unknown,
        None => match builtin(f.name) {
            Some(b) if value(b, fact) == v => Origin::BuiltIn,
            _ => Origin::Derived("derived from the facts an overlay set"),
        },
    }
}

/// The facts as one JSON object (`gpu.*` nested under `gpu`), unknown ones `null`.
pub fn object(f: &SkuFacts) -> Map<String, Value> {
    let mut out = Map::new();
    let mut gpu = Map::new();
    for fact in all() {
        let v = value(f, fact).unwrap_or(Value::Null);
        match fact.strip_prefix("gpu.") {
            Some(g) => {
                gpu.insert(g.to_string(), v);
            }
            None => {
                out.insert(fact.to_string(), v);
            }
        }
    }
    out.insert("gpu".into(), Value::Object(gpu));
    out
}
