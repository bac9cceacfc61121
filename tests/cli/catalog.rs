//! `computeguard catalog validate | import | show | list | diff` (issue 25), on the fixtures in
//! `tests/fixtures/catalog/` and the real samples in `shared/corpus/azure-context/` (see its
//! SOURCES.tsv): REST bodies read as they are, and bodies extracted here from SDK test
//! recordings (the command reads only what `az` and the REST API print).

use crate::*;
use computeguard_policy_core::catalog::{DATA_DATE, overlay};

const FIXTURES: &str = "tests/fixtures/catalog";
const SKEWER: &str = "skus-rest-skewer-eastus-4skus-nv6-restricted.json";
const JAVA_SKUS: &str = "skus-recording-java-eastus2-2020-canListSkusByRegion.json";
const JAVA_USAGE: &str = "usage-recording-java-eastus-2021-canListComputeUsages.json";
const REST_SKUS: &str = "skus-rest-example-ListAvailableResourceSkusForARegion-2021-07-01.json";
const REST_USAGE: &str = "usage-rest-example-Usage_List_MaximumSet_Gen-2024-07-01.json";
const ML_SIZES: &str = "ml-vmsizes-rest-example-VirtualMachineSize_list-2024-04-01.json";
const ML_USAGE: &str = "ml-usage-rest-example-Usage_list-2024-04-01.json";
const CLI_USAGE: &str = "usage-recording-azurecli-westus-2023-test_vm_usage.yaml";

fn corpus(name: &str) -> String {
    root()
        .join("../shared/corpus/azure-context")
        .join(name)
        .display()
        .to_string()
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// `networkCallRecords[i].Response.Body` of a Java SDK recording: the REST body, as text.
fn java_body(name: &str, i: usize) -> String {
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus(name)).expect("sample"))
            .expect("json");
    record["networkCallRecords"][i]["Response"]["Body"]
        .as_str()
        .expect("body string")
        .to_string()
}

/// An overlay as written by `import`, read back and checked by the core's parser.
fn overlay_of(text: &str) -> overlay::Overlay {
    let docs = computeguard_decode::decode_yaml(text).expect("import writes YAML");
    assert_eq!(docs.len(), 1, "{text}");
    overlay::parse(&docs[0].value).unwrap_or_else(|e| panic!("not a valid overlay: {e}\n{text}"))
}

fn entry<'o>(o: &'o overlay::Overlay, name: &str) -> &'o overlay::SkuEntry {
    o.skus
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

fn gpu_count(e: &overlay::SkuEntry) -> Option<f64> {
    e.gpu.as_ref().and_then(|g| g.count)
}

// ---------------------------------------------------------------------------------------
// validate
// ---------------------------------------------------------------------------------------

