//! The context both front ends give the policies: catalog overlays and the
//! subscription's Azure facts that `computeguard.yaml` names (`catalog:`, `azure:`),
//! read, checked and turned into the JSON text of the WIT `context` interface.
//!
//! Every file is checked here, with the same parsers the policy uses, so a bad one is
//! refused before anything is loaded, naming the file, the line and the field
//! (`overlays/azure.yaml:12: at `/skus/3/vcpus`: expected an integer, got a string`).
//! SKU lists are cut down to what the rules read (virtual machine sizes: name,
//! family, locations, zones, restrictions, capabilities), so a full
//! `az vm list-skus --all` output costs the policy less memory; the shape stays the
//! one `az` prints, so an embedder that passes the file as it is gets the same answers.

use computeguard_decode::{Document, decode_json, decode_yaml};
use computeguard_engine::PolicyContext;
use computeguard_policy_core::azure::{ShapeError, parse_ml_usage, parse_skus, parse_usage};
use computeguard_policy_core::catalog::overlay;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Largest context file read (a full `az vm list-skus --all -o json` is tens of MiB).
pub const MAX_CONTEXT_FILE_BYTES: u64 = 256 << 20;

/// The context files a configuration names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextFiles {
    /// Catalog overlays, applied in order over the built-in catalog.
    pub catalog: Vec<PathBuf>,
    /// `az vm list-skus --all -o json` outputs or Resource Skus - List bodies.
    pub skus: Vec<PathBuf>,
    /// Per region, `az vm list-usage --location REGION -o json` or a Usage - List body.
    pub usage: Vec<(String, PathBuf)>,
    /// Per region, `az ml compute list-usage --location REGION -o json` or an Azure ML
    /// Usages - List body (Microsoft.MachineLearningServices).
    pub ml_usage: Vec<(String, PathBuf)>,
    /// The Azure ML workspace's region (`azure.workspaceRegion`, or the workspace file `check`
    /// is given), as a programmatic name: the region of Azure ML deployments and jobs, whose
    /// files name none.
    pub workspace_region: Option<String>,
    /// Azure Retail Prices API pages (`azure.prices`): read by the CLI's cost estimate
    /// (`computeguard-cost`), never given to a policy, so not part of [`ContextFiles::is_empty`].
    pub prices: Vec<PathBuf>,
    /// Digests (`sha256:<hex>`) files must have when they are read: an overlay pulled from
    /// a registry is pinned to the layer digest that was verified (signature included).
    pub pins: Vec<(PathBuf, String)>,
}

impl ContextFiles {
    /// True when the configuration names no context at all.
    pub fn is_empty(&self) -> bool {
        self.catalog.is_empty()
            && self.skus.is_empty()
            && self.usage.is_empty()
            && self.ml_usage.is_empty()
    }
}

/// A context read and checked, ready for [`computeguard_engine::Engine::load_with_context`].
#[derive(Clone, Debug)]
pub struct LoadedContext {
    /// The JSON text the policies get.
    pub context: PolicyContext,
    /// Sizes the overlays list, over all overlays.
    pub overlay_sizes: usize,
    /// Virtual machine SKU entries read from the SKU lists (one per size and region).
    pub sku_entries: usize,
    /// Regions with usage, as the configuration names them: compute usage (`azure.usage`),
    /// then those with only Azure ML usage (`azure.mlUsage`).
    pub usage_regions: Vec<String>,
    /// The SKU lists were given: `sku-available-in-region` can judge.
    pub has_skus: bool,
}

