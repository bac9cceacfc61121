//! KAITO's own figures: the GPU memory (and, in older releases, the GPU count) each preset
//! needs, and the GPUs of each instance type KAITO knows, with the KAITO version they come
//! from. Built in from `policies/catalog/kaito.yaml` (one KAITO commit); a catalog overlay's
//! `kaito:` section extends or replaces them (`install`), for a cluster on another release.
//!
//! [`fit`] judges a preset on an instance type the way KAITO's admission webhook does
//! (`api/v1beta1/workspace_validation.go`): total GPUs (`count x GPUs`) against the preset's
//! GPU count when the data gives one, per-GPU memory when it gives one above zero, and total
//! GPU memory (`count x GPU memory`) against the preset's total, each with KAITO's wording.
//! A preset or instance type the data does not list, or a requirement it does not state,
//! is unknown: never a pass.

use serde::Serialize;
use serde_json::Value;
use std::sync::OnceLock;

/// KAITO's data: its version and its two tables. Also the `kaito:` section of an overlay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KaitoData {
    /// The KAITO release or commit the figures come from, as messages name it.
    pub version: String,
    /// Overlay only: drop the built-in presets and instance types first (another release),
    /// instead of changing or adding entries by name.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
    /// Presets (legacy names and model catalog ids).
    pub presets: Vec<KaitoPreset>,
    /// Instance types KAITO knows, with the whole VM's GPUs.
    pub instance_types: Vec<KaitoInstanceType>,
}

/// One preset and what it needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KaitoPreset {
    /// Preset name as a Workspace writes it (`phi-4`, `microsoft/phi-4`); compared without case.
    pub name: String,
    /// The model catalog id a legacy name maps to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// KAITO refuses the preset ("Model %s is deprecated and no longer supported").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// What inference needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<KaitoNeed>,
    /// What tuning needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tuning: Option<KaitoNeed>,
    /// Where the figures come from (file and line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Built-in source ids ([`super::source`] resolves them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// A preset's requirement; a figure left out is not checked (KAITO does not check it).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KaitoNeed {
    /// At least this many GPUs in all (KAITO's `GPUCountRequirement`, until 2026-03).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// At least this much GPU memory in all, as KAITO writes it (`27.31Gi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_gpu_memory: Option<String>,
    /// At least this much memory per GPU (`0Gi`: no requirement; until 2025-09).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_gpu_memory: Option<String>,
}

/// One instance type of KAITO's SKU table.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KaitoInstanceType {
    /// VM size name, any case.
    pub name: String,
    /// GPUs of the VM.
    pub gpus: u32,
    /// GPU memory of the whole VM, as KAITO writes it (`80Gi`).
    pub gpu_memory: String,
    /// Where the figures come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Built-in source ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn texts(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn number(v: &Value, key: &str) -> Option<u32> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

fn need(v: Option<&Value>) -> Option<KaitoNeed> {
    let v = v?;
    Some(KaitoNeed {
        gpus: number(v, "gpus"),
        total_gpu_memory: text(v, "totalGpuMemory"),
        per_gpu_memory: text(v, "perGpuMemory"),
    })
}

impl KaitoData {
    /// Reads the overlay format's `kaito:` section (checked against the overlay schema
    /// first), or the built-in data in the same shape. Written out rather than derived: the
    /// policy component carries no deserializer for it.
    pub fn from_json(v: &Value) -> Self {
        let list = |key: &str| {
            v.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        KaitoData {
            version: text(v, "version").unwrap_or_default(),
            replace: v.get("replace").and_then(Value::as_bool).unwrap_or(false),
            presets: list("presets")
                .iter()
                .map(|p| KaitoPreset {
                    name: text(p, "name").unwrap_or_default(),
                    model: text(p, "model"),
                    deprecated: p
                        .get("deprecated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    inference: need(p.get("inference")),
                    tuning: need(p.get("tuning")),
                    source: text(p, "source"),
                    sources: texts(p, "sources"),
                })
                .collect(),
            instance_types: list("instanceTypes")
                .iter()
                .map(|t| KaitoInstanceType {
                    name: text(t, "name").unwrap_or_default(),
                    gpus: number(t, "gpus").unwrap_or(0),
                    gpu_memory: text(t, "gpuMemory").unwrap_or_default(),
                    source: text(t, "source"),
                    sources: texts(t, "sources"),
                })
                .collect(),
        }
    }
}

/// The built-in data as JSON (written by `build.rs` from `policies/catalog/kaito.yaml`).
const BUILTIN_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/kaito.json"));

/// The built-in data as a JSON value, in the shape of an overlay's `kaito:` section. A test
/// checks it parses; should it not, nothing is known (unknown, not a pass).
fn builtin_value() -> Value {
    serde_json::from_str(BUILTIN_JSON).unwrap_or(Value::Null)
}

/// The built-in KAITO data, ignoring overlays.
pub fn builtin() -> KaitoData {
    KaitoData::from_json(&builtin_value())
}

/// The data lookups read, as the JSON sections it is made of: the built-in data, then each
/// installed overlay's `kaito:` section. Kept as JSON and read in place, so that a policy
/// instance carries no code to copy it into structs.
static SECTIONS: OnceLock<Vec<Value>> = OnceLock::new();

fn sections() -> &'static [Value] {
    SECTIONS.get_or_init(|| vec![builtin_value()])
}

/// Installs the overlays' `kaito:` sections (in order; a later one wins) over the built-in
/// data. Called by [`super::install`], once, before any lookup; a second call changes nothing.
pub(super) fn install<'a>(overlays: impl Iterator<Item = &'a Value>) {
    let mut all = vec![builtin_value()];
    all.extend(overlays.cloned());
    let _ = SECTIONS.set(all);
}

