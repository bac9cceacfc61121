//! Catalog overlays: VM size facts that users add to the built-in catalog.
//!
//! An overlay is a YAML or JSON document of one documented format, described by the
//! JSON Schema in `policies/catalog/overlay.schema.json` ([`SCHEMA`]) and in
//! `docs/catalog.md`:
//!
//! ```yaml
//! kind: CatalogOverlay
//! date: "2026-11-20"
//! skus:
//!   - name: Standard_NC40ads_H100_v5
//!     source: https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncadsh100v5-series
//!     vcpus: 40
//!     gpu: {vendor: NVIDIA, model: H100 NVL, architecture: Hopper, computeCapability: "9.0", count: 1}
//! ```
//!
//! [`parse`] checks a document against the schema with the validator settings use
//! (every problem with its JSON pointer, so a host can name file and line), then the
//! rules the schema cannot say (real calendar dates, one entry per size). [`merge`]
//! applies overlays over the built-in rows: a size the catalog knows (under any
//! spelling or alias) keeps every fact the overlay does not give; a new size starts
//! with nothing known and gets only what the overlay says. Nothing is guessed: an
//! added size without a GPU count has none (`None`), not 0.

use super::{SkuFacts, sku_key};
use crate::settings::{self, Problem};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The overlay format's JSON Schema (`policies/catalog/overlay.schema.json`).
pub const SCHEMA: &str = include_str!("../../../policies/catalog/overlay.schema.json");

/// The value of `kind` every overlay carries.
pub const KIND: &str = "CatalogOverlay";

/// Where a derived GPU count of 0 comes from.
pub const NOT_N_SERIES: &str = "derived: the name is not an N-series (GPU) size";

/// One overlay document, checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Overlay {
    /// Always [`KIND`].
    pub kind: String,
    /// Date of the data (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// What the overlay is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The sizes it adds or changes, in file order.
    pub skus: Vec<SkuEntry>,
    /// KAITO's presets and instance types for another release, as the schema checked it
    /// ([`super::kaito::KaitoData::from_json`] reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kaito: Option<Value>,
}

/// One size in an overlay: its name, its source, and the facts it sets. A fact left
/// out is not changed (a known size) or not known (a new size).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkuEntry {
    /// Azure VM size name, any case, with or without `Standard_`.
    pub name: String,
    /// Where the facts come from (URL, document, or the `az` command and its date).
    pub source: String,
    /// Quota family, e.g. `standardNCadsH100v5Family`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Size series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// vCPUs per VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpus: Option<u64>,
    /// Memory per VM in GiB.
    #[serde(default, rename = "memoryGiB", skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<f64>,
    /// GPU facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuEntry>,
    /// Has an InfiniBand interconnect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<bool>,
    /// RDMA capable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<bool>,
    /// Isolated size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated: Option<bool>,
    /// `GA`, `retirement_announced` or `retired`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `YYYY-MM-DD` after which the size is retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retirement_date: Option<String>,
    /// Exempt from Azure ML's 20% quota reservation for managed online deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_ml_skip_reservation: Option<bool>,
}

/// GPU facts of an overlay entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuEntry {
    /// `NVIDIA` or `AMD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// GPU model as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// GPU architecture, e.g. `Hopper`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// NVIDIA compute capability `X.Y`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// GPUs per VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
    /// GPU memory of the whole VM in GiB, all its GPUs together (the size tables'
    /// Accelerator-Memory column).
    #[serde(default, rename = "memoryGiB", skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<f64>,
}

/// Why a document is not a valid overlay: every problem, each at a JSON pointer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", settings::render(.problems))]
pub struct OverlayError {
    /// The problems, in document order.
    pub problems: Vec<Problem>,
}

fn schema() -> &'static settings::Schema {
    static SCHEMA_VALUE: OnceLock<settings::Schema> = OnceLock::new();
    SCHEMA_VALUE.get_or_init(|| {
        // The schema is part of this crate; a test checks it parses and stays in the
        // supported subset. Should it not parse, `Null` accepts nothing.
        settings::Schema::new(serde_json::from_str(SCHEMA).unwrap_or(Value::Null))
    })
}

