//! Suppressions: inline comments per format, config `ignore:` by path and JSON
//! pointer, the `suppression-missing-reason` warning and `--show-suppressed`.

use crate::*;
use serde_json::Value;

fn rules_of(report: &Value) -> Vec<(String, u64, bool)> {
    report["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["rule"].as_str().unwrap_or_default().to_string(),
                        f["line"].as_u64().unwrap_or_default(),
                        f["suppressed"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn owned(list: &[(&str, u64, bool)]) -> Vec<(String, u64, bool)> {
    list.iter()
        .map(|(r, l, s)| (r.to_string(), *l, *s))
        .collect()
}

#[test]
fn inline_yaml_suppression_and_show_suppressed() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let text = RETIRED_CLUSTER.replace(
        "size: Standard_NC6\n",
        "# computeguard:ignore sku-retired replaced by the Q3 migration\nsize: Standard_NC6\n",
    );
    std::fs::write(dir.path().join("cluster.yml"), text)?;
    let (code, report) = check_json_in(dir.path(), &["cluster.yml"])?;
    assert_eq!(code, 0, "the error is suppressed: {report:#}");
    assert_eq!(rules_of(&report), owned(&[("min-nodes-zero", 6, false)]));
    assert_eq!(report["summary"]["suppressed"], 1);

    let (code, report) = check_json_in(dir.path(), &["cluster.yml", "--show-suppressed"])?;
    assert_eq!(code, 0, "shown, still not counted");
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 5, true), ("min-nodes-zero", 6, false)])
    );
    assert_eq!(
        report["findings"][0]["suppression"],
        serde_json::json!({"kind": "inline", "reason": "replaced by the Q3 migration"})
    );
    assert!(report["findings"][1].get("suppressed").is_none());

    let out = run_in(dir.path(), &["check", "--show-suppressed", "cluster.yml"])?;
    let text = stdout(&out);
    assert!(text.contains("error[sku-retired] (suppressed): "), "{text}");
    assert!(
        text.contains("= suppressed by an inline comment: replaced by the Q3 migration"),
        "{text}"
    );
    Ok(())
}

#[test]
fn suppression_without_reason_is_a_warning_and_suppresses_nothing()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let text = RETIRED_CLUSTER.replace(
        "min_instances: 2\n",
        "min_instances: 2 # computeguard:ignore min-nodes-zero\n",
    );
    std::fs::write(dir.path().join("cluster.yml"), text)?;
    let (_, report) = check_json_in(dir.path(), &["cluster.yml"])?;
    assert_eq!(
        rules_of(&report),
        owned(&[
            ("sku-retired", 4, false),
            ("min-nodes-zero", 5, false),
            ("suppression-missing-reason", 5, false),
        ])
    );
    let f = &report["findings"][2];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["column"], 18);
    assert!(
        f["message"]
            .as_str()
            .unwrap_or_default()
            .contains("suppression of `min-nodes-zero` gives no reason"),
        "{f}"
    );
    // It can be turned off like any rule, without "unknown rule".
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "rules:\n  suppression-missing-reason: off\n",
    )?;
    let (code, report) = check_json_in(dir.path(), &["cluster.yml"])?;
    assert_eq!(code, 1);
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 4, false), ("min-nodes-zero", 5, false)])
    );
    Ok(())
}

#[test]
fn json_files_are_suppressed_by_config_pointer() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("arm"))?;
    std::fs::write(
        dir.path().join("arm/cluster.json"),
        "{\n  \"$schema\": \"https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\",\n  \"name\": \"gpu-cluster\",\n  \"type\": \"amlcompute\",\n  \"size\": \"Standard_NC6\",\n  \"min_instances\": 2\n}\n",
    )?;
    let (_, report) = check_json_in(dir.path(), &["arm"])?;
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 5, false), ("min-nodes-zero", 6, false)])
    );
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "ignore:\n  - rule: min-nodes-zero\n    paths: [\"arm/*.json\"]\n    pointer: /min_instances\n    reason: warm pool for the nightly SLA\n  - rule: sku-retired\n    paths: [\"arm/*.json\"]\n    pointer: /resources/0\n    reason: points elsewhere, so it does not apply\n",
    )?;
    let (code, report) = check_json_in(dir.path(), &["arm", "--show-suppressed"])?;
    assert_eq!(code, 1, "sku-retired is still an error");
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 5, false), ("min-nodes-zero", 6, true)])
    );
    assert_eq!(report["findings"][1]["suppression"]["kind"], "config");
    assert_eq!(report["summary"]["suppressed"], 1);
    Ok(())
}