/// The KAITO version the data comes from: the last overlay's, `X (over Y)` when it only
/// changes entries of the data before it.
pub fn version() -> String {
    let mut out = String::new();
    for s in sections() {
        let v = s.get("version").and_then(Value::as_str).unwrap_or_default();
        out = if replaces(s) || out.is_empty() {
            v.to_string()
        } else {
            format!("{v} (over {out})")
        };
    }
    out
}

fn replaces(section: &Value) -> bool {
    section.get("replace").and_then(Value::as_bool) == Some(true)
}

/// The latest entry of `list` (`presets`, `instanceTypes`) that `matches`, from the last
/// section back to the first or to a section that replaces what came before it.
fn find(list: &str, matches: impl Fn(&str) -> bool) -> Option<&'static Value> {
    for s in sections().iter().rev() {
        let hit = s
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .rev()
            .find(|e| e.get("name").and_then(Value::as_str).is_some_and(&matches));
        if hit.is_some() {
            return hit;
        }
        if replaces(s) {
            return None;
        }
    }
    None
}

/// The catalog's spelling of a size (aliases resolved), lower case.
fn canonical(name: &str) -> String {
    super::sku(name).map_or_else(|| super::sku_key(name), |f| f.name.to_ascii_lowercase())
}

fn preset_value(name: &str) -> Option<&'static Value> {
    let name = name.trim();
    find("presets", |n| n.eq_ignore_ascii_case(name))
}

fn instance_type_value(name: &str) -> Option<&'static Value> {
    let key = canonical(name);
    find("instanceTypes", |n| canonical(n) == key)
}

/// The preset named `name` (any case).
pub fn preset(name: &str) -> Option<KaitoPreset> {
    let v = preset_value(name)?;
    let wrapped = serde_json::json!({ "presets": [v] });
    KaitoData::from_json(&wrapped).presets.pop()
}

/// The instance type named `name` (any case, any alias the catalog knows).
pub fn instance_type(name: &str) -> Option<KaitoInstanceType> {
    let v = instance_type_value(name)?;
    let wrapped = serde_json::json!({ "instanceTypes": [v] });
    KaitoData::from_json(&wrapped).instance_types.pop()
}

/// A Kubernetes quantity (`27.31Gi`, `16Gi`, `512Mi`, `80G`) in GiB; None when it is not one.
pub fn gib(quantity: &str) -> Option<f64> {
    let q = quantity.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (n, unit) = q.split_at(split);
    let n: f64 = n.parse().ok()?;
    let factor = match unit {
        "Ti" => 1024.0,
        "Gi" => 1.0,
        "Mi" => 1.0 / 1024.0,
        "Ki" => 1.0 / 1024.0 / 1024.0,
        "T" => 1e12 / f64::from(1u32 << 30),
        "G" => 1e9 / f64::from(1u32 << 30),
        "M" => 1e6 / f64::from(1u32 << 30),
        "" => 1.0 / f64::from(1u32 << 30),
        _ => return None,
    };
    Some(n * factor)
}

/// GiB as KAITO prints a quantity: `160Gi`, `13.5Gi`.
fn show_gib(x: f64) -> String {
    let rounded = (x * 100.0).round() / 100.0;
    if rounded.fract() == 0.0 {
        format!("{}Gi", rounded as i64)
    } else {
        format!("{rounded}Gi")
    }
}

