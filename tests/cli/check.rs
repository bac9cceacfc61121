//! `computeguard check`: findings, lines, exit codes, configuration.

use crate::*;

#[test]
fn azure_ml_findings_point_at_the_field_lines() {
    let (code, report) = check_json(&["tests/fixtures/azureml"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            (
                "sku-retired",
                "azureml/cluster-location-westus-ds3v2.yml",
                4
            ),
            ("sku-retired", "azureml/gpu-cluster-idle-nc6.yml", 6),
            ("min-nodes-zero", "azureml/gpu-cluster-idle-nc6.yml", 7),
            ("cuda-arch-compat", "azureml/job-cuda12-on-k80.yml", 6),
            ("sku-retired", "azureml/job-cuda12-on-k80.yml", 8),
        ])
    );
    let f = &report["findings"][3];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["path"], "/environment/image");
    assert_eq!(f["resource"]["kind"], "aml-job");
    assert_eq!(f["policy"], "computeguard-builtin");
    assert_eq!(
        f["message"],
        "Azure ML command job train-llm needs CUDA 12.4.1 (image nvidia/cuda:12.4.1-runtime-ubuntu22.04) but \
         Standard_NC6 has Kepler GPUs (compute capability 3.7), supported by CUDA 6.0 to 11.8; move to a current \
         size such as Standard_NC4as_T4_v3"
    );
    assert_eq!(report["summary"]["errors"], 3);
    assert_eq!(report["summary"]["warnings"], 1);
    assert_eq!(report["summary"]["infos"], 1);
}

#[test]
fn kubernetes_multi_document_and_admission_review_lines() {
    let (code, report) = check_json(&["tests/fixtures/kubernetes"]);
    assert_eq!(code, 0, "warnings only: {report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            (
                "gpu-workload-scheduling",
                "kubernetes/kyverno-check-nvidia-gpu-pods-bad.yaml",
                15
            ),
            (
                "gpu-workload-scheduling",
                "kubernetes/kyverno-check-nvidia-gpu-pods-bad.yaml",
                31
            ),
            (
                "no-infiniband-for-inference",
                "kubernetes/triton-on-infiniband.yaml",
                18
            ),
        ])
    );
    let f = &report["findings"][2];
    assert_eq!(f["document"], 1, "second document of the file");
    assert_eq!(
        f["message"],
        "Deployment serving/triton-llm is an inference workload on Standard_ND96isr_H100_v5, an InfiniBand SKU; \
         serve from a non-RDMA size such as Standard_NC40ads_H100_v5"
    );
}

#[test]
fn placeholder_sku_gives_sku_unknown_and_nothing_else() {
    let (_, report) =
        check_json(&["tests/fixtures/kaito/workspace-arc-phi-4-mini-placeholder-sku.yaml"]);
    assert_eq!(
        findings(&report),
        triples(&[(
            "sku-unknown",
            "kaito/workspace-arc-phi-4-mini-placeholder-sku.yaml",
            6
        )])
    );
}

