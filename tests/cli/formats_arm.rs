//! ARM templates and Bicep files: findings on the exact line of the field that causes them,
//! parameter-resolved values, values known only at deploy time, and `region-colocated`.

use crate::*;

#[test]
fn arm_findings_point_at_the_field_that_uses_the_parameter() {
    let (code, report) = check_json(&["tests/fixtures/arm"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            // REST API example: the request body's pool has no taint.
            (
                "gpu-workload-scheduling",
                "arm/arm-rest-agentpool-create-gpumig-nd96asr-v4.json",
                12
            ),
            // REST API example: the request asks for 4 idle nodes; the response is not read.
            (
                "min-nodes-zero",
                "arm/arm-rest-amlcompute-create-min4-response-nc6.json",
                16
            ),
            // Nested deployments: `computeSKU` defaults to Standard_NC6 three levels up; the
            // orchestrator and the silo template each declare a compute, the second compute
            // of each is behind `condition: compute2` (false) and gives nothing.
            (
                "sku-retired",
                "arm/fl-sandbox-eyeson-gpu-default-nc6.arm.json",
                1684
            ),
            (
                "sku-retired",
                "arm/fl-sandbox-eyeson-gpu-default-nc6.arm.json",
                3665
            ),
            (
                "region-colocated",
                "arm/workspace-compute-region-split.json",
                25
            ),
            ("sku-retired", "arm/workspace-compute-region-split.json", 29),
            (
                "min-nodes-zero",
                "arm/workspace-compute-region-split.json",
                31
            ),
        ])
    );
    let nc6 = &report["findings"][2];
    assert_eq!(
        nc6["path"],
        "/resources/2/properties/template/resources/2/properties/template/resources/6/properties/template/resources/0/properties/properties/vmSize"
    );
    assert!(
        nc6["message"]
            .as_str()
            .is_some_and(|m| m.contains("orchestrator-01 uses Standard_NC6, retired on 2023-09-06")),
        "{nc6:#}"
    );
    // A name known only at deploy time is shown as its expression, not guessed.
    assert!(
        report["findings"][3]["resource"]["name"]
            .as_str()
            .is_some_and(|n| n == "[parameters('computeName')]"),
        "{:#}",
        report["findings"][3]
    );
    let colocated = &report["findings"][4];
    assert_eq!(colocated["severity"], "warning");
    assert_eq!(
        colocated["message"],
        "Azure ML compute cluster gpu-train runs in eastus, away from its workspace ml-prod in westeurope: \
         jobs pay cross-region latency and egress for every read of the workspace; create it in westeurope"
    );
}

#[test]
fn unresolved_values_are_not_guessed() {
    // `cpu` uses `[parameters('cpuSize')]` (no default) and `[resourceGroup().location]`: it is
    // recognised, but neither sku-unknown nor region-colocated fires on it.
    let (_, report) = check_json(&["tests/fixtures/arm/workspace-compute-region-split.json"]);
    assert_eq!(report["summary"]["resources"], 3, "{report:#}");
    assert!(
        report["findings"]
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["resource"]["name"] == "gpu-train")),
        "{report:#}"
    );
    let (code, report) =
        check_json(&["tests/fixtures/bicep/private-aks-gpu-aks-module-gpunp.bicep"]);
    assert_eq!(
        code, 0,
        "a GPU size passed in as a parameter without default: {report:#}"
    );
    assert_eq!(report["summary"]["resources"], 3);
    assert_eq!(report["findings"], serde_json::json!([]));
}

#[test]
fn bicep_findings_land_on_the_bicep_lines() {
    let (code, report) = check_json(&["tests/fixtures/bicep"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            // Standard_DS3_v2 from the parameter default; retirement announced for 2028.
            (
                "sku-retired",
                "bicep/fl-open-new-aml-compute-module-min0.bicep",
                67
            ),
            (
                "gpu-workload-scheduling",
                "bicep/stableazure-aks-gpupool-nc6s-v3-eastus2.bicep",
                44
            ),
            (
                "sku-retired",
                "bicep/stableazure-aks-gpupool-nc6s-v3-eastus2.bicep",
                44
            ),
            (
                "region-colocated",
                "bicep/workspace-compute-region-split.bicep",
                18
            ),
            (
                "sku-retired",
                "bicep/workspace-compute-region-split.bicep",
                22
            ),
            (
                "min-nodes-zero",
                "bicep/workspace-compute-region-split.bicep",
                24
            ),
        ])
    );
    let f = &report["findings"][0];
    assert_eq!(f["severity"], "info");
    let retired = &report["findings"][2];
    assert_eq!(retired["resource"]["kind"], "aks-node-pool");
    assert_eq!(retired["resource"]["name"], "StableCluster/gpupool");
    assert_eq!(
        retired["path"],
        "/resources/0/properties/agentPoolProfiles/1/vmSize"
    );
}

#[test]
fn malformed_bicep_is_an_error_with_line_and_expectation() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "tests/fixtures/invalid/broken.bicep",
    ]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let e = &report["errors"][0];
    assert_eq!(e["file"], "tests/fixtures/invalid/broken.bicep");
    assert_eq!(e["line"], 6);
    assert_eq!(
        e["message"],
        "invalid Bicep at line 6, column 5: unexpected `vmSize size` in object; expected `name: value` or `}`"
    );
}

#[test]
fn explain_region_colocated() {
    let out = run(&["explain", "region-colocated"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("warning"), "{text}");
    assert!(
        text.contains("how-to-create-attach-compute-cluster"),
        "{text}"
    );
    assert!(
        text.contains("Create the compute in its workspace's"),
        "{text}"
    );
}
