//! What a change costs (issue 33, docs/cost.md): `azure.prices` pages read as they are,
//! each kind of GPU compute priced from them, unknown prices named in every format.
//!
//! The fixtures in `tests/fixtures/cost/` are priced by `tests/fixtures/cost-config/`: the
//! real D2s v3 eastus page and the hand-written GPU page (`tests/fixtures/prices/README.md`).
//! Every amount below is `hourly x nodes x 730`, rounded to the cent, checked by hand:
//!
//! | resource | price/h | floor | ceiling |
//! |---|---|---|---|
//! | Terraform AKS system pool, D2s v3, 2 nodes | 0.096 | 140.16 | 140.16 |
//! | Terraform AKS GPU pool, A100, 1-4 | 3.673 | 2,681.29 | 10,725.16 |
//! | Terraform AKS Spot pool, A100 Spot, 0-8 | 0.7346 | 0 | 4,290.06 |
//! | Azure ML cluster YAML, A100 Low Priority, 0-4 | 0.9183 | 0 | 2,681.44 |
//! | Azure ML cluster Terraform, A100, 1-2 | 3.673 | 2,681.29 | 5,362.58 |
//! | KAITO workspace, A100, count 2 (the AKS clusters' eastus) | 3.673 | 5,362.58 | 5,362.58 |
//! | online deployment, T4, 2 instances (workspace eastus) | 0.526 | 767.96 | 767.96 |
//! | Bicep system pool, D2s v3, 1 | 0.096 | 70.08 | 70.08 |
//! | Bicep Windows GPU pool, A100 Windows, 2 | 3.857 | 5,631.22 | 5,631.22 |
//! | ARM VM scale set, D2s v3 Spot, capacity 3 | 0.018816 | 41.21 | 41.21 |
//! | Azure ML cluster, NC48ads A100 v4 (no price) | - | unknown | unknown |
//! | **total** | | **17,375.79** | **35,072.45** |

use crate::*;

const CONFIG: &str = "tests/fixtures/cost-config/computeguard.yaml";

fn priced(paths: &[&str]) -> (i32, Value) {
    let mut args = vec!["--config", CONFIG];
    args.extend_from_slice(paths);
    check_json(&args)
}

fn resource<'a>(cost: &'a Value, file: &str, name: &str) -> &'a Value {
    cost["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["file"] == format!("tests/fixtures/cost/{file}") && r["resource"] == name)
        .unwrap_or_else(|| panic!("{file} {name} in {cost:#}"))
}

fn monthly(r: &Value) -> (Option<f64>, Option<f64>) {
    (r["floorMonthly"].as_f64(), r["ceilingMonthly"].as_f64())
}

#[test]
fn every_kind_priced_total_17_375_79_idle_35_072_45_at_full_scale() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    let cost = &report["cost"];
    assert_eq!(cost["currency"], "USD");
    assert_eq!(cost["hoursPerMonth"], 730.0);
    assert_eq!(cost["total"]["floorMonthly"], 17375.79);
    assert_eq!(cost["total"]["ceilingMonthly"], 35072.45);
    assert_eq!(cost["total"]["resources"], 11);
    assert_eq!(cost["total"]["unknown"], 1);
    assert_eq!(cost["byRegion"]["eastus"]["floorMonthly"], 17375.79);
    // 140.16 + 2,681.29 + 0 = 2,821.45 idle; 140.16 + 10,725.16 + 4,290.06 = 15,155.38
    let tf = &cost["byFile"]["tests/fixtures/cost/aks-tf/main.tf"];
    assert_eq!(
        (tf["floorMonthly"].as_f64(), tf["ceilingMonthly"].as_f64()),
        (Some(2821.45), Some(15155.38))
    );
    let cases = [
        (
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool gpu",
            (2681.29, 10725.16),
        ),
        (
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool spot",
            (0.0, 4290.06),
        ),
        (
            "aml-cluster.yml",
            "Azure ML compute cluster lowpri-a100",
            (0.0, 2681.44),
        ),
        (
            "aml-tf/main.tf",
            "Azure ML compute cluster train",
            (2681.29, 5362.58),
        ),
        (
            "kaito.yaml",
            "KAITO workspace llama-3-1-8b",
            (5362.58, 5362.58),
        ),
        (
            "online-deployment.yml",
            "Azure ML online deployment blue",
            (767.96, 767.96),
        ),
        ("pool.bicep", "AKS node pool gpuwin", (5631.22, 5631.22)),
        ("vmss.json", "VM scale set batch-spot", (41.21, 41.21)),
    ];
    for (file, name, (floor, ceiling)) in cases {
        assert_eq!(
            monthly(resource(cost, file, name)),
            (Some(floor), Some(ceiling)),
            "{file} {name}"
        );
    }
}

#[test]
fn spot_low_priority_and_windows_use_their_own_meters() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    let cost = &report["cost"];
    let meter = |file: &str, name: &str| {
        let r = resource(cost, file, name);
        (
            r["os"].as_str().unwrap_or_default().to_string(),
            r["priority"].as_str().unwrap_or_default().to_string(),
            r["hourly"].as_f64(),
            r["meter"]["meter"].as_str().unwrap_or_default().to_string(),
        )
    };
    let s = |x: &str| x.to_string();
    assert_eq!(
        meter(
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool spot"
        ),
        (
            s("linux"),
            s("spot"),
            Some(0.7346),
            s("NC24ads A100 v4 Spot")
        )
    );
    assert_eq!(
        meter("aml-cluster.yml", "Azure ML compute cluster lowpri-a100"),
        (
            s("linux"),
            s("low-priority"),
            Some(0.9183),
            s("NC24ads A100 v4 Low Priority")
        )
    );
    // Windows: the "... Series Windows" product, not the DevTestConsumption row (3.673).
    assert_eq!(
        meter("pool.bicep", "AKS node pool gpuwin"),
        (
            s("windows"),
            s("regular"),
            Some(3.857),
            s("NC24ads A100 v4")
        )
    );
    // Real D2s v3 page: the Linux Spot meter.
    assert_eq!(
        meter("vmss.json", "VM scale set batch-spot"),
        (s("linux"), s("spot"), Some(0.018816), s("D2s v3 Spot"))
    );
    let source = resource(cost, "vmss.json", "VM scale set batch-spot")["meter"]["source"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        source.ends_with("prices/rshade-eastus-d2s-v3-consumption-spot-lowpri-windows.json:1"),
        "{source}"
    );
}

