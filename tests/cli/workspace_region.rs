//! Issue 38: an Azure ML online deployment YAML names no region (it runs in its
//! workspace's). With the subscription's facts configured, `quota-sufficient` and
//! `sku-available-in-region` said nothing at all about it. The region now comes from
//! `azure.workspaceRegion` in computeguard.yaml, or from the workspace file of the same run;
//! without either it is listed as unresolved. Real files: the Triton deployment and the
//! basic workspace of Azure/azureml-examples (tests/fixtures/SOURCES.tsv), the REST specs'
//! Azure ML usage and the real eastus SKU list (tests/fixtures/context/ml).

use crate::*;

const TRITON: &str = "azureml/online-deployment-triton-nc4as-t4-v3.yaml";
const WORKSPACE: &str = "azureml/workspace-basic-eastus.yml";

/// A scratch folder with the SKU list, the Azure ML usage, `config` (after them) and the
/// real files `files` (fixture path, name in the folder).
fn folder(config: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (from, to) in [
        ("context/ml/eastus-skus.json", "skus.json"),
        ("context/ml/eastus-ml-usage.json", "ml-usage.json"),
    ]
    .iter()
    .chain(files)
    {
        std::fs::copy(fixtures().join(from), dir.path().join(to)).expect("copy");
    }
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        format!(
            "asOf: 2026-11-22\nazure:\n  skus: [skus.json]\n  mlUsage:\n    eastus: ml-usage.json\n{config}"
        ),
    )
    .expect("config");
    dir
}

/// The report of `check --format json FILES` in `dir`.
fn report(dir: &Path, files: &[&str]) -> Value {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(files);
    let out = run_in(dir, &args).expect("run");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// (rule, severity, message) of the findings on the deployment.
fn region_findings(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| {
            ["quota-sufficient", "sku-available-in-region"]
                .contains(&f["rule"].as_str().unwrap_or_default())
        })
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn unresolved_fields(report: &Value) -> Vec<String> {
    report["unresolved"]
        .as_array()
        .expect("unresolved")
        .iter()
        .map(|u| {
            format!(
                "{} {}",
                u["display"].as_str().unwrap_or_default(),
                u["field"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn without_a_workspace_region_the_deployment_is_named_unresolved_not_passed() {
    let dir = folder("", &[(TRITON, "triton.yaml")]);
    let r = report(dir.path(), &["triton.yaml"]);
    assert_eq!(region_findings(&r), [], "{r}");
    assert_eq!(
        unresolved_fields(&r),
        ["Azure ML online deployment blue workspaceRegion"],
        "{r}"
    );
    // The text report says why in one sentence.
    let out = run_in(dir.path(), &["check", "triton.yaml"]).expect("run");
    assert!(
        stdout(&out).contains(
            "unresolved: Azure ML online deployment blue: its region is its Azure ML workspace's, which neither a workspace file of this change nor `azure.workspaceRegion` in computeguard.yaml states, so sku-available-in-region and quota-sufficient did not judge it"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_configured_workspace_region_is_the_deployments_region() {
    let dir = folder("  workspaceRegion: East US\n", &[(TRITON, "triton.yaml")]);
    let r = report(dir.path(), &["triton.yaml"]);
    assert_eq!(unresolved_fields(&r), Vec::<String>::new(), "{r}");
    let found = region_findings(&r);
    // Standard_NC4as_T4_v3 is not in the eastus SKU list given (info) and its family is not
    // in Azure ML's usage (info): both rules now judge it, in eastus.
    let rules: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        rules,
        ["quota-sufficient", "sku-available-in-region"],
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .all(|f| f.1 == "info" && f.2.contains("eastus")),
        "{found:?}"
    );
    assert!(
        found[0]
            .2
            .contains(": the quota of its family in eastus is unknown"),
        "{found:?}"
    );
}

#[test]
fn the_workspace_file_of_the_same_run_gives_the_region() {
    let dir = folder("", &[(TRITON, "triton.yaml"), (WORKSPACE, "workspace.yml")]);
    let r = report(dir.path(), &["triton.yaml", "workspace.yml"]);
    assert_eq!(unresolved_fields(&r), Vec::<String>::new(), "{r}");
    let found = region_findings(&r);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|f| f.2.contains("eastus")), "{found:?}");
    // Two instances with the 20% upgrade reservation need 12 vCPUs; 10 of the regional
    // total are free: the shortfall is found only because the region is known.
    let two = std::fs::read_to_string(fixtures().join(TRITON))
        .expect("fixture")
        .replace("instance_count: 1", "instance_count: 2");
    std::fs::write(dir.path().join("two.yaml"), two).expect("write");
    let r = report(dir.path(), &["two.yaml", "workspace.yml"]);
    let quota: Vec<_> = region_findings(&r)
        .into_iter()
        .filter(|f| f.0 == "quota-sufficient")
        .collect();
    assert_eq!(quota.len(), 1, "{r}");
    assert_eq!(quota[0].1, "warning", "{quota:?}");
    assert!(quota[0].2.contains("in eastus in all"), "{quota:?}");
}

#[test]
fn a_workspace_region_that_is_no_region_is_refused_with_its_line() {
    let dir = folder("  workspaceRegion: moon-1\n", &[(TRITON, "triton.yaml")]);
    let out = run_in(dir.path(), &["check", "triton.yaml"]).expect("run");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`moon-1` is not a known Azure region"),
        "{}",
        stderr(&out)
    );
}