#[test]
fn fail_on_lowers_the_threshold() {
    let out = run(&["check", "tests/fixtures/kubernetes", "--fail-on", "warning"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let out = run(&[
        "check",
        "tests/fixtures/kubernetes/clean-web.yaml",
        "--fail-on",
        "info",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

#[test]
fn invalid_yaml_is_exit_2_naming_file_and_line() {
    let out = run(&["check", "tests/fixtures/invalid/broken.yaml"]);
    assert_eq!(code(&out), 2);
    let text = stdout(&out);
    assert!(
        text.contains("--> tests/fixtures/invalid/broken.yaml:4"),
        "{text}"
    );
    assert!(text.contains("invalid YAML at line 4, column"), "{text}");
    assert!(!text.contains("invalid yaml"), "said once: {text}");
    let out = run(&["check", "tests/fixtures/invalid/broken.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains("invalid JSON at line 4"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn missing_path_and_bad_flags_are_usage_errors() {
    let out = run(&["check", "no/such/dir"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("path `no/such/dir` does not exist"),
        "{}",
        stderr(&out)
    );
    let out = run(&["check", "--as-of", "22/11/2026", "tests/fixtures/azureml"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("expected YYYY-MM-DD"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn retirement_is_judged_at_the_evaluation_date() {
    let file = "tests/fixtures/kaito/workspace-tuning-phi-3-pvc-nc6s-v3.yaml";
    let severity = |date: &str| {
        let out = run(&["check", "--format", "json", "--as-of", date, file]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == "sku-retired")
            .map(|f| f["severity"].as_str().expect("severity").to_string())
    };
    assert_eq!(severity("2025-10-01").as_deref(), Some("error"));
    assert_eq!(severity("2025-09-01").as_deref(), Some("info"));
}

#[test]
fn config_sets_regions_severities_and_ignores() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("legacy"))?;
    std::fs::copy(
        fixtures().join("azureml/gpu-cluster-idle-nc6.yml"),
        dir.path().join("cluster.yml"),
    )?;
    std::fs::copy(
        fixtures().join("azureml/gpu-cluster-idle-nc6.yml"),
        dir.path().join("legacy/cluster.yml"),
    )?;
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "asOf: 2026-11-22\nregions:\n  allowed: [West Europe]\nrules:\n  sku-retired: off\n  min-nodes-zero: error\nignore:\n  - rule: min-nodes-zero\n    paths: [\"legacy/**\"]\n    reason: warm pool for the nightly SLA\n",
    )?;
    let out = run_in(dir.path(), &["check", "--format", "json", "."])?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let got: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or("").into(),
                f["file"].as_str().unwrap_or("").into(),
                f["severity"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "min-nodes-zero".into(),
                "./cluster.yml".into(),
                "error".into()
            ),
            (
                "region-allowed".into(),
                "./cluster.yml".into(),
                "error".into()
            ),
            (
                "region-allowed".into(),
                "./legacy/cluster.yml".into(),
                "error".into()
            ),
        ]
    );
    assert_eq!(report["summary"]["suppressed"], 1);
    assert_eq!(code(&out), 1);
    Ok(())
}

#[test]
fn inline_ignore_silences_one_rule_on_one_field() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let text = std::fs::read_to_string(fixtures().join("azureml/gpu-cluster-idle-nc6.yml"))?
        .replace(
            "min_instances: 2",
            "# computeguard:ignore min-nodes-zero warm pool for the nightly SLA\nmin_instances: 2",
        );
    std::fs::write(dir.path().join("cluster.yml"), text)?;
    let (_, report) = check_json(&[dir.path().join("cluster.yml").to_str().unwrap_or_default()]);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .expect("f")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert_eq!(rules, ["sku-retired"]);
    Ok(())
}

#[test]
fn text_output_has_a_code_frame_and_summary() {
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
    ]);
    let text = stdout(&out);
    assert!(text.contains("error[sku-retired]: Azure ML compute cluster gpu-cluster uses Standard_NC6, retired on 2023-09-06"), "{text}");
    assert!(text.contains("  --> tests/fixtures/azureml/gpu-cluster-idle-nc6.yml:6:1\n  |\n6 | size: Standard_NC6\n  | ^^^^^^^^^^^^^^^^^^"), "{text}");
    assert!(text.contains("computeguard: 1 error, 1 warning, 0 infos in 1 file read (1 document, 1 resource); as of 2026-11-22"), "{text}");
}

#[test]
fn github_format_emits_workflow_annotations() {
    let out = run(&[
        "check",
        "--format",
        "github",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
    ]);
    let text = stdout(&out);
    assert!(text.starts_with("::error file=tests/fixtures/azureml/gpu-cluster-idle-nc6.yml,line=6,col=1,title=computeguard sku-retired::"), "{text}");
    assert!(
        text.contains("::warning file=tests/fixtures/azureml/gpu-cluster-idle-nc6.yml,line=7,"),
        "{text}"
    );
}

#[test]
fn unknown_rule_in_config_is_an_error_with_its_line() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "rules:\n  min-nodes-zer0: off\n",
    )?;
    std::fs::copy(
        fixtures().join("azureml/gpu-cluster-idle-nc6.yml"),
        dir.path().join("c.yml"),
    )?;
    let out = run_in(dir.path(), &["check", "."])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("computeguard.yaml:2: unknown rule `min-nodes-zer0`"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn allowed_geographies_match_areas_and_eu_case_insensitively() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let cluster = |loc: &str| {
        format!("type: amlcompute\nname: c\nsize: Standard_NC24ads_A100_v4\nlocation: {loc}\n")
    };
    std::fs::write(dir.path().join("de.yml"), cluster("Germany West Central"))?;
    std::fs::write(dir.path().join("ch.yml"), cluster("switzerlandnorth"))?;
    std::fs::write(dir.path().join("us.yml"), cluster("eastus"))?;
    let rules = |geos: &str| -> std::io::Result<Vec<String>> {
        std::fs::write(
            dir.path().join("computeguard.yaml"),
            format!("regions:\n  allowedGeographies: [{geos}]\n"),
        )?;
        let out = run_in(dir.path(), &["check", "--format", "json", "."])?;
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        Ok(report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "region-allowed")
            .map(|f| f["file"].as_str().unwrap_or("").to_string())
            .collect())
    };
    assert_eq!(rules("europe")?, ["./us.yml"]);
    assert_eq!(rules("EU")?, ["./ch.yml", "./us.yml"]);
    assert_eq!(rules("United States")?, ["./ch.yml", "./de.yml"]);
    Ok(())
}

#[test]
fn verbose_lists_skipped_documents_of_a_multi_document_file() {
    let file = "tests/fixtures/kubernetes/triton-on-infiniband.yaml";
    let args = ["check", "--as-of", "2026-11-22", file];
    let quiet = stdout(&run(&args));
    assert!(!quiet.contains("kind Namespace"), "{quiet}");
    let out = stdout(&run(&[&args[..], &["--verbose"]].concat()));
    let line =
        format!("skipped {file}:1: document 1 (kind Namespace): no compute resources recognised");
    assert!(out.contains(&line), "missing `{line}` in:\n{out}");
    // The Deployment in the same file is checked, not skipped.
    assert!(!out.contains("document 2"), "{out}");
    assert!(out.contains("no-infiniband-for-inference"), "{out}");
}

#[test]
fn a_bare_admission_request_file_is_checked_like_the_envelope() {
    // Webhook test data often stores only the `request` of an AdmissionReview.
    let (code, report) = check_json(&[
        "tests/fixtures/admission-review/kubewarden-trusted-repos-job-creation-request.json",
        "tests/fixtures/admission-review/kubewarden-kwctl-privileged-pod-admissionreview-v1.json",
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["summary"]["skippedFiles"], 0, "{report:#}");
    assert_eq!(report["summary"]["resources"], 2, "{report:#}");
}
