//! Auditing what already runs (issue 17): a `kubectl get -A -o yaml` dump and Azure exports
//! (ARM GET/list responses, Resource Graph results, `az` output) in, findings with the
//! object or Azure resource id out; `--format policyreport` validated against the CRDs
//! Kyverno installs; the estate summary. Fixtures: tests/fixtures/audit (NOTES.md says what
//! each is; sources in SOURCES.tsv).

use crate::*;
use serde_json::Value;
use std::collections::BTreeMap;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const DUMP: &str = "tests/fixtures/audit/kubectl-get-pods-deployments-jobs-A.yaml";

/// `check` with `args`, `input` piped to standard input: (exit code, stdout).
fn piped(args: &[&str], input: &[u8]) -> Result<(i32, String), Box<dyn std::error::Error>> {
    let (code, out, _) = check_piped(args, input)?;
    Ok((code, out))
}

/// `f` of every finding of a JSON report, sorted.
fn each_finding<T: Ord>(report: &Value, f: impl Fn(&Value) -> T) -> Vec<T> {
    let mut v: Vec<T> = report["findings"]
        .as_array()
        .map(|a| a.iter().map(f).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// (rule, resource name, object namespace/name/uid or "-", line) of every finding.
fn rows(report: &Value) -> Vec<(String, String, String, u64)> {
    each_finding(report, |f| {
        let o = &f["object"];
        let object = if o.is_object() {
            format!(
                "{}/{}/{}",
                o["namespace"].as_str().unwrap_or(""),
                o["name"].as_str().unwrap_or(""),
                o["uid"].as_str().unwrap_or("")
            )
        } else {
            "-".into()
        };
        (
            f["rule"].as_str().unwrap_or("").to_string(),
            f["resource"]["name"].as_str().unwrap_or("").to_string(),
            object,
            f["line"].as_u64().unwrap_or(0),
        )
    })
}

fn own(v: &[(&str, &str, &str, u64)]) -> Vec<(String, String, String, u64)> {
    let mut v: Vec<_> = v
        .iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), *d))
        .collect();
    v.sort();
    v
}

#[test]
fn a_kubectl_dump_is_read_item_by_item_with_each_objects_identity() -> TestResult {
    // Before: a `kind: List` gave "0 resources" (issue 14); the objects now carry the uid
    // the API server gave them, for PolicyReports and for a human to find them.
    let (code, report) = check_json(&[DUMP]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["summary"]["resources"], 30,
        "{:#}",
        report["summary"]
    );
    assert_eq!(
        rows(&report),
        own(&[
            (
                "no-infiniband-for-inference",
                "serving/triton-llm",
                "serving/triton-llm/94881459-a711-534c-8ee0-c002edfc4bbb",
                73
            ),
            (
                "gpu-workload-scheduling",
                "research/badpod01",
                "research/badpod01/8eb2b785-56fd-52b5-ab61-46ab650b8c67",
                176
            ),
            (
                "gpu-workload-scheduling",
                "research/badpod02",
                "research/badpod02/9865b5e9-b2ad-516c-a578-9089d9d4d7e5",
                198
            ),
            (
                "gpu-workload-scheduling",
                "gpu-smoke/nvidia-gpu-test",
                "gpu-smoke/nvidia-gpu-test/af3aa874-d3c5-5607-8386-d3a03e79e414",
                227
            ),
            (
                "gpu-workload-scheduling",
                "research/gooddeployment01",
                "research/gooddeployment01/a95d4ac4-309a-5eee-889e-6e3e0206fd35",
                772
            ),
            (
                "gpu-workload-scheduling",
                "research/gooddeployment01-d0668ca6b5-42f65",
                "research/gooddeployment01-d0668ca6b5-42f65/b33238ba-3618-5b8c-8475-6849dbaa4870",
                807
            ),
            (
                "cuda-arch-compat",
                "ml/trainer",
                "ml/trainer/3e6c2b8a-e448-5fd2-b38a-925487422027",
                1225
            ),
            (
                "sku-retired",
                "ml/trainer",
                "ml/trainer/3e6c2b8a-e448-5fd2-b38a-925487422027",
                1231
            ),
        ])
    );
    Ok(())
}

