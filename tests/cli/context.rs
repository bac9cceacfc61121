//! Catalog overlays and Azure facts named in `computeguard.yaml` (`catalog:`,
//! `azure:`): `check` and `serve` read them the same way (issue 25).

use crate::*;

/// A scratch folder with the context fixtures and a `computeguard.yaml` of `config`.
fn scratch(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in ["pools.bicep", "overlay.yaml", "bad-overlay.yaml"] {
        std::fs::copy(fixtures().join("context").join(f), dir.path().join(f)).expect("copy");
    }
    std::fs::write(dir.path().join("computeguard.yaml"), config).expect("config");
    dir
}

fn rules_at(report: &serde_json::Value) -> Vec<(String, u64, String)> {
    let mut v: Vec<(String, u64, String)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or("").to_string(),
                f["line"].as_u64().unwrap_or(0),
                f["severity"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(r, _, _)| r.starts_with("sku-"))
        .collect();
    v.sort();
    v
}

#[test]
fn an_overlay_adds_a_size_and_announces_a_retirement() {
    let without = scratch("asOf: 2026-11-22\n");
    let (_, report) = check_json_in(without.path(), &["pools.bicep"]).expect("check");
    assert_eq!(
        rules_at(&report),
        vec![("sku-unknown".to_string(), 4, "warning".to_string())],
        "the built-in catalog does not know the H200 v6 size: {report:#}"
    );
    let with = scratch("asOf: 2026-11-22\ncatalog: [overlay.yaml]\n");
    let (_, report) = check_json_in(with.path(), &["pools.bicep"]).expect("check");
    assert_eq!(
        rules_at(&report),
        vec![("sku-retired".to_string(), 14, "info".to_string())],
        "the overlay's size is known and its retirement announced: {report:#}"
    );
    let msg = report["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["rule"] == "sku-retired"))
        .and_then(|f| f["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("whose retirement is announced for 2027-03-31"),
        "{msg}"
    );
    // After the date the same overlay makes it an error.
    let out = run_in(
        with.path(),
        &[
            "check",
            "--format",
            "json",
            "--as-of",
            "2027-04-01",
            "pools.bicep",
        ],
    )
    .expect("run");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        rules_at(&report),
        vec![("sku-retired".to_string(), 14, "error".to_string())]
    );
}

#[test]
fn a_bad_overlay_is_refused_naming_file_line_and_field() {
    let dir = scratch("catalog: [bad-overlay.yaml]\n");
    let out = run_in(dir.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    for expected in [
        "bad-overlay.yaml:3: at `/skus/0/source`: required field is missing",
        "bad-overlay.yaml:4: at `/skus/0/vcpus`: expected an integer, got a string",
    ] {
        assert!(err.contains(expected), "{expected}\nin\n{err}");
    }
    assert!(
        stdout(&out).is_empty(),
        "nothing is checked with half a context"
    );
    // The calendar check runs once the schema is satisfied.
    std::fs::write(
        dir.path().join("bad-overlay.yaml"),
        "kind: CatalogOverlay\nskus:\n  - name: Standard_NC12\n    source: doc\n    retirementDate: \"2026-02-30\"\n",
    )
    .expect("write");
    let out = run_in(dir.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(
            "bad-overlay.yaml:5: at `/skus/0/retirementDate`: `2026-02-30` is not a calendar date"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_config_names_context_files_that_exist_and_regions_that_are_azure() {
    let dir = scratch("catalog: [missing.yaml]\n");
    let out = run_in(dir.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("cannot read catalog overlay `")
            && stderr(&out).contains("missing.yaml"),
        "{}",
        stderr(&out)
    );
    let dir = scratch("azure:\n  usage:\n    east-us-9: usage.json\n");
    let out = run_in(dir.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("computeguard.yaml:3:")
            && stderr(&out).contains("`east-us-9` is not a known Azure region"),
        "{}",
        stderr(&out)
    );
    // A usage file that is a SKU list is refused by shape, with the file named.
    let dir = scratch("azure:\n  usage:\n    eastus: skus.json\n");
    std::fs::copy(
        root().join("examples/azure/eastus-skus.json"),
        dir.path().join("skus.json"),
    )
    .expect("copy");
    let out = run_in(dir.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("skus.json:"), "{}", stderr(&out));
}

#[test]
fn catalog_show_and_list_apply_the_configured_overlays_as_check_does() {
    let dir = scratch("catalog: [overlay.yaml]\n");
    let out = run_in(dir.path(), &["catalog", "show", "NC48ads_H200_v6"]).expect("run");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Standard_NC48ads_H200_v6\n"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  vcpus") && l.contains("48") && l.contains("overlay.yaml")),
        "{text}"
    );
    let out = run_in(
        dir.path(),
        &["catalog", "list", "--gpu", "--format", "json"],
    )
    .expect("run");
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        list.as_array()
            .expect("list")
            .iter()
            .any(|s| s["name"] == "Standard_NC48ads_H200_v6"),
        "the configured overlay's size is listed"
    );
    // An explicit --config without overlays shows the built-in catalog only.
    std::fs::write(dir.path().join("plain.yaml"), "asOf: 2026-11-22\n").expect("write");
    let out = run_in(
        dir.path(),
        &[
            "catalog",
            "show",
            "NC48ads_H200_v6",
            "--config",
            "plain.yaml",
        ],
    )
    .expect("run");
    assert_eq!(code(&out), 2, "not known without the overlay");
}

/// Two files that each fit the family's free quota but not together: `check` judges the
/// change as a whole (`settings.quota.declaredInRun`), naming both sums.
#[test]
fn quota_is_judged_over_every_file_of_the_change() {
    let dir = fixtures().join("context/quota");
    let quota = |files: &[&str]| -> Vec<String> {
        let mut args = vec!["check", "--format", "json"];
        args.extend_from_slice(files);
        let out = run_in(&dir, &args).expect("run");
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "quota-sufficient")
            .map(|f| f["message"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        quota(&["a.bicep"]),
        Vec::<String>::new(),
        "18 of 24 free fits"
    );
    let both = quota(&["a.bicep", "b.bicep"]);
    assert_eq!(both.len(), 2, "{both:?}");
    for m in &both {
        assert!(
            m.contains(
                "this change needs 36 vCPUs of family standardNVFamily in eastus (18 in this document), and 24 are free (limit 24, 0 in use)"
            ),
            "{m}"
        );
    }
}

/// The change-wide sums read each file as `check` does, `--var-file` values included: a
/// Terraform pool whose size and count come from a var file counts toward the quota the
/// other files are judged against.
#[test]
fn quota_sums_apply_the_var_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let quota = fixtures().join("context/quota");
    for f in [
        "a.bicep",
        "computeguard.yaml",
        "eastus-skus.json",
        "eastus-usage.json",
    ] {
        std::fs::copy(quota.join(f), dir.path().join(f)).expect("copy");
    }
    std::fs::create_dir(dir.path().join("tf")).expect("mkdir");
    std::fs::write(
        dir.path().join("tf/main.tf"),
        r#"variable "size" { type = string }
variable "nodes" { type = number }
resource "azurerm_kubernetes_cluster" "c" {
  name     = "aks-c"
  location = "eastus"
  default_node_pool {
    name       = "gpuc"
    vm_size    = var.size
    node_count = var.nodes
  }
}
"#,
    )
    .expect("tf");
    std::fs::write(
        dir.path().join("prod.tfvars"),
        "size = \"Standard_NV6\"\nnodes = 3\n",
    )
    .expect("tfvars");
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--var-file",
            "prod.tfvars",
            "a.bicep",
            "tf/main.tf",
        ],
    )
    .expect("run");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let messages: Vec<(String, String)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "quota-sufficient")
        .map(|f| {
            (
                f["file"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?} {}", stderr(&out));
    for (file, m) in &messages {
        assert!(
            m.contains("this change needs 36 vCPUs of family standardNVFamily in eastus (18 in this document)"),
            "{file}: {m}"
        );
    }
}

/// Azure ML's own quota named in `computeguard.yaml` (`azure.mlUsage`): an Azure ML
/// cluster over its family's free quota is a warning naming Azure ML's entry and the
/// numbers; two clusters that fit alone are judged together against Azure ML's regional
/// total.
#[test]
fn azure_ml_quota_from_ml_usage_in_the_config() {
    let dir = fixtures().join("context/ml");
    let quota = |files: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["check", "--format", "json"];
        args.extend_from_slice(files);
        let out = run_in(&dir, &args).expect("run");
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == "quota-sufficient")
            .map(|f| {
                (
                    f["severity"].as_str().unwrap_or_default().to_string(),
                    f["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        quota(&["over.yml"]),
        vec![(
            "warning".to_string(),
            "Azure ML compute cluster nv-over uses Standard_NV6: this document needs 30 vCPUs of \
             Azure ML quota \"Standard NV Family Cluster Dedicated vCPUs\" in eastus, and 24 are \
             free (limit 24, 0 in use); 30 vCPUs in all, and 10 of Azure ML's regional total are \
             free (limit 24); request more Azure ML quota on the Quotas page of Azure Machine \
             Learning studio (https://learn.microsoft.com/azure/machine-learning/how-to-manage-quotas)"
                .to_string()
        )]
    );
    assert_eq!(quota(&["a.yml"]), Vec::new(), "6 of 10 free fits");
    let both = quota(&["a.yml", "b.yml"]);
    assert_eq!(both.len(), 2, "{both:?}");
    for (severity, m) in &both {
        assert_eq!(severity, "warning");
        assert!(
            m.contains(
                "this change needs 12 vCPUs in eastus in all, and 10 of Azure ML's regional vCPU \
                 total are free (limit 24)"
            ),
            "{m}"
        );
    }
    // A compute usage list given as Azure ML's is refused by shape, naming file and line.
    let bad = scratch("azure:\n  mlUsage:\n    eastus: usage.json\n");
    std::fs::copy(
        fixtures().join("context/quota/eastus-usage.json"),
        bad.path().join("usage.json"),
    )
    .expect("copy");
    let out = run_in(bad.path(), &["check", "pools.bicep"]).expect("run");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("usage.json:") && stderr(&out).contains("Azure ML usage list"),
        "{}",
        stderr(&out)
    );
}