#[test]
fn a_size_without_a_price_is_named_in_text_and_json_never_0() {
    let (_, report) = priced(&["tests/fixtures/cost/unpriced.yml"]);
    let cost = &report["cost"];
    let reason = "no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region";
    assert_eq!(cost["unknown"][0]["reason"], reason);
    assert_eq!(
        cost["unknown"][0]["resource"],
        "Azure ML compute cluster h100-warm"
    );
    assert_eq!(cost["resources"][0]["floorMonthly"], Value::Null);
    assert_eq!(cost["resources"][0]["hourly"], Value::Null);
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "cost unknown: Azure ML compute cluster h100-warm: {reason}\n  --> tests/fixtures/cost/unpriced.yml:1\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("computeguard: cost: unknown: none of the 1 resource has a known price and count (listed above; USD retail prices)\n"),
        "{text}"
    );
    // Before, a change whose only price was unknown was summed as $0.00 for "1 priced
    // resource".
    assert!(!text.contains("$0.00"), "{text}");
    let md = stdout(&run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "markdown",
        "tests/fixtures/cost/unpriced.yml",
    ]));
    assert!(
        md.contains("**unknown/month idle, unknown/month at full scale**") && !md.contains("$0.00"),
        "{md}"
    );
    let report: Value = serde_json::from_str(&stdout(&run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "policyreport",
        "tests/fixtures/cost/unpriced.yml",
    ])))
    .expect("policyreport JSON");
    let totals = report["items"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(&report))
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .find(|r| r["properties"]["pricedResources"].is_string())
        .map(|r| r["properties"].clone())
        .unwrap_or_else(|| panic!("no totals result in {report:#}"));
    assert_eq!(totals["idleMonthly"], "unknown", "{totals:#}");
    assert_eq!(totals["fullScaleMonthly"], "unknown", "{totals:#}");
    assert_eq!(totals["pricedResources"], "0", "{totals:#}");
}

#[test]
fn the_text_summary_prints_one_line_of_totals() {
    let out = run(&["check", "--config", CONFIG, "tests/fixtures/cost"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("computeguard: cost:"))
        .collect();
    assert_eq!(
        lines,
        [
            "computeguard: cost: $17,375.79/month idle, $35,072.45/month at full scale (10 priced resources, USD retail prices, 730 h/month); not in the sums: 1 resource with an unknown price or count (listed above)"
        ]
    );
}

#[test]
fn without_prices_nothing_is_priced_or_printed() {
    let (_, report) = check_json(&["tests/fixtures/cost/pool.bicep"]);
    assert!(report.get("cost").is_none(), "{report:#}");
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/cost/pool.bicep",
    ]);
    let text = stdout(&out);
    assert!(
        !text.contains("computeguard: cost") && !text.contains("cost unknown"),
        "{text}"
    );
}

#[test]
fn inspect_shows_the_cost_of_each_resource() {
    let out = run(&[
        "inspect",
        "--config",
        CONFIG,
        "tests/fixtures/cost/aks-tf/main.tf",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("  cost  $3.673/h (linux regular, meter NC24ads A100 v4, tests/fixtures/cost-config/../prices/handwritten-eastus-gpu-nc-a100-t4.json:6) x 1-4 nodes: $2,681.29/month idle, $10,725.16/month at full scale\n"),
        "{text}"
    );
    let out = run(&[
        "inspect",
        "--format",
        "json",
        "--config",
        CONFIG,
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v[0]["cost"]["floorMonthly"], Value::Null);
    assert_eq!(
        v[0]["cost"]["unknown"][0],
        "no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region"
    );
}

#[test]
fn a_file_that_is_not_a_price_page_is_refused_naming_it() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("skus.json"),
        "[{\"name\": \"Standard_NC6\", \"resourceType\": \"virtualMachines\"}]",
    )?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "azure:\n  prices: [skus.json]\n")?;
    let out = run(&[
        "check",
        "--config",
        config.to_str().ok_or("path")?,
        "tests/fixtures/cost/pool.bicep",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let file = dir.path().join("skus.json");
    assert!(
        stderr(&out).contains(&format!(
            "{}:1: not an Azure Retail Prices API page (the body of GET https://prices.azure.com/api/retail/prices, as curl or az rest saves it): at the top level expected an object with an \"Items\" array, found an array of 1 item(s)",
            file.display()
        )),
        "{}",
        stderr(&out)
    );
    Ok(())
}

const BUDGET: &str = "tests/fixtures/cost-budget/computeguard.yaml";

fn idle_findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "gpu-idle-cost")
        .map(|f| {
            (
                f["resource"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn gpu_idle_cost_is_off_without_a_budget() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    assert!(idle_findings(&report).is_empty());
}

#[test]
fn gpu_idle_cost_over_2000_names_the_amount_and_the_saving() {
    // Budget $2,000: the GPU pool (2,681.29), the Azure ML cluster train (2,681.29), the KAITO
    // workspace (5,362.58) and the Windows pool (5,631.22) are over; the T4 deployment
    // (767.96), the Spot and Low Priority floors (0) and the CPU pools are not.
    let (_, report) = check_json(&["--config", BUDGET, "tests/fixtures/cost"]);
    let found = idle_findings(&report);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "azurerm_kubernetes_cluster_node_pool gpu",
            "Azure ML compute cluster train",
            "KAITO workspace llama-3-1-8b",
            "AKS node pool gpuwin"
        ]
    );
    // Spot: 0.7346 x 1 x 730 = 536.26; 2,681.29 - 536.26 = 2,145.03
    assert_eq!(
        found[1].1,
        "Azure ML compute cluster train costs $2,681.29/month idle (1 node(s) of Standard_NC24ads_A100_v4 at $3.673/h, linux regular), over the idle budget of $2,000.00/month (settings.computeguard.cost.maxIdleMonthly); scaling it to zero when idle saves $2,681.29/month; for interruptible training, Spot nodes ($0.7346/h) would cost $536.26/month idle, $2,145.03 less"
    );
    // Windows Spot: 0.9186 x 2 x 730 = 1,341.16; 5,631.22 - 1,341.16 = 4,290.06
    assert!(
        found[3]
            .1
            .ends_with("Spot nodes ($0.9186/h) would cost $1,341.16/month idle, $4,290.06 less"),
        "{}",
        found[3].1
    );
    assert!(
        found[3].1.contains("; with the cluster autoscaler from 0 nodes it would scale to zero when idle, saving $5,631.22/month;"),
        "{}",
        found[3].1
    );
    assert!(
        found[2]
            .1
            .ends_with("it does not scale to zero: each node fewer saves $2,681.29/month"),
        "{}",
        found[2].1
    );
    let f = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "gpu-idle-cost")
        .expect("one");
    assert_eq!(
        (
            f["severity"].as_str(),
            f["policy"].as_str(),
            f["line"].as_u64()
        ),
        (Some("warning"), Some("computeguard"), Some(20))
    );
}

