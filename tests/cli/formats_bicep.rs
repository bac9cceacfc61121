//! Bicep modules and parameter files: a local module checked in its own file with what its
//! call passes, registry modules named as unresolved with what they receive, the AVM AKS
//! module read from its documented parameters, `.bicepparam` and `*.parameters.json` paired
//! by name or given with `--param-file`. Small fixtures in `tests/fixtures/bicep-modules`,
//! real deployments in `../shared/corpus/bicep-modules` (skipped when it is not there).

use crate::*;
use serde_json::Value;

const DIR: &str = "tests/fixtures/bicep-modules";

/// The real deployments with local modules and parameter files, if present.
fn corpus() -> Option<&'static str> {
    let dir = "../shared/corpus/bicep-modules";
    if root().join(dir).is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: {dir} not found");
        None
    }
}

fn list<'a>(report: &'a Value, key: &str) -> &'a [Value] {
    report[key].as_array().map_or(&[], Vec::as_slice)
}

/// (field, file without the fixtures prefix, line) of every unresolved fact.
fn unresolved(report: &Value) -> Vec<(String, String, u64)> {
    list(report, "unresolved")
        .iter()
        .map(|u| {
            (
                u["field"].as_str().unwrap_or_default().to_string(),
                u["file"]
                    .as_str()
                    .unwrap_or_default()
                    .replace("tests/fixtures/", "")
                    .replace("../shared/corpus/bicep-modules/", ""),
                u["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// The reason a file was skipped, by the end of its name.
fn skip_reason<'a>(report: &'a Value, file_end: &str) -> Option<(&'a str, &'a str)> {
    list(report, "skipped")
        .iter()
        .find(|s| s["file"].as_str().is_some_and(|f| f.ends_with(file_end)))
        .map(|s| {
            (
                s["kind"].as_str().unwrap_or_default(),
                s["reason"].as_str().unwrap_or_default(),
            )
        })
}

#[test]
fn a_module_that_deploys_a_retired_size_is_a_finding_in_the_module_file() {
    // Issue 37: this passed as "no compute resources recognised", exit 0, even with both
    // --fail-on flags.
    let main = format!("{DIR}/retired-module/main.bicep");
    let (code, report) = check_json(&["--fail-on-unresolved", "--fail-on-skipped", &main]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/retired-module/gpu.bicep", 15)])
    );
    let f = &report["findings"][0];
    assert!(
        f["message"]
            .as_str()
            .is_some_and(|m| m.contains("Standard_NC6")
                && m.ends_with(&format!("(deployed by module `gpu` at {main}:4)"))),
        "{f:#}"
    );
    assert_eq!(
        f["path"], "/resources/1/properties/properties/vmSize",
        "{f:#}"
    );
    assert!(list(&report, "skipped").is_empty(), "{report:#}");
    // Walking the folder: the module file is checked through its caller, not alone (where
    // its parameters would all be unresolved).
    let (code, report) = check_json(&[&format!("{DIR}/retired-module")]);
    assert_eq!(code, 1);
    assert_eq!(findings(&report).len(), 1, "{report:#}");
    let (kind, why) = skip_reason(&report, "retired-module/gpu.bicep").unwrap_or_default();
    assert_eq!(kind, "module");
    assert!(
        why.starts_with("Bicep module deployed by ") && why.contains("main.bicep (module gpu)"),
        "{why}"
    );
    assert_eq!(report["summary"]["unresolved"], 0);
}

#[test]
fn registry_modules_are_unresolved_with_what_they_receive() {
    let (code, report) = check_json(&[&format!("{DIR}/registry/main.bicep")]);
    assert_eq!(code, 1, "{report:#}");
    // The AVM AKS module is read from its documented parameters: its retired NCv3 pool is
    // a finding at the line of the call that states the size.
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/registry/main.bicep", 22)])
    );
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Standard_NC6s_v3")),
        "{report:#}"
    );
    assert_eq!(
        unresolved(&report),
        vec![
            // The AVM pool whose size is a parameter without a value.
            ("sku".into(), "bicep-modules/registry/main.bicep".into(), 28),
            (
                "registry-module".into(),
                "bicep-modules/registry/main.bicep".into(),
                35
            ),
            (
                "registry-module".into(),
                "bicep-modules/registry/main.bicep".into(),
                43
            ),
        ]
    );
    let facts = list(&report, "unresolved");
    assert_eq!(facts[0]["expression"], "[parameters('userSize')]");
    let pool = &facts[1];
    assert_eq!(
        pool["expression"],
        "br:contoso.azurecr.io/bicep/modules/gpu-pool:v1"
    );
    // What it receives, the size first, evaluated.
    assert!(
        pool["display"]
            .as_str()
            .is_some_and(|d| d.contains("receives vmSize = Standard_NC6; clusterName = gpu-aks")),
        "{pool:#}"
    );
    assert!(
        facts[2]["expression"]
            .as_str()
            .is_some_and(|e| e.starts_with("ts:")),
        "{:#}",
        facts[2]
    );
    // The text report says why the module is a blind spot; --fail-on-unresolved fails.
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--fail-on-unresolved",
        &format!("{DIR}/registry/main.bicep"),
    ]);
    assert_eq!(crate::code(&out), 2, "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "is a registry module or template spec, not read, so its resources are not checked"
        ),
        "{}",
        stdout(&out)
    );
    // A parameter without a value: the message says how to give it one.
    assert!(
        stdout(&out).contains(
            "`sku` is `[parameters('userSize')]`, known only at deploy time, so no rule judged it; give parameter `userSize` a value in a parameters file"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn parameter_files_pair_by_name_and_apply_when_given() {
    let dir = format!("{DIR}/params");
    let (code, report) = check_json(&[&dir]);
    assert_eq!(code, 1, "{report:#}");
    // pool.bicepparam (`using './pool.bicep'`, a size built from a `var`) and
    // vm.parameters.json apply to the templates named like them.
    assert_eq!(
        findings(&report),
        triples(&[
            ("sku-retired", "bicep-modules/params/pool.bicep", 12),
            ("sku-retired", "bicep-modules/params/vm.json", 15),
        ])
    );
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Standard_NC6s_v3")),
        "{report:#}"
    );
    assert_eq!(report["summary"]["unresolved"], 0, "{report:#}");
    // Parameter files are neither "not a YAML..." nor "no compute resources": each says
    // whether and where its values apply.
    for (file, says) in [
        ("pool.bicepparam", "applied when it is checked"),
        ("vm.parameters.json", "applied when it is checked"),
        (
            "prod.bicepparam",
            "not named after it: not applied; pass `--param-file",
        ),
        ("prod.parameters.json", "not applied; pass `--param-file"),
    ] {
        let (kind, why) = skip_reason(&report, file).unwrap_or_default();
        assert_eq!(kind, "variables", "{file}: {why}");
        assert!(why.contains(says), "{file}: {why}");
    }
    // Given: after the paired files and in order, so the last wins (the JSON file applies
    // to both templates, the `.bicepparam` to pool.bicep); a value known only at deploy
    // time (`readEnvironmentVariable`) leaves the parameter unresolved.
    let (code, report) = check_json(&[
        &dir,
        "--param-file",
        &format!("{dir}/prod.parameters.json"),
        "--param-file",
        &format!("{dir}/prod.bicepparam"),
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert!(findings(&report).is_empty(), "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![(
            "region".into(),
            "bicep-modules/params/pool.bicep".into(),
            20
        )]
    );
    let (_, why) = skip_reason(&report, "prod.parameters.json").unwrap_or_default();
    assert!(why.contains("applied with `--param-file`"), "{why}");
}

#[test]
fn a_parameter_file_named_on_the_command_line_applies_and_brings_its_template() {
    // `check prod.bicepparam` checks the template it is `using`, with its values.
    let (code, report) = check_json(&[&format!("{DIR}/params/prod.bicepparam")]);
    assert_eq!(code, 0, "{report:#}");
    // The pool and the workspace; the `existing` cluster is a reference, not deployed here.
    assert_eq!(report["summary"]["resources"], 2, "{report:#}");
    assert!(findings(&report).is_empty(), "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![(
            "region".into(),
            "bicep-modules/params/pool.bicep".into(),
            20
        )]
    );
    // A JSON parameters file named beside its template applies like --param-file.
    let (code, report) = check_json(&[
        &format!("{DIR}/params/vm.json"),
        &format!("{DIR}/params/prod.parameters.json"),
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert!(findings(&report).is_empty(), "{report:#}");
}

#[test]
fn a_param_file_that_is_not_one_is_refused() {
    let out = run(&[
        "check",
        &format!("{DIR}/params/vm.json"),
        "--param-file",
        &format!("{DIR}/params/vm.json"),
    ]);
    assert_eq!(crate::code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not a parameters file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn module_loops_expand_over_known_arrays() {
    let main = format!("{DIR}/loop/main.bicep");
    let (code, report) = check_json(&[&main]);
    assert_eq!(code, 1, "{report:#}");
    // Two instances over the `pools` variable; the second is retired.
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/loop/pool.bicep", 12)])
    );
    let f = &report["findings"][0];
    assert!(
        f["message"]
            .as_str()
            .is_some_and(|m| m.contains("pool old uses Standard_NC6")
                && m.contains(&format!("module `known[1]` at {main}:8"))),
        "{f:#}"
    );
    // A loop over a parameter without a value: checked once, its size unresolved at the
    // call's argument, which is where the value comes from.
    assert_eq!(
        unresolved(&report),
        vec![("sku".into(), "bicep-modules/loop/main.bicep".into(), 20)]
    );
    let fact = &report["unresolved"][0];
    assert_eq!(
        fact["expression"],
        "[parameters('extraPools')[copyIndex()].size]"
    );
    assert!(
        fact["display"].as_str().is_some_and(|d| d.contains(
            "(tests/fixtures/bicep-modules/loop/pool.bicep:12, deployed by module `open[*]` at"
        ) && d.ends_with("through its parameter `size`)")),
        "{fact:#}"
    );
}

#[test]
fn nested_modules_name_the_whole_call_chain() {
    let (code, report) = check_json(&[&format!("{DIR}/nested/main.bicep")]);
    assert_eq!(code, 1, "{report:#}");
    // main's default reaches the pool through two calls.
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/loop/pool.bicep", 12)])
    );
    assert!(
        report["findings"][0]["message"].as_str().is_some_and(|m| m.contains(
            "module `gpuPool` at tests/fixtures/bicep-modules/nested/modules/cluster.bicep:3, from module `cluster` at tests/fixtures/bicep-modules/nested/main.bicep:3"
        )),
        "{report:#}"
    );
}

#[test]
fn a_root_parameter_passed_down_is_unresolved_where_the_root_passes_it() {
    // Two calls deep; the user sets the root's `gpuSize`.
    let (code, report) = check_json(&[&format!("{DIR}/nested/open.bicep")]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![("sku".into(), "bicep-modules/nested/open.bicep".into(), 7)]
    );
    assert_eq!(
        report["unresolved"][0]["expression"],
        "[parameters('gpuSize')]"
    );
}

#[test]
fn real_jumpbox_deployment_takes_its_size_from_the_parameters_file() {
    let Some(corpus) = corpus() else { return };
    let dir = format!("{corpus}/aks-lza-03-hub-jumpbox");
    // Without the parameters file the VM's size is what the module call passes from a
    // root parameter without a value: unresolved at that argument of deploy-vm.bicep, the
    // parameter the user must set; the parameters file says how to give it.
    let (code, report) = check_json(&[&dir]);
    assert_eq!(code, 0, "{report:#}");
    let root = "aks-lza-03-hub-jumpbox/deploy-vm.bicep";
    assert_eq!(
        unresolved(&report),
        vec![
            ("region".into(), root.into(), 24),
            ("sku".into(), root.into(), 27)
        ]
    );
    let sku = &report["unresolved"][1];
    assert_eq!(sku["expression"], "[parameters('vmSize')]");
    assert!(
        sku["display"]
            .as_str()
            .is_some_and(|d| d
                .contains("modules/VM/virtualmachine.bicep:29, deployed by module `jumpbox` at ")),
        "{sku:#}"
    );
    let (kind, why) = skip_reason(&report, "parameters-deploy-vm.json").unwrap_or_default();
    assert_eq!(kind, "variables");
    assert!(why.contains("pass `--param-file"), "{why}");
    // With it: Standard_B2ms, no finding, only the deployment's location left open.
    let (code, report) = check_json(&[
        &dir,
        "--param-file",
        &format!("{dir}/parameters-deploy-vm.json"),
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![("region".into(), root.into(), 24)]
    );
    assert_eq!(report["summary"]["resources"], 1);
    // The NIC module deploys no compute: part of its caller, not a file "without compute".
    assert!(
        !list(&report, "skipped").iter().any(|s| s["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no compute"))),
        "{report:#}"
    );
}

/// The compute models `inspect` gives for `files` (a template and its parameters file): one
/// line per resource, `file-end kind name sku count min-max autoscale mode zones`, as the
/// corpus README states them.
fn models(files: &[&str]) -> Vec<String> {
    let mut args = vec!["inspect", "--format", "json"];
    args.extend_from_slice(files);
    let out = run(&args);
    assert_eq!(crate::code(&out), 0, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let text = |v: &Value| match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().unwrap_or("?").to_string())
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    };
    list.as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|r| {
            let m = &r["model"];
            format!(
                "{} {} {} {} {} {}-{} {} {} [{}]",
                r["file"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default(),
                text(&m["kind"]),
                text(&m["name"]),
                text(&m["sku"]),
                text(&m["instanceCount"]),
                text(&m["minNodes"]),
                text(&m["maxNodes"]),
                text(&m["autoscale"]),
                text(&m["poolMode"]),
                if m["zones"].is_null() {
                    String::new()
                } else {
                    text(&m["zones"])
                },
            )
        })
        .collect()
}

