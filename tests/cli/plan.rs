//! `computeguard plan` (issue 38): every alternative it suggests is one `check` itself
//! passes with the same configuration. Each test applies the suggested edits to a copy of
//! the file and runs `check` on it.

use crate::*;

/// `plan --format json ARGS`, run in `dir`: (exit code, the plan).
fn plan_json_in(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["plan", "--format", "json", "--as-of", "2026-11-22"];
    all.extend_from_slice(args);
    let out = run_in(dir, &all).expect("run plan");
    let plan: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("plan printed no JSON ({e}): {}", stderr(&out)));
    (code(&out), plan)
}

/// `text` (of the file `file`) with the alternative's edits in that file applied (each on
/// its line); an edit that names no file is in the resource's own file, `own`.
fn apply(text: &str, alternative: &Value, file: &str, own: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for e in alternative["edits"].as_array().expect("edits") {
        if e["file"].as_str().unwrap_or(own) != file {
            continue;
        }
        let line = e["line"].as_u64().expect("line") as usize;
        let from = e["from"].as_str().expect("from");
        let to = e["to"].as_str().expect("to");
        let l = &mut lines[line - 1];
        assert!(l.contains(from), "line {line} `{l}` holds no `{from}`");
        *l = l.replacen(from, to, 1);
    }
    lines.join("\n")
}

/// The error and warning rules `check --format json` reports on `resource`.
fn blocking_rules(report: &Value, resource: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["resource"] == *resource)
        .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// For every alternative of every resource of `plan` (files relative to `dir`): the file
/// with the edits, alone in a scratch folder (or, with `whole_folder`, with the rest of
/// `dir`), checked with `config`, gets no error or warning on that resource besides the
/// rules plan says stay whatever the size. Returns how many alternatives were checked.
fn every_alternative_passes_check(
    dir: &Path,
    plan: &Value,
    config: Option<&Path>,
    whole_folder: bool,
) -> usize {
    let mut checked = 0;
    for entry in plan["resources"].as_array().expect("resources") {
        let file = entry["file"].as_str().expect("file");
        let text = std::fs::read_to_string(dir.join(file)).expect("read");
        for alternative in entry["alternatives"].as_array().expect("alternatives") {
            let scratch = tempfile::tempdir().expect("tempdir");
            if whole_folder {
                for f in std::fs::read_dir(dir).expect("dir").flatten() {
                    if f.path().is_file() {
                        std::fs::copy(f.path(), scratch.path().join(f.file_name())).expect("copy");
                    }
                }
            }
            let name = Path::new(file).file_name().expect("name");
            std::fs::write(
                scratch.path().join(name),
                apply(&text, alternative, file, file),
            )
            .expect("write");
            // Edits in another file of the folder (a Terraform variable's default).
            for e in alternative["edits"].as_array().expect("edits") {
                if let Some(other) = e["file"].as_str().filter(|f| *f != file) {
                    assert!(
                        whole_folder,
                        "{other}: an edit outside the file needs its folder"
                    );
                    let other_text = std::fs::read_to_string(dir.join(other)).expect("read");
                    let other_name = Path::new(other).file_name().expect("name");
                    std::fs::write(
                        scratch.path().join(other_name),
                        apply(&other_text, alternative, other, file),
                    )
                    .expect("write");
                }
            }
            let mut args = vec!["check", "--format", "json", "--as-of", "2026-11-22"];
            let config_text;
            if let Some(c) = config {
                config_text = c.display().to_string();
                args.extend(["--config", config_text.as_str()]);
            }
            args.push(".");
            let out = run_in(scratch.path(), &args).expect("check");
            let report: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("check printed no JSON ({e}): {}", stderr(&out)));
            let remaining: Vec<&str> = entry["remaining"]
                .as_array()
                .expect("remaining")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let left: Vec<String> = blocking_rules(&report, &entry["resource"])
                .into_iter()
                .filter(|r| !remaining.contains(&r.as_str()))
                .collect();
            assert!(
                left.is_empty(),
                "{file}: plan's alternative {} ({:?}) still gets {left:?} from check",
                alternative["size"],
                alternative["changes"]
            );
            checked += 1;
        }
    }
    checked
}

