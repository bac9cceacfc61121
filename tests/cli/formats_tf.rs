//! Terraform: `.tf` (HCL), `.tf.json` and `terraform show -json` plans. Findings land on the
//! exact line of the attribute that causes them, `var.x` resolves from the module folder's
//! defaults and auto-loaded `.tfvars`, and what is only known at plan time gives no finding.
//! What Terraform itself resolves is resolved too (issue 37): locals, object attributes,
//! resources of the other files of the folder, `for_each`/`count` instances, and `.tfvars`
//! files named on the command line.

use crate::*;

#[test]
fn corpus_module_resolves_the_sku_from_a_sibling_variables_file() {
    let (code, report) = check_json(&["tests/fixtures/terraform/aks-gpu"]);
    assert_eq!(code, 1, "{report:#}");
    // `vm_size = var.gpu_vm_size` (line 119); the default Standard_NC6s_v3 is in variables.tf.
    // The system pool (Standard_D2s_v3, written literally) and the GPU pool's min_count
    // (var.gpu_min_count = 0) are fine.
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "terraform/aks-gpu/main.tf", 119)])
    );
    let finding = &report["findings"][0];
    assert_eq!(
        finding["path"],
        "/resource/azurerm_kubernetes_cluster_node_pool/gpu/vm_size"
    );
    assert!(
        finding["message"]
            .as_str()
            .is_some_and(|m| m.contains("gpu uses Standard_NC6s_v3, retired on 2025-09-30")),
        "{finding:#}"
    );
    // variables.tf declares no compute: skipped, listed with the reason under --verbose.
    assert_eq!(report["summary"]["skippedFiles"], 1, "{report:#}");
}

#[test]
fn tfvars_override_defaults_and_unresolved_values_give_no_finding() {
    let (code, report) = check_json(&["tests/fixtures/terraform/aml"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            // location "westus2" vs the workspace's azurerm_resource_group.ml.location =
            // var.location = "East US".
            ("region-colocated", "terraform/aml/main.tf", 18),
            // min_node_count = var.min_nodes: 2 from terraform.tfvars, not the default 0
            // and not prod.tfvars' 5 (only applied with -var-file).
            ("min-nodes-zero", "terraform/aml/main.tf", 24),
            ("sku-retired", "terraform/aml/main.tf", 47),
        ])
    );
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(
        messages[1].contains("train keeps 2 idle node(s) of Standard_ND96asr_v4"),
        "the SKU comes from terraform.tfvars: {messages:?}"
    );
    assert!(
        messages[0].contains("away from its workspace ws in eastus"),
        "{messages:?}"
    );
    // `computed` (vm_size = local.gpu_size, min_node_count = lookup(...)) and the SKU named
    // in a comment give nothing.
    assert!(
        !report["findings"].to_string().contains("computed"),
        "no finding may be guessed for unresolved values: {report:#}"
    );
    // ... but the blind spot is listed: which field, which expression, where (issue 28).
    let unresolved: Vec<(String, String, u64)> = report["unresolved"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["resource"]["name"] == "computed")
        .map(|u| {
            (
                u["field"].as_str().unwrap_or_default().to_string(),
                u["expression"].as_str().unwrap_or_default().to_string(),
                u["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        unresolved.contains(&("sku".into(), "${local.gpu_size}".into(), 35)),
        "{unresolved:?}"
    );
    assert_eq!(report["summary"]["unresolved"], unresolved_count(&report));
    assert!(
        !messages
            .iter()
            .any(|m| m.contains("Standard_NC6 ") && m.contains("train"))
    );
}

#[test]
fn tf_json_resolves_variables_in_the_json_syntax() {
    let (_, report) = check_json(&["tests/fixtures/terraform/json"]);
    assert_eq!(
        findings(&report),
        triples(&[
            ("gpu-workload-scheduling", "terraform/json/main.tf.json", 9),
            ("min-nodes-zero", "terraform/json/main.tf.json", 11),
        ])
    );
    assert!(
        report["findings"][1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("of Standard_NC24ads_A100_v4")),
        "{report:#}"
    );
}

#[test]
fn plan_json_findings_point_into_planned_values_including_child_modules() {
    let (code, report) = check_json(&["tests/fixtures/terraform/plan/tfplan.json"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            ("sku-retired", "terraform/plan/tfplan.json", 31),
            ("min-nodes-zero", "terraform/plan/tfplan.json", 35),
            ("windows-gpu-k8s-version", "terraform/plan/tfplan.json", 77),
            ("min-nodes-zero", "terraform/plan/tfplan.json", 80),
        ])
    );
    assert_eq!(
        report["findings"][2]["path"],
        "/planned_values/root_module/child_modules/0/resources/1/values/orchestrator_version"
    );
    assert_eq!(report["findings"][2]["resource"]["name"], "module.aks.win");
}

#[test]
fn malformed_hcl_is_an_error_with_file_line_and_expectation() {
    let (code, report) = check_json(&["tests/fixtures/terraform/invalid/broken.tf"]);
    assert_eq!(code, 2, "{report:#}");
    let error = &report["errors"][0];
    assert_eq!(error["file"], "tests/fixtures/terraform/invalid/broken.tf");
    assert_eq!(error["line"], 4);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("invalid HCL at line 4, column 1: invalid expression; expected"),
        "{message}"
    );
}