/// README entry A: `JustUseSystemPool: true` makes `agentPoolProfiles` (main.bicep L1183,
/// `JustUseSystemPool ? array(systemPoolBase) : concat(array(union(...)))`) one System pool
/// `userpool01` of Standard_B2s_v2, count 1, not autoscaled, with an empty-string taint; the
/// user-pool module is not deployed. This passed silently with no pool at all: the cluster's
/// `properties` (a `union()` of objects with deploy-time parts) was dropped whole.
#[test]
fn real_aks_construction_cheapest_cluster_is_one_b_series_system_pool() {
    let Some(corpus) = corpus() else { return };
    let main = format!("{corpus}/aks-construction/bicep/main.bicep");
    let params = format!("{corpus}/aks-construction/regressionparams/the-cheapest-cluster.json");
    assert_eq!(
        models(&[&main, &params]),
        vec![
            "main.bicep aks-cluster aks-az-cheaps - - --- - - []",
            "main.bicep aks-node-pool aks-az-cheaps/userpool01 Standard_B2s_v2 1 --- - system []",
        ]
    );
    let (code, report) = check_json(&[&main, "--param-file", &params]);
    assert_eq!(code, 1, "{report:#}");
    // AKS refuses a B-series system pool: found where the pool's size is written, in the
    // `systemPoolBase` variable (`vmSize: agentVMSize`).
    assert_eq!(
        findings(&report),
        vec![(
            "aks-sku-restricted".to_string(),
            format!("{corpus}/aks-construction/bicep/main.bicep"),
            1166
        )]
    );
    let f = &report["findings"][0];
    assert!(
        f["message"].as_str().is_some_and(
            |m| m.contains("aks-az-cheaps/userpool01 (system pool) uses Standard_B2s_v2")
        ),
        "{f:#}"
    );
    assert_eq!(f["path"], "/variables/systemPoolBase/vmSize", "{f:#}");
    assert_eq!(report["summary"]["resources"], 2, "{report:#}");
    assert_eq!(report["summary"]["documents"], 1, "{report:#}");
    // Only the location (`resourceGroup().location`) is left to deploy time; the pools are
    // read, and the registry modules' `if`s are false with these parameters.
    assert_eq!(
        unresolved(&report),
        vec![(
            "region".into(),
            "aks-construction/bicep/main.bicep".into(),
            1342
        )]
    );
    let model = run(&["inspect", "--format", "json", &main, &params]);
    let list: Value = serde_json::from_slice(&model.stdout).unwrap_or_default();
    let pool = &list[1]["model"];
    assert_eq!(pool["taints"], serde_json::json!([""]), "{pool:#}");
    assert_eq!(pool["kubernetesVersion"], "1.29.7", "{pool:#}");
    assert_eq!(pool["osType"], "linux", "{pool:#}");
}