/// The issue's acceptance test on `examples/`: every suggestion passes `check` with the
/// examples' configuration; the retired and CUDA-incompatible sizes get one; the
/// finding that no size clears (an idle minimum) is named as remaining, not hidden.
#[test]
fn every_suggestion_for_the_examples_passes_check() {
    let config = root().join("examples/computeguard.yaml");
    let (_, plan) = plan_json_in(
        &root(),
        &["--config", "examples/computeguard.yaml", "examples/"],
    );
    let checked = every_alternative_passes_check(&root(), &plan, Some(&config), false);
    assert!(checked >= 10, "only {checked} alternatives");
    let entry = |file: &str| -> Value {
        plan["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|e| e["file"] == file)
            .cloned()
            .unwrap_or_else(|| panic!("{file} not planned"))
    };
    let k80 = entry("examples/azureml/cuda12-on-k80-job.yml");
    assert_eq!(k80["alternatives"][0]["size"], "Standard_NC4as_T4_v3");
    assert_eq!(
        k80["alternatives"][0]["clears"],
        serde_json::json!(["cuda-arch-compat", "sku-retired"])
    );
    let cluster = entry("examples/azureml/gpu-cluster.yml");
    assert_eq!(cluster["remaining"], serde_json::json!(["min-nodes-zero"]));
    assert_eq!(
        cluster["alternatives"][0]["edits"],
        serde_json::json!([{"line": 11, "from": "Standard_NC6s_v3", "to": "Standard_NC4as_T4_v3"}])
    );
    // The region is the fault: an allowed region, same size.
    let brazil = entry("examples/embed-cases/cases/aml-cluster-outside-allowed-regions.json");
    let best = &brazil["alternatives"][0];
    assert_eq!(best["size"], "Standard_NC24ads_A100_v4", "{brazil:#}");
    assert_eq!(best["region"], "eastus", "{brazil:#}");
    // Inference on InfiniBand: the same GPUs without it.
    let ib = entry("examples/kubernetes/inference-on-infiniband.yaml");
    assert_eq!(ib["alternatives"][0]["size"], "Standard_ND96is_H100_v5");
}

/// The acceptance test on the KAITO workspaces of the shared corpus: suggestions that
/// `check` passes, with the preset's needs judged by the same KAITO data.
#[test]
fn every_suggestion_for_the_kaito_corpus_passes_check() {
    let corpus = root().join("../shared/corpus/kaito-presets/workspaces");
    if !corpus.is_dir() {
        eprintln!("skipped: {} is not there", corpus.display());
        return;
    }
    let (_, plan) = plan_json_in(&corpus, &["."]);
    let resources = plan["resources"].as_array().expect("resources");
    assert_eq!(resources.len(), 5, "{plan:#}");
    let checked = every_alternative_passes_check(&corpus, &plan, None, false);
    assert!(checked >= 5, "only {checked} alternatives: {plan:#}");
    // A retired V100 under a preset: moved to a current size.
    let v100 = resources
        .iter()
        .find(|e| {
            e["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("ws-phi-3.5-mini-instruct-nc6s-v3.yaml"))
        })
        .expect("nc6s_v3 workspace");
    assert!(
        !v100["alternatives"].as_array().expect("alts").is_empty(),
        "{v100:#}"
    );
}

/// With the subscription's SKU list (`azure.skus`, in the shape `az vm list-skus --all`
/// prints) saying that no GPU size is offered in eastus and every one is in eastus2, zones
/// 1-3, and eastus2's usage (`azure.usage`) giving the family's free vCPUs, the best
/// alternative is the same size in eastus2, with the zones and free quota named; `check`
/// passes it with the same configuration, quota sums included.
#[test]
fn with_the_subscriptions_skus_the_best_alternative_is_in_another_region() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every GPU size the catalog knows: restricted in eastus, offered in eastus2 zones 1-3.
    let out = run(&["catalog", "list", "--gpu", "--format", "json"]);
    let sizes: Value = serde_json::from_slice(&out.stdout).expect("catalog list json");
    let names: Vec<String> = sizes
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect();
    assert!(names.iter().any(|n| n == "Standard_NC24ads_A100_v4"));
    let family = |n: &str| {
        if n == "Standard_NC24ads_A100_v4" {
            "standardNCADSA100v4Family".to_string()
        } else {
            format!("family{}", n.replace('_', ""))
        }
    };
    let entries: Vec<Value> = names
        .iter()
        .map(|n| {
            serde_json::json!({
                "resourceType": "virtualMachines",
                "name": n,
                "tier": "Standard",
                "size": n.trim_start_matches("Standard_"),
                "family": family(n),
                "locations": ["eastus", "eastus2"],
                "locationInfo": [
                    {"location": "eastus", "zones": [], "zoneDetails": []},
                    {"location": "eastus2", "zones": ["1", "2", "3"], "zoneDetails": []}
                ],
                "capabilities": [],
                "restrictions": [{
                    "type": "Location",
                    "values": ["eastus"],
                    "restrictionInfo": {"locations": ["eastus"], "zones": null},
                    "reasonCode": "NotAvailableForSubscription"
                }]
            })
        })
        .collect();
    std::fs::write(
        dir.path().join("skus.json"),
        serde_json::to_string_pretty(&entries).expect("json"),
    )
    .expect("skus");
    std::fs::write(
        dir.path().join("eastus2-usage.json"),
        r#"[
  {"currentValue": "0", "limit": "350", "localName": "Total Regional vCPUs", "name": {"value": "cores", "localizedValue": "Total Regional vCPUs"}},
  {"currentValue": "0", "limit": "96", "localName": "Standard NCADS_A100_v4 Family vCPUs", "name": {"value": "standardNCADSA100v4Family", "localizedValue": "Standard NCADS_A100_v4 Family vCPUs"}}
]
"#,
    )
    .expect("usage");
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "asOf: 2026-11-22\nregions:\n  allowed: [eastus, eastus2]\nazure:\n  skus: [skus.json]\n  usage:\n    eastus2: eastus2-usage.json\n",
    )
    .expect("config");
    std::fs::write(
        dir.path().join("cluster.yml"),
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: a100\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nlocation: eastus\nmin_instances: 0\nmax_instances: 2\n",
    )
    .expect("cluster");
    let (code, plan) = plan_json_in(dir.path(), &["cluster.yml"]);
    assert_eq!(code, 0, "{plan:#}");
    let entry = &plan["resources"][0];
    assert!(
        entry["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["rule"] == "sku-available-in-region"),
        "{entry:#}"
    );
    let best = &entry["alternatives"][0];
    assert_eq!(best["size"], "Standard_NC24ads_A100_v4", "{entry:#}");
    assert_eq!(best["region"], "eastus2", "{entry:#}");
    assert_eq!(best["offer"], "offered in eastus2, zones 1, 2, 3");
    assert_eq!(
        best["quota"],
        "96 vCPUs free of family standardNCADSA100v4Family in eastus2"
    );
    assert_eq!(
        best["changes"],
        serde_json::json!(["region eastus -> eastus2"])
    );
    let checked = every_alternative_passes_check(dir.path(), &plan, None, true);
    assert!(checked >= 1);
    // `check --suggest` names it in the fix of the finding it clears.
    let out = run_in(
        dir.path(),
        &["check", "--suggest", "--format", "json", "cluster.yml"],
    )
    .expect("check");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let fix = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "sku-available-in-region")
        .and_then(|f| f["remediation"].as_str())
        .expect("a sku-available-in-region finding")
        .to_string();
    assert!(
        fix.ends_with(
            " Best alternative: move to Standard_NC24ads_A100_v4 in eastus2: offered in eastus2, zones 1, 2, 3; 96 vCPUs free of family standardNCADSA100v4Family in eastus2 (computeguard plan)."
        ),
        "{fix}"
    );
}