/// Checks `doc` (an overlay as JSON; YAML converted by the host) and reads it.
pub fn parse(doc: &Value) -> Result<Overlay, OverlayError> {
    let mut problems = schema().validate(doc);
    if problems.is_empty() {
        problems = semantic_problems(doc);
    }
    if !problems.is_empty() {
        return Err(OverlayError { problems });
    }
    serde_json::from_value(doc.clone()).map_err(|e| OverlayError {
        problems: vec![Problem {
            pointer: String::new(),
            message: e.to_string(),
        }],
    })
}

/// What the schema cannot say: dates are real calendar dates, one entry per size,
/// a GPU count only with GPU facts that agree with it.
fn semantic_problems(doc: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut date = |pointer: String, v: Option<&Value>| {
        if let Some(d) = v.and_then(Value::as_str)
            && !calendar_date(d)
        {
            problems.push(Problem {
                pointer,
                message: format!("`{d}` is not a calendar date; expected YYYY-MM-DD"),
            });
        }
    };
    date("/date".into(), doc.get("date"));
    let skus = doc.get("skus").and_then(Value::as_array);
    for (i, e) in skus.into_iter().flatten().enumerate() {
        date(format!("/skus/{i}/retirementDate"), e.get("retirementDate"));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, e) in skus.into_iter().flatten().enumerate() {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(first) = seen.insert(sku_key(name), i) {
            problems.push(Problem {
                pointer: format!("/skus/{i}/name"),
                message: format!(
                    "`{name}` is already listed at /skus/{first}; list each size once"
                ),
            });
        }
        // GPU memory 0 says the size has no GPU: only with a GPU count of 0.
        let gpu = e.get("gpu");
        if gpu.and_then(|g| g.get("memoryGiB")).and_then(Value::as_f64) == Some(0.0)
            && gpu.and_then(|g| g.get("count")).and_then(Value::as_f64) != Some(0.0)
        {
            problems.push(Problem {
                pointer: format!("/skus/{i}/gpu/memoryGiB"),
                message:
                    "GPU memory 0 for a size with GPUs; leave memoryGiB out when it is not known"
                        .into(),
            });
        }
        if e.get("status").and_then(Value::as_str) == Some("GA")
            && e.get("retirementDate").is_some()
        {
            problems.push(Problem {
                pointer: format!("/skus/{i}/status"),
                message:
                    "status GA with a retirementDate; expected retirement_announced or retired"
                        .into(),
            });
        }
    }
    problems
}