#[test]
fn a_dump_piped_through_standard_input_gives_the_same_findings() -> TestResult {
    let (_, from_file) = check_json(&[DUMP]);
    let text = std::fs::read(root().join(DUMP))?;
    let (code, out) = piped(&["--format", "json", "-"], &text)?;
    assert_eq!(code, 1, "{out}");
    let from_pipe: Value = serde_json::from_str(&out)?;
    assert_eq!(rows(&from_pipe), rows(&from_file));
    // JSON, as `kubectl get -o json` prints it, is read the same way (lines differ).
    let docs = computeguard_decode::decode_yaml(&String::from_utf8(text)?)?;
    let json = serde_json::to_string_pretty(&docs[0].value)?;
    let (code, out) = piped(&["--format", "json", "-"], json.as_bytes())?;
    assert_eq!(code, 1, "{out}");
    let from_json: Value = serde_json::from_str(&out)?;
    let ids = |r: &Value| {
        rows(r)
            .into_iter()
            .map(|(rule, name, object, _)| (rule, name, object))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&from_json), ids(&from_file));
    Ok(())
}

/// (rule, Azure resource id) of every finding.
fn ids(report: &Value) -> Vec<(String, String)> {
    each_finding(report, |f| {
        (
            f["rule"].as_str().unwrap_or("").to_string(),
            f["resource"]["name"].as_str().unwrap_or("").to_string(),
        )
    })
}

const NC6S_POOL: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/clitest000001/providers/Microsoft.ContainerService/managedClusters/cliakstest000001/agentPools/c000003";

#[test]
fn azure_exports_are_recognised_by_shape_and_name_the_resource_id() -> TestResult {
    let aml = "/subscriptions/34adfa4f-cedf-4dc0-ba29-b6d1a69ab345/resourceGroups/testrg123/providers/Microsoft.MachineLearningServices/workspaces/workspaces123/computes/compute123";
    for (file, expected) in [
        // An ARM GET response (a REST API example): an AmlCompute on the retired NC6.
        ("arm-get-amlcompute-nc6.json", vec![("sku-retired", aml)]),
        (
            "arm-get-computeinstance-nc6.json",
            vec![("sku-retired", aml)],
        ),
        // A recorded GET of an agent pool: no `type`, no location; the id names both.
        (
            "rec-rest-get-agentpool-gpu-nc6s-v3.json",
            vec![
                ("gpu-workload-scheduling", NC6S_POOL),
                ("sku-retired", NC6S_POOL),
            ],
        ),
        // The same pool as `az aks nodepool list` prints it: an array, flattened.
        (
            "az-aks-nodepool-list-gpu-nc6s-v3.json",
            vec![
                ("gpu-workload-scheduling", NC6S_POOL),
                ("sku-retired", NC6S_POOL),
            ],
        ),
        // `az ml compute list`: the Azure ML CLI v2 shape, with the id.
        ("az-ml-compute-list-nc6.json", vec![("sku-retired", aml)]),
        // `az aks show`: flattened; the pool is the cluster's child `/agentPools/<name>`.
        (
            "az-aks-show-gpumig-nd96asr-v4.json",
            vec![(
                "gpu-workload-scheduling",
                "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/rg1/providers/Microsoft.ContainerService/managedClusters/clustername1/agentPools/nodepool1",
            )],
        ),
        // Resource Graph rows that project no size: read, nothing to say.
        ("arg-rest-resources-filter-vms.json", vec![]),
        // An attached Kubernetes compute: no VM size, nothing to say.
        ("arm-get-kubernetescompute-no-vmsize.json", vec![]),
    ] {
        let path = format!("tests/fixtures/audit/{file}");
        let (_, report) = check_json(&[&path]);
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(r, id)| (r.to_string(), id.to_string()))
            .collect();
        assert_eq!(ids(&report), expected, "{file}: {report:#}");
        assert!(
            report["summary"]["resources"].as_u64().unwrap_or(0) > 0,
            "{file}: nothing recognised: {report:#}"
        );
    }
    // The id, the row's line, and the size in the text output.
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/audit/az-aks-nodepool-list-gpu-nc6s-v3.json",
    ]);
    let text = stdout(&out);
    assert!(text.contains(&format!("= resource: {NC6S_POOL}")), "{text}");
    assert!(
        text.contains("--> tests/fixtures/audit/az-aks-nodepool-list-gpu-nc6s-v3.json:6:5"),
        "{text}"
    );
    Ok(())
}