#[test]
fn gpu_idle_cost_of_the_change_when_no_resource_alone_is_over()
-> Result<(), Box<dyn std::error::Error>> {
    // Budget $6,000: no resource alone (the largest is the Windows pool, 5,631.22), but the GPU
    // floors together are 2,681.29 + 0 + 0 + 2,681.29 + 5,362.58 + 767.96 + 5,631.22 = 17,124.34;
    // the pools and clusters at zero save 2,681.29 + 0 + 0 + 2,681.29 + 5,631.22 = 10,993.80.
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    let prices = root().join("tests/fixtures/prices");
    std::fs::write(
        &config,
        format!(
            "azure:\n  workspaceRegion: eastus\n  prices: [{0}/rshade-eastus-d2s-v3-consumption-spot-lowpri-windows.json, {0}/handwritten-eastus-gpu-nc-a100-t4.json]\nsettings:\n  computeguard: {{cost: {{maxIdleMonthly: 6000}}}}\n",
            prices.display()
        ),
    )?;
    let (_, report) = check_json(&[
        "--config",
        config.to_str().ok_or("path")?,
        "tests/fixtures/cost",
    ]);
    let found = idle_findings(&report);
    assert_eq!(
        found,
        [(
            "AKS node pool gpuwin".to_string(),
            "this change's GPU compute costs $17,124.34/month idle over 5 resources, over the idle budget of $6,000.00/month (settings.computeguard.cost.maxIdleMonthly); the largest is AKS node pool gpuwin at $5,631.22/month, and scaling the pools and clusters to zero when idle saves up to $10,993.80/month".to_string()
        )]
    );
    Ok(())
}

#[test]
fn min_nodes_zero_says_what_the_idle_nodes_cost() {
    let (_, report) = priced(&[
        "tests/fixtures/cost/aml-tf/main.tf",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "min-nodes-zero")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "Azure ML compute cluster train keeps 1 idle node(s) of Standard_NC24ads_A100_v4 when there is no work; set the minimum to 0 (the idle node(s) cost $2,681.29/month at $3.673/h)",
            // No price: nothing added, never $0.
            "Azure ML compute cluster h100-warm keeps 1 idle node(s) of Standard_NC48ads_A100_v4 when there is no work; set the minimum to 0",
        ]
    );
}

#[test]
fn a_budget_without_prices_says_gpu_idle_cost_was_not_evaluated()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(
        &config,
        "settings:\n  computeguard: {cost: {maxIdleMonthly: 10}}\n",
    )?;
    let path = config.to_str().ok_or("path")?;
    let (_, report) = check_json(&["--config", path, "tests/fixtures/cost/pool.bicep"]);
    let message = "gpu-idle-cost was not evaluated: `settings.computeguard.cost.maxIdleMonthly` is set, but the configuration names no `azure.prices` (Azure Retail Prices API pages; docs/cost.md)";
    assert!(
        report["notEvaluated"]
            .as_array()
            .expect("list")
            .iter()
            .any(|n| n["message"] == message),
        "{report:#}"
    );
    let out = run(&["check", "--config", path, "tests/fixtures/cost/pool.bicep"]);
    assert!(
        stderr(&out).contains(&format!("computeguard: {message}\n")),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &config,
        "settings:\n  computeguard: {cost: {maxIdle: 10}}\n",
    )?;
    let out = run(&["check", "--config", path, "tests/fixtures/cost/pool.bicep"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(
            "`settings.computeguard`.cost: unknown key `maxIdle`; expected maxIdleMonthly"
        ),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn gpu_idle_cost_is_suppressed_by_an_inline_comment_and_listed_by_rules_and_explain()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("warm.yml");
    std::fs::write(
        &file,
        "# computeguard:ignore gpu-idle-cost warm node for the nightly SLA\n$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: warm\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nlocation: eastus\nmin_instances: 1\nmax_instances: 2\n",
    )?;
    let (_, report) = check_json(&[
        "--config",
        BUDGET,
        "--show-suppressed",
        file.to_str().ok_or("path")?,
    ]);
    let f = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "gpu-idle-cost")
        .expect("shown as suppressed");
    assert_eq!(f["suppression"]["reason"], "warm node for the nightly SLA");
    let out = run(&["rules", "--config", BUDGET]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("gpu-idle-cost") && l.contains("warning")),
        "{}",
        stdout(&out)
    );
    let out = run(&["rules"]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("gpu-idle-cost") && l.contains(" off ")),
        "{}",
        stdout(&out)
    );
    let out = run(&["explain", "gpu-idle-cost"]);
    assert!(
        stdout(&out).starts_with("gpu-idle-cost (off, reported by computeguard itself)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("More: docs/rules/gpu-idle-cost.md"));
    Ok(())
}

/// A base checkout holding the AKS Terraform (its GPU pool scaling 0-2 instead of 1-4)
/// and the scale set, at the same paths as the change.
fn base_checkout() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cost = dir.path().join("tests/fixtures/cost");
    std::fs::create_dir_all(cost.join("aks-tf"))?;
    let tf = std::fs::read_to_string(fixtures().join("cost/aks-tf/main.tf"))?
        .replace("min_count             = 1", "min_count             = 0")
        .replace("max_count             = 4", "max_count             = 2");
    std::fs::write(cost.join("aks-tf/main.tf"), tf)?;
    std::fs::copy(fixtures().join("cost/vmss.json"), cost.join("vmss.json"))?;
    Ok(dir)
}