#[test]
fn verbose_lists_skipped_terraform_files_with_the_reason() {
    let quiet = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/terraform/aml",
    ]);
    assert!(
        !stdout(&quiet).contains("skipped tests/fixtures"),
        "{}",
        stdout(&quiet)
    );
    let out = run(&[
        "check",
        "--verbose",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/terraform/aml",
    ]);
    let text = stdout(&out);
    for line in [
        // A non-auto tfvars file is not applied unless given with --var-file (issue 28:
        // it used to be said to be applied).
        "skipped tests/fixtures/terraform/aml/prod.tfvars: Terraform variable values that Terraform loads only with `-var-file`: not applied; name the file on the command line (or pass `--var-file FILE`) to apply them",
        "skipped tests/fixtures/terraform/aml/terraform.tfvars: Terraform variable values",
        "skipped tests/fixtures/terraform/aml/variables.tf: no compute resources recognised",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
}

const FOLDER: &str = "tests/fixtures/terraform/folder";

#[test]
fn a_folder_is_one_module_with_its_locals_objects_and_for_each_instances_resolved() {
    let (code, report) = check_json(&[FOLDER]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            // vm_size = each.value.vm_size over var.gpu_pools' default: the v100 instance.
            ("sku-retired", "terraform/folder/aks.tf", 18),
            // The workspace's location = azurerm_resource_group.rg.location, declared in
            // rg.tf with var.location = "westeurope".
            ("region-colocated", "terraform/folder/aml.tf", 9),
            // vm_size = local.train_size, a local of rg.tf.
            ("sku-retired", "terraform/folder/aml.tf", 11),
            // count = 2, virtual_machine_size = var.dev_box.vm_size: one finding per instance.
            ("sku-retired", "terraform/folder/aml.tf", 25),
            ("sku-retired", "terraform/folder/aml.tf", 25),
        ])
    );
    let names: Vec<&str> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["resource"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [r#"gpu["v100"]"#, "train", "train", "dev[0]", "dev[1]"],
        "{report:#}"
    );
    assert!(
        report["findings"][1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("away from its workspace ws in westeurope")),
        "{report:#}"
    );
    // The cluster, its default pool, the two gpu instances, inference, train, dev[0], dev[1].
    assert_eq!(report["summary"]["resources"], 8, "{report:#}");
    // The one value no file gives stays a blind spot, with how to give it.
    let unresolved = &report["unresolved"];
    assert_eq!(unresolved.as_array().map(Vec::len), Some(1), "{report:#}");
    assert_eq!(unresolved[0]["expression"], "${var.inference_vm_size}");
    assert_eq!(unresolved[0]["line"], 28);
    let text = stdout(&run(&["check", "--as-of", "2026-11-22", FOLDER]));
    assert!(
        text.contains("unresolved: azurerm_kubernetes_cluster_node_pool inference: `sku` is `${var.inference_vm_size}`, known only at deploy time, so no rule judged it; give `var.inference_vm_size` a value in a .tfvars file named on the command line or with `--var-file`, in terraform.tfvars or *.auto.tfvars beside the .tf files, or as its `default`"),
        "{text}"
    );
}