#[test]
fn resource_graph_output_through_standard_input_is_audited() -> TestResult {
    // What `az graph query -q "Resources | where type =~ 'microsoft.compute/virtualmachines'
    // or type =~ 'microsoft.containerservice/managedclusters'" -o json` prints (shape as
    // in NOTES.md; the rows are the ARM resources of the fixtures above).
    let vm = std::fs::read_to_string(fixtures().join("audit/arm-get-vm-ds3v2.json"))?;
    let vm: Value = serde_json::from_str(&vm)?;
    let mut vm = vm["responses"]["200"]["body"].clone();
    vm["type"] = Value::from("microsoft.compute/virtualmachines");
    vm["properties"]["hardwareProfile"]["vmSize"] = Value::from("Standard_NC6");
    let gpu_vm_id = vm["id"].as_str().unwrap_or("").to_string();
    let pool =
        std::fs::read_to_string(fixtures().join("audit/rec-rest-get-agentpool-gpu-nc6s-v3.json"))?;
    let pool: Value = serde_json::from_str(&pool)?;
    let output = serde_json::json!({
        "count": 2, "data": [vm, pool], "skip_token": null, "total_records": 2
    });
    let text = serde_json::to_string_pretty(&output)?;
    let (code, out) = piped(&["--format", "json", "-"], text.as_bytes())?;
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out)?;
    let mut expected = vec![
        ("gpu-workload-scheduling".to_string(), NC6S_POOL.to_string()),
        ("sku-retired".to_string(), gpu_vm_id.clone()),
        ("sku-retired".to_string(), NC6S_POOL.to_string()),
    ];
    expected.sort();
    assert_eq!(ids(&report), expected);
    // The summary a platform team reads first.
    let estate = &report["summary"]["estate"];
    assert_eq!(estate["byRule"]["sku-retired"], 2, "{estate:#}");
    assert_eq!(estate["byRule"]["gpu-workload-scheduling"], 1, "{estate:#}");
    let by_sub: BTreeMap<String, u64> = serde_json::from_value(estate["bySubscription"].clone())?;
    assert_eq!(by_sub.values().sum::<u64>(), 3, "{estate:#}");
    assert_eq!(
        estate["byResourceGroup"]["00000000-0000-0000-0000-000000000000/clitest000001"], 2,
        "{estate:#}"
    );
    Ok(())
}

/// A validator for the `openAPIV3Schema` of a CRD kept under tests/fixtures/schemas.
fn crd_validator(file: &str) -> Result<jsonschema::Validator, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(fixtures().join("schemas").join(file))?;
    let docs = computeguard_decode::decode_yaml(&text)?;
    let crd = &docs.first().ok_or("empty CRD file")?.value;
    let version = crd["spec"]["versions"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "v1alpha2"))
        .ok_or("no v1alpha2")?;
    let schema = version["schema"]["openAPIV3Schema"].clone();
    Ok(jsonschema::options()
        .should_validate_formats(false)
        .build(&schema)?)
}