/// `check --suggest` adds the best alternative to the fix of the findings it clears, and
/// leaves the others (an idle minimum no size clears) as they were.
#[test]
fn check_suggest_names_the_best_alternative_in_the_fix() {
    let (_, report) = check_json(&[
        "--suggest",
        "--config",
        "examples/computeguard.yaml",
        "examples/azureml/gpu-cluster.yml",
    ]);
    let fix = |rule: &str| -> String {
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == rule)
            .and_then(|f| f["remediation"].as_str())
            .unwrap_or_else(|| panic!("no {rule}"))
            .to_string()
    };
    assert!(
        fix("sku-retired")
            .ends_with(" Best alternative: move to Standard_NC4as_T4_v3 (computeguard plan)."),
        "{}",
        fix("sku-retired")
    );
    assert!(!fix("min-nodes-zero").contains("Best alternative"));
    // Without the flag the fix is the rule's own.
    let (_, plain) = check_json(&[
        "--config",
        "examples/computeguard.yaml",
        "examples/azureml/gpu-cluster.yml",
    ]);
    assert!(!plain.to_string().contains("Best alternative"));
}

/// A size known only at deploy time is listed as unresolved, with no alternatives, and
/// the text output says so.
#[test]
fn an_unresolved_size_is_listed_without_alternatives() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("main.tf"),
        r#"variable "size" { type = string }