#[test]
fn validate_counts_new_and_changed_sizes() {
    let out = run(&["catalog", "validate", &fixture("overlay.yaml")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "tests/fixtures/catalog/overlay.yaml: valid overlay, 2 sizes (1 new, 1 changed)\n"
    );
}

#[test]
fn validate_names_file_line_and_pointer_of_every_problem() {
    let cases = [
        (
            "bad-missing-source.yaml",
            // The missing field is reported at its entry's line.
            "bad-missing-source.yaml:3: at `/skus/0/source`: required field is missing",
        ),
        (
            "bad-unknown-field.yaml",
            "bad-unknown-field.yaml:5: at `/skus/0/vcpu`: unknown field; expected one of azureMlSkipReservation, family, gpu,",
        ),
        (
            "bad-wrong-type.json",
            "bad-wrong-type.json:8: at `/skus/1/vcpus`: expected an integer, got a string",
        ),
        (
            "bad-date.yaml",
            "bad-date.yaml:6: at `/skus/0/retirementDate`: `2026-02-30` is not a calendar date; expected YYYY-MM-DD",
        ),
        ("bad-syntax.yaml", "bad-syntax.yaml:5:1: invalid yaml: "),
    ];
    for (file, want) in cases {
        let out = run(&["catalog", "validate", &fixture(file)]);
        assert_eq!(code(&out), 2, "{file}: {}", stdout(&out));
        assert!(
            stdout(&out).starts_with(&format!("{FIXTURES}/{want}")),
            "{file}: {}",
            stdout(&out)
        );
        assert_eq!(
            stderr(&out),
            "error: 1 of 1 file is not a valid catalog overlay\n"
        );
    }
    // All at once: the valid one is still reported valid, each bad one once.
    let mut args = vec![
        "catalog".to_string(),
        "validate".to_string(),
        fixture("overlay.yaml"),
    ];
    args.extend(cases.iter().map(|(f, _)| fixture(f)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    assert_eq!(code(&out), 2);
    let text = stdout(&out);
    assert!(
        text.starts_with("tests/fixtures/catalog/overlay.yaml: valid overlay"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(stderr(&out).contains("5 of 6 files are not a valid catalog overlay"));
}

#[test]
fn validate_refuses_a_file_over_the_input_limit_and_a_missing_one() {
    let out = run(&[
        "catalog",
        "validate",
        "--max-file-mib",
        "0",
        &fixture("overlay.yaml"),
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains(
            "overlay.yaml: file is 462 bytes, over the 0 bytes limit for one input; raise it with `--max-file-mib`"
        ),
        "{}",
        stdout(&out)
    );
    let out = run(&["catalog", "validate", &fixture("no-such.yaml")]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains("no-such.yaml: cannot read file"),
        "{}",
        stdout(&out)
    );
}

// ---------------------------------------------------------------------------------------
// import
// ---------------------------------------------------------------------------------------

#[test]
fn import_of_the_skewer_body_gives_nv6_one_gpu() {
    let out = run(&["catalog", "import", &corpus(SKEWER), "--date", "2026-11-25"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let o = overlay_of(&stdout(&out));
    assert_eq!(o.kind, "CatalogOverlay");
    assert_eq!(o.date.as_deref(), Some("2026-11-25"));
    let names: Vec<&str> = o.skus.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Standard_D13_v2_Promo",
            "Standard_D2_v2",
            "Standard_D4s_v3",
            "Standard_NV6"
        ],
        "one entry per size, sorted"
    );
    let nv6 = entry(&o, "Standard_NV6");
    assert_eq!(gpu_count(nv6), Some(1.0));
    assert_eq!(nv6.vcpus, Some(6));
    assert_eq!(nv6.memory_gib, Some(56.0));
    assert_eq!(nv6.family.as_deref(), Some("standardNVFamily"));
    assert_eq!(nv6.rdma, Some(false));
    assert_eq!(
        nv6.source,
        format!("REST Resource Skus - List ({SKEWER}, 2026-11-25)")
    );
    // No GPUs capability: no GPU count (unknown, never 0).
    let d2 = entry(&o, "Standard_D2_v2");
    assert!(d2.gpu.is_none(), "{d2:?}");
    assert_eq!((d2.vcpus, d2.memory_gib), (Some(2), Some(7.0)));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{SKEWER}: REST Resource Skus - List, 4 VM size entries"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "catalog import: 4 sizes from 4 entries in 1 file: 3 new, 1 known to the built-in catalog (data as of {DATA_DATE})"
        )),
        "{err}"
    );
}

#[test]
fn import_of_the_2020_recording_body_writes_no_gpu_count_where_azure_gave_none()
-> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let body = dir.path().join("eastus2-skus.json");
    std::fs::write(&body, java_body(JAVA_SKUS, 0))?;
    let written = dir.path().join("eastus2.yaml");
    let out = run(&[
        "catalog",
        "import",
        body.to_str().expect("path"),
        "-o",
        written.to_str().expect("path"),
        "--date",
        "2020-03-05",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "-o writes the file, not standard output");
    let err = stderr(&out);
    assert!(
        err.contains("eastus2-skus.json: REST Resource Skus - List, 243 VM size entries (49 entries of other resource types skipped)"),
        "{err}"
    );
    assert!(
        err.contains("catalog import: 243 sizes from 243 entries in 1 file: "),
        "{err}"
    );
    let text = std::fs::read_to_string(&written)?;
    let o = overlay_of(&text);
    assert_eq!(o.skus.len(), 243);
    // In this response only the 18 N-series sizes carry the GPUs capability.
    let with_gpus: Vec<&str> = o
        .skus
        .iter()
        .filter(|e| e.gpu.is_some())
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(with_gpus.len(), 18, "{with_gpus:?}");
    assert!(
        with_gpus.iter().all(|n| n.starts_with("Standard_N")),
        "{with_gpus:?}"
    );
    for name in [
        "Standard_D2_v2",
        "Standard_A0",
        "Standard_DS3_v2",
        "Standard_M128ms",
    ] {
        assert_eq!(gpu_count(entry(&o, name)), None, "{name}");
    }
    let nc24r = entry(&o, "Standard_NC24r");
    assert_eq!(gpu_count(nc24r), Some(4.0));
    assert_eq!(nc24r.rdma, Some(true));
    assert_eq!(nc24r.family.as_deref(), Some("standardNCFamily"));
    assert_eq!(
        nc24r.source,
        "REST Resource Skus - List (eastus2-skus.json, 2020-03-05)"
    );
    // The written file passes `validate` too.
    let out = run(&["catalog", "validate", written.to_str().expect("path")]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("valid overlay, 243 sizes ("),
        "{}",
        stdout(&out)
    );
    Ok(())
}

#[test]
fn import_reads_the_az_bare_array_and_merges_sizes_across_files() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let rest: Value = serde_json::from_str(&std::fs::read_to_string(corpus(SKEWER))?)?;
    // `az vm list-skus -o json` prints the SKUs as a bare array.
    let az = dir.path().join("eastus-az.json");
    std::fs::write(&az, serde_json::to_string(&rest["value"])?)?;
    // A second listing that disagrees on one fact.
    let mut other = rest.clone();
    for sku in other["value"].as_array_mut().expect("value") {
        if sku["name"] == "Standard_NV6" {
            for c in sku["capabilities"].as_array_mut().expect("capabilities") {
                if c["name"] == "vCPUs" {
                    c["value"] = "12".into();
                }
            }
        }
    }
    let disagreeing = dir.path().join("other.json");
    std::fs::write(&disagreeing, serde_json::to_string(&other)?)?;
    let out = run(&[
        "catalog",
        "import",
        az.to_str().expect("path"),
        disagreeing.to_str().expect("path"),
        "--date",
        "2026-11-25",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let o = overlay_of(&stdout(&out));
    assert_eq!(o.skus.len(), 4, "one entry per size");
    let nv6 = entry(&o, "Standard_NV6");
    assert_eq!(nv6.vcpus, Some(6), "the first file wins");
    assert_eq!(nv6.source, "az vm list-skus (eastus-az.json, 2026-11-25)");
    assert!(
        stderr(&out).contains(
            "warning: Standard_NV6: vcpus is 6 in eastus-az.json (eastus) but 12 in other.json (eastus); keeping 6"
        ),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("eastus-az.json: az vm list-skus, 4 VM size entries"));
    Ok(())
}

#[test]
fn import_reads_the_rest_examples_and_azure_ml_sizes() {
    let out = run(&[
        "catalog",
        "import",
        &corpus(REST_SKUS),
        &corpus(ML_SIZES),
        "--date",
        "2026-11-25",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let o = overlay_of(&stdout(&out));
    assert_eq!(o.skus.len(), 11);
    let a0 = entry(&o, "Standard_A0");
    assert_eq!((a0.vcpus, a0.memory_gib), (Some(1), Some(0.75)));
    assert_eq!(gpu_count(a0), None);
    assert_eq!(
        a0.source,
        format!("REST Resource Skus - List example ({REST_SKUS}, 2026-11-25)")
    );
    // Azure ML prints the GPU count of every size, 0 for CPU sizes.
    let ds1 = entry(&o, "Standard_DS1_v2");
    assert_eq!(gpu_count(ds1), Some(0.0));
    assert_eq!(ds1.family.as_deref(), Some("standardDSv2Family"));
    assert_eq!(
        ds1.source,
        format!("REST Azure ML Virtual Machine Sizes - List example ({ML_SIZES}, 2026-11-25)")
    );
}

#[test]
fn import_refuses_usage_lists_and_recordings_naming_the_file_and_what_it_reads()
-> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let usage = dir.path().join("eastus-usage.json");
    std::fs::write(&usage, java_body(JAVA_USAGE, 0))?;
    let expected = "expected `az vm list-skus [--all] -o json` output (a JSON array of SKUs), a REST Resource Skus - List body";
    for file in [
        usage.display().to_string(),
        corpus(REST_USAGE),
        corpus(ML_USAGE),
    ] {
        let out = run(&["catalog", "import", &file]);
        assert_eq!(code(&out), 2, "{file}");
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "error: {file}: not a VM size list: this is a usage (quota) list"
            )),
            "{err}"
        );
        assert!(err.contains(expected), "{err}");
        assert_eq!(stdout(&out), "");
    }
    for file in [corpus(JAVA_SKUS), corpus(CLI_USAGE)] {
        let out = run(&["catalog", "import", &file]);
        assert_eq!(code(&out), 2, "{file}");
        assert!(
            stderr(&out).contains("this is an SDK or CLI test recording"),
            "{}",
            stderr(&out)
        );
    }
    let out = run(&["catalog", "import", "README.md"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).starts_with("error: README.md:"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    let out = run(&["catalog", "import", &corpus(SKEWER), "--date", "2026-02-30"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("`2026-02-30` is not a calendar date"));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// show
// ---------------------------------------------------------------------------------------

#[test]
fn show_lists_every_fact_with_its_built_in_sources() {
    let out = run(&["catalog", "show", "standard_nc24ads_a100_v4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Standard_NC24ads_A100_v4\n"), "{text}");
    for line in [
        "  vcpus                   24              built-in",
        "  gpu.computeCapability   8.0             built-in",
        "  family                  unknown         -",
        &format!("built-in sources (catalog data as of {DATA_DATE}):"),
        // Its Azure ML reservation exemption, from the current managed online endpoints list.
        "  aml-online-endpoint-skus-2025  https://learn.microsoft.com/azure/machine-learning/reference-managed-online-endpoints-vm-sku-list",
        "  vm-nca100v4                    https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in\n{text}");
    }
    // An alias shows its size, and says how else it is written.
    let out = run(&["catalog", "show", "Standard_ND96asr_A100_v4"]);
    assert!(
        stdout(&out).starts_with("Standard_ND96asr_v4 (also written Standard_ND96asr_A100_v4)\n"),
        "{}",
        stdout(&out)
    );
    let out = run(&[
        "catalog",
        "show",
        "Standard_NC24ads_A100_v4",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["name"], "Standard_NC24ads_A100_v4");
    assert_eq!(v["builtIn"], true);
    assert_eq!(v["dataDate"], DATA_DATE);
    let vcpus = v["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .find(|f| f["fact"] == "vcpus")
        .expect("vcpus");
    assert_eq!(vcpus["value"], 24);
    assert_eq!(vcpus["from"], "built-in");
    assert_eq!(v["sources"][0]["id"], "vm-nca100v4");
}

#[test]
fn show_of_an_unknown_size_suggests_close_names() {
    let out = run(&["catalog", "show", "Standard_NC24ads_A100_v5"]);
    assert_eq!(code(&out), 2);
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: unknown VM size `Standard_NC24ads_A100_v5`: not in the built-in catalog (data as of {DATA_DATE}); closest known sizes: `Standard_NC24ads_A100_v4`, "
        )),
        "{err}"
    );
}

#[test]
fn show_with_overlays_names_the_file_and_source_of_each_fact() {
    let out = run(&[
        "catalog",
        "show",
        "NC6s_v3",
        "--catalog",
        &fixture("overlay.yaml"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("  retirementDate ")
            && l.contains(" 2026-01-01 ")
            && l.ends_with(
                "  overlay tests/fixtures/catalog/overlay.yaml: test fixture (invented date)"
            )),
        "{text}"
    );
    assert!(text.contains("built-in sources"), "{text}");
    let out = run(&[
        "catalog",
        "show",
        "Standard_NC40ads_H200_v9",
        "--catalog",
        &fixture("overlay.yaml"),
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["builtIn"], false);
    let facts = v["facts"].as_array().expect("facts");
    let fact = |name: &str| {
        facts
            .iter()
            .find(|f| f["fact"] == name)
            .expect("fact")
            .clone()
    };
    assert_eq!(fact("vcpus")["value"], 40);
    assert_eq!(fact("vcpus")["from"], "overlay");
    assert_eq!(fact("vcpus")["file"], "tests/fixtures/catalog/overlay.yaml");
    assert_eq!(fact("vcpus")["source"], "test fixture (invented size)");
    assert_eq!(fact("gpu.count")["value"], 1);
    // Not said by the overlay: unknown, not false.
    assert_eq!(fact("infiniband")["value"], Value::Null);
    assert_eq!(fact("infiniband")["from"], "unknown");
    // A bad overlay stops the command, as validate reports it.
    let out = run(&[
        "catalog",
        "show",
        "NC6s_v3",
        "--catalog",
        &fixture("bad-date.yaml"),
    ]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.starts_with("tests/fixtures/catalog/bad-date.yaml:6: at `/skus/0/retirementDate`"),
        "{err}"
    );
    assert!(
        err.contains("error: not a valid catalog overlay: `tests/fixtures/catalog/bad-date.yaml`"),
        "{err}"
    );
}

/// A size's GPU memory (all its GPUs, and per GPU) is shown with where it comes from, in
/// text and JSON; an overlay sets it (checked by the schema at its line), `diff` lists the
/// change, and a size that knows no GPU memory shows it unknown, never 0.
#[test]
fn show_gives_gpu_memory_in_all_and_per_gpu_and_an_overlay_sets_it() {
    let out = run(&["catalog", "show", "Standard_ND96isr_H100_v5"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let row = |text: &str, fact: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(fact))
            .unwrap_or_else(|| panic!("no {fact} in\n{text}"));
        let mut words = line.split_whitespace().map(str::to_string);
        words.next();
        words.collect()
    };
    // Built in: 8 GPUs, 640 GiB in all (vm-ndh100v5's Accelerator-Memory).
    assert_eq!(row(&text, "gpu.count"), ["8", "built-in"]);
    assert_eq!(row(&text, "gpu.memoryGiB"), ["640", "built-in"]);
    assert_eq!(
        row(&text, "gpu.memoryPerGpuGiB").join(" "),
        "80 derived: gpu.memoryGiB / gpu.count"
    );
    // A partial GPU: the VM's share of its one GPU.
    let out = run(&["catalog", "show", "Standard_NV12ads_A10_v5"]);
    let text = stdout(&out);
    assert_eq!(row(&text, "gpu.memoryGiB"), ["8", "built-in"]);
    assert_eq!(
        row(&text, "gpu.memoryPerGpuGiB").join(" "),
        "8 derived: a partial GPU, the VM's share of it is gpu.memoryGiB"
    );
    // Not known: unknown, in both.
    let out = run(&[
        "catalog",
        "show",
        "Standard_NC8ads_A10_v4",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let fact = |v: &Value, name: &str| -> Value {
        v["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .find(|f| f["fact"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v:#}"))
    };
    for name in ["gpu.memoryGiB", "gpu.memoryPerGpuGiB"] {
        assert_eq!(fact(&v, name)["value"], Value::Null, "{name}");
        assert_eq!(fact(&v, name)["from"], "unknown", "{name}");
    }

    // An overlay gives the size its GPU memory; the one per GPU follows.
    let dir = tempfile::tempdir().expect("tempdir");
    let overlay = dir.path().join("a10v4.yaml");
    std::fs::write(
        &overlay,
        "kind: CatalogOverlay\nskus:\n  - name: Standard_NC32ads_A10_v4\n    source: our reading of the size page\n    gpu: {memoryGiB: 48}\n",
    )
    .expect("write");
    let overlay = overlay.to_str().expect("path");
    let out = run(&[
        "catalog",
        "show",
        "Standard_NC32ads_A10_v4",
        "--catalog",
        overlay,
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let memory = fact(&v, "gpu.memoryGiB");
    assert_eq!(memory["value"], 48);
    assert_eq!(memory["from"], "overlay");
    assert_eq!(memory["file"], overlay);
    assert_eq!(memory["source"], "our reading of the size page");
    assert_eq!(memory["builtInAgrees"], false);
    let per = fact(&v, "gpu.memoryPerGpuGiB");
    assert_eq!(
        (per["value"].clone(), per["from"].clone()),
        (Value::from(24), Value::from("derived"))
    );
    // `catalog list --format json` carries it too, under `gpu`.
    let out = run(&[
        "catalog",
        "list",
        "--gpu",
        "--catalog",
        overlay,
        "--format",
        "json",
    ]);
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    let row = list
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["name"] == "Standard_NC32ads_A10_v4")
        .expect("listed");
    assert_eq!(row["gpu"]["memoryGiB"], 48, "{row:#}");
    assert_eq!(
        row["overridden"]["gpu.memoryGiB"],
        "our reading of the size page"
    );
    let out = run(&["catalog", "diff", overlay]);
    assert!(
        stdout(&out).contains("~ Standard_NC32ads_A10_v4: gpu.memoryGiB unknown -> 48\n"),
        "{}",
        stdout(&out)
    );

    // The schema checks it, at its line: a number of GiB, not a quantity; 0 only without GPUs.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "kind: CatalogOverlay\nskus:\n  - name: Standard_NC24ads_A100_v4\n    source: x\n    gpu:\n      memoryGiB: 80Gi\n  - name: Standard_NC48ads_A100_v4\n    source: x\n    gpu: {count: 2, memoryGiB: 0}\n",
    )
    .expect("write");
    let out = run(&["catalog", "validate", bad.to_str().expect("path")]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{}:6: at `/skus/0/gpu/memoryGiB`", bad.display())),
        "{text}"
    );
    std::fs::write(
        &bad,
        "kind: CatalogOverlay\nskus:\n  - name: Standard_NC48ads_A100_v4\n    source: x\n    gpu: {count: 2, memoryGiB: 0}\n",
    )
    .expect("write");
    let out = run(&["catalog", "validate", bad.to_str().expect("path")]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("at `/skus/0/gpu/memoryGiB`: GPU memory 0 for a size with GPUs"),
        "{}",
        stdout(&out)
    );
}

// ---------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------

#[test]
fn list_shows_canonical_names_in_an_aligned_table_with_filters() {
    let out = run(&["catalog", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("NAME "), "{text}");
    let gpu_col = lines[0].find("GPUS").expect("GPUS column");
    assert!(lines.iter().any(|l| l.starts_with("Standard_ND96asr_v4 ")));
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("Standard_ND96asr_A100_v4 ")),
        "aliases are not listed"
    );
    let h100 = lines
        .iter()
        .find(|l| l.starts_with("Standard_ND96isr_H100_v5 "))
        .expect("H100");
    assert_eq!(&h100[gpu_col..gpu_col + 1], "8", "aligned: {h100}");
    assert!(stderr(&out).contains(&format!(" sizes (catalog data as of {DATA_DATE})")));

    let out = run(&[
        "catalog", "list", "--gpu", "--family", "NCv3", "--status", "RETIRED",
    ]);
    let names: Vec<String> = stdout(&out)
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "Standard_NC12s_v3",
            "Standard_NC24rs_v3",
            "Standard_NC24s_v3",
            "Standard_NC6s_v3"
        ]
    );
    let out = run(&["catalog", "list", "--gpu", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let all = v.as_array().expect("list");
    // GPUs, or an N-series size whose GPU count the catalog does not know.
    assert!(all.iter().all(|s| {
        match s["gpu"]["count"].as_f64() {
            Some(n) => n > 0.0,
            None => s["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Standard_N")),
        }
    }));
    assert!(all.iter().all(|s| s["name"] != "Standard_D4s_v5"));
    let nc = all
        .iter()
        .find(|s| s["name"] == "Standard_NC24ads_A100_v4")
        .expect("listed");
    assert_eq!(nc["vcpus"], 24);
    assert_eq!(nc["gpu"]["model"], "A100 PCIe 80GB");
    assert_eq!(nc["sources"][0], "vm-nca100v4");
}

#[test]
fn list_with_an_imported_overlay_filters_by_quota_family() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let written = dir.path().join("eastus.yaml");
    let out = run(&[
        "catalog",
        "import",
        &corpus(SKEWER),
        "-o",
        written.to_str().expect("path"),
        "--date",
        "2026-11-25",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(&[
        "catalog",
        "list",
        "--catalog",
        written.to_str().expect("path"),
        "--family",
        "StandardNVFamily",
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = v
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["Standard_NV6"]);
    assert_eq!(v[0]["family"], "standardNVFamily");
    assert_eq!(
        v[0]["overridden"]["family"],
        format!("REST Resource Skus - List ({SKEWER}, 2026-11-25)")
    );
    // A size only the overlay knows is listed too.
    let out = run(&[
        "catalog",
        "list",
        "--catalog",
        written.to_str().expect("path"),
    ]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("Standard_D2_v2 "))
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// diff
// ---------------------------------------------------------------------------------------

#[test]
fn diff_shows_new_sizes_and_changed_facts_only() {
    let out = run(&["catalog", "diff", &fixture("overlay.yaml")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "+ Standard_NC40ads_H200_v9 (new): vcpus 40, memoryGiB 320, gpu.vendor NVIDIA, gpu.count 1
~ Standard_NC6s_v3: retirementDate 2025-09-30 -> 2026-01-01
1 new, 1 changed, 0 unchanged against the built-in catalog (data as of {DATA_DATE})
"
        )
    );
}

#[test]
fn diff_of_an_import_lists_facts_azure_adds_and_skips_equal_ones() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let written = dir.path().join("eastus.yaml");
    let out = run(&[
        "catalog",
        "import",
        &corpus(SKEWER),
        "-o",
        written.to_str().expect("path"),
        "--date",
        "2026-11-25",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(&["catalog", "diff", written.to_str().expect("path")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    // NV6's vCPUs, memory, GPU count and RDMA equal the built-in ones: only the family is new.
    assert!(
        text.lines()
            .any(|l| l == "~ Standard_NV6: family unknown -> standardNVFamily"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l
            == "+ Standard_D2_v2 (new): family standardDv2Family, vcpus 2, memoryGiB 7, gpu.count 0 (derived), rdma false"),
        "{text}"
    );
    assert!(text.ends_with(&format!(
        "3 new, 1 changed, 0 unchanged against the built-in catalog (data as of {DATA_DATE})\n"
    )));
    let out = run(&["catalog", "diff", &fixture("bad-unknown-field.yaml")]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("bad-unknown-field.yaml:5: at `/skus/0/vcpu`"));
    Ok(())
}
