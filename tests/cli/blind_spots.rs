//! What `check` cannot judge is said, never passed in silence (issue 28): facts left to
//! deploy time (Terraform variables and ARM/Bicep parameters without a value, modules it
//! cannot follow), local Terraform modules followed with the call's arguments, `--var-file`,
//! a check of nothing, and a typo in an inline suppression.

use crate::*;

const MODULES: &str = "tests/fixtures/terraform/modules";

fn unresolved(report: &Value) -> Vec<(String, String, String, u64)> {
    report["unresolved"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| {
            (
                u["resource"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                u["field"].as_str().unwrap_or_default().to_string(),
                u["file"]
                    .as_str()
                    .unwrap_or_default()
                    .replace("tests/fixtures/", ""),
                u["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_size_set_outside_the_folder_is_an_unresolved_fact_not_a_silent_pass() {
    let (status, report) = check_json(&[MODULES]);
    assert_eq!(status, 0, "no finding: {report:#}");
    assert_eq!(
        unresolved(&report),
        vec![
            // The module's `vm_size = var.vm_size` takes the call's
            // `vm_size = var.user_node_pool_vm_size`: the entry points at the root variable
            // the user must set (issue 37), and names the module path.
            (
                "module.node_pool.azurerm_kubernetes_cluster_node_pool.node_pool".into(),
                "sku".into(),
                "terraform/modules/main.tf".into(),
                22
            ),
            (
                "module.log_analytics".into(),
                "module".into(),
                "terraform/modules/main.tf".into(),
                29
            ),
        ]
    );
    let pool = &report["unresolved"][0];
    assert_eq!(pool["expression"], "${var.user_node_pool_vm_size}");
    assert_eq!(pool["path"], "/module/node_pool/vm_size");
    assert_eq!(report["summary"]["unresolved"], 2);
    // The text summary says it, and --fail-on-unresolved makes it an exit 2.
    let out = run(&["check", "--as-of", "2026-11-22", MODULES]);
    let text = stdout(&out);
    assert!(
        text.contains("unresolved: azurerm_kubernetes_cluster_node_pool node_pool of module.node_pool (its `var.vm_size`): `sku` is `${var.user_node_pool_vm_size}`, known only at deploy time, so no rule judged it; give `var.user_node_pool_vm_size` a value in a .tfvars file named on the command line or with `--var-file`"),
        "{text}"
    );
    assert!(
        text.contains("; 2 facts unresolved (listed above)"),
        "{text}"
    );
    let out = run(&["check", "--fail-on-unresolved", MODULES]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`--fail-on-unresolved` is set"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_local_module_is_followed_with_the_calls_arguments_and_var_files_in_terraforms_order() {
    let prod = format!("{MODULES}/prod.tfvars");
    let (status, report) = check_json(&["--var-file", &prod, MODULES]);
    assert_eq!(status, 1, "{report:#}");
    // Located in the module's file, named by the module path; min_count 2 comes from
    // the root's terraform.tfvars through the call.
    assert_eq!(
        findings(&report),
        triples(&[
            (
                "sku-retired",
                "terraform/modules/modules/node_pool/main.tf",
                4
            ),
            (
                "min-nodes-zero",
                "terraform/modules/modules/node_pool/main.tf",
                6
            ),
        ])
    );
    for f in report["findings"].as_array().into_iter().flatten() {
        assert_eq!(
            f["resource"]["name"],
            "module.node_pool.azurerm_kubernetes_cluster_node_pool.node_pool"
        );
    }
    // The module's folder is not checked alone (its variables would all be unresolved).
    let out = run(&["check", "-v", "--var-file", &prod, MODULES]);
    assert!(
        stdout(&out).contains("skipped tests/fixtures/terraform/modules/modules/node_pool/main.tf: Terraform module called by tests/fixtures/terraform/modules/main.tf (module.node_pool)"),
        "{}",
        stdout(&out)
    );
    // A later --var-file wins over an earlier one and over terraform.tfvars.
    let staging = format!("{MODULES}/staging.tfvars");
    let (status, report) = check_json(&["--var-file", &prod, "--var-file", &staging, MODULES]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(findings(&report), vec![]);
    // A var file that does not parse names itself, its line and column.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.tfvars");
    std::fs::write(&bad, "x = \n").expect("write");
    let out = run(&["check", "--var-file", &bad.display().to_string(), MODULES]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("bad.tfvars:1:5: invalid hcl"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unresolved_facts_are_notes_in_sarif_skips_in_policy_reports_and_notices_on_github() {
    let sarif = run(&["check", "--format", "sarif", MODULES]);
    let v: Value = serde_json::from_slice(&sarif.stdout).expect("sarif");
    let notes: Vec<&Value> = v["runs"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["ruleId"] == "unresolved")
        .collect();
    assert_eq!(notes.len(), 2, "{v:#}");
    assert!(notes.iter().all(|n| n["level"] == "note"));
    let pr = run(&["check", "--format", "policyreport", MODULES]);
    let v: Value = serde_json::from_slice(&pr.stdout).expect("policy report");
    let skips = v.to_string().matches(r#""rule":"unresolved""#).count();
    assert_eq!(skips, 2, "{v:#}");
    assert!(v.to_string().contains(r#""result":"skip""#));
    let gh = run(&["check", "--format", "github", MODULES]);
    assert!(
        stdout(&gh).contains(
            "::notice file=tests/fixtures/terraform/modules/main.tf,line=22,title=computeguard unresolved::"
        ),
        "{}",
        stdout(&gh)
    );
}

#[test]
fn an_arm_parameter_without_a_value_is_unresolved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("compute.json");
    std::fs::write(
        &file,
        r#"{
  "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
  "contentVersion": "1.0.0.0",
  "parameters": {
    "vmSize": {"type": "string"}
  },
  "resources": [
    {
      "type": "Microsoft.MachineLearningServices/workspaces/computes",
      "apiVersion": "2024-04-01",
      "name": "ws/gpu",
      "location": "eastus",
      "properties": {
        "computeType": "AmlCompute",
        "properties": {
          "vmSize": "[parameters('vmSize')]",
          "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 2}
        }
      }
    }
  ]
}
"#,
    )
    .expect("write");
    let (status, report) = check_json(&[&file.display().to_string()]);
    assert_eq!(status, 0, "{report:#}");
    let u = &report["unresolved"][0];
    assert_eq!(u["field"], "sku", "{report:#}");
    assert_eq!(u["expression"], "[parameters('vmSize')]");
    assert_eq!(u["line"], 16);
}

#[test]
fn checking_nothing_is_a_warning_and_an_error_with_fail_on_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(&["check", &dir.path().display().to_string()]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("warning: nothing was checked"),
        "{}",
        stdout(&out)
    );
    let out = run(&[
        "check",
        "--fail-on-skipped",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("nothing was checked"),
        "{}",
        stderr(&out)
    );
    // A folder with only files computeguard does not read is nothing too.
    std::fs::write(dir.path().join("README.md"), "# infra\n").expect("write");
    let out = run(&[
        "check",
        "--fail-on-skipped",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
}

#[test]
fn a_typo_in_an_inline_suppression_is_an_error_at_its_line_with_the_closest_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cluster.yml");
    std::fs::write(
        &file,
        RETIRED_CLUSTER.replace(
            "min_instances: 2",
            "min_instances: 2 # computeguard:ignore min-nodes-zeros warm pool for the nightly SLA",
        ),
    )
    .expect("write");
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        &file.display().to_string(),
    ]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("error: `computeguard:ignore`: unknown rule `min-nodes-zeros` (did you mean `min-nodes-zero`?); known rules: min-nodes-zero, "),
        "{text}"
    );
    assert!(text.contains("cluster.yml:5"), "{text}");
    // The finding it meant to silence is still reported.
    assert!(text.contains("warning[min-nodes-zero]"), "{text}");
}

#[test]
fn the_summary_names_the_configuration_used() {
    let out = run(&[
        "check",
        "--config",
        "examples/computeguard.yaml",
        "tests/fixtures/terraform/aks-gpu",
    ]);
    assert!(
        stdout(&out).contains("; config examples/computeguard.yaml"),
        "{}",
        stdout(&out)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("cluster.yml"), RETIRED_CLUSTER).expect("write");
    let out = run_in(dir.path(), &["check", "cluster.yml"]).expect("run");
    assert!(
        stdout(&out).contains("; no computeguard.yaml found, defaults apply"),
        "{}",
        stdout(&out)
    );
}

/// Issue 28: a finding on a minified line (one REST response on one line) printed the whole
/// line and thousands of carets; the excerpt is now cut around the value.
#[test]
fn a_finding_on_a_minified_line_shows_an_excerpt_around_the_value() {
    let text = std::fs::read_to_string(
        root().join("tests/fixtures/arm/fl-sandbox-eyeson-gpu-default-nc6.arm.json"),
    )
    .expect("fixture");
    let value: Value = serde_json::from_str(&text).expect("json");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("min.json");
    std::fs::write(&file, serde_json::to_string(&value).expect("json")).expect("write");
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        &file.display().to_string(),
    ]);
    let text = stdout(&out);
    assert!(text.contains("error[sku-retired]"), "{text}");
    // The code frame's lines (the messages are as long as they need to be).
    let longest = text
        .lines()
        .filter(|l| l.contains(" | "))
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    assert!(longest < 200, "a line of {longest} characters");
    assert!(
        text.contains("1 | …") && text.contains("\"vmSize\":\"[parameters('computeSKU')]\""),
        "{text}"
    );
}

/// A chain of local modules deeper than computeguard follows is an unresolved fact at the
/// call it stops at, not a silent end of the walk.
#[test]
fn modules_nested_deeper_than_followed_are_unresolved_not_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let depth = computeguard::scan::MAX_MODULE_DEPTH + 2;
    for level in 0..depth {
        let folder = (0..level).fold(dir.path().to_path_buf(), |p, _| p.join("m"));
        std::fs::create_dir_all(&folder).expect("folder");
        std::fs::write(
            folder.join("main.tf"),
            "module \"next\" {\n  source = \"./m\"\n}\n",
        )
        .expect("write");
    }
    let last = (0..depth).fold(dir.path().to_path_buf(), |p, _| p.join("m"));
    std::fs::create_dir_all(&last).expect("folder");
    std::fs::write(last.join("main.tf"), "variable \"x\" {}\n").expect("write");
    let (status, report) = check_json(&[&dir.path().join("main.tf").display().to_string()]);
    assert_eq!(status, 0, "{report:#}");
    let deep: Vec<&Value> = report["unresolved"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["field"] == "module-depth")
        .collect();
    assert_eq!(deep.len(), 1, "{report:#}");
    assert!(
        deep[0]["resource"]["name"].as_str().is_some_and(
            |n| n.matches("module.next").count() == computeguard::scan::MAX_MODULE_DEPTH + 1
        ),
        "{report:#}"
    );
}

/// The JUnit cases of `xml` whose name starts with `prefix`: (suite, case name, child tag
/// of the case: `failure`, `skipped` or `` for a pass).
fn junit_cases(xml: &str, prefix: &str) -> Vec<(String, String, String)> {
    let doc = roxmltree::Document::parse(xml).expect("junit parses");
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter(|c| c.attribute("name").is_some_and(|n| n.starts_with(prefix)))
        .map(|c| {
            let suite = c
                .parent()
                .and_then(|p| p.attribute("name"))
                .unwrap_or_default();
            let outcome = c
                .children()
                .find(|n| n.has_tag_name("failure") || n.has_tag_name("skipped"))
                .map(|n| n.tag_name().name().to_string())
                .unwrap_or_default();
            (
                suite.to_string(),
                c.attribute("name").unwrap_or_default().to_string(),
                outcome,
            )
        })
        .collect()
}

/// Issue 37: JUnit printed one passing case for a file whose size is unresolved, and
/// with `--fail-on-unresolved` exited 2 while the report showed a pass and standard
/// error said "(listed above)" with nothing listed.
#[test]
fn every_unresolved_fact_is_a_junit_case_skipped_or_failed_as_fail_on_unresolved_decides() {
    let (_, report) = check_json(&[MODULES]);
    let facts: Vec<(String, String)> = report["unresolved"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| {
            (
                u["file"].as_str().unwrap_or_default().to_string(),
                format!("unresolved at line {}: ", u["line"]),
            )
        })
        .collect();
    assert!(!facts.is_empty(), "{report:#}");
    for (flag, status, outcome) in [
        (None, 0, "skipped"),
        (Some("--fail-on-unresolved"), 2, "failure"),
    ] {
        let mut args = vec!["check", "--format", "junit", "--as-of", "2026-11-22"];
        args.extend(flag);
        args.push(MODULES);
        let out = run(&args);
        assert_eq!(code(&out), status, "{flag:?}: {}", stderr(&out));
        let xml = stdout(&out);
        let cases = junit_cases(&xml, "unresolved at line ");
        let got: Vec<(String, String)> = cases
            .iter()
            .map(|(suite, name, _)| {
                let head = name.split(": ").next().unwrap_or_default();
                (suite.clone(), format!("{head}: "))
            })
            .collect();
        assert_eq!(got, facts, "one case per fact, in its file's suite:\n{xml}");
        assert!(
            cases.iter().all(|(_, _, o)| o == outcome),
            "{flag:?}: every case is {outcome}:\n{xml}"
        );
        // No file with a blind spot is reported as a clean pass.
        for (file, _) in &facts {
            assert!(
                !junit_cases(&xml, "no findings")
                    .iter()
                    .any(|(s, _, _)| s == file),
                "{file} passes:\n{xml}"
            );
        }
        let doc = roxmltree::Document::parse(&xml).expect("junit");
        let failures: usize = doc
            .root_element()
            .attribute("failures")
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX);
        assert_eq!(failures, if flag.is_some() { facts.len() } else { 0 });
        // Standard error lists what made it fail, since the report may go to a file.
        if flag.is_some() {
            let err = stderr(&out);
            for u in report["unresolved"].as_array().into_iter().flatten() {
                let place = format!("({}:{})", u["file"].as_str().unwrap_or_default(), u["line"]);
                assert!(err.contains(&place), "{place} in:\n{err}");
            }
            assert!(err.contains("(listed above and in the report)"), "{err}");
        }
    }
}

/// Issue 37: "sku-available-in-region and quota-sufficient were not evaluated" went to
/// standard error only; every format now carries it, and a configuration that turns
/// the rules off drops it.
#[test]
fn rules_not_evaluated_are_said_in_every_format() -> Result<(), Box<dyn std::error::Error>> {
    const FILE: &str = "examples/azureml/gpu-cluster.yml";
    let wanted = ["sku-available-in-region", "quota-sufficient"];
    let (_, report) = check_json(&[FILE]);
    let rules: Vec<&str> = report["notEvaluated"]
        .as_array()
        .ok_or("notEvaluated")?
        .iter()
        .filter_map(|n| n["rule"].as_str())
        .collect();
    assert_eq!(rules, wanted, "{report:#}");
    assert_eq!(report["notEvaluated"][0]["needs"], "azure.skus");
    let format = |f: &str, extra: &[&str]| {
        let mut args = vec!["check", "--format", f, "--as-of", "2026-11-22"];
        args.extend_from_slice(extra);
        args.push(FILE);
        stdout(&run(&args))
    };
    let github = format("github", &[]);
    let sarif: Value = serde_json::from_str(&format("sarif", &[]))?;
    let notified: Vec<&str> = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .ok_or("notifications")?
        .iter()
        .filter_map(|n| n["associatedRule"]["id"].as_str())
        .collect();
    assert_eq!(notified, wanted);
    let validator = crate::formats_out::sarif_validator()?;
    assert_eq!(
        crate::formats_out::schema_errors(&validator, &sarif),
        Vec::<String>::new()
    );
    let reports: Value = serde_json::from_str(&format("policyreport", &[]))?;
    let skipped: Vec<&str> = reports["items"]
        .as_array()
        .ok_or("items")?
        .iter()
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .filter(|r| r["result"] == "skip" && r["properties"]["notEvaluated"] == "true")
        .filter_map(|r| r["rule"].as_str())
        .collect();
    assert_eq!(skipped, wanted);
    let html = format("html", &[]);
    let junit = format("junit", &[]);
    for rule in wanted {
        assert!(
            github.contains(&format!(
                "::notice title=computeguard {rule} not evaluated::"
            )),
            "{github}"
        );
        assert!(
            html.contains(&format!(
                "<code>{rule}</code></td><td>not evaluated: {rule} was not evaluated"
            )),
            "{rule} in the HTML blind spots"
        );
        assert!(
            junit_cases(&junit, &format!("{rule} not evaluated"))
                == vec![(
                    "computeguard".to_string(),
                    format!("{rule} not evaluated"),
                    "skipped".to_string()
                )],
            "{junit}"
        );
    }
    // Turned off, they are not a blind spot.
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(
        &config,
        "rules:\n  sku-available-in-region: off\n  quota-sufficient: off\n",
    )?;
    let (_, report) = check_json(&["--config", &config.display().to_string(), FILE]);
    assert_eq!(report["notEvaluated"], serde_json::json!([]), "{report:#}");
    let out = run(&[
        "check",
        "--format",
        "github",
        "--config",
        &config.display().to_string(),
        FILE,
    ]);
    assert!(!stdout(&out).contains("not evaluated"), "{}", stdout(&out));
    assert!(!stderr(&out).contains("not evaluated"), "{}", stderr(&out));
    Ok(())
}

/// Issue 37: "in 35 files (...); 1 not checked; 35 files skipped" read as if every file
/// read had been skipped. Each count now says what it counts, and they add up to the
/// JSON report's lists.
#[test]
fn the_summary_line_says_what_each_count_counts() {
    let (_, report) = check_json(&["examples/"]);
    let out = run(&["check", "--as-of", "2026-11-22", "examples/"]);
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("computeguard: "))
        .unwrap_or_default();
    let skipped = report["skipped"].as_array().cloned().unwrap_or_default();
    let files_of = |kind: &str| {
        skipped
            .iter()
            .filter(|s| s["kind"] == kind && s.get("line").is_none())
            .count()
    };
    let s = &report["summary"];
    assert!(
        line.contains(&format!(
            " in {} files read ({} documents, {} resources)",
            s["files"], s["documents"], s["resources"]
        )),
        "{line}"
    );
    let (none, other, unchecked) = (
        files_of("no-resources"),
        files_of("other-file"),
        files_of("unchecked"),
    );
    assert!(none > 0 && other > 0 && unchecked > 0, "{report:#}");
    assert!(
        line.contains(&format!(
            "; {unchecked} file{} not checked (listed above)",
            if unchecked == 1 { "" } else { "s" }
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "; skipped (--verbose lists them): {none} files with no compute resources, {other} files computeguard does not read;"
        )),
        "{line}"
    );
    // With --verbose they are listed above the line, one per skipped file.
    let out = run(&["check", "-v", "--as-of", "2026-11-22", "examples/"]);
    let text = stdout(&out);
    assert!(text.contains("; skipped (listed above): "), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("skipped ")).count(),
        none + other
    );
}