#[test]
fn compare_to_a_base_17_194_42_more_idle_25_238_44_more_at_full_scale()
-> Result<(), Box<dyn std::error::Error>> {
    // Base: system pool 140.16 + GPU pool 0-2 (0 / 3.673 x 2 x 730 = 5,362.58) + Spot pool
    // (0 / 4,290.06) + scale set 41.21 = 181.37 idle, 9,834.01 at full scale.
    // Change: 17,375.79 and 35,072.45 (above): +17,194.42 and +25,238.44.
    let base = base_checkout()?;
    let dir = base.path().to_str().ok_or("path")?;
    let (_, report) = priced(&["--compare-to", dir, "tests/fixtures/cost"]);
    let diff = &report["costDiff"];
    assert_eq!(diff["baseTotal"]["floorMonthly"], 181.37);
    assert_eq!(diff["baseTotal"]["ceilingMonthly"], 9834.01);
    assert_eq!(diff["floorDelta"], 17194.42);
    assert_eq!(diff["ceilingDelta"], 25238.44);
    let changed: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .map(|c| {
            (
                c["what"].as_str().unwrap_or(""),
                c["resource"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        changed[0],
        ("changed", "azurerm_kubernetes_cluster_node_pool gpu")
    );
    assert_eq!(
        changed.len(),
        8,
        "the GPU pool changed, 7 resources added: {changed:?}"
    );
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--compare-to",
        dir,
        "tests/fixtures/cost",
    ]);
    assert!(
        stdout(&out).contains(&format!(
            "computeguard: cost against {dir}: +$17,194.42/month idle, +$25,238.44/month at full scale (of the known prices: 1 resource(s) of the change and 0 of the base have an unknown price or count)\n"
        )),
        "{}",
        stdout(&out)
    );
    Ok(())
}

#[test]
fn compare_to_needs_prices() {
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--compare-to",
        "tests",
        "tests/fixtures/cost/pool.bicep",
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("`--compare-to` compares what the change costs, but the configuration names no `azure.prices`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn markdown_is_a_pull_request_comment_with_findings_blind_spots_and_cost()
-> Result<(), Box<dyn std::error::Error>> {
    let base = base_checkout()?;
    let dir = base.path().to_str().ok_or("path")?;
    let out = run(&[
        "check",
        "--config",
        BUDGET,
        "--format",
        "markdown",
        "--compare-to",
        dir,
        "tests/fixtures/cost",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let md = stdout(&out);
    for expected in [
        "## computeguard\n\n:warning: **0 errors, 10 warnings, 0 infos** in 8 files (13 resources); as of 2026-11-22\n",
        &format!(
            "### Cost\n\n**+$17,194.42/month idle, +$25,238.44/month at full scale** against `{dir}` (of the known prices: 1 resource(s) of the change and 0 of the base have an unknown price or count)\n"
        ),
        "| base | $181.37/month | $9,834.01/month |\n| this change | $17,375.79/month | $35,072.45/month |\n| difference | +$17,194.42/month | +$25,238.44/month |\n",
        "| changed | azurerm_kubernetes_cluster_node_pool gpu | `tests/fixtures/cost/aks-tf/main.tf` | $0.00 → $2,681.29 | $5,362.58 → $10,725.16 |\n",
        "| added | KAITO workspace llama-3-1-8b | `tests/fixtures/cost/kaito.yaml` | - → $5,362.58 | - → $5,362.58 |\n",
        "| AKS node pool gpuwin | `tests/fixtures/cost/pool.bicep:19` | Standard_NC24ads_A100_v4 eastus | windows regular | $3.857 | 2-2 | $5,631.22 | $5,631.22 |\n",
        "| :warning: warning | `gpu-idle-cost` | `tests/fixtures/cost/kaito.yaml:1` | KAITO workspace llama-3-1-8b costs $5,362.58/month idle",
        "### Blind spots\n",
        "- cost unknown: `tests/fixtures/cost/unpriced.yml:1` Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\n",
        "- not evaluated: quota-sufficient was not evaluated",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in\n{md}");
    }
    Ok(())
}

#[test]
fn markdown_escapes_what_files_write() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("pipe.yml");
    std::fs::write(
        &file,
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: \"a|b<script>\"\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nmin_instances: 1\nmax_instances: 2\n",
    )?;
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--format",
        "markdown",
        file.to_str().ok_or("path")?,
    ]);
    let md = stdout(&out);
    assert!(
        md.contains("Azure ML compute cluster a\\|b&lt;script&gt; keeps 1 idle node(s)"),
        "{md}"
    );
    assert!(!md.contains("<script>"), "{md}");
    Ok(())
}

#[test]
fn plan_ranks_alternatives_by_price_when_prices_are_known() -> Result<(), Box<dyn std::error::Error>>
{
    // Without prices the Azure ML cluster's alternatives come by closeness to the current
    // size: NC40ads H100 v5, NCC40ads H100 v5, NC128ds xl RTXPRO6000BSE v6. A page written
    // here in the API's shape prices them in the opposite order, which plan then follows.
    let args = |config: &str| {
        vec![
            "plan".to_string(),
            "--format".into(),
            "json".into(),
            "--config".into(),
            config.to_string(),
            "tests/fixtures/cost/aml-tf/main.tf".into(),
        ]
    };
    let sizes = |out: &std::process::Output| -> Vec<(String, Option<String>)> {
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["resources"][0]["alternatives"]
            .as_array()
            .expect("alternatives")
            .iter()
            .map(|a| {
                (
                    a["size"].as_str().unwrap_or_default().to_string(),
                    a["price"].as_str().map(str::to_string),
                )
            })
            .collect()
    };
    let unpriced = computeguard().args(args(CONFIG)).output()?;
    let names: Vec<String> = sizes(&unpriced).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        names,
        [
            "Standard_NC40ads_H100_v5",
            "Standard_NCC40ads_H100_v5",
            "Standard_NC128ds_xl_RTXPRO6000BSE_v6"
        ]
    );
    let dir = tempfile::tempdir()?;
    let item = |sku: &str, price: f64| {
        format!(
            "{{\"currencyCode\": \"USD\", \"retailPrice\": {price}, \"armRegionName\": \"eastus\", \"armSkuName\": \"{sku}\", \"meterName\": \"x\", \"productName\": \"Virtual Machines X Series\", \"serviceName\": \"Virtual Machines\", \"unitOfMeasure\": \"1 Hour\", \"type\": \"Consumption\"}}"
        )
    };
    std::fs::write(
        dir.path().join("page.json"),
        format!(
            "{{\"Items\": [{}, {}, {}], \"NextPageLink\": null, \"Count\": 3}}",
            item("Standard_NC40ads_H100_v5", 6.98),
            item("Standard_NCC40ads_H100_v5", 5.0),
            item("Standard_NC128ds_xl_RTXPRO6000BSE_v6", 4.0)
        ),
    )?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "asOf: 2026-11-22\nazure:\n  prices: [page.json]\n")?;
    let priced = computeguard()
        .args(args(config.to_str().ok_or("path")?))
        .output()?;
    assert_eq!(
        sizes(&priced),
        [
            // 4.0 x 730 = 2,920; 5.0 x 730 = 3,650; 6.98 x 730 = 5,095.40
            (
                "Standard_NC128ds_xl_RTXPRO6000BSE_v6".to_string(),
                Some("$4/h, $2,920.00/month per node (linux regular)".to_string())
            ),
            (
                "Standard_NCC40ads_H100_v5".to_string(),
                Some("$5/h, $3,650.00/month per node (linux regular)".to_string())
            ),
            (
                "Standard_NC40ads_H100_v5".to_string(),
                Some("$6.98/h, $5,095.40/month per node (linux regular)".to_string())
            ),
        ]
    );
    Ok(())
}