/// Why the context could not be read: the file and what is wrong, with the line.
#[derive(Debug, thiserror::Error)]
pub enum ContextLoadError {
    /// The file could not be read.
    #[error("cannot read {what} `{}`: {reason}", path.display())]
    Read {
        /// What the configuration uses the file for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file is larger than [`MAX_CONTEXT_FILE_BYTES`].
    #[error("{what} `{}` is {size} bytes, over the {MAX_CONTEXT_FILE_BYTES}-byte limit; refusing to read it", path.display())]
    TooLarge {
        /// What the configuration uses the file for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The file is not what it should be: every problem as `FILE:LINE: message`.
    #[error("{}", problems.join("\n"))]
    Invalid {
        /// One line per problem, each naming the file and line.
        problems: Vec<String>,
    },
}

fn read(what: &'static str, path: &Path) -> Result<String, ContextLoadError> {
    let err = |e: std::io::Error| ContextLoadError::Read {
        what,
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let size = std::fs::metadata(path).map_err(err)?.len();
    if size > MAX_CONTEXT_FILE_BYTES {
        return Err(ContextLoadError::TooLarge {
            what,
            path: path.to_path_buf(),
            size,
        });
    }
    std::fs::read_to_string(path).map_err(err)
}

/// Decodes a YAML or JSON file (by extension; `.json` is JSON) into its one document,
/// with positions.
fn decode(path: &Path, text: &str) -> Result<Document, ContextLoadError> {
    let file = path.display();
    let invalid = |message: String| ContextLoadError::Invalid {
        problems: vec![message],
    };
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if json {
        return decode_json(text)
            .map_err(|e| invalid(format!("{file}:{}:{}: {}", e.line, e.column, e.message)));
    }
    let mut docs = decode_yaml(text)
        .map_err(|e| invalid(format!("{file}:{}:{}: {}", e.line, e.column, e.message)))?;
    if docs.len() > 1 {
        return Err(invalid(format!(
            "{file}: holds {} YAML documents; expected one",
            docs.len()
        )));
    }
    docs.pop()
        .ok_or_else(|| invalid(format!("{file}: is empty; expected one document")))
}

/// An `az` output read as plain JSON, without positions: a full SKU list is tens of
/// MiB, and positions are needed only to name the line of a problem (the file is then
/// decoded again with them). Text that is not JSON gets the decoder's line and column.
fn fast_json(path: &Path, text: &str) -> Result<Value, ContextLoadError> {
    match serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)) {
        Ok(v) => Ok(v),
        Err(_) => decode(path, text).map(|d| d.value),
    }
}

/// `FILE:LINE: message` for a problem at `pointer` (the nearest parent that is in the
/// file, for a missing field).
fn at(path: &Path, doc: &Document, pointer: &str, message: &str) -> String {
    let mut p = pointer;
    loop {
        if let Some(span) = doc.positions.locate(p) {
            return format!("{}:{}: {message}", path.display(), span.line);
        }
        match p.rfind('/') {
            Some(i) => p = &p[..i],
            None => return format!("{}: {message}", path.display()),
        }
    }
}

fn shape_problem(path: &Path, doc: &Document, e: &ShapeError) -> String {
    at(path, doc, &e.pointer, &e.to_string())
}

/// What the rules read of a SKU entry: everything else is dropped.
const SKU_KEYS: &[&str] = &[
    "resourceType",
    "name",
    "family",
    "locations",
    "locationInfo",
    "restrictions",
    "capabilities",
];
/// The capabilities the catalog and the rules read.
const SKU_CAPABILITIES: &[&str] = &["vCPUs", "GPUs", "MemoryGB", "RdmaEnabled", "vCPUsAvailable"];

/// A SKU list (array or `{"value": [...]}`) cut down to the virtual machine sizes and
/// the fields the rules read, in the bare-array shape `az` prints. Azure lists a size
/// once per region; entries of one size with the same family and capabilities become one
/// entry listing every region (its `locations`, `locationInfo` without `zoneDetails`, and
/// every region's restrictions, each of which names its own locations), so a full
/// `az vm list-skus --all` output shrinks by the number of regions.
fn compact_skus(v: &Value) -> Value {
    let items = match v {
        Value::Array(a) => a.as_slice(),
        Value::Object(o) => o
            .get("value")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    let mut merged: Vec<Map<String, Value>> = Vec::new();
    let mut index: std::collections::HashMap<(String, String, String), usize> =
        std::collections::HashMap::new();
    for s in items
        .iter()
        .filter(|s| s.get("resourceType").and_then(Value::as_str) == Some("virtualMachines"))
        .filter_map(Value::as_object)
    {
        let mut m: Map<String, Value> = s
            .iter()
            .filter(|(k, _)| SKU_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(Value::Array(caps)) = m.get_mut("capabilities") {
            caps.retain(|c| {
                c.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| SKU_CAPABILITIES.contains(&n))
            });
        }
        if let Some(Value::Array(infos)) = m.get_mut("locationInfo") {
            for info in infos.iter_mut().filter_map(Value::as_object_mut) {
                info.remove("zoneDetails");
            }
        }
        let key = (
            m.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase(),
            m.get("family").map(Value::to_string).unwrap_or_default(),
            m.get("capabilities")
                .map(Value::to_string)
                .unwrap_or_default(),
        );
        match index.get(&key).and_then(|&i| merged.get_mut(i)) {
            Some(into) => {
                for list in ["locations", "locationInfo", "restrictions"] {
                    let Some(Value::Array(more)) = m.remove(list) else {
                        continue;
                    };
                    if let Value::Array(have) =
                        into.entry(list).or_insert_with(|| Value::Array(Vec::new()))
                    {
                        for item in more {
                            if !have.contains(&item) {
                                have.push(item);
                            }
                        }
                    }
                }
            }
            None => {
                index.insert(key, merged.len());
                merged.push(m);
            }
        }
    }
    for entry in &mut merged {
        if let Some(Value::Array(list)) = entry.get_mut("restrictions") {
            *list = merge_restrictions(std::mem::take(list));
        }
    }
    Value::Array(merged.into_iter().map(Value::Object).collect())
}

/// Restrictions of one size that differ only in the regions they cover become one
/// restriction covering all those regions (`values` and `restrictionInfo.locations`
/// joined): Azure lists one per region, so a full list repeats the same
/// NotAvailableForSubscription restriction dozens of times. What each region and zone is
/// restricted by stays the same.
fn merge_restrictions(list: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for r in list {
        let key = {
            let mut k = r.clone();
            if let Some(o) = k.as_object_mut() {
                o.remove("values");
                if let Some(Value::Object(info)) = o.get_mut("restrictionInfo") {
                    info.remove("locations");
                }
            }
            k.to_string()
        };
        match keys.iter().position(|k| *k == key) {
            Some(i) => {
                let Some(into) = out.get_mut(i).and_then(Value::as_object_mut) else {
                    continue;
                };
                let regions = |v: &Value, ptr: &str| -> Vec<Value> {
                    v.pointer(ptr)
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                };
                for (field, ptr) in [
                    ("values", "/values"),
                    ("locations", "/restrictionInfo/locations"),
                ] {
                    let more = regions(&r, ptr);
                    let target = if field == "values" {
                        into.get_mut("values")
                    } else {
                        into.get_mut("restrictionInfo")
                            .and_then(Value::as_object_mut)
                            .and_then(|info| info.get_mut("locations"))
                    };
                    if let Some(Value::Array(have)) = target {
                        for region in more {
                            if !have.contains(&region) {
                                have.push(region);
                            }
                        }
                    }
                }
            }
            None => {
                keys.push(key);
                out.push(r);
            }
        }
    }
    out
}

/// Reads and checks every context file; none when there are none.
pub fn load(files: &ContextFiles) -> Result<Option<LoadedContext>, ContextLoadError> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let mut catalog = Vec::new();
    let mut overlay_sizes = 0;
    for path in &files.catalog {
        let text = read("catalog overlay", path)?;
        if let Some((_, pin)) = files.pins.iter().find(|(p, _)| p == path) {
            let actual = format!("sha256:{}", computeguard_engine::digest(text.as_bytes()));
            if &actual != pin {
                return Err(ContextLoadError::Invalid {
                    problems: vec![format!(
                        "{}: has digest {actual}, but it was verified as {pin}; refusing a cached overlay that changed after it was verified",
                        path.display()
                    )],
                });
            }
        }
        let doc = decode(path, &text)?;
        match overlay::parse(&doc.value) {
            Ok(o) => {
                overlay_sizes += o.skus.len();
                catalog.push(doc.value);
            }
            Err(e) => problems.extend(
                e.problems
                    .iter()
                    .map(|p| at(path, &doc, &p.pointer, &p.to_string())),
            ),
        }
    }
    let mut skus = Vec::new();
    let mut sku_entries = 0;
    for path in &files.skus {
        let text = read("SKU list", path)?;
        let value = fast_json(path, &text)?;
        match parse_skus(&value) {
            Ok(offers) => {
                sku_entries += offers.len();
                skus.push(compact_skus(&value));
            }
            Err(e) => problems.push(shape_problem(path, &decode(path, &text)?, &e)),
        }
    }
    let mut usage = Map::new();
    for (region, path) in &files.usage {
        let text = read("usage list", path)?;
        let value = fast_json(path, &text)?;
        match parse_usage(&value) {
            Ok(_) => {
                usage.insert(region.clone(), value);
            }
            Err(e) => problems.push(shape_problem(path, &decode(path, &text)?, &e)),
        }
    }
    let mut ml_usage = Map::new();
    for (region, path) in &files.ml_usage {
        let text = read("Azure ML usage list", path)?;
        let value = fast_json(path, &text)?;
        match parse_ml_usage(&value) {
            Ok(_) => {
                ml_usage.insert(region.clone(), value);
            }
            Err(e) => problems.push(shape_problem(path, &decode(path, &text)?, &e)),
        }
    }
    if !problems.is_empty() {
        return Err(ContextLoadError::Invalid { problems });
    }
    let mut top = Map::new();
    if !catalog.is_empty() {
        top.insert("catalog".into(), Value::Array(catalog));
    }
    let has_skus = !files.skus.is_empty();
    if has_skus || !usage.is_empty() || !ml_usage.is_empty() {
        let mut azure = Map::new();
        if has_skus {
            azure.insert("skus".into(), Value::Array(skus));
        }
        if !usage.is_empty() {
            azure.insert("usage".into(), Value::Object(usage));
        }
        if !ml_usage.is_empty() {
            azure.insert("mlUsage".into(), Value::Object(ml_usage));
        }
        // Only with facts to judge it by: a region alone changes no finding.
        if let Some(region) = &files.workspace_region {
            azure.insert("workspaceRegion".into(), Value::from(region.as_str()));
        }
        top.insert("azure".into(), Value::Object(azure));
    }
    Ok(Some(LoadedContext {
        context: PolicyContext::new(Value::Object(top).to_string()),
        overlay_sizes,
        sku_entries,
        usage_regions: files
            .usage
            .iter()
            .chain(
                files
                    .ml_usage
                    .iter()
                    .filter(|(r, _)| !files.usage.iter().any(|(u, _)| u == r)),
            )
            .map(|(r, _)| r.clone())
            .collect(),
        has_skus,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_never_given_to_a_policy() {
        // `azure.prices` is the CLI's alone (docs/cost.md): the webhook and every policy get
        // the same context with or without it, and a price file is not even read here.
        let files = ContextFiles {
            prices: vec![PathBuf::from("/nonexistent/prices.json")],
            ..ContextFiles::default()
        };
        assert!(files.is_empty());
        assert!(matches!(load(&files), Ok(None)));
    }

    #[test]
    fn a_bad_overlay_is_refused_naming_file_line_and_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("overlay.yaml");
        std::fs::write(
            &path,
            "kind: CatalogOverlay\nskus:\n  - name: Standard_NC6\n    source: doc\n    vcpus: six\n",
        )
        .expect("write");
        let err = load(&ContextFiles {
            catalog: vec![path.clone()],
            ..ContextFiles::default()
        })
        .expect_err("refused");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "{}:5: at `/skus/0/vcpus`: expected",
                path.display()
            )),
            "{text}"
        );
    }