#[test]
fn policy_reports_validate_against_the_crds_and_hold_every_finding_once() -> TestResult {
    let namespaced = crd_validator("kyverno-wgpolicyk8s.io_policyreports.yaml")?;
    let cluster = crd_validator("kyverno-wgpolicyk8s.io_clusterpolicyreports.yaml")?;
    // The validators are real: a result without `policy` or with an unknown `result` fails.
    let bad = serde_json::json!({"results": [{"result": "maybe"}]});
    assert_eq!(namespaced.iter_errors(&bad).count(), 2);

    let inputs = [
        DUMP,
        "tests/fixtures/audit/az-aks-nodepool-list-gpu-nc6s-v3.json",
    ];
    let (_, report) = check_json(&inputs);
    let mut args = vec!["check", "--format", "policyreport", "--as-of", "2026-11-22"];
    args.extend(inputs);
    let out = run(&args);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        (list["apiVersion"].as_str(), list["kind"].as_str()),
        (Some("v1"), Some("List"))
    );
    let mut results = Vec::new();
    let mut namespaces = Vec::new();
    for item in list["items"].as_array().ok_or("no items")? {
        assert_eq!(item["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        let validator = match item["kind"].as_str() {
            Some("PolicyReport") => {
                namespaces.push(
                    item["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
                &namespaced
            }
            Some("ClusterPolicyReport") => &cluster,
            other => return Err(format!("unexpected kind {other:?}").into()),
        };
        let errors: Vec<String> = validator
            .iter_errors(item)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{item:#}");
        let summary = &item["summary"];
        let mine = item["results"].as_array().cloned().unwrap_or_default();
        for (key, result) in [("fail", "fail"), ("warn", "warn")] {
            let n = mine.iter().filter(|r| r["result"] == result).count();
            assert_eq!(summary[key], n, "{item:#}");
        }
        for r in &mine {
            assert_eq!(r["source"], "computeguard");
            // Results are in the report of their object's namespace.
            if let Some(ns) = item["metadata"]["namespace"].as_str() {
                assert_eq!(r["resources"][0]["namespace"], ns, "{r:#}");
            }
        }
        results.extend(mine);
    }
    namespaces.sort();
    assert_eq!(namespaces, ["gpu-smoke", "ml", "research", "serving"]);
    // Every finding exactly once.
    let key = |rule: &Value, file: &Value, line: String, path: &Value| {
        format!("{rule}|{file}|{line}|{path}")
    };
    // Rules not evaluated for want of `azure:` facts are `skip` results with no file.
    let mut from_reports: Vec<String> = results
        .iter()
        .filter(|r| r["properties"]["notEvaluated"] != "true")
        .map(|r| {
            let p = &r["properties"];
            key(
                &r["rule"],
                &p["file"],
                p["line"].as_str().unwrap_or("").to_string(),
                &p["path"],
            )
        })
        .collect();
    let mut from_findings: Vec<String> = report["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|f| key(&f["rule"], &f["file"], f["line"].to_string(), &f["path"]))
        .collect();
    from_reports.sort();
    from_findings.sort();
    assert_eq!(from_reports.len(), 10);
    assert_eq!(from_reports, from_findings);
    // The Azure pool is in the cluster report, with its id.
    assert!(
        results
            .iter()
            .any(|r| r["properties"]["resourceId"] == NC6S_POOL && r["resources"].is_null()),
        "no Azure result"
    );
    Ok(())
}

#[test]
fn a_file_that_cannot_be_judged_is_an_error_result_in_the_cluster_report() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("broken.yaml"), "a: [1, 2\n")?;
    let out = run_in(
        dir.path(),
        &["check", "--format", "policyreport", "broken.yaml"],
    )?;
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout)?;
    let item = &list["items"][0];
    assert_eq!(item["kind"], "ClusterPolicyReport");
    assert_eq!(item["summary"]["error"], 1);
    assert_eq!(item["results"][0]["result"], "error");
    assert_eq!(item["results"][0]["properties"]["file"], "broken.yaml");
    Ok(())
}

#[test]
fn a_row_of_an_export_that_is_not_an_object_is_an_error_at_its_line() -> TestResult {
    // Before: the string was dropped and the export passed with the VM's finding alone.
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("vms.json"),
        r#"[
  {"id": "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1",
   "name": "vm1", "type": "Microsoft.Compute/virtualMachines", "location": "eastus",
   "properties": {"hardwareProfile": {"vmSize": "Standard_NC6"}}},
  "vm2"
]
"#,
    )?;
    let (code, report) = check_json_in(dir.path(), &["vms.json"])?;
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(
        ids(&report),
        vec![(
            "sku-retired".to_string(),
            "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1"
                .to_string()
        )]
    );
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1, "{report:#}");
    assert_eq!(errors[0]["line"], 5);
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("got a string")),
        "{report:#}"
    );
    Ok(())
}

