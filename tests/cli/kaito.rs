//! `kaito-preset-fits` (issue 38) on the real KAITO Workspaces in
//! `shared/corpus/kaito-presets/workspaces/` (see its SOURCES.tsv), with the built-in KAITO
//! data (kaito-project/kaito@056b828) and with the era-1 figures of 509f7acd given as a
//! catalog overlay (`tests/fixtures/catalog/kaito-509f7ac.yaml`); and the catalog's
//! statuses following the date (`catalog list --status`).

use crate::*;

const ERA1: &str = "tests/fixtures/catalog/kaito-509f7ac.yaml";

fn workspace(name: &str) -> PathBuf {
    root()
        .join("../shared/corpus/kaito-presets/workspaces")
        .join(name)
}

/// `check --format json --as-of 2026-11-28` on `files` with `config` (if any): every
/// `kaito-preset-fits` finding as (file name, line, severity, message).
fn preset_findings(files: &[&Path], config: Option<&Path>) -> Vec<(String, u64, String, String)> {
    let mut args: Vec<String> = ["check", "--format", "json", "--as-of", "2026-11-28"]
        .map(String::from)
        .to_vec();
    if let Some(c) = config {
        args.push("--config".into());
        args.push(c.display().to_string());
    }
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", stdout(&out), stderr(&out)));
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "kaito-preset-fits")
        .map(|f| {
            let file = f["file"].as_str().expect("file");
            (
                Path::new(file)
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .to_string(),
                f["line"].as_u64().expect("line"),
                f["severity"].as_str().expect("severity").to_string(),
                f["message"].as_str().expect("message").to_string(),
            )
        })
        .collect()
}

/// A configuration naming the era-1 overlay, in its own folder.
fn era1_config(dir: &Path) -> PathBuf {
    let config = dir.join("computeguard.yaml");
    std::fs::write(
        &config,
        format!("catalog: [{}]\n", root().join(ERA1).display()),
    )
    .expect("write config");
    config
}

#[test]
fn real_workspaces_fit_or_are_named_not_judged_with_the_current_kaito_data() {
    let files = [
        workspace("ws-llama-3.1-8b-instruct-nc96ads-a100.yaml"),
        workspace("ws-phi-4-nc24ads-a100.yaml"),
        workspace("ws-arc-phi-3-medium-4k-nc12s-v3.yaml"),
        workspace("ws-phi-3.5-mini-instruct-nc6s-v3.yaml"),
        workspace("ws-v1alpha1-mistral-7b-nc12s-v3.yaml"),
    ];
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    // The A100 workspaces fit (14.96Gi <= 320Gi, 27.31Gi <= 80Gi): no finding. The V100
    // ones are on sizes the current KAITO supports at all (kaito-sku-supported says so) and
    // its SKU table lacks: no fit to judge.
    assert_eq!(preset_findings(&refs, None), []);
    let rules = |file: &Path| -> Vec<String> {
        let (_, r) = check_json(&[file.to_str().expect("path")]);
        r["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter_map(|f| f["rule"].as_str().map(str::to_string))
            .collect()
    };
    assert!(rules(&files[3]).contains(&"kaito-sku-supported".to_string()));

    // A size KAITO supports but its table does not list (the A10 v4 sizes): not judged,
    // and said so (info), never a pass in silence.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(workspace("ws-phi-4-nc24ads-a100.yaml"))
        .expect("workspace")
        .replace("Standard_NC24ads_A100_v4", "Standard_NC8ads_A10_v4");
    let a10 = dir.path().join("phi-4-nc8ads-a10-v4.yaml");
    std::fs::write(&a10, text).expect("write");
    let found = preset_findings(&[a10.as_path()], None);
    assert_eq!(found.len(), 1, "{found:#?}");
    let (_, line, severity, message) = &found[0];
    assert_eq!((*line, severity.as_str()), (6, "info"));
    assert!(
        message.contains("KAITO's SKU table (kaito-project/kaito@056b828, 2026-08-21) does not list instance type Standard_NC8ads_A10_v4")
            && message.contains("preset phi-4 (27.31Gi of GPU memory)"),
        "{message}"
    );
}

#[test]
fn an_overlay_for_an_older_kaito_judges_the_v100_workspaces_by_its_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = era1_config(dir.path());
    let files = [
        workspace("ws-arc-phi-3-medium-4k-nc12s-v3.yaml"),
        workspace("ws-phi-3.5-mini-instruct-nc6s-v3.yaml"),
        workspace("ws-v1alpha1-mistral-7b-nc12s-v3.yaml"),
        workspace("ws-llama-3.1-8b-instruct-nc96ads-a100.yaml"),
    ];
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    // At 509f7acd all four fit (32 >= 28, 16 >= 8, 32 >= 14, 320 >= 22 GiB), as the corpus
    // README's verdicts say.
    assert_eq!(preset_findings(&refs, Some(&config)), []);
    // phi-3-medium-4k (28Gi then) does not fit one V100 (16Gi): judged by those figures.
    let text = std::fs::read_to_string(workspace("ws-phi-3.5-mini-instruct-nc6s-v3.yaml"))
        .expect("workspace")
        .replace("phi-3.5-mini-instruct", "phi-3-medium-4k-instruct");
    let medium = dir.path().join("phi-3-medium-nc6s-v3.yaml");
    std::fs::write(&medium, text).expect("write");
    let found = preset_findings(&[medium.as_path()], Some(&config));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].2, "error");
    assert!(
        found[0].3.contains("Insufficient total GPU memory: Instance type Standard_NC6s_v3 has a total of 16Gi, but preset phi-3-medium-4k-instruct requires at least 28Gi (KAITO kaito-project/kaito@509f7ac, 2025-09-11)"),
        "{found:#?}"
    );
    // The current KAITO does not support a V100 at all: no fit to judge.
    assert_eq!(preset_findings(&[medium.as_path()], None), []);
}