    #[test]
    fn a_size_listed_per_region_becomes_one_entry() {
        let entry = |region: &str, restricted: bool| {
            serde_json::json!({"resourceType": "virtualMachines", "name": "Standard_NV6",
                "family": "standardNVFamily", "locations": [region],
                "locationInfo": [{"location": region, "zones": ["1"], "zoneDetails": [{"name": ["1"]}]}],
                "restrictions": if restricted { serde_json::json!([{"type": "Location", "values": [region],
                    "restrictionInfo": {"locations": [region]}, "reasonCode": "NotAvailableForSubscription"}]) }
                    else { serde_json::json!([]) },
                "capabilities": [{"name": "GPUs", "value": "1"}]})
        };
        let v = Value::Array(vec![
            entry("eastus", false),
            entry("westus", true),
            entry("northeurope", true),
        ]);
        let compact = compact_skus(&v);
        assert_eq!(
            compact,
            serde_json::json!([{"resourceType": "virtualMachines", "name": "Standard_NV6",
                "family": "standardNVFamily", "locations": ["eastus", "westus", "northeurope"],
                "locationInfo": [{"location": "eastus", "zones": ["1"]}, {"location": "westus", "zones": ["1"]},
                                 {"location": "northeurope", "zones": ["1"]}],
                "restrictions": [{"type": "Location", "values": ["westus", "northeurope"],
                    "restrictionInfo": {"locations": ["westus", "northeurope"]}, "reasonCode": "NotAvailableForSubscription"}],
                "capabilities": [{"name": "GPUs", "value": "1"}]}])
        );
        // The rules get the same answers from the compact list as from the original.
        use computeguard_policy_core::azure::{Availability, OfferAnswer};
        let full = Availability::new(parse_skus(&v).expect("full"));
        let small = Availability::new(parse_skus(&compact).expect("compact"));
        for region in ["eastus", "westus", "northeurope", "westeurope"] {
            assert_eq!(
                full.offer("standard_nv6", region, &[]),
                small.offer("standard_nv6", region, &[]),
                "{region}"
            );
        }
        assert!(matches!(
            small.offer("Standard_NV6", "westus", &[]),
            OfferAnswer::Restricted { .. }
        ));
    }