#[test]
fn a_tfvars_named_on_the_command_line_is_a_var_file_and_undeclared_names_are_warned()
-> Result<(), Box<dyn std::error::Error>> {
    let prod = format!("{FOLDER}/prod.tfvars");
    let dir = tempfile::tempdir()?;
    let staging = dir.path().join("staging.tfvars");
    std::fs::write(
        &staging,
        "inference_vm_size = \"Standard_NC24ads_A100_v4\"\n",
    )?;
    let staging = staging.display().to_string();
    // After the --var-file, as Terraform applies -var-file: prod.tfvars wins.
    let out = run(&[
        "check",
        "--format",
        "json",
        "--as-of",
        "2026-11-22",
        "--var-file",
        &staging,
        FOLDER,
        &prod,
    ]);
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert!(
        findings(&report).contains(&("sku-retired".into(), "terraform/folder/aks.tf".into(), 28)),
        "inference = Standard_NC6 from prod.tfvars: {report:#}"
    );
    assert_eq!(report["unresolved"], serde_json::json!([]), "{report:#}");
    // A misspelt name is not applied, and said with its file and line (as Terraform warns).
    assert!(
        stderr(&out).contains(&format!("warning: {prod}:3: value for undeclared variable `locaton`: no Terraform folder checked declares it, so the value is not applied (did you mean `location`?)")),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("inference_vm_size"),
        "{}",
        stderr(&out)
    );
    let out = run(&["check", "-v", "--as-of", "2026-11-22", FOLDER, &prod]);
    assert!(
        stdout(&out).contains(&format!("skipped {prod}: Terraform variable values: a var file (named on the command line or with `--var-file`)")),
        "{}",
        stdout(&out)
    );
    // An auto-loaded file of the folder is checked against the folder's declarations.
    std::fs::write(
        dir.path().join("main.tf"),
        "variable \"gpu_size\" {}\nresource \"azurerm_machine_learning_compute_instance\" \"dev\" {\n  virtual_machine_size = var.gpu_size\n}\n",
    )?;
    std::fs::write(
        dir.path().join("terraform.tfvars"),
        "\ngpu_sise = \"Standard_NC6\"\n",
    )?;
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        &dir.path().display().to_string(),
    ]);
    let expected = format!(
        "warning: {}:2: value for undeclared variable `gpu_sise`: its folder declares no such variable, so the value is not applied (did you mean `gpu_size`?)",
        dir.path().join("terraform.tfvars").display()
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    Ok(())
}

#[test]
fn module_instances_are_checked_and_a_value_passed_down_is_listed_at_the_root_variable()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let write = |rel: &str, text: &str| -> std::io::Result<()> {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)
    };
    write(
        "root/main.tf",
        r#"variable "pools" {
  default = { a = { vm_size = "Standard_NC6" }, b = { vm_size = "Standard_NC24ads_A100_v4" } }
}
variable "root_size" {}

module "pool" {
  source   = "../box"
  for_each = var.pools
  size     = each.value.vm_size
}

module "outer" {
  source = "../outer"
  size   = var.root_size
}
"#,
    )?;
    write(
        "outer/main.tf",
        "variable \"size\" {}\nmodule \"inner\" {\n  source = \"../box\"\n  size   = var.size\n}\n",
    )?;
    write(
        "box/main.tf",
        "variable \"size\" {}\nresource \"azurerm_machine_learning_compute_instance\" \"dev\" {\n  virtual_machine_size = var.size\n}\n",
    )?;
    let root = dir.path().join("root").display().to_string();
    let (code, report) = check_json(&[&root]);
    assert_eq!(code, 1, "{report:#}");
    let retired: Vec<(&str, u64)> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["ruleId"] == "sku-retired" || f["rule"] == "sku-retired")
        .filter_map(|f| Some((f["resource"]["name"].as_str()?, f["line"].as_u64()?)))
        .collect();
    assert_eq!(
        retired,
        [(
            r#"module.pool["a"].azurerm_machine_learning_compute_instance.dev"#,
            3
        )],
        "{report:#}"
    );
    let unresolved = &report["unresolved"];
    assert_eq!(unresolved.as_array().map(Vec::len), Some(1), "{report:#}");
    let u = &unresolved[0];
    assert_eq!(u["file"], format!("{root}/main.tf"));
    assert_eq!(u["line"], 14);
    assert_eq!(u["expression"], "${var.root_size}");
    assert_eq!(
        u["resource"]["name"],
        "module.outer.module.inner.azurerm_machine_learning_compute_instance.dev"
    );
    assert_eq!(
        u["display"],
        "Azure ML compute instance dev of module.outer.module.inner (its `var.size`)"
    );
    Ok(())
}

fn unresolved_count(report: &serde_json::Value) -> serde_json::Value {
    serde_json::Value::from(report["unresolved"].as_array().map_or(0, Vec::len))
}