resource "azurerm_kubernetes_cluster_node_pool" "gpu" {
  name                  = "gpu"
  kubernetes_cluster_id = "x"
  vm_size               = var.size
  node_count            = 1
}
"#,
    )
    .expect("tf");
    let (code, plan) = plan_json_in(dir.path(), &["main.tf"]);
    assert_eq!(code, 0, "{plan:#}");
    let entry = &plan["resources"][0];
    assert_eq!(entry["status"], "size-unresolved", "{plan:#}");
    assert_eq!(entry["current"]["size"], Value::Null);
    assert_eq!(entry["alternatives"], serde_json::json!([]));
    let out = run_in(dir.path(), &["plan", "main.tf"]).expect("run");
    assert!(
        stdout(&out).contains("size unresolved: it is known only at deploy time"),
        "{}",
        stdout(&out)
    );
}

/// The JSON shape: stable field names for tools.
#[test]
fn the_json_shape_is_stable() {
    let (code, plan) = plan_json_in(&root(), &["examples/azureml/gpu-cluster.yml"]);
    assert_eq!(code, 0);
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&plan), ["resources", "summary"]);
    assert_eq!(
        keys(&plan["summary"]),
        [
            "asOf",
            "maxEvaluated",
            "resources",
            "withFindings",
            "withoutAlternative"
        ]
    );
    let entry = &plan["resources"][0];
    assert_eq!(
        keys(entry),
        [
            "alternatives",
            "candidates",
            "current",
            "display",
            "document",
            "evaluated",
            "file",
            "findings",
            "line",
            "remaining",
            "resource",
            "status"
        ]
    );
    assert_eq!(
        keys(&entry["alternatives"][0]),
        [
            "changes", "clears", "edits", "gpu", "offer", "quota", "region", "size"
        ]
    );
    assert_eq!(entry["findings"][0]["rule"], "sku-retired");
    assert_eq!(
        keys(&entry["findings"][0]),
        ["line", "message", "rule", "severity"]
    );
}

/// Exit code 1 when a resource with findings has no passing alternative; 2 on bad input.
#[test]
fn exit_codes_follow_check() {
    let (code, plan) = plan_json_in(
        &root(),
        &["examples/embed-cases/cases/k8s-inference-on-infiniband.json"],
    );
    // Inference that requests RDMA devices on InfiniBand: the one non-InfiniBand size with
    // the same GPUs cannot serve the RDMA request, so nothing passes, and plan says what
    // the size tried still breaks.
    assert_eq!(code, 1, "{plan:#}");
    let entry = &plan["resources"][0];
    assert_eq!(entry["alternatives"], serde_json::json!([]));
    assert!(!entry["rejected"].as_array().expect("rejected").is_empty());
    let out = run(&["plan", "no-such-file.yaml"]);
    assert_eq!(crate::code(&out), 2, "{}", stderr(&out));
}