#[test]
fn html_shows_the_cost_and_names_unknown_prices() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "html",
        "tests/fixtures/cost/aks-tf/main.tf",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let html = stdout(&out);
    assert!(
        html.contains("<section id=\"cost\"><h2>Cost</h2><p><strong>$2,821.45/month idle, $15,155.38/month at full scale</strong> (3 priced resources, USD retail prices, 730 h/month; not in the sums: 1 with an unknown price or count)</p>"),
        "{html}"
    );
    assert!(
        html.contains("<td>$3.673</td><td>1-4</td><td>$2,681.29</td><td>$10,725.16</td>"),
        "{html}"
    );
    assert!(html.contains("<li>cost unknown: <code>tests/fixtures/cost/unpriced.yml:1</code> Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular)"), "{html}");
}

#[test]
fn github_annotations_carry_the_cost_and_the_unknown_prices() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "github",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("::notice file=tests/fixtures/cost/unpriced.yml,line=1,title=computeguard cost unknown::Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "::notice title=computeguard cost::unknown: none of the 1 resource has a known price and count"
        ) && !text.contains("$0.00"),
        "{text}"
    );
}

#[test]
fn catalog_prices_checks_pages_and_refuses_what_is_not_one() {
    let out = run(&[
        "catalog",
        "prices",
        "tests/fixtures/prices/rshade-eastus-d2als-v7-preview-consumption-reservation-savingsplan-devtest.json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // 8 items: 4 Consumption VM rows; the 2 Reservation and 2 DevTestConsumption rows are not prices.
    assert_eq!(
        stdout(&out),
        "tests/fixtures/prices/rshade-eastus-d2als-v7-preview-consumption-reservation-savingsplan-devtest.json: Azure Retail Prices page, 8 item(s), 4 hourly VM price(s) of 1 size(s) in 1 region(s) (eastus)\ncatalog prices: 4 hourly VM price(s) in 1 file(s), USD\n"
    );
    let out = run(&["catalog", "prices", "tests/fixtures/context/overlay.yaml"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("error: tests/fixtures/context/overlay.yaml:1:1: not JSON (invalid json: expected a value); expected an Azure Retail Prices API page"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sarif_notes_the_cost_and_each_unknown_price() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "sarif",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("sarif");
    let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    let unknown = notes
        .iter()
        .find(|n| n["properties"]["kind"] == "cost-unknown")
        .expect("a cost-unknown note");
    assert_eq!(
        unknown["message"]["text"],
        "cost unknown: Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region"
    );
    assert_eq!(
        unknown["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );
    assert!(notes.iter().any(|n| n["properties"]["kind"] == "cost"));
}

#[test]
fn junit_skips_each_unknown_price() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "junit",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let xml = stdout(&out);
    assert!(
        xml.contains("  <testsuite name=\"computeguard cost\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\">\n    <testcase classname=\"tests/fixtures/cost/unpriced.yml\" name=\"cost unknown at line 1: Azure ML compute cluster h100-warm\" file=\"tests/fixtures/cost/unpriced.yml\" line=\"1\">\n      <skipped message=\"cost unknown: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\"/>"),
        "{xml}"
    );
    roxmltree::Document::parse(&xml).expect("well-formed XML");
}

/// A validator for the `openAPIV3Schema` (v1alpha2) of a PolicyReport CRD kept under
/// tests/fixtures/schemas (the same files `audit.rs` validates against).
fn crd(file: &str) -> Result<jsonschema::Validator, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(fixtures().join("schemas").join(file))?;
    let docs = computeguard_decode::decode_yaml(&text)?;
    let crd = &docs.first().ok_or("empty CRD file")?.value;
    let version = crd["spec"]["versions"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "v1alpha2"))
        .ok_or("no v1alpha2")?;
    Ok(jsonschema::options()
        .should_validate_formats(false)
        .build(&version["schema"]["openAPIV3Schema"])?)
}

/// `check --format policyreport ARGS`: the results of the rules `cost` and `cost-unknown`
/// (every item validated against its CRD first), and the cluster report.
fn policy_report_cost(args: &[&str]) -> Result<(Vec<Value>, Value), Box<dyn std::error::Error>> {
    let namespaced = crd("kyverno-wgpolicyk8s.io_policyreports.yaml")?;
    let cluster_crd = crd("kyverno-wgpolicyk8s.io_clusterpolicyreports.yaml")?;
    // The validator is real: a property that is not a string fails.
    let bad = serde_json::json!({"results": [{"policy": "p", "properties": {"idleMonthly": 0}}]});
    assert_eq!(cluster_crd.iter_errors(&bad).count(), 1);
    let mut all = vec!["check", "--format", "policyreport"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(code(&out) < 2, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout)?;
    let mut cost = Vec::new();
    let mut cluster = Value::Null;
    for item in list["items"].as_array().ok_or("items")? {
        let validator = match item["kind"].as_str() {
            Some("PolicyReport") => &namespaced,
            Some("ClusterPolicyReport") => {
                cluster = item.clone();
                &cluster_crd
            }
            other => return Err(format!("unexpected kind {other:?}").into()),
        };
        let errors: Vec<String> = validator
            .iter_errors(item)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{item:#}");
        for r in item["results"].as_array().cloned().unwrap_or_default() {
            if r["rule"] == "cost" || r["rule"] == "cost-unknown" {
                assert_eq!(item["kind"], "ClusterPolicyReport", "{r:#}");
                cost.push(r);
            }
        }
    }
    Ok((cost, cluster))
}

#[test]
fn policyreport_carries_the_cost_2_821_45_idle_15_155_38_at_full_scale_and_names_the_unknown_price()
-> Result<(), Box<dyn std::error::Error>> {
    let (cost, cluster) = policy_report_cost(&[
        "--config",
        CONFIG,
        "tests/fixtures/cost/aks-tf/main.tf",
        "tests/fixtures/cost/unpriced.yml",
    ])?;
    // The totals: 140.16 + 2,681.29 + 0 idle; 140.16 + 10,725.16 + 4,290.06 at full scale.
    let totals: Vec<&Value> = cost
        .iter()
        .filter(|r| r["properties"]["pricedResources"].is_string())
        .collect();
    assert_eq!(totals.len(), 1, "{cost:#?}");
    let t = &totals[0];
    assert_eq!(
        (t["rule"].as_str(), t["result"].as_str()),
        (Some("cost"), Some("pass"))
    );
    assert_eq!(t["scored"], false);
    let p = &t["properties"];
    assert_eq!(
        (
            p["idleMonthly"].as_str(),
            p["fullScaleMonthly"].as_str(),
            p["currency"].as_str(),
            p["pricedResources"].as_str(),
            p["unknownResources"].as_str()
        ),
        (
            Some("2821.45"),
            Some("15155.38"),
            Some("USD"),
            Some("3"),
            Some("1")
        )
    );
    // Four resources, one of them unpriced: three priced (it said 4 before).
    assert_eq!(p["resources"].as_str(), Some("4"));
    assert!(
        p["priceSources"]
            .as_str()
            .is_some_and(|s| s.contains("handwritten-eastus-gpu-nc-a100-t4.json")),
        "{p:#}"
    );
    assert!(
        t["message"].as_str().is_some_and(
            |m| m.starts_with("cost: $2,821.45/month idle, $15,155.38/month at full scale")
        ),
        "{t:#}"
    );
    // One result per priced resource, with its own amounts.
    let of = |name: &str| {
        cost.iter()
            .find(|r| r["properties"]["resource"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no cost result for {name} in {cost:#?}"))
    };
    let gpu = of("azurerm_kubernetes_cluster_node_pool gpu");
    assert_eq!(gpu["result"], "pass");
    assert_eq!(
        (
            gpu["properties"]["idleMonthly"].as_str(),
            gpu["properties"]["fullScaleMonthly"].as_str(),
            gpu["properties"]["hourly"].as_str(),
            gpu["properties"]["idleNodes"].as_str(),
            gpu["properties"]["fullScaleNodes"].as_str(),
            gpu["properties"]["line"].as_str()
        ),
        (
            Some("2681.29"),
            Some("10725.16"),
            Some("3.673"),
            Some("1"),
            Some("4"),
            Some("20")
        )
    );
    let spot = of("azurerm_kubernetes_cluster_node_pool spot");
    assert_eq!(
        (
            spot["properties"]["priority"].as_str(),
            spot["properties"]["idleMonthly"].as_str(),
            spot["properties"]["fullScaleMonthly"].as_str()
        ),
        (Some("spot"), Some("0.00"), Some("4290.06"))
    );
    // The size without a price: a `skip`, its amounts `unknown`, never 0.
    let h100 = of("Azure ML compute cluster h100-warm");
    assert_eq!(
        (h100["rule"].as_str(), h100["result"].as_str()),
        (Some("cost-unknown"), Some("skip"))
    );
    assert_eq!(
        h100["message"],
        "cost unknown: Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region"
    );
    for key in ["hourly", "idleMonthly", "fullScaleMonthly"] {
        assert_eq!(h100["properties"][key], "unknown", "{key}: {h100:#}");
    }
    assert_eq!(
        cost.len(),
        5,
        "the totals, 3 priced pools, 1 unknown: {cost:#?}"
    );
    // The report's summary counts them: 4 `pass` (totals and pools), the unknown among `skip`.
    let results = cluster["results"].as_array().ok_or("results")?;
    let count = |r: &str| results.iter().filter(|x| x["result"] == r).count();
    assert_eq!(cluster["summary"]["pass"], 4);
    assert_eq!(cluster["summary"]["skip"], count("skip"));

    // Without prices, no cost result.
    let (none, _) = policy_report_cost(&[
        "--as-of",
        "2026-11-22",
        "tests/fixtures/cost/aks-tf/main.tf",
    ])?;
    assert_eq!(none, Vec::<Value>::new());
    Ok(())
}

#[test]
fn policyreport_carries_what_the_change_adds_to_its_base_17_194_42_idle_25_238_44_at_full_scale()
-> Result<(), Box<dyn std::error::Error>> {
    // The base and the change of compare_to_a_base_17_194_42_more_idle_25_238_44_more_at_full_scale.
    let base = base_checkout()?;
    let dir = base.path().to_str().ok_or("path")?;
    let (cost, _) = policy_report_cost(&[
        "--config",
        CONFIG,
        "--compare-to",
        dir,
        "tests/fixtures/cost",
    ])?;
    let t = cost
        .iter()
        .find(|r| r["properties"]["pricedResources"].is_string())
        .ok_or("no totals")?;
    let p = &t["properties"];
    assert_eq!(
        (
            p["base"].as_str(),
            p["baseKind"].as_str(),
            p["baseIdleMonthly"].as_str(),
            p["baseFullScaleMonthly"].as_str(),
            p["idleDelta"].as_str(),
            p["fullScaleDelta"].as_str()
        ),
        (
            Some(dir),
            Some("checkout"),
            Some("181.37"),
            Some("9834.01"),
            Some("+17194.42"),
            Some("+25238.44")
        )
    );
    assert!(
        t["message"].as_str().is_some_and(|m| m.contains(&format!(
            "; against {dir}: +$17,194.42/month idle, +$25,238.44/month at full scale"
        ))),
        "{t:#}"
    );
    Ok(())
}

/// The cost of `check --baseline` (docs/cost.md): a baseline written with `azure.prices`
/// records what the files cost, and a later run says what it adds to that. Amounts:
///
/// | resource | price/h | base | change |
/// |---|---|---|---|
/// | system pool, D2s v3, 2 nodes | 0.096 | 140.16 / 140.16 | the same |
/// | GPU pool, A100 | 3.673 | 0-2: 0 / 5,362.58 | 1-8: 2,681.29 / 21,450.32 |
/// | Spot pool, A100 Spot, 0-8 | 0.7346 | 0 / 4,290.06 | the same |
/// | scale set, D2s v3 Spot, 3 (`other/vmss.json`) | 0.018816 | 41.21 / 41.21 | the same |
///
/// The pools' file: 140.16 / 9,792.80 in the base, 2,821.45 / 25,880.54 in the change:
/// +2,681.29 idle, +16,087.74 at full scale.
fn baseline_repo() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("infra"))?;
    std::fs::create_dir_all(dir.path().join("other"))?;
    let tf = std::fs::read_to_string(fixtures().join("cost/aks-tf/main.tf"))?
        .replace("min_count             = 1", "min_count             = 0")
        .replace("max_count             = 4", "max_count             = 2");
    std::fs::write(dir.path().join("infra/main.tf"), tf)?;
    std::fs::copy(
        fixtures().join("cost/vmss.json"),
        dir.path().join("other/vmss.json"),
    )?;
    Ok(dir)
}

fn config_path() -> String {
    root().join(CONFIG).display().to_string()
}

#[test]
fn write_baseline_records_the_cost_181_37_idle_9_834_01_at_full_scale_with_its_price_sources()
-> Result<(), Box<dyn std::error::Error>> {
    let repo = baseline_repo()?;
    std::fs::copy(
        fixtures().join("cost/unpriced.yml"),
        repo.path().join("other/unpriced.yml"),
    )?;
    let config = config_path();
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--config",
            &config,
            "--write-baseline",
            "b.json",
            ".",
        ],
    )?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("computeguard: and what the files cost: $181.37/month idle, $9,834.01/month at full scale (4 priced resources, USD retail prices, 730 h/month); not in the sums: 1 resource with an unknown price or count\n"),
        "{}",
        stderr(&out)
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path().join("b.json"))?)?;
    assert_eq!(
        written["version"], 1,
        "the format stays 1: `cost` is optional"
    );
    let cost = &written["cost"];
    // 140.16 + 0 + 0 + 41.21 idle; 140.16 + 5,362.58 + 4,290.06 + 41.21 at full scale.
    assert_eq!(cost["total"]["floorMonthly"], 181.37);
    assert_eq!(cost["total"]["ceilingMonthly"], 9834.01);
    assert_eq!(cost["total"]["unknown"], 1);
    let sources = cost["sources"].as_array().ok_or("sources")?;
    assert_eq!(sources.len(), 2);
    assert!(sources.iter().any(|s| {
        s.as_str()
            .is_some_and(|s| s.ends_with("prices/handwritten-eastus-gpu-nc-a100-t4.json"))
    }));
    let resources = cost["resources"].as_array().ok_or("resources")?;
    let one = |name: &str| {
        resources
            .iter()
            .find(|r| r["resource"] == name)
            .unwrap_or_else(|| panic!("{name} in {cost:#}"))
    };
    let gpu = one("azurerm_kubernetes_cluster_node_pool gpu");
    // Files named as findings are: relative, without `./`.
    assert_eq!(gpu["file"], "infra/main.tf");
    assert_eq!(
        (gpu["floorMonthly"].as_f64(), gpu["ceilingMonthly"].as_f64()),
        (Some(0.0), Some(5362.58))
    );
    assert!(
        gpu["meter"]["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("prices/handwritten-eastus-gpu-nc-a100-t4.json:6")),
        "{gpu:#}"
    );
    let vmss = one("VM scale set batch-spot");
    assert_eq!(
        (
            vmss["floorMonthly"].as_f64(),
            vmss["ceilingMonthly"].as_f64()
        ),
        (Some(41.21), Some(41.21))
    );
    // The size without a price is recorded as unknown: null, never 0.
    let h100 = one("Azure ML compute cluster h100-warm");
    assert_eq!(
        (h100["floorMonthly"].clone(), h100["ceilingMonthly"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(h100["hourly"], Value::Null);
    assert!(
        cost["unknown"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("no price for Standard_NC48ads_A100_v4"))
    );
    Ok(())
}

#[test]
fn baseline_cost_diff_of_a_pool_2_681_29_more_idle_16_087_74_more_at_full_scale_for_the_paths_checked()
-> Result<(), Box<dyn std::error::Error>> {
    let repo = baseline_repo()?;
    let config = config_path();
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--config",
            &config,
            "--write-baseline",
            "b.json",
            ".",
        ],
    )?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The change: the GPU pool scales from 1 to 8 instead of 0 to 2.
    let main = repo.path().join("infra/main.tf");
    let tf = std::fs::read_to_string(&main)?.replace(
        "min_count             = 0\n  max_count             = 2",
        "min_count             = 1\n  max_count             = 8",
    );
    std::fs::write(&main, tf)?;

    // JSON: only the file checked (as a pre-commit hook names it) is compared; the scale
    // set of `other/` is not in this run, and not gone.
    let (_, report) = check_json_in(
        repo.path(),
        &[
            "--config",
            &config,
            "--baseline",
            "b.json",
            "./infra/main.tf",
        ],
    )?;
    let diff = &report["costDiff"];
    assert_eq!(diff["base"], "b.json");
    assert_eq!(diff["baseKind"], "baseline");
    assert_eq!(diff["baseTotal"]["floorMonthly"], 140.16);
    assert_eq!(diff["baseTotal"]["ceilingMonthly"], 9792.8);
    assert_eq!(diff["total"]["floorMonthly"], 2821.45);
    assert_eq!(diff["total"]["ceilingMonthly"], 25880.54);
    assert_eq!(diff["floorDelta"], 2681.29);
    assert_eq!(diff["ceilingDelta"], 16087.74);
    let changes = diff["changes"].as_array().ok_or("changes")?;
    assert_eq!(changes.len(), 1, "{diff:#}");
    assert_eq!(
        (
            changes[0]["what"].as_str(),
            changes[0]["file"].as_str(),
            changes[0]["resource"].as_str(),
            changes[0]["baseFloor"].as_f64(),
            changes[0]["floor"].as_f64(),
            changes[0]["baseCeiling"].as_f64(),
            changes[0]["ceiling"].as_f64()
        ),
        (
            Some("changed"),
            Some("infra/main.tf"),
            Some("azurerm_kubernetes_cluster_node_pool gpu"),
            Some(0.0),
            Some(2681.29),
            Some(5362.58),
            Some(21450.32)
        )
    );

    // Text, the whole repository: the scale set is unchanged, so the same difference.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--config",
            &config,
            "--baseline",
            "b.json",
            ".",
        ],
    )?;
    assert!(
        stdout(&out).contains("computeguard: cost against the baseline b.json: +$2,681.29/month idle, +$16,087.74/month at full scale\n"),
        "{}",
        stdout(&out)
    );

    // Markdown, once the scale set's file is deleted: it is removed, -41.21 on each side.
    std::fs::remove_file(repo.path().join("other/vmss.json"))?;
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--config",
            &config,
            "--format",
            "markdown",
            "--baseline",
            "b.json",
            ".",
        ],
    )?;
    let md = stdout(&out);
    for expected in [
        "**+$2,640.08/month idle, +$16,046.53/month at full scale** against the baseline `b.json`\n",
        "| baseline | $181.37/month | $9,834.01/month |\n| this change | $2,821.45/month | $25,880.54/month |\n| difference | +$2,640.08/month | +$16,046.53/month |\n",
        "| changed | azurerm_kubernetes_cluster_node_pool gpu | `infra/main.tf` | $0.00 → $2,681.29 | $5,362.58 → $21,450.32 |\n",
        "| removed | VM scale set batch-spot | `other/vmss.json` | $41.21 → - | $41.21 → - |\n",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in\n{md}");
    }

    // PolicyReport: the totals result says the same.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--config",
            &config,
            "--format",
            "policyreport",
            "--baseline",
            "b.json",
            ".",
        ],
    )?;
    let list: Value = serde_json::from_slice(&out.stdout)?;
    let totals = list["items"]
        .as_array()
        .ok_or("items")?
        .iter()
        .flat_map(|i| i["results"].as_array().cloned().unwrap_or_default())
        .find(|r| r["rule"] == "cost" && r["properties"]["pricedResources"].is_string())
        .ok_or("no totals")?;
    assert_eq!(
        (
            totals["properties"]["baseKind"].as_str(),
            totals["properties"]["idleDelta"].as_str(),
            totals["properties"]["fullScaleDelta"].as_str()
        ),
        (Some("baseline"), Some("+2640.08"), Some("+16046.53"))
    );
    Ok(())
}