fn calendar_date(d: &str) -> bool {
    let parts: Vec<u32> = d.split('-').filter_map(|p| p.parse().ok()).collect();
    let [y, m, day] = parts[..] else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// `Standard_NC6` for `standard_NC6` or `NC6`, `Basic_A0` for `basic_A0`: the prefix as
/// Azure spells it, the rest as written.
fn canonical_name(written: &str) -> String {
    for prefix in ["Standard_", "Basic_"] {
        if let Some(head) = written.get(..prefix.len())
            && head.eq_ignore_ascii_case(prefix)
        {
            return format!("{prefix}{}", written.get(prefix.len()..).unwrap_or(""));
        }
    }
    format!("Standard_{written}")
}

/// A new size: its name, and nothing known until an overlay says it.
fn blank(name: &'static str) -> SkuFacts {
    SkuFacts {
        name,
        alias: name,
        series: "",
        category: "",
        vendor: None,
        gpu_model: "",
        architecture: None,
        compute_capability: None,
        gpu_count: None,
        gpu_memory_gib: None,
        vcpus: None,
        memory_gib: None,
        family: None,
        infiniband: false,
        rdma: false,
        isolated: false,
        status: "",
        retirement_date: None,
        mig_capable: false,
        aks_supported: None,
        kaito_supported: None,
        requires_approval: None,
        online_endpoint: None,
        ml_skip_reservation: false,
        sources: &[],
        overridden: &[],
    }
}

/// Applies one entry to `f`; returns the facts it set, in the overlay's field names.
fn apply(f: &mut SkuFacts, e: &SkuEntry) -> Vec<&'static str> {
    let mut set = Vec::new();
    macro_rules! fact {
        ($field:literal, $value:expr, $target:expr) => {
            if let Some(v) = $value {
                $target = v;
                set.push($field);
            }
        };
    }
    fact!(
        "family",
        e.family.as_deref().map(|v| Some(leak(v))),
        f.family
    );
    fact!("series", e.series.as_deref().map(leak), f.series);
    fact!("vcpus", e.vcpus.map(Some), f.vcpus);
    fact!("memoryGiB", e.memory_gib.map(Some), f.memory_gib);
    if let Some(g) = &e.gpu {
        fact!(
            "gpu.vendor",
            g.vendor.as_deref().map(|v| Some(leak(v))),
            f.vendor
        );
        fact!("gpu.model", g.model.as_deref().map(leak), f.gpu_model);
        fact!(
            "gpu.architecture",
            g.architecture.as_deref().map(|v| Some(leak(v))),
            f.architecture
        );
        fact!(
            "gpu.computeCapability",
            g.compute_capability.as_deref().map(|v| Some(leak(v))),
            f.compute_capability
        );
        fact!("gpu.count", g.count.map(Some), f.gpu_count);
        fact!("gpu.memoryGiB", g.memory_gib.map(Some), f.gpu_memory_gib);
    }
    fact!("infiniband", e.infiniband, f.infiniband);
    fact!("rdma", e.rdma, f.rdma);
    fact!("isolated", e.isolated, f.isolated);
    fact!("status", e.status.as_deref().map(leak), f.status);
    fact!(
        "retirementDate",
        e.retirement_date.as_deref().map(|v| Some(leak(v))),
        f.retirement_date
    );
    fact!(
        "azureMlSkipReservation",
        e.azure_ml_skip_reservation,
        f.ml_skip_reservation
    );
    // Derived facts follow what they derive from: the category from the GPU count,
    // MIG from the model (as build.rs derives them for built-in rows).
    match f.gpu_count {
        Some(c) if c > 0.0 => f.category = "gpu",
        Some(_) => f.category = "cpu",
        None => {}
    }
    if set
        .iter()
        .any(|s| s.starts_with("gpu.") && *s != "gpu.memoryGiB")
    {
        f.mig_capable = f.vendor == Some("NVIDIA")
            && ["A100", "H100", "H200"]
                .iter()
                .any(|m| f.gpu_model.contains(m));
    }
    // A retirement date with no status says the retirement is announced.
    if e.retirement_date.is_some() && e.status.is_none() && f.status != "retired" {
        f.status = "retirement_announced";
    }
    set
}