#[test]
fn a_preset_too_large_for_its_instance_type_is_an_error_in_kaitos_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The real phi-4 Workspace, moved to an A10 (24 GiB).
    let text = std::fs::read_to_string(workspace("ws-phi-4-nc24ads-a100.yaml"))
        .expect("workspace")
        .replace("Standard_NC24ads_A100_v4", "Standard_NV36ads_A10_v5");
    let a10 = dir.path().join("phi-4-a10.yaml");
    std::fs::write(&a10, text).expect("write");
    let found = preset_findings(&[a10.as_path()], None);
    assert_eq!(found.len(), 1, "{found:#?}");
    let (_, line, severity, message) = &found[0];
    assert_eq!((*line, severity.as_str()), (6, "error"));
    assert_eq!(
        message,
        "KAITO workspace workspace-phi-4: Insufficient total GPU memory: Instance type Standard_NV36ads_A10_v5 has a total of 24Gi, but preset phi-4 requires at least 27.31Gi (KAITO kaito-project/kaito@056b828, 2026-08-21); KAITO refuses this Workspace"
    );

    // The real llama-3.1-8b Workspace with llama-3.3-70b on two A100s: at 509f7acd the
    // preset needs 4 GPUs and 320Gi.
    let text = std::fs::read_to_string(workspace("ws-llama-3.1-8b-instruct-nc96ads-a100.yaml"))
        .expect("workspace")
        .replace("Standard_NC96ads_A100_v4", "Standard_NC48ads_A100_v4")
        .replace(
            "name: llama-3.1-8b-instruct",
            "name: llama-3.3-70b-instruct",
        );
    let llama = dir.path().join("llama-70b-nc48.yaml");
    std::fs::write(&llama, text).expect("write");
    let config = era1_config(dir.path());
    let found = preset_findings(&[llama.as_path()], Some(&config));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].3,
        "KAITO workspace workspace-llama-3-1-8b-instruct: Insufficient number of GPUs: Instance type Standard_NC48ads_A100_v4 provides 2, but preset llama-3.3-70b-instruct requires at least 4; Insufficient total GPU memory: Instance type Standard_NC48ads_A100_v4 has a total of 160Gi, but preset llama-3.3-70b-instruct requires at least 320Gi (KAITO kaito-project/kaito@509f7ac, 2025-09-11); KAITO refuses this Workspace"
    );
    // With the current data the same Workspace fits: 131.42Gi <= 160Gi.
    assert_eq!(preset_findings(&[llama.as_path()], None), []);
}