/// README entry B: `SystemPoolType: Standard` makes the system pool
/// `union(systemPoolBase, systemPoolPresets.Standard)` (the preset's size, count and
/// autoscale win), and the user pool module `aksagentpool.bicep` gets the parameters' size,
/// the default count 3 and `agentCountMax` 20. The module's `existing` cluster is a
/// reference, not a second cluster.
#[test]
fn real_aks_construction_well_architected_has_a_preset_system_pool_and_a_user_pool() {
    let Some(corpus) = corpus() else { return };
    let main = format!("{corpus}/aks-construction/bicep/main.bicep");
    let params =
        format!("{corpus}/aks-construction/regressionparams/optimised-for-well-architected.json");
    assert_eq!(
        models(&[&main, &params]),
        vec![
            "main.bicep aks-cluster aks-az-k8s-4wmn - - --- - - []",
            "main.bicep aks-node-pool aks-az-k8s-4wmn/agentpool Standard_D4ds_v5 3 3-5 true system [1,2,3]",
            "aksagentpool.bicep aks-node-pool userpool01 Standard_D4ds_v5 3 3-20 true user [1,2,3]",
        ]
    );
    let (code, report) = check_json(&[&main, "--param-file", &params]);
    assert_eq!(code, 0, "{report:#}");
    assert!(findings(&report).is_empty(), "{report:#}");
    assert_eq!(report["summary"]["resources"], 3, "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![(
            "region".into(),
            "aks-construction/bicep/main.bicep".into(),
            1342
        )]
    );
    // The system pool's values come from the preset (main.bicep L1138-L1147) where it
    // overrides the base, and from the base (L1164-L1181) elsewhere.
    let model = run(&["inspect", "--format", "json", &main, &params]);
    let list: Value = serde_json::from_slice(&model.stdout).unwrap_or_default();
    let lines = &list[1]["lines"];
    assert_eq!(
        (
            lines["sku"].as_u64(),
            lines["minNodes"].as_u64(),
            lines["zones"].as_u64(),
            lines["poolMode"].as_u64()
        ),
        (Some(1139), Some(1141), Some(1144), Some(1168)),
        "{:#}",
        list[1]
    );
    assert_eq!(
        list[1]["model"]["taints"],
        serde_json::json!(["CriticalAddonsOnly=true:NoSchedule"])
    );
    assert_eq!(
        list[2]["model"]["parent"], "cluster aks-az-k8s-4wmn",
        "{:#}",
        list[2]
    );
    // With main's defaults (`SystemPoolType: CostOptimised`), the system pool is the
    // `Standard_B4s_v2` preset: refused by AKS, found at the preset's size.
    let (code, defaults) = check_json(&[&main]);
    assert_eq!(code, 1, "{defaults:#}");
    assert_eq!(
        findings(&defaults),
        vec![(
            "aks-sku-restricted".to_string(),
            format!("{corpus}/aks-construction/bicep/main.bicep"),
            1131
        )]
    );
}