/// Exports of what runs (a `kubectl get -A` List, `az` and ARM outputs): each item is
/// planned and evaluated on its own, as `check` evaluates it, and every suggestion passes
/// `check`; a finding every size gets with the same words (a GPU pool without a taint) is
/// remaining, not held against the sizes.
#[test]
fn every_suggestion_for_exports_of_what_runs_passes_check() {
    let dir = fixtures().join("audit");
    let (_, plan) = plan_json_in(&dir, &["--only-findings", "."]);
    let checked = every_alternative_passes_check(&dir, &plan, None, false);
    assert!(checked >= 10, "only {checked}: {plan:#}");
    let pool = plan["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|e| {
            e["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("az-aks-nodepool-list-gpu-nc6s-v3.json"))
        })
        .expect("the nc6s_v3 pool");
    assert_eq!(
        pool["remaining"],
        serde_json::json!(["gpu-workload-scheduling"])
    );
    assert_eq!(pool["alternatives"][0]["size"], "Standard_NC4as_T4_v3");
}

/// ARM templates, Bicep and Terraform: the size is edited where it is written (at the
/// resource, at the parameter or variable default it comes from, in `variables.tf` beside
/// a Terraform file), and every suggestion passes `check` on the edited folder.
#[test]
fn every_suggestion_for_templates_passes_check() {
    for dir in [
        "arm",
        "bicep",
        "terraform/json",
        "terraform/aks-gpu",
        "terraform/folder",
    ] {
        let dir = fixtures().join(dir);
        let (_, plan) = plan_json_in(&dir, &["."]);
        let planned = plan["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter(|e| !e["alternatives"].as_array().expect("alts").is_empty())
            .count();
        assert!(planned >= 1, "{}: {plan:#}", dir.display());
        every_alternative_passes_check(&dir, &plan, None, true);
    }
    // The pool of aks-gpu takes its size from `var.gpu_vm_size`, whose default is in
    // variables.tf: the edit is there.
    let (_, plan) = plan_json_in(&fixtures().join("terraform/aks-gpu"), &["main.tf"]);
    let edit = &plan["resources"][0]["alternatives"][0]["edits"][0];
    assert_eq!(edit["file"], "variables.tf", "{plan:#}");
    assert_eq!(edit["from"], "Standard_NC6s_v3");
}

/// With `regions.allowedGeographies` instead of a list of regions, a resource outside them
/// is offered the same size in a region of those geographies, which `check` passes.
#[test]
fn allowed_geographies_give_the_regions_to_move_to() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "asOf: 2026-11-22\nregions:\n  allowedGeographies: [Europe]\n",
    )
    .expect("config");
    std::fs::write(
        dir.path().join("cluster.yml"),
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: a100\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nlocation: brazilsouth\nmin_instances: 0\nmax_instances: 2\n",
    )
    .expect("cluster");
    let (code, plan) = plan_json_in(dir.path(), &["cluster.yml"]);
    assert_eq!(code, 0, "{plan:#}");
    let entry = &plan["resources"][0];
    assert_eq!(entry["findings"][0]["rule"], "region-allowed", "{entry:#}");
    let best = &entry["alternatives"][0];
    assert_eq!(best["size"], "Standard_NC24ads_A100_v4", "{entry:#}");
    assert!(best["region"].is_string(), "{entry:#}");
    every_alternative_passes_check(dir.path(), &plan, None, true);
}