/// The built-in rows with `overlays` applied in order (a later overlay wins), sorted
/// by key like [`super::SKUS`]. An entry naming a known size or alias changes that
/// size under all its names; any other entry adds a size.
pub fn merge(
    builtin: &[(&'static str, SkuFacts)],
    overlays: &[Overlay],
) -> Vec<(&'static str, SkuFacts)> {
    let mut rows: Vec<(&'static str, SkuFacts)> = builtin.to_vec();
    // Canonical name (lower case) -> rows of that size; and every key -> canonical.
    let canonical_of = |rows: &[(&'static str, SkuFacts)], key: &str| {
        rows.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, f)| f.name.to_ascii_lowercase())
    };
    let mut provenance: BTreeMap<String, BTreeMap<&'static str, &'static str>> = BTreeMap::new();
    for overlay in overlays {
        for e in &overlay.skus {
            let key = sku_key(&e.name);
            let canonical = match canonical_of(&rows, &key) {
                Some(c) => c,
                None => {
                    // Canonical spelling of a new size: its prefix as Azure writes it
                    // (`Standard_`, `Basic_`; `Standard_` when there is none) and the rest
                    // as written.
                    let written = e.name.trim();
                    let name = leak(&canonical_name(written));
                    rows.push((leak(&key), blank(name)));
                    key.clone()
                }
            };
            let source = leak(&e.source);
            let mut set = Vec::new();
            let mut derived = false;
            for (_, f) in rows
                .iter_mut()
                .filter(|(_, f)| f.name.eq_ignore_ascii_case(&canonical))
            {
                set = apply(f, e);
                // A size outside the N-series (GPU) families has no GPU: that is what
                // its name says, not a guess. An N-series size stays unknown.
                if f.gpu_count.is_none() && !super::sku_gpu_family(f.name) {
                    f.gpu_count = Some(0.0);
                    f.category = "cpu";
                    derived = true;
                }
            }
            let facts = provenance.entry(canonical).or_default();
            facts.insert("name", source);
            for field in set {
                facts.insert(field, source);
            }
            if derived {
                facts.insert("gpu.count", NOT_N_SERIES);
            }
        }
    }
    for (_, f) in &mut rows {
        if let Some(p) = provenance.get(&f.name.to_ascii_lowercase()) {
            let list: Vec<(&'static str, &'static str)> = p.iter().map(|(k, v)| (*k, *v)).collect();
            f.overridden = list.leak();
        }
    }
    rows.sort_by(|a, b| a.0.cmp(b.0));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schema_is_in_the_supported_subset() {
        let schema: Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
        assert_eq!(settings::check_schema(&schema), vec![]);
    }

    #[test]
    fn a_valid_overlay_parses() {
        let o = parse(&json!({
            "kind": "CatalogOverlay",
            "date": "2026-11-20",
            "skus": [{"name": "Standard_NC40ads_H100_v5", "source": "doc", "vcpus": 40,
                      "gpu": {"vendor": "NVIDIA", "count": 1, "computeCapability": "9.0"}}]
        }))
        .expect("valid");
        assert_eq!(o.skus[0].vcpus, Some(40));
        assert_eq!(o.skus[0].gpu.as_ref().and_then(|g| g.count), Some(1.0));
    }

    #[test]
    fn problems_name_the_field() {
        let err = parse(&json!({
            "kind": "CatalogOverlay",
            "skus": [{"name": "Standard_NC6", "vcpu": 6},
                     {"name": "g5.xlarge", "source": "x"},
                     {"name": "Standard_NC6", "source": "x", "retirementDate": "2026-02-30"}]
        }))
        .expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.contains("at `/skus/0/source`: required field is missing"),
            "{text}"
        );
        assert!(
            text.contains("at `/skus/0/vcpu`: unknown field; expected one of"),
            "{text}"
        );
        assert!(text.contains("at `/skus/1/name`"), "{text}");
        // Schema problems come first; the calendar check runs on a schema-valid document.
        let err = parse(&json!({
            "kind": "CatalogOverlay",
            "skus": [{"name": "Standard_NC6", "source": "x", "retirementDate": "2026-02-30"},
                     {"name": "nc6", "source": "y"}]
        }))
        .expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.contains("at `/skus/0/retirementDate`: `2026-02-30` is not a calendar date"),
            "{text}"
        );
        assert!(
            text.contains("at `/skus/1/name`: `nc6` is already listed at /skus/0"),
            "{text}"
        );
        let err = parse(&json!({"skus": []})).expect_err("no kind");
        assert!(err.to_string().contains("kind"), "{err}");
    }

    fn overlay(v: Value) -> Overlay {
        parse(&v).expect("valid overlay")
    }

    fn find<'a>(rows: &'a [(&'static str, SkuFacts)], name: &str) -> Option<&'a SkuFacts> {
        let key = sku_key(name);
        rows.iter().find(|(k, _)| *k == key).map(|(_, f)| f)
    }

    #[test]
    fn merge_adds_sizes_knowing_only_what_the_overlay_says() {
        let rows = merge(
            super::super::SKUS,
            &[overlay(json!({"kind": "CatalogOverlay", "skus": [
                {"name": "standard_NC999x_Z1_v9", "source": "az vm list-skus 2026-11-20", "vcpus": 12}
            ]}))],
        );
        let f = find(&rows, "Standard_NC999x_Z1_v9").expect("added");
        assert_eq!(f.name, "Standard_NC999x_Z1_v9");
        assert_eq!(f.vcpus, Some(12));
        assert_eq!(f.gpu_count, None, "a GPU count not given is unknown, not 0");
        assert_eq!(
            f.overridden,
            &[
                ("name", "az vm list-skus 2026-11-20"),
                ("vcpus", "az vm list-skus 2026-11-20")
            ]
        );
        assert!(
            rows.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted for binary search"
        );
    }

    #[test]
    fn gpu_memory_is_a_fact_an_overlay_sets_and_zero_needs_no_gpus() {
        let rows = merge(
            super::super::SKUS,
            &[overlay(json!({"kind": "CatalogOverlay", "skus": [
                {"name": "Standard_NV36ads_A10_v5", "source": "a test", "gpu": {"memoryGiB": 32}},
                {"name": "Standard_NC999x_Z1_v9", "source": "a test", "gpu": {"memoryGiB": 48.5}}
            ]}))],
        );
        let a10 = find(&rows, "Standard_NV36ads_A10_v5").expect("known");
        assert_eq!(a10.gpu_memory_gib, Some(32.0));
        assert_eq!(a10.gpu_count, Some(1.0), "facts not given stay as built in");
        assert!(a10.overridden.contains(&("gpu.memoryGiB", "a test")));
        let new = find(&rows, "Standard_NC999x_Z1_v9").expect("added");
        assert_eq!(new.gpu_memory_gib, Some(48.5));
        assert_eq!(new.gpu_count, None, "memory says nothing of the count");
        assert!(!new.mig_capable);
        let err = parse(&json!({"kind": "CatalogOverlay", "skus": [
            {"name": "Standard_NC6", "source": "x", "gpu": {"memoryGiB": 0}},
            {"name": "Standard_D2_v2", "source": "x", "gpu": {"count": 0, "memoryGiB": 0}},
            {"name": "Standard_NC12", "source": "x", "gpu": {"memoryGiB": "24Gi"}}
        ]}))
        .expect_err("invalid");
        let text = err.to_string();
        assert!(text.contains("at `/skus/2/gpu/memoryGiB`"), "{text}");
        assert!(!text.contains("/skus/1/"), "{text}");
        let err = parse(&json!({"kind": "CatalogOverlay", "skus": [
            {"name": "Standard_NC6", "source": "x", "gpu": {"memoryGiB": 0}}
        ]}))
        .expect_err("invalid");
        assert!(
            err.to_string()
                .contains("at `/skus/0/gpu/memoryGiB`: GPU memory 0 for a size with GPUs"),
            "{err}"
        );
    }

    #[test]
    fn merge_changes_a_known_size_under_every_alias_and_later_overlays_win() {
        let rows = merge(
            super::super::SKUS,
            &[
                overlay(json!({"kind": "CatalogOverlay", "skus": [
                    {"name": "Standard_ND96asr_A100_v4", "source": "first", "retirementDate": "2027-01-01"}
                ]})),
                overlay(json!({"kind": "CatalogOverlay", "skus": [
                    {"name": "ND96asr_v4", "source": "second", "retirementDate": "2027-06-30"}
                ]})),
            ],
        );
        for name in ["Standard_ND96asr_v4", "Standard_ND96asr_A100_v4"] {
            let f = find(&rows, name).expect("known");
            assert_eq!(f.retirement_date, Some("2027-06-30"), "{name}");
            assert_eq!(f.status, "retirement_announced");
            assert!(f.infiniband, "facts not given stay as built in");
            assert!(f.overridden.contains(&("retirementDate", "second")));
        }
        let untouched = find(&rows, "Standard_NC6").expect("known");
        assert!(untouched.overridden.is_empty());
        assert_eq!(rows.len(), super::super::SKUS.len());
    }
}