#[test]
fn real_landing_zone_cluster_is_read_through_its_module() {
    let Some(corpus) = corpus() else { return };
    let dir = format!("{corpus}/aks-lza-06-aks-cluster");
    let (code, report) =
        check_json(&[&dir, "--param-file", &format!("{dir}/parameters-main.json")]);
    assert_eq!(code, 0, "{report:#}");
    // The cluster and its Standard_D4d_v5 pool, in privateaks.bicep; only the region
    // (`deployment().location`, passed to the module at main.bicep:104) is left to deploy
    // time.
    assert_eq!(report["summary"]["resources"], 2, "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![(
            "region".into(),
            "aks-lza-06-aks-cluster/main.bicep".into(),
            104
        )]
    );
    let (kind, _) = skip_reason(&report, "modules/aks/privateaks.bicep").unwrap_or_default();
    assert_eq!(kind, "module");
    // README entry C: one System pool `defaultpool`, Standard_D4d_v5 hard-coded, count 3,
    // not autoscaled (so no min/max), zones 1/2/3; Kubernetes 1.22.6 from the parameters.
    let main = format!("{dir}/main.bicep");
    let params = format!("{dir}/parameters-main.json");
    assert_eq!(
        models(&[&main, &params]),
        vec![
            "privateaks.bicep aks-cluster eslzakscluster - - --- - - []",
            "privateaks.bicep aks-node-pool eslzakscluster/defaultpool Standard_D4d_v5 3 --- false system [1,2,3]",
        ]
    );
    let out = run(&["inspect", "--format", "json", &main, &params]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(list[1]["model"]["kubernetesVersion"], "1.22.6", "{list:#}");
    assert_eq!(list[1]["lines"]["sku"], 48, "{list:#}");
}