#[test]
fn catalog_show_names_kaitos_figures_and_their_version() {
    let out = run(&["catalog", "show", "Standard_NC24ads_A100_v4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "KAITO instance type (kaito-project/kaito@056b828, 2026-08-21): 1 GPU(s), 80Gi of GPU memory  built-in: azure_sku_handler.go L24"
        ),
        "{}",
        stdout(&out)
    );
    let out = run(&["catalog", "show", "phi-4"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("KAITO preset phi-4 (kaito-project/kaito@056b828, 2026-08-21)"),
        "{text}"
    );
    assert!(
        text.contains("inference  27.31Gi of GPU memory in all"),
        "{text}"
    );
    // An overlay replaces it, and show says whose figures they are.
    let out = run(&["catalog", "show", "phi-4", "--catalog", ERA1]);
    let text = stdout(&out);
    assert!(
        text.starts_with("KAITO preset phi-4 (kaito-project/kaito@509f7ac, 2025-09-11)"),
        "{text}"
    );
    assert!(
        text.contains("inference  1 GPU(s), 40Gi of GPU memory in all, 0Gi per GPU"),
        "{text}"
    );
    assert!(
        text.contains(
            "from       overlay: inference presets/workspace/models/phi4/model.go:68/69/70"
        ),
        "{text}"
    );
    let out = run(&[
        "catalog",
        "show",
        "Standard_NC6s_v3",
        "--catalog",
        ERA1,
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["kaito"]["instanceType"]["gpuMemory"], "16Gi", "{v}");
    assert_eq!(
        v["kaito"]["version"],
        "kaito-project/kaito@509f7ac, 2025-09-11"
    );
}

#[test]
fn statuses_follow_the_date() {
    let names = |args: &[&str]| -> Vec<String> {
        let out = run(args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
            .collect()
    };
    // NVv3 and NVv4 retire on 2026-09-30: announced before, retired after.
    let after = names(&[
        "catalog",
        "list",
        "--status",
        "retirement_announced",
        "--as-of",
        "2026-11-28",
    ]);
    assert!(
        !after
            .iter()
            .any(|n| n.ends_with("s_v3") && n.starts_with("Standard_NV") || n.ends_with("as_v4")),
        "{after:?}"
    );
    let retired = names(&[
        "catalog",
        "list",
        "--status",
        "retired",
        "--as-of",
        "2026-11-28",
    ]);
    assert!(
        retired.contains(&"Standard_NV12s_v3".to_string())
            && retired.contains(&"Standard_NV32as_v4".to_string()),
        "{retired:?}"
    );
    let before = names(&[
        "catalog",
        "list",
        "--status",
        "retirement_announced",
        "--as-of",
        "2026-09-01",
    ]);
    assert!(
        before.contains(&"Standard_NV12s_v3".to_string())
            && before.contains(&"Standard_NV32as_v4".to_string()),
        "{before:?}"
    );
    let out = run(&[
        "catalog",
        "show",
        "Standard_NV12s_v3",
        "--as-of",
        "2026-11-28",
    ]);
    let status = stdout(&out)
        .lines()
        .find(|l| l.trim_start().starts_with("status "))
        .unwrap_or_default()
        .to_string();
    assert!(
        status.contains("retired")
            && status.contains(
                "catalogued as retirement_announced; its retirement date has passed on 2026-11-28"
            ),
        "{status}"
    );
}

#[test]
fn current_n_series_sizes_are_not_unknown() {
    // Sizes real files use that the catalog lacked: a correct manifest got sku-unknown.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a10.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a10}\nspec:\n  nodeSelector: {node.kubernetes.io/instance-type: Standard_NC8ads_A10_v4}\n  tolerations: [{key: sku, operator: Equal, value: gpu, effect: NoSchedule}]\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]\n",
    )
    .expect("write");
    let (_, report) = check_json(&[file.to_str().expect("path")]);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(!rules.contains(&"sku-unknown"), "{report}");
    for size in [
        "Standard_NC16ads_A10_v4",
        "Standard_NC32ads_A10_v4",
        "Standard_NC256ds_xl_RTXPRO6000BSE_v6",
    ] {
        let out = run(&["catalog", "show", size]);
        assert_eq!(code(&out), 0, "{size}: {}", stderr(&out));
    }
}

/// An overlay that changes the GPU memory of an instance type changes kaito-preset-fits'
/// answer both ways (KAITO judges by its own SKU table, and so does the rule); a change of
/// the catalog's `gpu.memoryGiB` alone does not, and `catalog show` says which figure each
/// reads.
#[test]
fn an_overlay_that_changes_an_instance_types_gpu_memory_changes_the_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(workspace("ws-phi-4-nc24ads-a100.yaml")).expect("workspace");
    let a10 = dir.path().join("phi-4-a10.yaml");
    std::fs::write(
        &a10,
        text.replace("Standard_NC24ads_A100_v4", "Standard_NV36ads_A10_v5"),
    )
    .expect("write");
    let a100 = dir.path().join("phi-4-a100.yaml");
    std::fs::write(&a100, &text).expect("write");
    let config = |name: &str, overlay: &str| -> PathBuf {
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, overlay).expect("overlay");
        let config = dir.path().join(format!("{name}-computeguard.yaml"));
        std::fs::write(&config, format!("catalog: [{}]\n", file.display())).expect("config");
        config
    };
    // Built in: 24Gi on the A10 is too little for phi-4 (27.31Gi), 80Gi on the A100 enough.
    let built_in = preset_findings(&[a10.as_path(), a100.as_path()], None);
    assert_eq!(built_in.len(), 1, "{built_in:#?}");
    assert_eq!(built_in[0].0, "phi-4-a10.yaml");
    assert_eq!(built_in[0].2, "error");
    // The cluster's KAITO says 32Gi for the A10 and 16Gi for the A100: the answers swap.
    let changed = config(
        "memory",
        "kind: CatalogOverlay\nskus: []\nkaito:\n  version: our cluster's KAITO\n  instanceTypes:\n    - {name: Standard_NV36ads_A10_v5, gpus: 1, gpuMemory: 32Gi, source: a test}\n    - {name: Standard_NC24ads_A100_v4, gpus: 1, gpuMemory: 16Gi, source: a test}\n",
    );
    let found = preset_findings(&[a10.as_path(), a100.as_path()], Some(&changed));
    assert_eq!(found.len(), 1, "{found:#?}");
    let (file, line, severity, message) = &found[0];
    assert_eq!(
        (file.as_str(), *line, severity.as_str()),
        ("phi-4-a100.yaml", 6, "error")
    );
    assert!(
        message.contains("Insufficient total GPU memory: Instance type Standard_NC24ads_A100_v4 has a total of 16Gi, but preset phi-4 requires at least 27.31Gi (KAITO our cluster's KAITO (over kaito-project/kaito@056b828, 2026-08-21))"),
        "{message}"
    );
    // The catalog's GPU memory of the size is Azure's figure, which plan compares; KAITO
    // does not read it, so neither does the rule.
    let azure_only = config(
        "azure",
        "kind: CatalogOverlay\nskus:\n  - {name: Standard_NV36ads_A10_v5, source: a test, gpu: {memoryGiB: 32}}\n",
    );
    let found = preset_findings(&[a10.as_path()], Some(&azure_only));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].3.contains("has a total of 24Gi"), "{found:#?}");
    let out = run(&[
        "catalog",
        "show",
        "Standard_NV36ads_A10_v5",
        "--config",
        azure_only.to_str().expect("path"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.lines().any(|l| l.starts_with("  gpu.memoryGiB ")
            && l.contains(" 32 ")
            && l.ends_with(": a test")),
        "{shown}"
    );
    assert!(
        shown.contains("KAITO instance type (kaito-project/kaito@056b828, 2026-08-21): 1 GPU(s), 24Gi of GPU memory  built-in: azure_sku_handler.go L22\n  KAITO's figure is not gpu.memoryGiB (32): kaito-preset-fits judges by KAITO's"),
        "{shown}"
    );
    // Built in, the two agree and show says nothing more.
    let out = run(&["catalog", "show", "Standard_NV36ads_A10_v5"]);
    assert!(
        !stdout(&out).contains("KAITO's figure is not"),
        "{}",
        stdout(&out)
    );
}
