//! Compiles the catalog in `policies/catalog/*.yaml` into static Rust tables
//! (`$OUT_DIR/catalog_data.rs`), so a policy instance pays nothing to load it.
//! Every row keeps the source ids of the facts it carries.

// A build script reports failure by panicking; that is its interface to cargo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_yaml_ng::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(env("CARGO_MANIFEST_DIR")).join("../policies/catalog");
    let mut out = String::new();
    for file in [
        "skus.yaml",
        "cuda.yaml",
        "regions.yaml",
        "kaito.yaml",
        "aks.yaml",
    ] {
        println!("cargo:rerun-if-changed={}", dir.join(file).display());
    }
    let skus = load(&dir.join("skus.yaml"));
    let cuda = load(&dir.join("cuda.yaml"));
    let regions = load(&dir.join("regions.yaml"));
    let kaito = load(&dir.join("kaito.yaml"));
    let aks = load(&dir.join("aks.yaml"));

    // SKUs, sorted by lower-case name for binary search. Aliases become extra rows
    // pointing at the canonical spelling.
    let mut rows: Vec<(String, String)> = Vec::new();
    for s in seq(&skus["skus"]) {
        let name = text(&s["name"]).expect("sku without name");
        let gpu = &s["gpu"];
        let ic = &s["interconnect"];
        let vendor = text(&gpu["vendor"]);
        let model = text(&gpu["model"]).unwrap_or_default();
        let arch = text(&gpu["architecture"]);
        let cc = text(&gpu["compute_capability"]);
        // A size without GPUs has count 0; a GPU size whose count the catalog lacks has none.
        let count = gpu["count"]
            .as_f64()
            .or_else(|| (text(&s["category"]).as_deref() == Some("cpu")).then_some(0.0));
        let retirement = text(&s["retirement_date"]);
        let status = text(&s["status"]).unwrap_or_default();
        // MIG: AKS documents MIG for NVIDIA A100, H100 and H200 sizes (source: aks-gpu-mig).
        let mig = vendor.as_deref() == Some("NVIDIA")
            && ["A100", "H100", "H200"].iter().any(|m| model.contains(m));
        let mut sources: Vec<String> = strings(&s["sources"]);
        for extra in ["retirement_sources", "isolated_sources"] {
            for id in strings(&s[extra]) {
                if !sources.contains(&id) {
                    sources.push(id);
                }
            }
        }
        // The sources of an Azure ML reservation exemption (azureMlSkipReservation).
        let endpoint = &s["azureml_managed_online_endpoint"];
        if endpoint["skip_20pct_quota_reservation"].as_bool() == Some(true) {
            for id in strings(&endpoint["sources"]) {
                if !sources.contains(&id) {
                    sources.push(id);
                }
            }
        }
        let row = format!(
            "SkuFacts {{ name: {name:?}, series: {series:?}, category: {category:?}, vendor: {vendor:?}, gpu_model: {model:?}, architecture: {arch:?}, compute_capability: {cc:?}, gpu_count: {count:?}, gpu_memory_gib: {gpu_memory:?}, vcpus: {vcpus:?}, memory_gib: {memory:?}, family: None, infiniband: {ib:?}, rdma: {rdma:?}, isolated: {iso:?}, status: {status:?}, retirement_date: {retirement:?}, mig_capable: {mig:?}, aks_supported: {aks:?}, kaito_supported: {kaito:?}, requires_approval: {appr:?}, online_endpoint: {ep:?}, ml_skip_reservation: {skip:?}, sources: &{sources:?}, overridden: &[] }}",
            series = text(&s["series"]).unwrap_or_default(),
            vcpus = s["vcpus"].as_u64().filter(|v| *v > 0),
            memory = s["memory_gib"].as_f64(),
            gpu_memory = gpu["memory_gib_total"].as_f64().filter(|m| *m > 0.0),
            category = text(&s["category"]).unwrap_or_default(),
            ib = ic["infiniband"].as_bool().unwrap_or(false),
            rdma = ic["rdma"].as_bool().unwrap_or(false),
            iso = s["isolated"].as_bool().unwrap_or(false),
            aks = s["aks_supported"].as_bool(),
            kaito = s["kaito_supported"].as_bool(),
            appr = s["azureml_requires_approval_2020"].as_bool(),
            ep = s["azureml_managed_online_endpoint"]["supported"].as_bool(),
            // The "Skip 20% Reservation" column of Azure ML's managed online endpoint SKU
            // list (source aml-online-endpoint-skus), the full list of exempt sizes.
            skip = s["azureml_managed_online_endpoint"]["skip_20pct_quota_reservation"]
                .as_bool()
                .unwrap_or(false),
        );
        let mut names = vec![name.clone()];
        names.extend(strings(&s["aliases_in_migration_guide"]));
        names.extend(strings(&s["name_variants"]));
        for n in names {
            rows.push((
                n.to_ascii_lowercase(),
                row.replacen(
                    &format!("name: {name:?}"),
                    &format!("name: {name:?}, alias: {n:?}"),
                    1,
                ),
            ));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows.dedup_by(|a, b| a.0 == b.0);
    let date = text(&skus["meta"]["data_date"]).expect("skus.yaml meta.data_date");
    writeln!(out, "/// The date of the built-in catalog's data (`meta.data_date` in policies/catalog/skus.yaml).").unwrap();
    writeln!(out, "pub const DATA_DATE: &str = {date:?};").unwrap();
    writeln!(out, "/// Every catalog SKU (and alias), sorted by lower-case name. Source: policies/catalog/skus.yaml.").unwrap();
    writeln!(out, "pub static SKUS: &[(&str, SkuFacts)] = &[").unwrap();
    for (key, row) in &rows {
        writeln!(out, "    ({key:?}, {row}),").unwrap();
    }
    writeln!(out, "];").unwrap();

    // CUDA support per compute capability.
    writeln!(out, "/// CUDA support per compute capability. Source: policies/catalog/cuda.yaml `compute_capabilities`.").unwrap();
    writeln!(out, "pub static ARCHITECTURES: &[ArchFacts] = &[").unwrap();
    for group in ["compute_capabilities", "other_compute_capabilities"] {
        for c in seq(&cuda[group]) {
            let cc = text(&c["compute_capability"]).unwrap_or_default();
            // Values such as "9.0 (CMake list)" keep only their leading version.
            let lead =
                |v: &Value| text(v).map(|t| t.split_whitespace().next().unwrap_or("").to_string());
            writeln!(
                out,
                "    ArchFacts {{ compute_capability: {cc:?}, architecture: {arch:?}, first_cuda: {first:?}, last_cuda: {last:?}, removed_in_cuda: {removed:?}, sources: &{sources:?} }},",
                arch = text(&c["architecture"]).unwrap_or_default(),
                first = lead(&c["first_cuda"]),
                last = lead(&c["last_cuda"]),
                removed = lead(&c["removed_in_cuda"]),
                sources = strings(&c["sources"]),
            )
            .unwrap();
        }
    }
    writeln!(out, "];").unwrap();

    // Regions.
    let mut regs: Vec<(String, String)> = Vec::new();
    for (group, known) in [("regions", true), ("other_region_names", false)] {
        for r in seq(&regions[group]) {
            let name = text(&r["programmatic_name"]).expect("region without name");
            regs.push((
                name.clone(),
                format!(
                    "RegionFacts {{ name: {name:?}, display_name: {display:?}, geography: {geo:?}, area: {area:?}, country: {country:?}, eu: {eu:?}, eea: {eea:?}, restricted: {restricted:?}, listed: {known:?}, sources: &{sources:?} }}",
                    display = text(&r["display_name"]).unwrap_or_default(),
                    geo = text(&r["geography"]).unwrap_or_default(),
                    area = text(&r["area_tab"]).unwrap_or_default(),
                    country = text(&r["country"]).unwrap_or_default(),
                    eu = r["eu_member_state"].as_bool().unwrap_or(false),
                    eea = r["eea"].as_bool().unwrap_or(false),
                    restricted = r["restricted_access"].as_bool().unwrap_or(false),
                    sources = strings(&r["sources"]),
                ),
            ));
        }
    }
    regs.sort_by(|a, b| a.0.cmp(&b.0));
    regs.dedup_by(|a, b| a.0 == b.0);
    writeln!(
        out,
        "/// Azure regions sorted by programmatic name. Source: policies/catalog/regions.yaml."
    )
    .unwrap();
    writeln!(out, "pub static REGIONS: &[RegionFacts] = &[").unwrap();
    for (_, row) in &regs {
        writeln!(out, "    {row},").unwrap();
    }
    writeln!(out, "];").unwrap();

    // Sources: id -> url (or repo/path@commit).
    let mut srcs: Vec<(String, String)> = Vec::new();
    for doc in [&skus, &cuda, &regions, &kaito, &aks] {
        if let Value::Mapping(m) = &doc["sources"] {
            for (k, v) in m {
                let id = text(k).unwrap_or_default();
                let place = text(&v["url"]).unwrap_or_else(|| {
                    format!(
                        "{}/{}@{}",
                        text(&v["repo"]).unwrap_or_default(),
                        text(&v["path"]).unwrap_or_default(),
                        text(&v["commit"]).unwrap_or_default()
                    )
                });
                srcs.push((id, place));
            }
        }
    }
    srcs.sort();
    srcs.dedup_by(|a, b| a.0 == b.0);
    writeln!(
        out,
        "/// Where each fact comes from: source id -> document."
    )
    .unwrap();
    writeln!(out, "pub static SOURCES: &[(&str, &str)] = &{srcs:?};").unwrap();

    // KAITO's presets and instance types, as the JSON core/src/catalog/kaito.rs reads
    // (the overlay format's `kaito:` section, with the version from `meta`).
    // The policy component (wasm) judges with the figures only: where each comes from
    // (`source`, `sources`, a legacy name's `model`) is for `catalog show`, which runs natively.
    let mut kaito_json = serde_json::json!({
        "version": text(&kaito["meta"]["kaito_version"]).expect("kaito.yaml meta.kaito_version"),
        "presets": serde_json::to_value(&kaito["presets"]).expect("kaito presets"),
        "instanceTypes": serde_json::to_value(&kaito["instanceTypes"]).expect("kaito instance types"),
    });
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        for list in ["presets", "instanceTypes"] {
            if let Some(rows) = kaito_json[list].as_array_mut() {
                for row in rows.iter_mut().filter_map(serde_json::Value::as_object_mut) {
                    for key in ["source", "sources", "model"] {
                        row.remove(key);
                    }
                }
            }
        }
    }
    std::fs::write(
        PathBuf::from(env("OUT_DIR")).join("kaito.json"),
        kaito_json.to_string(),
    )
    .expect("write kaito.json");

    // What AKS refuses for a node pool and where it supports MIG, as the JSON
    // core/src/catalog/aks.rs reads.
    let aks_json = serde_json::json!({
        "nodePoolSizes": serde_json::to_value(&aks["node_pool_sizes"]).expect("aks node_pool_sizes"),
        "mig": serde_json::to_value(&aks["mig"]).expect("aks mig"),
    });
    std::fs::write(
        PathBuf::from(env("OUT_DIR")).join("aks.json"),
        aks_json.to_string(),
    )
    .expect("write aks.json");

    let dest = PathBuf::from(env("OUT_DIR")).join("catalog_data.rs");
    std::fs::write(dest, out).expect("write catalog_data.rs");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} not set"))
}

fn load(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn seq(v: &Value) -> Vec<Value> {
    v.as_sequence().cloned().unwrap_or_default()
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn strings(v: &Value) -> Vec<String> {
    seq(v).iter().filter_map(text).collect()
}