#[test]
fn suppressed_findings_are_marked_in_sarif_junit_and_github()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let text = RETIRED_CLUSTER.replace(
        "min_instances: 2\n",
        "min_instances: 2 # computeguard:ignore min-nodes-zero warm pool\n",
    );
    std::fs::write(dir.path().join("cluster.yml"), text)?;
    let args = |f: &'static str| {
        vec![
            "check",
            "--as-of",
            "2026-11-22",
            "--show-suppressed",
            "--format",
            f,
            "cluster.yml",
        ]
    };
    let sarif: Value = serde_json::from_slice(&run_in(dir.path(), &args("sarif"))?.stdout)?;
    let results = sarif["runs"][0]["results"].as_array().ok_or("results")?;
    let suppressed: Vec<&Value> = results
        .iter()
        .filter(|r| r.get("suppressions").is_some())
        .collect();
    assert_eq!(suppressed.len(), 1);
    assert_eq!(suppressed[0]["ruleId"], "min-nodes-zero");
    assert_eq!(
        suppressed[0]["suppressions"],
        serde_json::json!([{"kind": "inSource", "status": "accepted", "justification": "warm pool"}])
    );

    let xml = stdout(&run_in(dir.path(), &args("junit"))?);
    let doc = roxmltree::Document::parse(&xml)?;
    // The suite `computeguard` holds the rules not evaluated (no `azure:` facts).
    let skipped: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .filter(|n| {
            n.ancestors()
                .find(|a| a.has_tag_name("testsuite"))
                .and_then(|s| s.attribute("name"))
                != Some("computeguard")
        })
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0].attribute("message"),
        Some("suppressed: warm pool")
    );
    assert_eq!(doc.root_element().attribute("skipped"), Some("3"));

    let gh = stdout(&run_in(dir.path(), &args("github"))?);
    let line = gh
        .lines()
        .find(|l| l.contains("min-nodes-zero"))
        .ok_or("github line")?;
    assert!(line.starts_with("::notice "), "{line}");
    assert!(
        line.contains("title=computeguard min-nodes-zero (suppressed)::"),
        "{line}"
    );
    assert!(line.ends_with("(suppressed: warm pool)"), "{line}");
    Ok(())
}

const TF_CLUSTER: &str = r#"resource "azurerm_machine_learning_compute_cluster" "gpu" {
  name                          = "gpu-cluster"
  location                      = "eastus"
  machine_learning_workspace_id = "x"
  vm_size                       = "Standard_NC6"
  vm_priority                   = "Dedicated"
  scale_settings {
    min_node_count                       = 2
    max_node_count                       = 4
    scale_down_nodes_after_idle_duration = "PT30S"
  }
}
"#;

const BICEP_CLUSTER: &str =
    "resource cluster 'Microsoft.MachineLearningServices/workspaces/computes@2024-04-01' = {
  name: 'ws/gpu-cluster'
  location: 'eastus'
  properties: {
    computeType: 'AmlCompute'
    properties: {
      vmSize: 'Standard_NC6'
      scaleSettings: {
        minNodeCount: 2
        maxNodeCount: 4
      }
    }
  }
}
";

#[test]
fn terraform_and_bicep_use_their_own_comment_syntax() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let tf = TF_CLUSTER
        .replace(
            "  vm_size ",
            "  # computeguard:ignore sku-retired replaced in Q3\n  vm_size ",
        )
        .replace(
            "= 2\n",
            "= 2 // computeguard:ignore min-nodes-zero warm pool\n",
        );
    std::fs::write(dir.path().join("main.tf"), tf)?;
    let (code, report) = check_json_in(dir.path(), &["main.tf", "--show-suppressed"])?;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 6, true), ("min-nodes-zero", 9, true)])
    );

    // Bicep line comments are `//`; a block comment is not a suppression.
    let bicep = BICEP_CLUSTER
        .replace(
            "      vmSize",
            "      // computeguard:ignore sku-retired replaced in Q3\n      vmSize",
        )
        .replace(
            "        minNodeCount: 2\n",
            "        minNodeCount: 2 /* computeguard:ignore min-nodes-zero warm pool */\n",
        );
    std::fs::write(dir.path().join("main.bicep"), &bicep)?;
    let (_, report) = check_json_in(dir.path(), &["main.bicep", "--show-suppressed"])?;
    assert_eq!(
        rules_of(&report),
        owned(&[("sku-retired", 8, true), ("min-nodes-zero", 10, false)]),
        "{report:#}"
    );
    Ok(())
}