#[test]
fn a_baseline_without_a_cost_says_so_and_still_baselines_findings()
-> Result<(), Box<dyn std::error::Error>> {
    let repo = baseline_repo()?;
    let config = config_path();
    // Written without prices: no `cost` in the file.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--write-baseline",
            "b.json",
            ".",
        ],
    )?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path().join("b.json"))?)?;
    assert!(written.get("cost").is_none(), "{written:#}");
    let baselined = written["findings"].as_array().map_or(0, Vec::len);
    assert!(baselined > 0);
    // Read with prices: the findings are baselined, the cost is printed, no diff is made up.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--format",
            "json",
            "--config",
            &config,
            "--baseline",
            "b.json",
            ".",
        ],
    )?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["summary"]["baselined"], baselined);
    assert_eq!(report["cost"]["total"]["floorMonthly"], 181.37);
    assert!(report.get("costDiff").is_none(), "{report:#}");
    assert!(
        stderr(&out).contains("warning: the baseline b.json records no cost (it was written without `azure.prices`): no cost diff"),
        "{}",
        stderr(&out)
    );
    // A baseline with a cost, read without prices: said too.
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--config",
            &config,
            "--write-baseline",
            "priced.json",
            ".",
        ],
    )?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run_in(
        repo.path(),
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--baseline",
            "priced.json",
            ".",
        ],
    )?;
    assert!(
        stderr(&out).contains("warning: the baseline priced.json records what the files cost, but the configuration names no `azure.prices`: no cost diff"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("cost against"), "{}", stdout(&out));
    Ok(())
}