    #[test]
    fn a_pinned_overlay_that_changed_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("overlay.yaml");
        let text = "kind: CatalogOverlay\nskus: []\n";
        std::fs::write(&path, text).expect("write");
        let pin = format!("sha256:{}", computeguard_engine::digest(text.as_bytes()));
        let files = ContextFiles {
            catalog: vec![path.clone()],
            pins: vec![(path.clone(), pin)],
            ..ContextFiles::default()
        };
        assert!(load(&files).expect("the verified bytes load").is_some());
        std::fs::write(
            &path,
            "kind: CatalogOverlay\nskus: [{name: Standard_NC6, source: x, vcpus: 1}]\n",
        )
        .expect("tamper");
        let err = load(&files).expect_err("changed after verification");
        assert!(
            err.to_string().contains("changed after it was verified"),
            "{err}"
        );
    }

    #[test]
    fn azure_ml_usage_is_checked_and_passed_as_ml_usage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("ml.json");
        std::fs::write(
            &good,
            r#"{"value": [{"id": "/subscriptions/0/usages/Standard_NC_Family_Cluster_Dedicated_vCPUs",
  "type": "Microsoft.MachineLearningServices/vmFamily/usages", "currentValue": 12, "limit": 24,
  "name": {"value": "Standard NC Family Cluster Dedicated vCPUs"}}]}"#,
        )
        .expect("write");
        let loaded = load(&ContextFiles {
            ml_usage: vec![("eastus".into(), good.clone())],
            ..ContextFiles::default()
        })
        .expect("valid")
        .expect("some");
        let v: Value = serde_json::from_str(loaded.context.json()).expect("json");
        assert_eq!(
            v["azure"]["mlUsage"]["eastus"]["value"][0]["limit"],
            serde_json::json!(24)
        );
        assert_eq!(loaded.usage_regions, ["eastus"]);
        computeguard_policy_core::context::parse(loaded.context.json())
            .expect("the policy reads it");
        // A compute usage list (no `type`) given as Azure ML usage: file, line, what it is.
        let bad = dir.path().join("vm-usage.json");
        std::fs::write(
            &bad,
            "{\"value\": [\n  {\"limit\": 48, \"currentValue\": 0,\n   \"name\": {\"value\": \"standardNCFamily\"}}]}\n",
        )
        .expect("write");
        let err = load(&ContextFiles {
            ml_usage: vec![("eastus".into(), bad.clone())],
            ..ContextFiles::default()
        })
        .expect_err("refused");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}:2: ", bad.display())) && text.contains("parse_usage"),
            "{text}"
        );
    }

    /// The real eastus2 response (292 SKUs, 119 restrictions), listed for three regions as a
    /// full `--all` output lists it: the compact list answers every size, region and zone
    /// exactly as the original.
    #[test]
    fn the_compact_list_answers_the_real_response_as_the_original() {
        use computeguard_policy_core::azure::Availability;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/corpus/azure-context/skus-recording-java-eastus2-2020-canListSkusByRegion.json"
        );
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("corpus")).expect("json");
        let body: Value = serde_json::from_str(
            record["networkCallRecords"][0]["Response"]["Body"]
                .as_str()
                .expect("body"),
        )
        .expect("body json");
        let regions = ["eastus2", "westus", "northeurope"];
        let text = body["value"].to_string();
        let all: Vec<Value> = regions
            .iter()
            .flat_map(|r| {
                let moved: Value =
                    serde_json::from_str(&text.replace("\"eastus2\"", &format!("\"{r}\"")))
                        .expect("moved");
                moved.as_array().cloned().unwrap_or_default()
            })
            .collect();
        let full_list = Value::Array(all);
        let compact = compact_skus(&full_list);
        assert!(
            compact.to_string().len() * 4 < full_list.to_string().len(),
            "much smaller"
        );
        let full = Availability::new(parse_skus(&full_list).expect("full"));
        let small = Availability::new(parse_skus(&compact).expect("compact"));
        let zones: Vec<Vec<String>> = vec![vec![], vec!["1".into()], vec!["2".into(), "3".into()]];
        let mut checked = 0;
        for entry in compact.as_array().expect("list") {
            let name = entry["name"].as_str().expect("name");
            for region in regions.iter().chain(&["westeurope"]) {
                for z in &zones {
                    assert_eq!(
                        full.offer(name, region, z),
                        small.offer(name, region, z),
                        "{name} {region} {z:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 2_000, "{checked}");
    }

    #[test]
    fn sku_lists_keep_only_what_the_rules_read() {
        let v = serde_json::json!({"value": [
            {"resourceType": "virtualMachines", "name": "Standard_NV6", "tier": "Standard",
             "capabilities": [{"name": "GPUs", "value": "1"}, {"name": "MaxDataDiskCount", "value": "24"}]},
            {"resourceType": "disks", "name": "Premium_LRS"}
        ]});
        assert_eq!(
            compact_skus(&v),
            serde_json::json!([{"resourceType": "virtualMachines", "name": "Standard_NV6",
                                "capabilities": [{"name": "GPUs", "value": "1"}]}])
        );
    }
}