/// (rule, severity, message, resource name, object uid) of every finding: what a finding
/// says about which object, whatever line the layout puts it on.
fn said(report: &Value) -> Vec<(String, String, String, String, String)> {
    each_finding(report, |f| {
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        (
            s(&f["rule"]),
            s(&f["severity"]),
            s(&f["message"]),
            s(&f["resource"]["name"]),
            s(&f["object"]["uid"]),
        )
    })
}

#[test]
fn a_dump_is_evaluated_once_per_template_with_the_same_answers() -> TestResult {
    // Issue 36: a dump of many objects made from few templates (the Pods of one
    // ReplicaSet) is evaluated once per template, as the webhook does, and every object
    // gets the answer it gets on its own. The dump's objects three times over, each copy
    // with its own name and uid: once as one `List` (by template), once as separate
    // documents (each evaluated as it is, never by template).
    let docs = computeguard_decode::decode_yaml(&std::fs::read_to_string(root().join(DUMP))?)?;
    let items = docs[0].value["items"].as_array().ok_or("items")?;
    let mut copies = Vec::new();
    for copy in 0..3 {
        for (i, item) in items.iter().enumerate() {
            let mut item = item.clone();
            // Names of one length: a template's placeholder has the name's length.
            let meta = item["metadata"].as_object_mut().ok_or("metadata")?;
            let name = format!("{}-c{copy}x{i:03}", meta["name"].as_str().unwrap_or(""));
            meta.insert("name".into(), Value::String(name));
            if copy > 0 {
                meta.insert(
                    "uid".into(),
                    Value::String(format!("00000000-0000-0000-000{copy}-{i:012}")),
                );
            }
            copies.push(item);
        }
    }
    let dir = tempfile::tempdir()?;
    let list = dir.path().join("dump.json");
    std::fs::write(
        &list,
        serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "v1", "kind": "List", "items": copies}))?,
    )?;
    let separate = dir.path().join("separate.yaml");
    std::fs::write(
        &separate,
        copies
            .iter()
            .map(|c| serde_json::to_string_pretty(c).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n---\n"),
    )?;
    let out = computeguard()
        .env("COMPUTEGUARD_LOG", "computeguard=debug")
        .args(["check", "--format", "json", "--as-of", "2026-11-22"])
        .arg(&list)
        .output()?;
    let by_template: Value = serde_json::from_slice(&out.stdout)?;
    let (_, one_by_one) = check_json(&[separate.to_str().ok_or("path")?]);
    let said_by_template = said(&by_template);
    assert!(said_by_template.len() >= 3 * 8, "{said_by_template:#?}");
    assert_eq!(said_by_template, said(&one_by_one));
    assert_eq!(
        by_template["summary"]["resources"],
        one_by_one["summary"]["resources"]
    );
    // And it was by template: the run says how many items got a template's answer.
    let log = stderr(&out);
    let line = log
        .lines()
        .find(|l| l.contains("evaluated by template"))
        .ok_or_else(|| format!("no template line in the log:\n{log}"))?;
    let field = |name: &str| -> Option<u64> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
    };
    let (units, templates, answered) = (
        field("items").ok_or(line)?,
        field("templates").ok_or(line)?,
        field("answered").ok_or(line)?,
    );
    assert_eq!(units, copies.len() as u64, "{line}");
    // Every object shares its template with its two copies (and perhaps with others):
    // each template is evaluated once for at least three objects.
    assert!(templates >= 8, "{line}");
    assert!(answered >= 3 * templates && answered <= units, "{line}");
    Ok(())
}