#[test]
fn baseline_cost_diff_of_standard_input_scaled_to_zero_2_681_29_less_idle()
-> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write as _;
    // The Azure ML cluster of aml-tf/main.tf: 1-2 A100 nodes at $3.673/h (2,681.29 idle,
    // 5,362.58 at full scale); piped with its minimum at 0 under its own name: -2,681.29
    // idle, the same at full scale. Standard input is compared by `--stdin-filename`.
    let dir = tempfile::tempdir()?;
    let tf = std::fs::read_to_string(fixtures().join("cost/aml-tf/main.tf"))?;
    std::fs::write(dir.path().join("main.tf"), &tf)?;
    let config = config_path();
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--config",
            &config,
            "--write-baseline",
            "b.json",
            "main.tf",
        ],
    )?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let scaled = tf.replace(
        "min_node_count                       = 1",
        "min_node_count                       = 0",
    );
    assert_ne!(scaled, tf);
    let mut child = computeguard()
        .current_dir(dir.path())
        .args(["check", "--config", &config, "--baseline", "b.json"])
        .args(["--stdin-filename", "main.tf", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("stdin")?
        .write_all(scaled.as_bytes())?;
    let out = child.wait_with_output()?;
    assert!(
        stdout(&out).contains("computeguard: cost against the baseline b.json: -$2,681.29/month idle, +$0.00/month at full scale\n"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    Ok(())
}