/// What [`fit`] found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fit {
    /// `fits`, `insufficient` (a check fails), `deprecated` (KAITO refuses the preset) or
    /// `unknown` (the data cannot say: preset, instance type or requirement not listed).
    pub answer: &'static str,
    /// KAITO's own message for a failure, or why it is unknown; empty when it fits.
    pub reason: String,
    /// The KAITO version the figures come from.
    pub kaito_version: String,
    /// GPUs the preset needs in all; none when the data gives no figure.
    pub required_gpus: Option<i64>,
    /// GPUs the workspace provides (`count x GPUs`); none when unknown.
    pub provided_gpus: Option<i64>,
    /// Total GPU memory the preset needs, as KAITO writes it.
    pub required_memory: Option<String>,
    /// Total GPU memory the workspace provides (`count x GPU memory`).
    pub provided_memory: Option<String>,
    /// KAITO's SKU table lists the instance type.
    pub instance_type_listed: bool,
}

/// Judges preset `preset` for `mode` (`tuning`, or a workload `training`, judges the tuning
/// figures; anything else inference) on `count` nodes of `instance_type`, by the installed
/// KAITO data.
pub fn fit(preset_name: &str, instance_type_name: &str, count: i64, mode: &str) -> Fit {
    let version = version();
    let mut out = Fit {
        answer: "unknown",
        kaito_version: version.clone(),
        ..Fit::default()
    };
    let Some(p) = preset_value(preset_name) else {
        out.reason = format!(
            "preset `{preset_name}` is not in KAITO's presets or model catalog ({}), so whether it fits {instance_type_name} is not judged; if the cluster's KAITO knows it, add it to a catalog overlay's `kaito.presets`",
            version
        );
        return out;
    };
    if p.get("deprecated").and_then(Value::as_bool) == Some(true) {
        out.answer = "deprecated";
        out.reason = format!(
            "Model {preset_name} is deprecated and no longer supported (KAITO {})",
            version
        );
        return out;
    }
    let tuning = mode == "tuning" || mode == "training";
    let mode = if tuning { "tuning" } else { "inference" };
    let Some(need) = need(p.get(mode)) else {
        out.reason = format!(
            "KAITO's data ({}) states no {mode} requirement for preset {preset_name}, so whether it fits {instance_type_name} is not judged",
            version
        );
        return out;
    };
    out.required_gpus = need.gpus.map(i64::from);
    out.required_memory = need.total_gpu_memory.clone();
    let Some(t) = instance_type_value(instance_type_name).map(|t| KaitoInstanceType {
        name: text(t, "name").unwrap_or_default(),
        gpus: number(t, "gpus").unwrap_or(0),
        gpu_memory: text(t, "gpuMemory").unwrap_or_default(),
        ..KaitoInstanceType::default()
    }) else {
        out.reason = format!(
            "KAITO's SKU table ({}) does not list instance type {instance_type_name}: KAITO's webhook lets an Azure size it does not know pass unchecked and its node estimator fails with \"Unsupported SKU\"; whether preset {preset_name}{} fits is not judged; give its GPUs in a catalog overlay's `kaito.instanceTypes`",
            version,
            need.total_gpu_memory
                .as_deref()
                .map(|m| format!(" ({m} of GPU memory)"))
                .unwrap_or_default()
        );
        return out;
    };
    out.instance_type_listed = true;
    let count = count.max(1);
    let gpus = count.saturating_mul(i64::from(t.gpus));
    out.provided_gpus = Some(gpus);
    let vm_mem = gib(&t.gpu_memory);
    let total = vm_mem.map(|m| m * count as f64);
    out.provided_memory = total.map(show_gib);
    let mut failures = Vec::new();
    let mut unknown = Vec::new();
    if let Some(want) = need.gpus
        && gpus < i64::from(want)
    {
        failures.push(format!(
            "Insufficient number of GPUs: Instance type {} provides {gpus}, but preset {preset_name} requires at least {want}",
            t.name
        ));
    }
    if let Some(per) = need.per_gpu_memory.as_deref() {
        match (gib(per), vm_mem) {
            (Some(want), Some(m)) if want > 0.0 && t.gpus > 0 => {
                // KAITO divides whole GiB by the GPU count (integer division).
                let have = (m / f64::from(t.gpus)).floor();
                if have < want {
                    failures.push(format!(
                        "Insufficient per GPU memory: Instance type {} provides {} per GPU, but preset {preset_name} requires at least {per} per GPU",
                        t.name,
                        show_gib(have)
                    ));
                }
            }
            (None, _) | (_, None) => unknown.push(format!("per-GPU memory `{per}`")),
            _ => {}
        }
    }
    if let Some(want_text) = need.total_gpu_memory.as_deref() {
        match (gib(want_text), total) {
            (Some(want), Some(have)) => {
                if have < want {
                    failures.push(format!(
                        "Insufficient total GPU memory: Instance type {} has a total of {}, but preset {preset_name} requires at least {want_text}",
                        t.name,
                        show_gib(have)
                    ));
                }
            }
            _ => unknown.push(format!("total GPU memory `{want_text}`")),
        }
    }
    if !failures.is_empty() {
        out.answer = "insufficient";
        out.reason = failures.join("; ");
    } else if !unknown.is_empty() {
        out.reason = format!(
            "{} of KAITO's data ({}) is not a quantity, so whether preset {preset_name} fits {} is not judged",
            unknown.join(" and "),
            version,
            t.name
        );
    } else if need.gpus.is_none() && need.total_gpu_memory.is_none() {
        out.reason = format!(
            "KAITO's data ({}) states no GPU figure for preset {preset_name}, so whether it fits {} is not judged",
            version, t.name
        );
    } else {
        out.answer = "fits";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_data_parses_and_names_its_version() {
        let d = builtin();
        assert!(d.version.contains("056b828"), "{}", d.version);
        assert!(d.presets.len() > 80, "{}", d.presets.len());
        assert_eq!(d.instance_types.len(), 14);
        for p in &d.presets {
            for id in &p.sources {
                assert!(super::super::source(id).is_some(), "{} cites {id}", p.name);
            }
        }
    }

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        assert_eq!(gib("27.31Gi"), Some(27.31));
        assert_eq!(gib("512Mi"), Some(0.5));
        assert_eq!(gib("1Ti"), Some(1024.0));
        assert_eq!(gib("lots"), None);
        assert_eq!(show_gib(160.0), "160Gi");
        assert_eq!(show_gib(13.5), "13.5Gi");
    }

    #[test]
    fn fits_by_total_gpu_memory_at_head() {
        let ok = fit("phi-4", "Standard_NC24ads_A100_v4", 1, "inference");
        assert_eq!(ok.answer, "fits", "{}", ok.reason);
        let no = fit("phi-4", "Standard_NV36ads_A10_v5", 1, "inference");
        assert_eq!(no.answer, "insufficient");
        assert_eq!(
            no.reason,
            "Insufficient total GPU memory: Instance type Standard_NV36ads_A10_v5 has a total of 24Gi, but preset phi-4 requires at least 27.31Gi"
        );
        // Two nodes: count x GPU memory.
        assert_eq!(
            fit("phi-4", "Standard_NV36ads_A10_v5", 2, "inference").answer,
            "fits"
        );
        // KAITO's alias of ND96asr_v4 and the catalog's spelling are the same size.
        assert_eq!(
            fit(
                "llama-3.3-70b-instruct",
                "Standard_ND96asr_v4",
                1,
                "inference"
            )
            .answer,
            "fits"
        );
        // Model catalog ids, any case.
        assert_eq!(
            fit(
                "MICROSOFT/PHI-4",
                "Standard_NC24ads_A100_v4",
                1,
                "inference"
            )
            .answer,
            "fits"
        );
        // Tuning has its own figure: phi-4 tuning needs 70Gi.
        assert_eq!(
            fit("phi-4", "Standard_NV72ads_A10_v5", 1, "tuning").answer,
            "insufficient"
        );
    }

    #[test]
    fn unknown_presets_instance_types_and_requirements_are_unknown_never_fits() {
        let p = fit("falcon-7b", "Standard_NC24ads_A100_v4", 1, "inference");
        assert_eq!(p.answer, "unknown");
        assert!(p.reason.contains("not in KAITO's presets"), "{}", p.reason);
        let t = fit("phi-3.5-mini-instruct", "Standard_NC6s_v3", 1, "inference");
        assert_eq!(t.answer, "unknown");
        assert!(
            t.reason
                .contains("does not list instance type Standard_NC6s_v3"),
            "{}",
            t.reason
        );
        let n = fit(
            "llama-3.1-8b-instruct",
            "Standard_NC24ads_A100_v4",
            1,
            "tuning",
        );
        assert_eq!(n.answer, "unknown");
        assert_eq!(
            fit("phi-2", "Standard_NC24ads_A100_v4", 1, "inference").answer,
            "deprecated"
        );
    }
}