/// "Enough GPU memory" reads the catalog with the configuration's overlays: an overlay that
/// gives a size less GPU memory than the current one takes it out of the alternatives, and
/// what plan suggests instead still passes `check` with that configuration.
#[test]
fn an_overlays_gpu_memory_decides_what_is_enough() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        root().join("examples/azureml/gpu-cluster.yml"),
        dir.path().join("gpu-cluster.yml"),
    )
    .expect("copy");
    let best = |plan: &Value| -> Vec<String> {
        plan["resources"][0]["alternatives"]
            .as_array()
            .expect("alternatives")
            .iter()
            .map(|a| a["size"].as_str().expect("size").to_string())
            .collect()
    };
    // Built in: the V100's 16 GiB, and the T4 sizes' 16 GiB are enough.
    let (_, plan) = plan_json_in(dir.path(), &["gpu-cluster.yml"]);
    assert_eq!(best(&plan)[0], "Standard_NC4as_T4_v3", "{plan:#}");
    std::fs::write(
        dir.path().join("t4.yaml"),
        "kind: CatalogOverlay\nskus:\n  - {name: Standard_NC4as_T4_v3, source: a test, gpu: {memoryGiB: 8}}\n",
    )
    .expect("overlay");
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "catalog: [t4.yaml]\n").expect("config");
    let (_, plan) = plan_json_in(dir.path(), &["gpu-cluster.yml"]);
    let sizes = best(&plan);
    assert!(!sizes.is_empty(), "{plan:#}");
    assert!(
        !sizes.contains(&"Standard_NC4as_T4_v3".to_string()),
        "{sizes:?}"
    );
    assert_eq!(sizes[0], "Standard_NC8as_T4_v3", "{plan:#}");
    every_alternative_passes_check(dir.path(), &plan, Some(&config), true);
}

/// Copies the folder `from` into `to`, subfolders too.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("dir").flatten() {
        let path = e.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(e.file_name()));
        } else {
            std::fs::copy(&path, to.join(e.file_name())).expect("copy");
        }
    }
}