/// README entry D: one Linux VM `jumpbox`, Standard_B2ms from the parameters file, through
/// `modules/VM/virtualmachine.bicep`.
#[test]
fn real_jumpbox_is_one_b2ms_vm() {
    let Some(corpus) = corpus() else { return };
    let dir = format!("{corpus}/aks-lza-03-hub-jumpbox");
    assert_eq!(
        models(&[
            &format!("{dir}/deploy-vm.bicep"),
            &format!("{dir}/parameters-deploy-vm.json")
        ]),
        vec!["virtualmachine.bicep vm jumpbox Standard_B2ms 1 --- - - []"]
    );
    // The summary names the skipped files for what they are: Bicep, not Terraform.
    let out = run(&["check", "--as-of", "2026-11-22", &dir]);
    let summary = stdout(&out);
    let summary = summary.lines().last().unwrap_or_default();
    assert!(
        summary.contains("skipped (--verbose lists them): 1 file of Bicep/ARM parameters (values for their templates), 2 files of Bicep/ARM modules (checked through their callers);")
            && !summary.contains("Terraform"),
        "{summary}"
    );
}

/// A cluster whose `agentPoolProfiles` is an expression the evaluator cannot turn into a
/// list of pools (a lambda; a variable that is an object) is an unresolved fact naming what
/// is written, never a cluster without pools; a pool list built with `concat`, `array`,
/// `union`, `&&`, `!= {}` and a preset picked by a parameter is read, and so is one built by
/// a `[for (p, i) in list: {...}]` loop.
#[test]
fn pools_given_by_an_expression_are_read_or_unresolved() {
    let main = format!("{DIR}/pool-expression/main.bicep");
    assert_eq!(
        models(&[&main]),
        vec![
            "main.bicep aks-cluster aks-known - - --- - - []",
            "main.bicep aks-node-pool aks-known/system Standard_D4ds_v5 1 --- - system []",
            "main.bicep aks-node-pool aks-known/gpu Standard_NC6s_v3 2 --- - user []",
            "main.bicep aks-cluster aks-lambda - - --- - - []",
            "main.bicep aks-cluster aks-shape - - --- - - []",
            "main.bicep aks-cluster aks-loop - - --- - - []",
            "main.bicep aks-node-pool aks-loop/a0 Standard_D4ds_v5 2 --- - system []",
            "main.bicep aks-node-pool aks-loop/old1 Standard_NC6 1 --- - user []",
        ]
    );
    let (code, report) = check_json(&[&main]);
    assert_eq!(code, 1, "{report:#}");
    // The preset's retired size, where the preset writes it; the looped pool's, at the
    // loop (`agentPoolProfiles: [for (p, i) in gpuPools: {...}]`).
    assert_eq!(
        findings(&report),
        triples(&[
            (
                "sku-retired",
                "bicep-modules/pool-expression/main.bicep",
                20
            ),
            (
                "sku-retired",
                "bicep-modules/pool-expression/main.bicep",
                79
            )
        ])
    );
    assert_eq!(
        unresolved(&report),
        vec![
            (
                "agentPoolProfiles".into(),
                "bicep-modules/pool-expression/main.bicep".into(),
                49
            ),
            (
                "agentPoolProfiles".into(),
                "bicep-modules/pool-expression/main.bicep".into(),
                57
            ),
        ]
    );
    let facts = list(&report, "unresolved");
    assert!(
        facts[0]["expression"]
            .as_str()
            .is_some_and(|e| e.starts_with("[filter(variables('pools')")),
        "{:#}",
        facts[0]
    );
    assert_eq!(facts[1]["expression"], "[variables('settings')]");
    // The text report names the pools as not judged; --fail-on-unresolved fails on them.
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--fail-on-unresolved",
        &main,
    ]);
    assert_eq!(crate::code(&out), 2, "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "AKS cluster aks-shape: its node pools (`agentPoolProfiles`) are `[variables('settings')]`, which computeguard could not evaluate into a list of pools"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_bicepparam_for_a_registry_module_is_checked_as_a_call_of_it() {
    // `using 'br/public:avm/res/container-service/managed-cluster:...'`: the values are what
    // the AVM AKS module receives; its retired pool is found at the file's line.
    let dir = format!("{DIR}/registry");
    let (code, report) = check_json(&[
        &format!("{dir}/aks.bicepparam"),
        &format!("{dir}/pool.bicepparam"),
    ]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/registry/aks.bicepparam", 17)])
    );
    // Another registry module: an unresolved fact at the `using` line, with what it
    // receives, never a quiet "parameter values" skip.
    assert_eq!(
        unresolved(&report),
        vec![(
            "registry-module".into(),
            "bicep-modules/registry/pool.bicepparam".into(),
            1
        )]
    );
    assert!(
        report["unresolved"][0]["display"]
            .as_str()
            .is_some_and(|d| d.contains("receives vmSize = Standard_NC6")),
        "{report:#}"
    );
    assert!(list(&report, "skipped").is_empty(), "{report:#}");
}