/// Resources that Bicep and Terraform modules deploy: plan lists them where their size is
/// set (the module's file, the argument of the call, the caller's parameter or variable
/// default), and every alternative, with its edits made in a copy of the whole tree, is one
/// `check` passes on that resource, named as `check` names it through the call.
#[test]
fn every_suggestion_for_resources_in_modules_passes_check() {
    for (fixture, places) in [
        (
            "plan/bicep-modules",
            [
                ("train (module train)", "main.bicep", 3),
                ("infer (module infer)", "main.bicep", 20),
                ("fixed (module fixed)", "modules/fixed.bicep", 14),
            ],
        ),
        (
            "plan/terraform-modules",
            [
                (
                    "module.train.azurerm_kubernetes_cluster_node_pool.pool",
                    "variables.tf",
                    3,
                ),
                (
                    "module.infer.azurerm_kubernetes_cluster_node_pool.pool",
                    "main.tf",
                    29,
                ),
                (
                    "module.fixed.azurerm_machine_learning_compute_cluster.fixed",
                    "modules/fixed/main.tf",
                    6,
                ),
            ],
        ),
    ] {
        let dir = fixtures().join(fixture);
        let (code, plan) = plan_json_in(&dir, &["."]);
        assert_eq!(code, 0, "{plan:#}");
        let entries = plan["resources"].as_array().expect("resources");
        assert_eq!(entries.len(), 3, "{fixture}: {plan:#}");
        // Before: check reports each resource's retired size, under the same name.
        let out = run_in(
            &dir,
            &["check", "--format", "json", "--as-of", "2026-11-22", "."],
        )
        .expect("check");
        let before: Value = serde_json::from_slice(&out.stdout).expect("json");
        let mut checked = 0;
        for (name, file, line) in places {
            let entry = entries
                .iter()
                .find(|e| e["resource"]["name"] == name)
                .unwrap_or_else(|| panic!("{fixture}: {name} not planned: {plan:#}"));
            assert_eq!(
                (
                    entry["file"]
                        .as_str()
                        .expect("file")
                        .trim_start_matches("./"),
                    entry["line"].as_u64()
                ),
                (file, Some(line)),
                "{fixture}: where the size of {name} is set: {entry:#}"
            );
            assert!(entry["module"]["file"].is_string(), "{entry:#}");
            assert!(
                blocking_rules(&before, &entry["resource"]).contains(&"sku-retired".to_string()),
                "{fixture}: {name}"
            );
            let alternatives = entry["alternatives"].as_array().expect("alternatives");
            assert!(!alternatives.is_empty(), "{entry:#}");
            for alternative in alternatives {
                let scratch = tempfile::tempdir().expect("tempdir");
                copy_tree(&dir, scratch.path());
                for e in alternative["edits"].as_array().expect("edits") {
                    let edited = e["file"]
                        .as_str()
                        .unwrap_or(entry["file"].as_str().expect("file"));
                    let target = scratch.path().join(edited);
                    let text = std::fs::read_to_string(&target).expect("read");
                    std::fs::write(&target, apply(&text, alternative, edited, edited))
                        .expect("write");
                }
                let out = run_in(
                    scratch.path(),
                    &["check", "--format", "json", "--as-of", "2026-11-22", "."],
                )
                .expect("check");
                let report: Value = serde_json::from_slice(&out.stdout).expect("json");
                let left = blocking_rules(&report, &entry["resource"]);
                assert!(
                    left.is_empty(),
                    "{fixture}: {name} moved to {} still gets {left:?}",
                    alternative["size"]
                );
                // The edit reached the resource: check reads the new size there.
                assert_eq!(
                    report["summary"]["resources"], before["summary"]["resources"],
                    "{report:#}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 6, "{fixture}: only {checked}");
        // `check --suggest` names the best alternative in each module finding's fix too.
        let out = run_in(
            &dir,
            &[
                "check",
                "--suggest",
                "--format",
                "json",
                "--as-of",
                "2026-11-22",
                ".",
            ],
        )
        .expect("check");
        let report: Value = serde_json::from_slice(&out.stdout).expect("json");
        let fixes: Vec<&str> = report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "sku-retired")
            .filter_map(|f| f["remediation"].as_str())
            .collect();
        assert_eq!(fixes.len(), 3, "{report:#}");
        assert!(
            fixes
                .iter()
                .all(|f| f.contains("Best alternative: move to Standard_")),
            "{fixes:#?}"
        );
    }
    // The existing module fixtures: a loop's item, a size passed through two calls.
    let dir = fixtures().join("bicep-modules");
    let (_, plan) = plan_json_in(&dir, &["loop", "nested/main.bicep", "retired-module"]);
    let at = |name: &str| -> (String, u64) {
        let e = plan["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|e| e["resource"]["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {plan:#}"));
        assert_eq!(
            e["alternatives"][0]["size"], "Standard_NC4as_T4_v3",
            "{e:#}"
        );
        (
            e["file"].as_str().expect("file").to_string(),
            e["line"].as_u64().expect("line"),
        )
    };
    assert_eq!(at("old (module known[1])"), ("loop/main.bicep".into(), 5));
    assert_eq!(
        at("gpu (module cluster/gpuPool)"),
        ("nested/main.bicep".into(), 1)
    );
    assert_eq!(
        at("gpu-cluster (module gpu)"),
        ("retired-module/main.bicep".into(), 7)
    );
    // The loop over a parameter without a value: the size is unresolved, no alternatives.
    let open = plan["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|e| e["resource"]["name"] == "[parameters('name')] (module open[*])")
        .unwrap_or_else(|| panic!("{plan:#}"));
    assert_eq!(open["status"], "size-unresolved", "{open:#}");
    // A size given only in a var file reaches the module, but plan cannot edit it there:
    // said so, naming the module, never an alternative that was not verified.
    let dir = fixtures().join("terraform/modules");
    let (code, plan) = plan_json_in(&dir, &["--var-file", "prod.tfvars", "."]);
    assert_eq!(code, 1, "{plan:#}");
    let pool = &plan["resources"][0];
    assert_eq!(
        pool["resource"]["name"], "module.node_pool.azurerm_kubernetes_cluster_node_pool.node_pool",
        "{plan:#}"
    );
    assert_eq!(pool["status"], "not-editable", "{pool:#}");
    assert_eq!(pool["alternatives"], serde_json::json!([]));
    assert_eq!(
        pool["module"]["file"], "modules/node_pool/main.tf",
        "{pool:#}"
    );
}