#[test]
fn a_bicepparam_whose_template_is_missing_is_an_error() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("prod.bicepparam"),
        "using './main.bicep'\nparam size = 'Standard_NC6'\n",
    )?;
    let (code, report) = check_json_in(dir.path(), &["."])?;
    assert_eq!(code, 2, "{report:#}");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`using` names") && m.contains("main.bicep")),
        "{report:#}"
    );
    Ok(())
}

#[test]
fn a_module_whose_file_is_missing_is_a_blind_spot() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("main.bicep"),
        "module infra 'aks.bicep' = {\n  name: 'infra'\n  params: { size: 'Standard_NC6' }\n}\n",
    )?;
    let (code, report) = check_json_in(dir.path(), &["--fail-on-unresolved", "main.bicep"])?;
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(
        unresolved(&report),
        vec![("module-missing".into(), "main.bicep".into(), 1)]
    );
    assert_eq!(report["unresolved"][0]["expression"], "aks.bicep");
    Ok(())
}

/// The change-wide quota sums read a Bicep template as check does: its parameters file
/// applied and its module's pool bound to what the call passes (alone, the module file's
/// size would be unknown and leave the region's total unknown).
#[test]
fn quota_sums_follow_bicep_modules_and_parameter_files() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let quota = fixtures().join("context/quota");
    for f in [
        "a.bicep",
        "computeguard.yaml",
        "eastus-skus.json",
        "eastus-usage.json",
    ] {
        std::fs::copy(quota.join(f), dir.path().join(f))?;
    }
    std::fs::create_dir(dir.path().join("modules"))?;
    std::fs::write(
        dir.path().join("modules/pool.bicep"),
        "param size string\nparam nodes int\nparam location string\n\
         resource aks 'Microsoft.ContainerService/managedClusters@2024-05-01' = {\n  name: 'aks-m'\n  location: location\n  properties: {\n    agentPoolProfiles: [\n      {\n        name: 'gpum'\n        vmSize: size\n        count: nodes\n        nodeTaints: ['sku=gpu:NoSchedule']\n      }\n    ]\n  }\n}\n",
    )?;
    std::fs::write(
        dir.path().join("main.bicep"),
        "param size string\nmodule pool 'modules/pool.bicep' = {\n  name: 'pool'\n  params: {\n    size: size\n    nodes: 3\n    location: 'eastus'\n  }\n}\n",
    )?;
    std::fs::write(
        dir.path().join("main.parameters.json"),
        r#"{"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#", "contentVersion": "1.0.0.0", "parameters": {"size": {"value": "Standard_NV6"}}}"#,
    )?;
    let out = run_in(dir.path(), &["check", "--format", "json", "."])?;
    let report: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{e}: {} {}", stdout(&out), stderr(&out)))?;
    let quota: Vec<(String, String)> = list(&report, "findings")
        .iter()
        .filter(|f| f["rule"] == "quota-sufficient")
        .map(|f| {
            (
                f["file"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let files: Vec<&str> = quota.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(files, vec!["./a.bicep", "modules/pool.bicep"], "{report:#}");
    for (_, m) in &quota {
        assert!(
            m.contains("this change needs 36 vCPUs of family standardNVFamily in eastus"),
            "{m}"
        );
    }
    Ok(())
}

#[test]
fn the_avm_aks_module_is_read_only_where_what_it_receives_is_known() {
    let (code, report) = check_json(&[&format!("{DIR}/registry/open.bicep")]);
    assert_eq!(code, 1, "{report:#}");
    // `c`: its pool, a variable, is judged where the call names it.
    assert_eq!(
        findings(&report),
        triples(&[("sku-retired", "bicep-modules/registry/open.bicep", 32)])
    );
    // `a` (pools known only at deploy time) and `b` (`params: settings`) are not read:
    // unresolved modules showing what they receive, never a silent pass.
    assert_eq!(
        unresolved(&report),
        vec![
            (
                "registry-module".into(),
                "bicep-modules/registry/open.bicep".into(),
                13
            ),
            (
                "registry-module".into(),
                "bicep-modules/registry/open.bicep".into(),
                22
            ),
        ]
    );
    let facts = list(&report, "unresolved");
    assert!(
        facts[0]["display"].as_str().is_some_and(|d| d
            .contains("agentPools = [parameters('pools')]")
            && d.contains("Standard_NC6")),
        "{:#}",
        facts[0]
    );
    assert!(
        facts[1]["display"]
            .as_str()
            .is_some_and(|d| d.ends_with("which receives [parameters('settings')]")),
        "{:#}",
        facts[1]
    );
}

/// As Terraform warns about a value for an undeclared variable: a parameter file's name no
/// template declares (a typo), a `using` template that is not checked, a registry module's
/// parameters given only with `--param-file`, each with its file and line.
#[test]
fn parameter_values_that_apply_to_nothing_are_warned() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("main.bicep"),
        "param vmSize string = 'Standard_NC4as_T4_v3'\n\
         resource vm 'Microsoft.Compute/virtualMachines@2024-03-01' = {\n  name: 'vm'\n  location: 'eastus'\n  properties: { hardwareProfile: { vmSize: vmSize } }\n}\n",
    )?;
    std::fs::write(
        dir.path().join("main.parameters.json"),
        "{\n  \"$schema\": \"https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#\",\n  \"contentVersion\": \"1.0.0.0\",\n  \"parameters\": {\n    \"vmSzie\": { \"value\": \"Standard_NC6\" }\n  }\n}\n",
    )?;
    std::fs::write(
        dir.path().join("other.bicepparam"),
        "using 'other.bicep'\nparam size = 'Standard_NC6'\n",
    )?;
    std::fs::write(dir.path().join("other.bicep"), "param size string\n")?;
    let aks = root().join(DIR).join("registry/aks.bicepparam");
    let aks = aks.to_string_lossy();
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "main.bicep",
            "--param-file",
            "other.bicepparam",
            "--param-file",
            &aks,
        ],
    )?;
    // The typo does not set the size: the default is judged, and no finding.
    assert_eq!(crate::code(&out), 0, "{}", stdout(&out));
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        vec![
            "warning: other.bicepparam:1: its `using` template `other.bicep` is not among the files checked: its values apply to nothing".to_string(),
            format!("warning: {aks}:1: its `using` names the registry module `br/public:avm/res/container-service/managed-cluster:0.10.0`: name the file among the paths to check what it deploys"),
            "warning: main.parameters.json:5: `vmSzie` is not a parameter of `main.bicep`: its value applies to nothing".to_string(),
        ],
        "{err}"
    );
    Ok(())
}

/// `inspect` reads a Bicep file as check does: the module's resources in the module's file
/// with the values the call passes, and the parameter file paired by name applied.
#[test]
fn inspect_follows_modules_and_parameter_files() {
    let out = run(&[
        "inspect",
        "--format",
        "json",
        &format!("{DIR}/retired-module/main.bicep"),
        &format!("{DIR}/params/pool.bicep"),
    ]);
    assert_eq!(crate::code(&out), 0, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let sizes: Vec<(String, String, u64)> = list
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|r| {
            Some((
                r["file"].as_str()?.replace("tests/fixtures/", ""),
                r["model"]["sku"].as_str()?.to_string(),
                r["lines"]["sku"].as_u64()?,
            ))
        })
        .collect();
    assert_eq!(
        sizes,
        vec![
            (
                "bicep-modules/retired-module/gpu.bicep".to_string(),
                "Standard_NC6".to_string(),
                15
            ),
            (
                "bicep-modules/params/pool.bicep".to_string(),
                "Standard_NC6s_v3".to_string(),
                12
            ),
        ],
        "{list:#}"
    );
}
